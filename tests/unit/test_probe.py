"""The matmul peak probe and its cache: bench/hardware/probe.py (real subprocess measurements kept tiny)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.hardware import devices, peak_cache, probe

ROOT = Path(__file__).resolve().parents[2]


def _cores() -> int:
    return len(os.sched_getaffinity(0))


@pytest.fixture(scope="module")
def measured() -> dict[str, Any]:
    """One real all-cores probe, asked for by a fresh interpreter (this test process may have imported TensorFlow
    already: an earlier test, or another file under the same pytest-xdist worker), which says after it whether the
    framework was loaded there: the probe's result and ``loaded``."""
    script = ("import json, sys\n"
              "from bench.hardware import probe\n"
              "result = probe.measure_peak('cpu', sizes=[128, 256], repeats=2, seconds=0.3).to_dict()\n"
              "loaded = {name: name in sys.modules for name in ('tensorflow', 'keras')}\n"
              "print(json.dumps({'result': result, 'loaded': loaded}))\n")
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=240)  # the probe gives up at 180 s
    assert proc.returncode == 0, proc.stdout + proc.stderr
    answer: dict[str, Any] = json.loads(proc.stdout.splitlines()[-1])
    return answer


@pytest.mark.slow
def test_measure_peak_cpu_is_positive_and_sane(measured: dict[str, Any]) -> None:
    result = measured["result"]
    assert result["device"] == "cpu"
    assert result["sizes"] == [128, 256] and result["repeats"] == 2 and result["dtype"] == "float32"
    assert result["backend"] == "tensorflow"
    assert math.isfinite(result["peak_gflops"]) and 0 < result["peak_gflops"] < 10_000
    # the peak is the best size's best repeat, and names that size
    assert set(result["by_size"]) == {"128", "256"}
    assert result["peak_gflops"] == max(result["by_size"].values()) == result["by_size"][str(result["size"])]
    assert 0 < result["mean_gflops"] <= result["peak_gflops"] * 1.0001
    assert result["matmuls"] >= 4 and result["seconds"] >= 0.3
    conditions = result["conditions"]
    assert 0 <= conditions["others_cpu_percent"] <= 100 and 0 <= conditions["busy_before_percent"] <= 100
    assert result["threads"] == _cores()
    assert "CPU" in result["placement"].upper()
    assert result["hardware_label"].endswith(f"({_cores()} of {_cores()} cores)")
    assert result["measured_at"] > 1.6e9
    json.dumps(result)  # cacheable as is


@pytest.mark.slow
def test_probe_never_imports_the_framework_here(measured: dict[str, Any]) -> None:
    """The framework loads in the probe's child process only: the fresh interpreter that asked for ``measured`` got
    its peak and never imported the framework itself."""
    assert measured["result"]["peak_gflops"] > 0, "the probe measured, in its own child process"
    assert measured["loaded"] == {"tensorflow": False, "keras": False}


@pytest.mark.slow
def test_one_thread_probe_is_pinned_and_positive(measured: dict[str, Any]) -> None:
    affinity = os.sched_getaffinity(0)
    result = probe.measure_peak("cpu", cpu_threads=1, size=256, seconds=0.3).to_dict()
    assert os.sched_getaffinity(0) == affinity  # only the probe process was pinned
    assert result["threads"] == 1
    assert result["hardware_label"].endswith(f"(1 of {_cores()} cores)")
    assert math.isfinite(result["peak_gflops"]) and result["peak_gflops"] > 0
    # one core is usually slower than all; the machine is noisy, so only a loose bound (3x) is checked
    assert result["peak_gflops"] < 3 * measured["result"]["peak_gflops"]


