"""The real GPU path, on a machine with an NVIDIA GPU: placement, NVML sampling during training, a CPU-vs-GPU pair.

Skipped with the reason where no GPU is usable (CI has none; the fake-NVML tests in test_monitor.py and test_jobs.py
cover the logic there). On a GPU machine, run under the backend to check: ``KERAS_BACKEND=jax pytest
tests/unit/test_gpu_real.py`` (torch and tensorflow likewise).
"""

from __future__ import annotations

import pytest

from bench.analysis import compare
from bench.hardware import devices
from bench.vocab.config import RunConfig
from bench.runs.jobs import JobManager

pytestmark = pytest.mark.slow  # every test here trains a real model


@pytest.fixture(scope="module")
def gpu_hardware() -> devices.Hardware:
    hw = devices.discover()
    if hw.gpu_reason is not None or not hw.gpus:
        pytest.skip(f"no usable NVIDIA GPU here: {hw.gpu_reason}")
    probe = devices.probe_framework(hw.framework, timeout_s=120)
    if not any(d.upper().startswith("GPU") for d in probe.devices):
        pytest.skip(f"{hw.framework} here sees no GPU ({probe.error or probe.devices})")
    return hw


def _config(device: str, hw: devices.Hardware) -> RunConfig:
    # Large enough that the GPU is busy for whole sample periods; jit where the backend wants it (JAX runs eagerly
    # without it, op by op).
    return RunConfig(dataset="synthetic-mnist", model="mlp", size="l", epochs=3, batch_size=512, limit_samples=20000,
                     device=device, backend=hw.framework, jit_compile=hw.framework != "torch",
                     sample_interval_s=0.2)


def test_a_gpu_run_trains_on_the_gpu_and_nvml_sees_it_busy(gpu_hardware: devices.Hardware) -> None:
    hw = gpu_hardware
    manager = JobManager(None, hardware=hw)
    snap = manager.wait(manager.submit(_config("gpu:0", hw)), timeout_s=280)
    assert snap.status == "finished", snap.error
    placement = (snap.info.placement or "").lower()
    assert "gpu" in placement or "cuda" in placement, placement
    assert snap.samples, "the sampler recorded nothing"
    readings = [g for s in snap.samples for g in s.gpus or () if g.index == hw.gpus[0].index]
    assert readings, "no NVML reading of the training GPU"
    assert all(r.mem_total_mib and r.mem_total_mib > 0 for r in readings)
    busy = [r.util_percent for r in readings if r.util_percent is not None]
    assert busy and max(busy) > 0, f"NVML never saw the GPU busy while it trained: {busy}"
    assert snap.summary.mean_gpu_util_percent is not None


def test_cpu_and_gpu_runs_pair_into_a_headline(gpu_hardware: devices.Hardware) -> None:
    hw = gpu_hardware
    manager = JobManager(None, hardware=hw)
    snaps = [manager.wait(manager.submit(_config(d, hw)), timeout_s=280) for d in ("cpu", "gpu:0")]
    assert [s.status for s in snaps] == ["finished", "finished"], [s.error for s in snaps]
    assert "cpu" in (snaps[0].info.placement or "").lower()
    result = compare.comparison([s.record() for s in snaps])
    assert result["speedup_median"] is not None and result["speedup_median"] > 0
    assert result["speedup_min"] <= result["speedup_median"] <= result["speedup_max"]
