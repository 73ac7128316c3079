"""Train and System on a scripted Mac and a scripted AMD machine, System on a scripted Intel GPU and TPU VM
(tests/unit/scripted_gpus.py): the GPU offered, a replayed run on it sampled from the machine's own source (utilization
and memory from ioreg or amdgpu sysfs, power where the source has it, the source named), and the run's record saying
where its variables lived."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.unit import scripted_gpus as sg

ROOT = Path(__file__).resolve().parents[2]
# machine, its source, where the replayed run's variables lived, the utilization it reads, the device as pages show it
MACHINES = {"apple": (sg.mac, "IOAccelerator (ioreg)", "mps:0", 87.0, "mps:0"),
            "amd": (sg.amd_sysfs, "amdgpu sysfs", "cuda:0", 63.0, "gpu:0"),
            "intel": (sg.intel, "Level Zero Sysman (pyzes)", "xpu:0", 68.0, "gpu:0"),
            "tpu": (sg.tpu, "libtpu monitoring (tpumonitoring)", "tpu:0", 100.0, "gpu:0")}


def app(path: str) -> AppTest:
    return AppTest.from_file(str(ROOT / path), default_timeout=30)


def _text(at: AppTest) -> str:
    return "\n".join([m.value for m in at.markdown] + [c.value for c in at.caption] + [i.value for i in at.info]
                     + [s.value for s in at.success]).replace("\\", "")


@pytest.mark.parametrize("vendor", ["apple", "amd", "intel", "tpu"])
def test_the_system_page_names_the_source_and_what_its_utilization_means(monkeypatch: pytest.MonkeyPatch,
                                                                         vendor: str) -> None:
    machine, source, *_ = MACHINES[vendor]
    with sg.use(monkeypatch, machine()):
        at = app("pages/system.py").run()
    assert not at.exception
    text = _text(at)
    assert f"GPU % comes from **{source}**" in text, text
    assert "Not measured here" in text and "GPU % is NVML's utilization" not in text
    assert any(source in t.value.to_string().replace("\\", "") for t in at.table), "the GPU table names where its readings come from"
    assert any("Yes: a GPU run is possible here." in s.value for s in at.success)


@pytest.mark.parametrize("vendor", ["apple", "amd"])
def test_a_replayed_run_on_the_scripted_gpu_is_sampled_from_its_source(monkeypatch: pytest.MonkeyPatch,
                                                                       vendor: str) -> None:
    machine, source, placement, util, shown = MACHINES[vendor]
    monkeypatch.setenv("BENCH_WORKER_TARGET", sg.WORKER_TARGET)
    monkeypatch.setenv(sg.PLACEMENT_ENV, placement)
    monkeypatch.setenv("BENCH_PRESTART", "0")
    with sg.use(monkeypatch, machine()):
        at = app("pages/train.py").run()
        assert any(o.startswith("GPU 0") for o in at.radio(key="cfg_device").options), "the GPU is offered"
        at.radio(key="cfg_device").set_value("gpu:0").run()
        at.number_input(key="cfg_epochs").set_value(2).run()
        at.number_input(key="cfg_limit").set_value(256).run()
        at.button(key="start_run").click().run()
        assert not at.exception and not at.error, [e.value for e in at.error]
        from ui import gpu_truth, live
        from ui.common import get_manager

        manager = get_manager()
        snap = manager.current()
        assert snap is not None and snap.config.device == "gpu:0"
        final = manager.wait(snap.id, timeout_s=60)
        at.run()
    assert final.status == "finished" and final.info.placement == placement
    readings = [g for s in final.samples for g in s.gpus or ()]
    assert readings and {g.source for g in readings} == {source}
    assert all(g.util_percent == util and g.mem_used_mib for g in readings)
    gpu_tile = next(t for t in live.tile_values(final) if t["label"] == "GPU")
    assert gpu_tile["value"] == f"{util:.0f} %"
    if vendor == "amd":
        assert all(g.power_w == 231.0 for g in readings), "sysfs gives the card's power"
    else:
        assert all(g.power_w is None for g in readings), "ioreg gives no power: a gap, never 0"
    assert not at.exception
    text = _text(at)
    assert f"trained on {shown}" in text.lower(), text  # the pages show the device as ui.display writes it
    assert f"GPU readings from {source}" in text
    energy_line = gpu_truth.energy_text(final.summary)
    header_lines = [line["text"] for line in live.header_data(final)["lines"]]
    assert energy_line and header_lines.count(energy_line) == 1, "the header shows the energy line, once"
    assert "Energy (median" not in text, "the ended run's panel does not draw the header's energy line again"
    energy = final.summary.energy_j_per_epoch or {}
    if vendor == "apple":  # no power on a Mac without macmon: no joules, and the reason
        assert energy["gpu:0"] is None and any("macmon-lib" in r for r in final.summary.energy_reasons.values())
    else:  # sysfs's power integrated over the samples, marked as an estimate
        assert energy["gpu:0"] and "gpu:0" in final.summary.energy_estimated