def test_bad_arguments_are_refused_before_any_work() -> None:
    with pytest.raises(ValueError, match="use 'cpu' or 'gpu:N'"):
        probe.measure_peak("tpu")
    with pytest.raises(ValueError, match="probe each GPU as 'gpu:N'"):
        probe.measure_peak("gpus")
    with pytest.raises(ValueError, match="CPU probe only"):
        probe.measure_peak("gpu:0", cpu_threads=1)
    with pytest.raises(ValueError, match=f"from 1 to {_cores()}"):
        probe.measure_peak("cpu", cpu_threads=_cores() + 1)
    with pytest.raises(ValueError, match="size must be a whole number"):
        probe.measure_peak("cpu", size=3)
    with pytest.raises(ValueError, match="dtype 'int8' is not supported"):
        probe.measure_peak("cpu", dtype="int8")
    with pytest.raises(ValueError, match="at least one matrix size"):
        probe.measure_peak("cpu", sizes=[])
    with pytest.raises(ValueError, match="repeats must be a whole number from 1 to 50"):
        probe.measure_peak("cpu", repeats=0)


def test_timeout_raises_probe_error() -> None:
    with pytest.raises(probe.ProbeError, match="longer than 0.5 s and was stopped; raise timeout_s, or probe fewer"):
        probe.measure_peak("cpu", size=256, seconds=0.3, timeout_s=0.5)


@pytest.mark.slow
def test_missing_gpu_is_a_probe_error() -> None:
    hw = devices.discover()
    if "gpu:0" in devices.device_choices(hw):
        pytest.skip("this machine has a usable GPU 0")
    with pytest.raises(probe.ProbeError, match=r"gpu:0 matmul probe failed: .*not available here"):
        probe.measure_peak("gpu:0", size=256, seconds=0.3)


