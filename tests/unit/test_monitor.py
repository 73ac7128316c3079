"""Tests for bench.hardware.monitor: the NVML wrapper, the GPU and CPU collectors and the sampler thread.

NVML is stubbed per scenario (tests/unit/fake_nvml.py), so this runs on machines without a GPU; the CPU collector is
tested against a real process tree.
"""

from __future__ import annotations

import json
import logging
import math
import subprocess
import sys
import threading
import time

import psutil
import pytest

from bench.hardware.monitor import CpuReading, GpuReading, Sample, Sampler, nvml
from bench.hardware.monitor.cpu import CpuCollector
from bench.hardware.monitor.gpu import GpuCollector, GpuUnavailable
from tests.fixtures import fresh_nvml  # noqa: F401 - the fixture, used by name
from tests.polling import wait_for

try:
    from tests.unit import fake_nvml
except ImportError:  # tests/unit is not a package on sys.path: import the sibling module directly
    import fake_nvml  # type: ignore[no-redef]

MEASUREMENTS = (
    "util_percent", "mem_util_percent", "mem_used_mib", "mem_total_mib", "power_w", "temp_c", "sm_clock_mhz",
    "power_limit_w", "throttle_reasons", "energy_j", "sm_active_percent", "sm_occupancy_percent",
    "tensor_active_percent", "fp32_active_percent", "fp16_active_percent", "dram_active_percent",
)


pytestmark = pytest.mark.usefixtures("fresh_nvml")


def assert_all_missing(reading: GpuReading) -> None:
    for name in MEASUREMENTS:
        assert getattr(reading, name) is None, f"{name} should be None (missing), got {getattr(reading, name)!r}"


# --------------------------------------------------------------------------------------------------- nvml wrapper
def test_real_nvml_on_this_machine_gives_reason_or_gpus() -> None:
    ok, reason = nvml.available()
    if ok:
        assert reason == ""
        assert nvml.query("nvmlDeviceGetCount", default=0) >= 1
    else:
        assert reason, "an unusable NVML must come with a reason"
        assert nvml.query("nvmlDeviceGetCount", default="sentinel") == "sentinel"


def test_missing_driver_reason_and_init_tried_once() -> None:
    fake = fake_nvml.missing()
    nvml.set_module(fake)
    ok, reason = nvml.available()
    assert not ok
    assert reason.startswith("No NVIDIA driver found")
    assert nvml.query("nvmlDeviceGetCount", default=-1) == -1
    nvml.available()
    assert fake.init_calls == 1


def test_no_gpu_reason() -> None:
    nvml.set_module(fake_nvml.no_gpu())
    ok, reason = nvml.available()
    assert not ok
    assert "NVML found no GPU" in reason


