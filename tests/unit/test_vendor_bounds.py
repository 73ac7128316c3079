"""A vendor reading out of bounds is "not measured" at its source, with the reason: every scripted vendor (NVML, AMD SMI,
amdgpu sysfs, Apple's ioreg and macmon, libtpu, Level Zero Sysman) answering a "not supported" sentinel, a negative,
an infinity or a NaN gives None and says why; names and driver strings with control characters become one clean line;
a run recorded over such a source reads back, lists and exports, and `bench devices` prints no "inf", no negative
figure and no control character that came from a driver."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.cli import main as cli
from bench.hardware.monitor import nvml, sources
from bench.hardware.monitor.source_types import figure, text
from bench.vocab.readings import GpuReading
from bench.runs.jobs import JobManager
from bench.store import Store
from tests import strategies as S
from tests.fixtures import NO_GPU, TINY
from tests.unit import fake_nvml, fake_workers
from tests.unit import scripted_gpus as sg
from tests.unit.test_ways_out import sane_reading_problems

UINT64_MAX = 2**64 - 1
UINT32_MAX = 2**32 - 1
FIGURES = ("util_percent", "mem_util_percent", "mem_used_mib", "mem_total_mib", "power_w", "power_limit_w", "temp_c",
           "sm_clock_mhz", "energy_j")


@pytest.fixture(autouse=True)
def _clean() -> Any:
    yield
    sources.reset()
    nvml.reset()


def _read(machine: sources.HostAccess) -> tuple[GpuReading, dict[str, str], Any]:
    nvml.set_module(fake_nvml.missing())
    sources.script(machine)
    found = sources.find()
    assert found.source is not None, found.tried
    collector = found.source.collector([0])
    reading = collector.collect()[0]
    return reading, collector.not_measured.get("gpu:0", {}), found.source


def _sane(reading: GpuReading) -> None:
    """Every figure of the reading is None or a finite number within what an import accepts."""
    assert GpuReading.model_validate_json(json.dumps(reading.to_dict())) is not None
    for name in FIGURES:
        value = getattr(reading, name)
        assert value is None or math.isfinite(value), (name, value)


# -- the one rule --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("raw", "name", "says"), [
    (UINT64_MAX, "mem_used_mib", "18446744073709551615"), ("18446744073709551615\n", "mem_used_mib", "18446744073709551615"),
    (-5, "power_w", "outside"), (float("inf"), "power_w", "not a finite number"),
    (float("nan"), "util_percent", "not a finite number"), (1e30, "mem_total_mib", "outside"),
    (101, "util_percent", "outside"), (-300, "temp_c", "outside"), (10**400, "energy_j", "not a finite number"),
    ("1e400", "power_w", "not a finite number")])
def test_a_figure_out_of_bounds_is_none_with_the_reason(raw: Any, name: str, says: str) -> None:
    sentinels = sg_sentinels()
    result = figure(raw, name, sentinels=sentinels)
    assert result.value is None and result.why is not None and says in result.why
    assert result.why.startswith("not measured: ")


def sg_sentinels() -> Any:
    from bench.hardware.monitor.amd import AMDSMI_NA

    return AMDSMI_NA


def test_a_figure_in_bounds_or_missing_is_kept_as_it_is() -> None:
    assert figure("42", "util_percent") == (42.0, None)
    assert figure(2048 * 2**20, "mem_used_mib", scale=1 / 2**20) == (2048.0, None)
    assert figure("N/A", "power_w") == (None, None) and figure(None, "power_w") == (None, None)
    assert figure(True, "power_w") == (None, None)


@pytest.mark.parametrize(("raw", "clean"), [
    ("6.8.5\nGPU 9 forged", "6.8.5 GPU 9 forged"), ("A\x1b[31mB", "A [31mB"), ("x\u202ey", "x y"),
    ("bad \ud800 half", "bad ? half"), (b"H100\xff\x00", "H100\ufffd"), ("  \t\n ", None), (None, None),
    ("a" * 1000, "a" * 200)])
def test_text_from_a_driver_is_one_clean_line(raw: Any, clean: str | None) -> None:
    assert text(raw) == clean
    if clean is not None:
        clean.encode("utf-8")  # valid Unicode


# -- each vendor -----------------------------------------------------------------------------------------------------
def test_amd_smis_not_supported_vram_is_not_measured_with_its_reason() -> None:
    gpu = sg.FakeAmdGpu(vram_used_mb=UINT64_MAX, vram_total_mb=UINT64_MAX, market_name="MI300X\nfake line")
    reading, why, source = _read(sg.amd_smi([gpu]))
    assert reading.mem_used_mib is None and reading.mem_total_mib is None
    assert why["mem_used_mib"] == ("not measured: the driver reported 18446744073709551615 (AMD SMI's 'not "
                                   "supported')")
    listed = source.gpus()[0]
    assert listed.mem_total_mib is None and "AMD SMI's 'not supported'" in listed.not_measured["mem_total_mib"]
    assert listed.name == "MI300X fake line"
    assert reading.util_percent == 71, "the figures in bounds are kept"
    _sane(reading)


@pytest.mark.parametrize(("field", "value", "figure_name"), [
    ("current_socket_power", -40, "power_w"), ("current_socket_power", float("inf"), "power_w"),
    ("current_socket_power", float("nan"), "power_w"), ("gfx_activity", 2**16 - 1, "util_percent"),
    ("edge_temp_c", float("inf"), "temp_c"), ("power_limit_w", UINT32_MAX, "power_limit_w"),
    ("energy_accumulator", UINT64_MAX, "energy_j"), ("gfx_clock_mhz", 2**16 - 1, "sm_clock_mhz")])
def test_amd_smi_sentinels_negatives_and_non_finite_values(field: str, value: Any, figure_name: str) -> None:
    reading, why, _ = _read(sg.amd_smi([replace(sg.FakeAmdGpu(), **{field: value})]))
    assert getattr(reading, figure_name) is None and figure_name in why, why
    _sane(reading)


def _sysfs(tmp_path: Path, **files: str) -> sources.HostAccess:
    root = tmp_path / "drm"
    shutil.copytree(sg.AMD_SYSFS, root)
    device = root / "card0" / "device"
    hwmon = next((device / "hwmon").iterdir())
    for name, content in files.items():
        (hwmon / name if name.startswith(("power", "temp", "freq")) else device / name).write_text(content)
    return replace(sg.amd_sysfs(), drm_root=root)


def test_amdgpu_sysfs_values_out_of_bounds_are_not_measured(tmp_path: Path) -> None:
    machine = _sysfs(tmp_path, mem_info_vram_used="18446744073709551615\n", power1_average="-5000000\n",
                     temp1_input="inf\n", gpu_busy_percent="250\n", product_name="Radeon\n\x1b]0;pwned\x07")
    reading, why, source = _read(machine)
    assert reading.mem_used_mib is None and "18446744073709551615" in why["mem_used_mib"]
    assert reading.power_w is None and "power_w" in why
    assert reading.temp_c is None and reading.util_percent is None and {"temp_c", "util_percent"} <= set(why)
    assert not any(c in source.gpus()[0].name for c in "\n\x1b\x07")
    _sane(reading)


def test_nvml_not_available_values_negatives_and_names(monkeypatch: pytest.MonkeyPatch) -> None:
    gpu = replace(fake_nvml.two_gpus().gpus[0], name="NVIDIA H100\r\nGPU 1: forged", mem_used_bytes=UINT64_MAX,
                  power_milliwatts=UINT32_MAX, temp_c=-500, sm_clock_mhz=UINT32_MAX)
    fake = fake_nvml.FakeNvml([gpu], driver_version="550.54\n\x1b[2J")
    nvml.set_module(fake)
    sources.script(sg.amd_sysfs())
    found = sources.find()
    assert found.source is not None and found.source.info.name == "NVML"
    collector = found.source.collector()
    reading = collector.collect()[0]
    why = collector.not_measured["gpu:0"]
    assert reading.mem_used_mib is None and "NVML's 'not available'" in why["mem_used_mib"]
    assert reading.power_w is None and reading.temp_c is None and reading.sm_clock_mhz is None
    assert reading.name == "NVIDIA H100 GPU 1: forged" and reading.util_percent == 40
    listed = found.source.gpus()[0]
    assert listed.driver == "550.54 [2J" and listed.name == "NVIDIA H100 GPU 1: forged"
    _sane(reading)


def test_macmon_and_ioreg_non_finite_and_negative_values() -> None:
    reading, why, _ = _read(sg.mac(macmon=sg.fake_macmon(usage=float("nan"), gpu_w=-3.0)))
    assert reading.util_percent is None and reading.power_w is None and {"util_percent", "power_w"} <= set(why)
    assert reading.mem_used_mib is not None, "ioreg's memory is still read"
    _sane(reading)


def test_libtpu_metric_strings_out_of_bounds() -> None:
    metrics = json.loads(sg.TPU_METRICS.read_text(encoding="utf-8"))
    metrics["duty_cycle_pct"] = ["inf", "-1"]
    metrics["hbm_capacity_usage"] = ["1e300", "nan"]
    reading, why, _ = _read(sg.tpu(metrics))
    assert reading.util_percent is None and reading.mem_used_mib is None and {"util_percent", "mem_used_mib"} <= set(why)
    _sane(reading)


def test_sysman_memory_of_all_ones_is_not_measured() -> None:
    recorded = json.loads(sg.INTEL_SYSMAN.read_text(encoding="utf-8"))
    for memory in recorded["devices"][0]["memory"]:
        memory["size"], memory["free"] = UINT64_MAX, 0
    reading, why, source = _read(sg.intel(sg.FakePyzes(recorded)))
    assert reading.mem_total_mib is None and "mem_total_mib" in why
    assert source.gpus()[0].mem_total_mib is None
    _sane(reading)


# -- `bench devices` ---------------------------------------------------------------------------------------------------
def _hostile_amd() -> sources.HostAccess:
    return sg.amd_smi([sg.FakeAmdGpu(market_name="MI300X\n\x1b[31mred", vram_used_mb=UINT64_MAX,
                                     vram_total_mb=UINT64_MAX, current_socket_power=-120, gfx_activity=float("inf"))])


def test_bench_devices_prints_no_inf_no_negative_and_no_driver_control(monkeypatch: pytest.MonkeyPatch,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    with sg.use(monkeypatch, _hostile_amd()):
        assert cli.main(["devices"]) == 0
        out = capsys.readouterr().out
        assert cli.main(["devices", "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
    figures = [line for line in out.splitlines() if "not measured:" not in line]  # a reason quotes the raw value
    assert not re.search(r"inf|nan|-\d", "\n".join(figures).replace("Info", "").lower()), out
    assert not re.search(r"(inf|nan|-\d[\d,.]*) ?(GiB|MiB|W|%)", out), out
    assert "\x1b" not in out and "MI300X [31mred" in out
    assert "memory in use not measured" in out and "AMD SMI's 'not supported'" in out
    assert data["gpu_not_measured"]["gpu:0"]["mem_used_mib"].startswith("not measured")
    assert data["gpu_readings"][0]["power_w"] is None


# -- a run recorded over such a source ---------------------------------------------------------------------------------
@pytest.mark.slow  # a run's worker process, then three exports (about 10 s)
def test_a_run_over_a_not_supported_reading_reads_back_lists_and_exports(
        isolated_store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        tmp_path: Path) -> None:
    with sg.use(monkeypatch, _hostile_amd()):
        manager = JobManager(Store(isolated_store), hardware=NO_GPU, worker_target=fake_workers.quick)
        try:
            run_id = manager.submit(TINY)
            snap = manager.wait(run_id, timeout_s=60)
        finally:
            manager.shutdown()
    assert snap.status == "finished" and snap.samples
    gpus = [g for s in snap.samples for g in s.gpus or ()]
    assert gpus and all(g.mem_used_mib is None and g.power_w is None for g in gpus)
    stored = Store(isolated_store).get_run(run_id)
    assert stored is not None and len(stored.samples) == len(snap.samples)
    capsys.readouterr()
    assert cli.main(["runs"]) == 0
    listed = capsys.readouterr().out
    assert "cannot be read" not in listed and str(run_id) in listed
    for kind in ("json", "csv", "html"):
        out = tmp_path / f"run.{kind}"
        assert cli.main(["export", str(run_id), "--format", kind, "--out", str(out)]) == 0, kind
        assert out.stat().st_size > 0


# -- any answer at all (hypothesis; the ways out of these readings: tests/unit/test_ways_out.py) ----------------------
SOURCE_EXAMPLES = int(os.environ.get("BENCH_FUZZ_WAYS_OUT_EXAMPLES", "6")) * 4
AT_THE_SOURCE = settings(max_examples=SOURCE_EXAMPLES, deadline=None,
                         suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
NUMBER = st.sampled_from(S.VENDOR_SENTINELS) | S.hostile_number()
NVML_FIELDS = ("mem_total_bytes", "mem_used_bytes", "util_gpu_percent", "util_memory_percent", "power_milliwatts",
               "temp_c", "sm_clock_mhz", "power_limit_milliwatts", "energy_millijoules")


def _problems(reading: GpuReading, why: dict[str, str]) -> list[str]:
    return sane_reading_problems(reading) + [f"{k}: {v!r}" for k, v in why.items()
                                             if getattr(reading, k) is not None or not v.startswith("not measured")]


@AT_THE_SOURCE
@given(values=st.fixed_dictionaries({f: NUMBER for f in NVML_FIELDS}),
       name=S.hostile_text().map(lambda t: t.encode("utf-8", "replace").decode("utf-8")))
def test_any_nvml_answer_is_a_reading_the_import_accepts(values: dict[str, Any], name: str) -> None:
    gpu = replace(fake_nvml.two_gpus().gpus[0], name=name, **values)
    nvml.set_module(fake_nvml.FakeNvml([gpu], driver_version=name))
    try:
        collector = nvml_collector()
        reading = collector.collect()[0]
        assert not _problems(reading, collector.not_measured.get("gpu:0", {})), reading
    finally:
        nvml.reset()


def nvml_collector() -> Any:
    from bench.hardware.monitor.gpu import GpuCollector

    return GpuCollector()


@AT_THE_SOURCE
@given(values=st.fixed_dictionaries({f: S.vendor_raw() for f in (
    "gfx_activity", "umc_activity", "vram_used_mb", "vram_total_mb", "average_socket_power", "current_socket_power",
    "power_limit_w", "energy_accumulator", "gfx_clock_mhz", "edge_temp_c")}), name=S.hostile_text())
def test_any_amd_smi_answer_is_a_reading_the_import_accepts(values: dict[str, Any], name: str) -> None:
    reading, why, source = _read(sg.amd_smi([sg.FakeAmdGpu(market_name=name, **values)]))
    assert not _problems(reading, why), reading
    listed = source.gpus()[0]
    assert listed.name and "\n" not in listed.name and (listed.mem_total_mib is None or listed.mem_total_mib >= 0)
    sources.reset()


@AT_THE_SOURCE
@given(duty=st.lists(S.vendor_raw().map(str), min_size=2, max_size=2),
       hbm=st.lists(S.vendor_raw().map(str), min_size=2, max_size=2))
def test_any_libtpu_answer_is_a_reading_the_import_accepts(duty: list[str], hbm: list[str]) -> None:
    metrics = json.loads(sg.TPU_METRICS.read_text(encoding="utf-8"))
    metrics["duty_cycle_pct"], metrics["hbm_capacity_usage"] = duty, hbm
    reading, why, _ = _read(sg.tpu(metrics))
    assert not _problems(reading, why), reading
    sources.reset()