# -- cache (measure_peak replaced by a counter) -------------------------------------------------------------------
@pytest.fixture()
def fake_measure(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []

    def fake(device: str = "cpu", **kw: Any) -> peak_cache.PeakEntry:
        calls.append({"device": device, **kw})
        return peak_cache.PeakEntry.model_validate({
            "device": device, "backend": kw.get("backend"), "dtype": kw.get("dtype", "float32"),
            "size": kw.get("size", 2048), "peak_gflops": 100.0 + len(calls), "threads": kw.get("cpu_threads"),
            "measured_at": 1000.0 + len(calls), "hardware_label": "fake"})

    monkeypatch.setattr(probe, "measure_peak", fake)
    return calls


def test_cached_peak_measures_once_then_reads_the_cache(fake_measure: list[dict[str, Any]],
                                                        isolated_store: Path) -> None:
    first = probe.cached_peak("cpu", size=256)
    second = probe.cached_peak("cpu", size=256)
    assert len(fake_measure) == 1
    assert first.from_cache is False and second.from_cache is True
    assert second.measured_at == first.measured_at and second.peak_gflops == 101.0
    cache = isolated_store.parent / "peaks.json"  # beside the store (BENCH_STORE)
    assert cache.exists()
    [key] = json.loads(cache.read_text())["peaks"]
    assert "|cpu|" in key and f"threads={_cores()}" in key and key.endswith("|tensorflow|float32")


def test_refresh_measures_again(fake_measure: list[dict[str, Any]]) -> None:
    probe.cached_peak("cpu", size=256)
    again = probe.cached_peak("cpu", size=256, refresh=True)
    assert len(fake_measure) == 2 and again.from_cache is False and again.peak_gflops == 102.0
    assert probe.cached_peak("cpu", size=256).peak_gflops == 102.0  # the higher new value replaced the old one
    assert again.probes == 2 and again.last_probe_gflops == 102.0


def test_cache_keys_separate_threads_dtype_and_backend(fake_measure: list[dict[str, Any]], tmp_path: Path) -> None:
    path = tmp_path / "peaks.json"
    probe.cached_peak("cpu", cache_path=path, size=256)
    probe.cached_peak("cpu", cpu_threads=1, cache_path=path, size=256)
    probe.cached_peak("cpu", cache_path=path, size=256, dtype="float64")
    probe.cached_peak("cpu", cache_path=path, size=256, backend="jax")
    probe.cached_peak("cpu", cpu_threads=1, cache_path=path, size=256)
    assert len(fake_measure) == 4
    assert fake_measure[1]["cpu_threads"] == 1 and fake_measure[3]["backend"] == "jax"
    assert len(json.loads(path.read_text())["peaks"]) == 4


def test_corrupt_cache_is_remeasured_and_rewritten(fake_measure: list[dict[str, Any]], tmp_path: Path) -> None:
    path = tmp_path / "peaks.json"
    path.write_text("{not json")
    result = probe.cached_peak("cpu", cache_path=path, size=256)
    assert result.from_cache is False and len(fake_measure) == 1
    assert json.loads(path.read_text())["version"] == peak_cache.CACHE_VERSION


def test_cli_reports_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert probe.main(["--device", "tpu"]) == 2
    assert "use 'cpu' or 'gpu:N'" in capsys.readouterr().err


def test_cli_prints_the_cached_peak(fake_measure: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]) -> None:
    assert probe.main(["--sizes", "256,512", "--repeats", "2"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["peak_gflops"] == 101.0 and printed["from_cache"] is False
    assert fake_measure[0]["sizes"] == [256, 512] and fake_measure[0]["repeats"] == 2


# -- the best peak, stale flags and where a peak came from -----------------------------------------------------------
def _measured(gflops: float, at: float = 1.75e9, **extra: Any) -> dict[str, Any]:
    return {"device": "cpu", "peak_gflops": gflops, "measured_at": at, "sizes": [1024, 2048, 4096], "repeats": 3,
            "conditions": {"others_cpu_percent": 37.4, "busy_before_percent": 50.0, "load_avg_1m": 1.2}, **extra}


def _entry(gflops: float, at: float = 1.75e9, **extra: Any) -> peak_cache.PeakEntry:
    return peak_cache.PeakEntry.model_validate(_measured(gflops, at, **extra))


def test_a_lower_new_probe_does_not_replace_the_best() -> None:
    best = peak_cache.keep_best(None, _entry(204.0, at=1.0))
    assert best.peak_gflops == 204.0 and best.probes == 1 and best.stale is False
    busy = peak_cache.keep_best(best, _entry(105.1, at=2.0))  # a probe on a busy machine: lower
    assert busy.peak_gflops == 204.0 and busy.measured_at == 1.0, "the best measurement and its date are kept"
    assert busy.probes == 2 and busy.last_probe_gflops == 105.1 and busy.last_probe_at == 2.0
    higher = peak_cache.keep_best(busy, _entry(230.0, at=3.0))
    assert higher.peak_gflops == 230.0 and higher.measured_at == 3.0 and higher.probes == 3


def test_a_run_that_beats_the_peak_flags_it_and_the_next_read_measures_again(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = tmp_path / "peaks.json"
    results = iter([_entry(105.1), _entry(204.0)])
    calls: list[dict[str, Any]] = []

    def fake(device: str = "cpu", **kw: Any) -> peak_cache.PeakEntry:
        calls.append(kw)
        return next(results)

    monkeypatch.setattr(probe, "measure_peak", fake)
    assert probe.cached_peak("cpu", cache_path=path).peak_gflops == 105.1
    assert peak_cache.mark_stale("cpu", 100.0, cache_path=path) is False, "below the peak: nothing to flag"
    assert peak_cache.mark_stale("cpu", 128.6, run_id=7, cache_path=path) is True
    assert peak_cache.mark_stale("cpu", 130.0, cache_path=path) is False, "already flagged"
    flagged = peak_cache.lookup("cpu", cache_path=path)
    assert flagged is not None and flagged.stale is True
    assert flagged.beaten_by == peak_cache.BeatenBy(gflops=128.6, run_id=7)
    [written] = json.loads(path.read_text())["peaks"].values()
    assert written["beaten_by"] == {"gflops": 128.6, "run_id": 7}, "written back as it was read, with the flag"
    again = probe.cached_peak("cpu", cache_path=path)  # a stale entry is not served: it is measured again
    assert len(calls) == 2 and again.from_cache is False
    assert again.peak_gflops == 204.0 and again.stale is False and again.beaten_by is None
    [written] = json.loads(path.read_text())["peaks"].values()
    assert "beaten_by" not in written and "stale_since" not in written and written["stale"] is False
    assert peak_cache.mark_stale("gpu:0", 1e6, cache_path=path) is False, "never measured: nothing to flag"


def test_a_cache_of_single_size_probes_is_not_trusted(fake_measure: list[dict[str, Any]], tmp_path: Path) -> None:
    path = tmp_path / "peaks.json"
    key = peak_cache.cache_key("cpu", cpu_threads=None, backend="tensorflow", dtype="float32")
    path.write_text(json.dumps({"version": 1, "peaks": {key + "|size=2048": _measured(105.1)}}))
    assert peak_cache.lookup("cpu", cache_path=path, backend="tensorflow") is None
    assert probe.cached_peak("cpu", cache_path=path, backend="tensorflow").from_cache is False
    assert len(fake_measure) == 1


def test_describe_says_sizes_repeats_date_and_conditions() -> None:
    text = peak_cache.describe(_entry(204.0))
    assert text.startswith("best of 1024², 2048², 4096² × 3 repeats, measured 20")
    assert text.endswith("while other processes used 37 % of the CPU")
    assert peak_cache.describe(peak_cache.PeakEntry(peak_gflops=1.0)) == "matmul", "an entry without its details says only what it is"


@pytest.mark.slow
def test_the_probe_child_ends_with_the_process_that_started_it() -> None:
    """A server stopped mid-probe (a test's, or one killed) takes its probe child with it: the child watches its
    parent (bench.hardware.lifetime) and exits, instead of measuring on unseen beside the next run."""
    import psutil

    params = {"device": "cpu", "backend": "tensorflow", "cpu_threads": 1, "sizes": [4096] * 20, "repeats": 20,
              "dtype": "float32", "seconds": 60.0}
    # the parent starts the child as the probe does (its environment names the parent) and ends at once, before the
    # child has even started watching it
    parent = ("import os, subprocess, sys\n"
              "from bench.hardware import lifetime\n"
              "child = subprocess.Popen([sys.executable, '-m', 'bench.hardware.probe', '--child', sys.argv[1]],\n"
              "                         env={**os.environ, **lifetime.parent_env()})\n"
              "print(child.pid, flush=True)\n")
    done = subprocess.run([sys.executable, "-c", parent, json.dumps(params)], capture_output=True, text=True,
                          timeout=60, cwd=Path(__file__).resolve().parents[2])
    pid = int(done.stdout.split()[0])
    try:
        child = psutil.Process(pid)
    except psutil.NoSuchProcess:
        pytest.fail("the child ended before its parent: nothing was checked (give it more to measure)")
    try:
        child.wait(timeout=15)
    except psutil.TimeoutExpired:
        child.kill()
        pytest.fail("the probe child outlived its parent by 15 s")


def test_the_childs_answer_is_read_as_a_peak_or_refused_naming_the_field() -> None:
    answer = probe.ProbeAnswer(peak=peak_cache.PeakEntry(peak_gflops=12.5, device="cpu"))
    read = probe._answer("cpu", answer.model_dump_json(exclude_unset=True))
    assert read.peak is not None and read.peak.to_dict() == {"peak_gflops": 12.5, "device": "cpu", "stale": False}
    with pytest.raises(probe.ProbeError, match=r"unusable result: the matmul probe's result\.peak\.peak_gflops"):
        probe._answer("cpu", '{"peak": {"peak_gflops": -1}}')
    request = probe.ProbeRequest(device="cpu", backend="jax", sizes=(128,), dtype="float32", seconds=0.1)
    assert probe.ProbeRequest.model_validate_json(request.model_dump_json()) == request