def test_lazy_init_happens_once_across_threads() -> None:
    fake = fake_nvml.two_gpus()
    nvml.set_module(fake)
    assert fake.init_calls == 0, "set_module must not initialise"
    results: list[tuple[bool, str]] = []
    threads = [threading.Thread(target=lambda: results.append(nvml.available())) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    assert results == [(True, "")] * 8
    assert fake.init_calls == 1


def test_query_turns_nvml_errors_into_default_and_decodes_bytes() -> None:
    fake = fake_nvml.not_supported()
    nvml.set_module(fake)
    handle = nvml.query("nvmlDeviceGetHandleByIndex", 0)
    assert nvml.query("nvmlDeviceGetName", handle) == "NVIDIA H100 80GB HBM3"  # fake returns bytes
    assert nvml.query("nvmlDeviceGetPowerUsage", handle, default="n/a") == "n/a"
    assert nvml.query("nvmlDeviceGetHandleByIndex", 9) is None  # InvalidArgument
    assert nvml.query("nvmlFunctionThatDoesNotExist", default=7) == 7


def test_reset_shuts_nvml_down() -> None:
    fake = fake_nvml.two_gpus()
    nvml.set_module(fake)
    assert nvml.available() == (True, "")
    nvml.reset()
    assert fake.shutdown_calls == 1
    assert nvml.NVML_MODULE is None


# ------------------------------------------------------------------------------------------------- GPU collector
def test_gpu_collector_two_gpus_distinct_readings() -> None:
    nvml.set_module(fake_nvml.two_gpus())
    readings = GpuCollector().collect()
    assert [r.index for r in readings] == [0, 1]
    first, second = readings
    assert first.name == "NVIDIA H100 80GB HBM3"
    assert (first.util_percent, second.util_percent) == (40.0, 90.0)
    assert (first.mem_util_percent, second.mem_util_percent) == (15.0, 45.0)
    assert (first.mem_used_mib, second.mem_used_mib) == (10 * 1024.0, 30 * 1024.0)
    assert first.mem_total_mib == 80 * 1024.0
    assert (first.power_w, second.power_w) == (150.0, 450.0)
    assert (first.temp_c, second.temp_c) == (45.0, 65.0)
    assert (first.sm_clock_mhz, second.sm_clock_mhz) == (1500.0, 1980.0)


def test_gpu_collector_selected_index_and_bad_index() -> None:
    nvml.set_module(fake_nvml.two_gpus())
    assert [r.index for r in GpuCollector([1]).collect()] == [1]
    with pytest.raises(ValueError, match="GPU index 5 does not exist"):
        GpuCollector([5])


def test_gpu_collector_not_supported_gives_none_for_those_fields_only() -> None:
    nvml.set_module(fake_nvml.not_supported())
    for reading in GpuCollector().collect():
        assert reading.power_w is None
        assert reading.sm_clock_mhz is None
        assert reading.util_percent is not None and reading.util_percent > 0
        assert reading.mem_used_mib is not None and reading.mem_used_mib > 0
        assert reading.temp_c is not None and reading.temp_c > 0


def test_gpu_collector_gpu_lost_mid_run_gives_none_and_never_raises() -> None:
    fake = fake_nvml.gpu_lost_after(1000)
    nvml.set_module(fake)
    collector = GpuCollector()
    assert collector.collect()[0].util_percent == 40.0
    fake.lose_gpus_now()
    for _ in range(3):
        readings = collector.collect()
        assert [r.index for r in readings] == [0, 1]
        for reading in readings:
            assert_all_missing(reading)


def test_gpu_collector_lost_before_handles_gives_none() -> None:
    nvml.set_module(fake_nvml.gpu_lost_after(0))
    readings = GpuCollector().collect()
    assert len(readings) == 2
    for reading in readings:
        assert reading.name is None
        assert_all_missing(reading)


def test_gpu_collector_missing_driver_raises_with_reason() -> None:
    nvml.set_module(fake_nvml.missing())
    with pytest.raises(GpuUnavailable, match="No NVIDIA driver found") as info:
        GpuCollector()
    assert info.value.reason.startswith("No NVIDIA driver found")


# ------------------------------------------------------------------------------------------------------- sampler
def run_sampler(n_samples: int, interval_s: float = 0.01, **kwargs: object) -> tuple[Sampler, list[Sample]]:
    """Run a Sampler in its thread until ``n_samples`` were delivered; return it (stopped) and the samples."""
    samples: list[Sample] = []
    sampler = Sampler(interval_s, on_sample=samples.append, **kwargs)  # type: ignore[arg-type]
    sampler.start()
    try:
        wait_for(lambda: len(samples) >= n_samples, what=f"{n_samples} samples")
    finally:
        sampler.stop()
    return sampler, list(samples)


def test_sampler_two_gpus() -> None:
    nvml.set_module(fake_nvml.two_gpus())
    sampler, samples = run_sampler(3)
    assert sampler.gpu_reason is None
    assert all(len(s.gpus) == 2 for s in samples)
    assert samples[-1].gpus[1].util_percent == 90.0
    assert [s.t_s for s in samples] == sorted(s.t_s for s in samples)


def test_sampler_gpu_indices() -> None:
    nvml.set_module(fake_nvml.two_gpus())
    sample = Sampler(gpu_indices=[1]).sample_once()
    assert [g.index for g in sample.gpus] == [1]


def test_sampler_not_supported() -> None:
    nvml.set_module(fake_nvml.not_supported())
    sample = Sampler().sample_once()
    assert all(g.power_w is None and g.sm_clock_mhz is None for g in sample.gpus)
    assert all(g.util_percent is not None for g in sample.gpus)


def test_sampler_goes_on_after_gpu_lost_mid_run() -> None:
    # building the collector makes 3 per-device calls per GPU (handle, name, GPM support), each sample 8 per GPU
    # (no GPM on these): the first 3 samples are complete, the GPUs are lost from the 4th on
    nvml.set_module(fake_nvml.gpu_lost_after(2 * 3 + 3 * 2 * 8))
    _, samples = run_sampler(12)
    present = [s.gpus[1].sm_clock_mhz is not None for s in samples]
    assert present[:3] == [True] * 3, "the first samples must have readings"
    first_lost = present.index(False)
    assert first_lost == 3
    assert not any(present[first_lost:]), "once lost, the GPU stays None"
    assert len(samples) - first_lost >= 5, "sampling must go on after the loss"
    for sample in samples[first_lost:]:
        assert [g.index for g in sample.gpus] == [0, 1]
        for reading in sample.gpus:
            assert_all_missing(reading)
        assert sample.cpu_percent is None or 0.0 <= sample.cpu_percent <= 100.0


def test_sampler_without_driver_logs_once_and_samples_cpu(caplog: pytest.LogCaptureFixture) -> None:
    nvml.set_module(fake_nvml.missing())
    with caplog.at_level(logging.INFO, logger="bench.hardware.monitor.sampler"):
        sampler, samples = run_sampler(6, interval_s=0.02)
    skipped = [r for r in caplog.records if "GPU metrics are skipped" in r.getMessage()]
    assert len(skipped) == 1
    assert "No NVIDIA driver found" in skipped[0].getMessage()
    assert sampler.gpu_reason is not None and sampler.gpu_reason.startswith("No NVIDIA driver found")
    assert all(s.gpus == () for s in samples)
    measured = [s for s in samples if s.cpu_percent is not None]
    assert measured, "the CPU must still be sampled"
    assert all(len(s.cpu_per_core) == psutil.cpu_count() for s in measured)
    assert all(s.ram_used_mib is not None and s.ram_used_mib > 0 for s in samples)


def test_sampler_monitor_gpus_off_does_not_touch_nvml(caplog: pytest.LogCaptureFixture) -> None:
    fake = fake_nvml.two_gpus()
    nvml.set_module(fake)
    with caplog.at_level(logging.INFO, logger="bench.hardware.monitor.sampler"):
        sampler = Sampler(monitor_gpus=False)
    assert sampler.sample_once().gpus == ()
    assert sampler.gpu_reason is not None
    assert fake.init_calls == 0
    assert not [r for r in caplog.records if "skipped" in r.getMessage()]


def test_sampler_stop_is_immediate_with_long_interval() -> None:
    nvml.set_module(fake_nvml.missing())
    first = threading.Event()
    sampler = Sampler(10.0, on_sample=lambda _s: first.set())
    sampler.start()
    assert first.wait(5), "the first sample is taken at once"
    thread = next(t for t in threading.enumerate() if t.name == "bench-sampler")
    assert thread.daemon
    started_s = time.monotonic()
    sampler.stop()
    assert time.monotonic() - started_s < 0.3
    assert not thread.is_alive()
    assert not sampler.is_running


def test_on_sample_exceptions_do_not_kill_the_thread(caplog: pytest.LogCaptureFixture) -> None:
    nvml.set_module(fake_nvml.missing())
    calls: list[Sample] = []

    def explode(sample: Sample) -> None:
        calls.append(sample)
        raise RuntimeError("consumer bug")

    sampler = Sampler(0.01, on_sample=explode)
    with caplog.at_level(logging.DEBUG, logger="bench.hardware.monitor.sampler"):
        sampler.start()
        try:
            wait_for(lambda: len(calls) >= 5, what="5 on_sample calls")
            assert sampler.is_running
        finally:
            sampler.stop()
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1, "the first failure is logged with its traceback, later ones quietly"
    assert errors[0].exc_info is not None


@pytest.mark.parametrize("interval_s", [0, -1, math.nan])
def test_sampler_rejects_non_positive_interval(interval_s: float) -> None:
    with pytest.raises(ValueError, match="interval_s must be a positive"):
        Sampler(interval_s, monitor_gpus=False)


def test_sampler_cannot_start_twice_and_stop_is_idempotent() -> None:
    sampler = Sampler(5, monitor_gpus=False)
    sampler.start()
    try:
        with pytest.raises(RuntimeError, match="already started"):
            sampler.start()
    finally:
        sampler.stop()
        sampler.stop()
    Sampler(5, monitor_gpus=False).stop()  # never started: no error


def test_sampler_t_s_counts_from_start_with_injected_clock() -> None:
    now = [100.0]
    sampler = Sampler(1, monitor_gpus=False, clock=lambda: now[0])
    now[0] = 200.0
    sampler.start()
    sampler.stop()
    now[0] = 203.5
    assert sampler.sample_once().t_s == pytest.approx(3.5)


def test_sample_dict_round_trip_through_json() -> None:
    nvml.set_module(fake_nvml.not_supported())
    sample = Sampler(monitor_gpus=True).sample_once()
    sample = sample.model_copy(update={"t_s": 1.25, "process_cpu_percent": None})
    data = json.loads(json.dumps(sample.to_dict()))
    assert set(data) == {
        "t_s", "cpu_percent", "cpu_per_core", "process_cpu_percent", "process_rss_mib", "ram_used_mib", "gpus", "cpu_energy_j",
    }
    assert data["gpus"][0]["power_w"] is None
    assert Sample.model_validate(data) == sample


def test_sample_from_dict_tolerates_unknown_and_missing_gpu_keys() -> None:
    data = {"t_s": 2, "cpu_percent": 50.0, "gpus": [{"index": 0, "util_percent": 7, "sm_active": 0.5}]}
    sample = Sample.model_validate(data)
    assert sample.gpus[0].util_percent == 7
    assert sample.gpus[0].power_w is None
    assert sample.cpu_per_core is None and sample.ram_used_mib is None
    assert sample.gpus[0].extra == {"sm_active": 0.5}, "a reading this version does not know is kept, not dropped"


# --------------------------------------------------------------------------------------------------- CPU collector
def test_cpu_collector_host_readings() -> None:
    collector = CpuCollector()
    first = collector.collect()
    assert first.cpu_percent is None and first.cpu_per_core == [], "no interval yet: missing, not 0"
    reading = wait_for(lambda: (r := collector.collect()).cpu_percent is not None and r, 10,
                       "a reading over an interval")
    assert isinstance(reading, CpuReading)
    assert len(reading.cpu_per_core) == psutil.cpu_count()
    assert all(0.0 <= p <= 100.0 for p in reading.cpu_per_core)
    assert reading.cpu_percent == pytest.approx(sum(reading.cpu_per_core) / len(reading.cpu_per_core))
    assert reading.ram_used_mib is not None and reading.ram_used_mib > 0
    assert reading.process_cpu_percent is None and reading.process_rss_mib is None


def test_cpu_collector_unknown_pid_is_none() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    reading = CpuCollector(proc.pid).collect()  # reaped: the pid no longer exists
    assert reading.process_cpu_percent is None and reading.process_rss_mib is None


# top process waits while its child waits while the grandchild spins: the CPU can only come from the descendants
_TREE_SCRIPT = r"""
import signal, subprocess, sys, time
depth = int(sys.argv[1])
if depth == 0:
    end = time.monotonic() + 30
    while time.monotonic() < end:
        pass
else:
    subprocess.run([sys.executable, "-c", sys.argv[2], str(depth - 1), sys.argv[2]])
    signal.pause()  # outlive the child: the test reads the tree after killing the leaf (the test ends us)
"""


def test_cpu_collector_sums_the_whole_process_tree() -> None:
    top = subprocess.Popen([sys.executable, "-c", _TREE_SCRIPT, "2", _TREE_SCRIPT])
    root = psutil.Process(top.pid)
    try:
        wait_for(lambda: len(root.children(recursive=True)) >= 2, timeout_s=10, what="the grandchild to start")
        leaf = root.children(recursive=True)[-1]
        collector = CpuCollector()
        collector.set_pid(top.pid)
        leaf.cpu_percent(None)
        spun_s = sum(leaf.cpu_times()[:2])
        # the window is the grandchild's work, not a clock: half a second of its CPU, however loaded the host
        wait_for(lambda: sum(leaf.cpu_times()[:2]) - spun_s >= 0.5, 20, "the grandchild to spin for 0.5 s of CPU")
        reading = collector.collect()
        leaf_percent = leaf.cpu_percent(None)
        # the spinning grandchild gets a whole core on an idle machine; other load on the host can squeeze it, so
        # compare with what psutil measures for the grandchild alone over the same second
        assert leaf_percent > 5, f"the busy grandchild barely ran ({leaf_percent} %): is the host overloaded?"
        assert reading.process_cpu_percent is not None, reading
        assert reading.process_cpu_percent >= 0.8 * leaf_percent, (reading, leaf_percent)
        if leaf_percent > 60:
            assert reading.process_cpu_percent > 20, reading
        assert reading.process_rss_mib is not None and reading.process_rss_mib > root.memory_info().rss / 2**20

        leaf.kill()
        leaf.wait(5)
        after_leaf = collector.collect()  # a vanished descendant is skipped, the rest still counted
        assert after_leaf.process_rss_mib is not None and after_leaf.process_rss_mib > 0
    finally:
        for proc in reversed([root, *root.children(recursive=True)]):
            try:
                proc.kill()
            except psutil.NoSuchProcess:
                pass
    wait_for(lambda: root.status() == psutil.STATUS_ZOMBIE, what="the killed worker to become a zombie")
    zombie = collector.collect()  # killed but not yet reaped
    assert zombie.process_cpu_percent is None and zombie.process_rss_mib is None
    top.wait(5)
    gone = collector.collect()
    assert gone.process_cpu_percent is None and gone.process_rss_mib is None
    assert gone.ram_used_mib is not None


def test_cpu_collector_new_pid_is_primed_not_zero() -> None:
    collector = CpuCollector()
    collector.set_pid(psutil.Process().pid)
    end = time.monotonic() + 0.3
    while time.monotonic() < end:  # keep this process busy so the delta is clearly above 0
        pass
    reading = collector.collect()
    assert reading.process_cpu_percent is not None and reading.process_cpu_percent > 0
