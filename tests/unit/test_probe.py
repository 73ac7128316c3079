"""The matmul peak probe and its cache: bench/probe.py (real subprocess measurements kept tiny)."""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from bench import devices, probe


def _cores() -> int:
    return len(os.sched_getaffinity(0))


@pytest.fixture(scope="module")
def measured() -> dict[str, Any]:
    """One real all-cores probe, with whether TensorFlow/Keras were loaded in THIS process before and after."""
    before = {name: name in sys.modules for name in ("tensorflow", "keras")}
    result = probe.measure_peak("cpu", size=256, seconds=0.3)
    after = {name: name in sys.modules for name in ("tensorflow", "keras")}
    return {"result": result, "before": before, "after": after}


def test_measure_peak_cpu_is_positive_and_sane(measured: dict[str, Any]) -> None:
    result = measured["result"]
    assert result["device"] == "cpu"
    assert result["size"] == 256 and result["dtype"] == "float32"
    assert result["backend"] == "tensorflow"
    assert math.isfinite(result["peak_gflops"]) and 0 < result["peak_gflops"] < 10_000
    assert 0 < result["mean_gflops"] <= result["peak_gflops"] * 1.0001
    assert result["repeats"] >= 1 and result["seconds"] >= 0.3
    assert result["threads"] == _cores()
    assert "CPU" in result["placement"].upper()
    assert result["hardware_label"].endswith(f"({_cores()} of {_cores()} cores)")
    assert result["measured_at"] > 1.6e9
    json.dumps(result)  # cacheable as is


def test_probe_never_imports_the_framework_here(measured: dict[str, Any]) -> None:
    if measured["before"]["tensorflow"] or measured["before"]["keras"]:
        pytest.skip("an earlier test in this process imported TensorFlow/Keras, so this process cannot show the probe did not")
    assert measured["after"] == {"tensorflow": False, "keras": False}


def test_one_thread_probe_is_pinned_and_positive(measured: dict[str, Any]) -> None:
    affinity = os.sched_getaffinity(0)
    result = probe.measure_peak("cpu", cpu_threads=1, size=256, seconds=0.3)
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


def test_timeout_raises_probe_error() -> None:
    with pytest.raises(probe.ProbeError, match="longer than 0.5 s and was stopped; raise timeout_s"):
        probe.measure_peak("cpu", size=256, seconds=0.3, timeout_s=0.5)


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

    def fake(device: str = "cpu", **kw: Any) -> dict[str, Any]:
        calls.append({"device": device, **kw})
        return {"device": device, "backend": kw.get("backend"), "dtype": kw.get("dtype", "float32"),
                "size": kw.get("size", 2048), "peak_gflops": 100.0 + len(calls), "threads": kw.get("cpu_threads"),
                "measured_at": 1000.0 + len(calls), "hardware_label": "fake"}

    monkeypatch.setattr(probe, "measure_peak", fake)
    return calls


def test_cached_peak_measures_once_then_reads_the_cache(fake_measure: list[dict[str, Any]],
                                                        isolated_store: Path) -> None:
    first = probe.cached_peak("cpu", size=256)
    second = probe.cached_peak("cpu", size=256)
    assert len(fake_measure) == 1
    assert first["from_cache"] is False and second["from_cache"] is True
    assert second["measured_at"] == first["measured_at"] and second["peak_gflops"] == 101.0
    cache = isolated_store.parent / "peaks.json"  # beside the store (BENCH_STORE)
    assert cache.exists()
    [key] = json.loads(cache.read_text())["peaks"]
    assert "|cpu|" in key and f"threads={_cores()}" in key and "|tensorflow|float32|size=256" in key


def test_refresh_measures_again(fake_measure: list[dict[str, Any]]) -> None:
    probe.cached_peak("cpu", size=256)
    again = probe.cached_peak("cpu", size=256, refresh=True)
    assert len(fake_measure) == 2 and again["from_cache"] is False and again["peak_gflops"] == 102.0
    assert probe.cached_peak("cpu", size=256)["peak_gflops"] == 102.0  # the refreshed value replaced the old one


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
    assert result["from_cache"] is False and len(fake_measure) == 1
    assert json.loads(path.read_text())["version"] == probe.CACHE_VERSION


def test_cli_reports_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert probe.main(["--device", "tpu"]) == 2
    assert "use 'cpu' or 'gpu:N'" in capsys.readouterr().err


def test_cli_prints_the_cached_peak(fake_measure: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]) -> None:
    assert probe.main(["--size", "256"]) == 0
    assert json.loads(capsys.readouterr().out)["peak_gflops"] == 101.0
