"""What the GPU really did, from a scripted NVML: GPM activity on a Hopper GPU and its absence (with the reason) on an
older one, power and its limit, clock-event (throttle) reasons in words, and NVML's energy counter."""

from __future__ import annotations


import pynvml
import pytest

from bench.hardware.monitor import Sampler, nvml
from bench.hardware.monitor import gpm
from bench.hardware.monitor.gpm import GPM_FIELDS, UNSUPPORTED_REASON, GpmReader
from bench.hardware.monitor.gpu import GpuCollector, throttle_words
from tests.fixtures import fresh_nvml  # noqa: F401 - the fixture, used by name

try:
    from tests.unit import fake_nvml
except ImportError:  # tests/unit is not a package on sys.path
    import fake_nvml  # type: ignore[no-redef]

GPM_KEYS = tuple(GPM_FIELDS)


pytestmark = pytest.mark.usefixtures("fresh_nvml")


def test_hopper_gpm_figures_come_from_two_samples() -> None:
    fake = fake_nvml.hopper_with_gpm()
    nvml.set_module(fake)
    collector = GpuCollector()
    assert collector.gpm_reasons == {}
    first = collector.collect()[0]
    assert all(getattr(first, key) is None for key in GPM_KEYS), "one sample is no interval yet"
    second = collector.collect()[0]
    assert second.sm_active_percent == 62.5 and second.sm_occupancy_percent == 31.0
    assert second.tensor_active_percent == 18.0 and second.dram_active_percent == 44.0
    assert (second.fp32_active_percent, second.fp16_active_percent) == (12.0, 3.5)
    fake.gpus[0].gpm[pynvml.NVML_GPM_METRIC_SM_UTIL] = 97.0  # the next interval is busier
    assert collector.collect()[0].sm_active_percent == 97.0
    collector.close()
    assert fake.gpm_frees == 2 and fake.gpm_samples == {}, "both GPM buffers are freed"


def test_a_metric_the_gpu_does_not_give_is_none_alone() -> None:
    fake = fake_nvml.hopper_with_gpm()
    fake.gpus[0].gpm_unsupported_metrics = frozenset({pynvml.NVML_GPM_METRIC_FP16_UTIL})
    nvml.set_module(fake)
    collector = GpuCollector()
    collector.collect()
    reading = collector.collect()[0]
    assert reading.fp16_active_percent is None
    assert reading.sm_active_percent == 62.5


def test_a_failed_gpm_sample_restarts_the_interval() -> None:
    fake = fake_nvml.hopper_with_gpm()
    nvml.set_module(fake)
    collector = GpuCollector()
    collector.collect()
    fake.unsupported.add("nvmlGpmSampleGet")
    assert collector.collect()[0].sm_active_percent is None
    fake.unsupported.discard("nvmlGpmSampleGet")
    assert collector.collect()[0].sm_active_percent is None, "no interval across the failed sample"
    assert collector.collect()[0].sm_active_percent == 62.5


def test_older_gpu_has_no_gpm_and_says_why_but_keeps_energy_and_power() -> None:
    fake = fake_nvml.older_without_gpm()
    nvml.set_module(fake)
    collector = GpuCollector()
    assert collector.gpm_reasons == {"gpu:0": UNSUPPORTED_REASON}
    readings = [collector.collect()[0] for _ in range(3)]
    for reading in readings:
        assert all(getattr(reading, key) is None for key in GPM_KEYS)
        assert (reading.power_w, reading.power_limit_w) == (200.0, 300.0)
        assert reading.throttle_reasons == ()
    energies = [r.energy_j for r in readings]
    assert energies == sorted(energies) and energies[0] < energies[-1], "the energy counter only grows"
    assert fake.gpm_samples == {}, "no GPM buffer is allocated on a GPU without GPM"


def test_gpm_functions_missing_from_nvml_give_a_reason() -> None:
    fake = fake_nvml.hopper_with_gpm()
    fake.unsupported.add("nvmlGpmSampleAlloc")
    nvml.set_module(fake)
    handle = nvml.query("nvmlDeviceGetHandleByIndex", 0)
    reader = GpmReader(handle)
    assert not reader.supported and "allocate" in (reader.reason or "")
    assert reader.read() == gpm.Activity() and all(getattr(reader.read(), key) is None for key in GPM_KEYS)


def test_no_energy_counter_gives_none_and_power_still_read() -> None:
    nvml.set_module(fake_nvml.no_energy_counter())
    reading = GpuCollector().collect()[0]
    assert reading.energy_j is None
    assert reading.power_w == 180.0 and reading.power_limit_w == 250.0


def test_throttling_gpu_names_its_reasons() -> None:
    nvml.set_module(fake_nvml.throttling())
    reading = GpuCollector().collect()[0]
    assert reading.throttle_reasons == ("power cap", "thermal slowdown")
    assert reading.sm_clock_mhz == 1095.0 and reading.power_w == 699.0


def test_old_driver_reasons_come_from_the_throttle_function() -> None:
    fake = fake_nvml.throttling()
    fake.unsupported.add("nvmlDeviceGetCurrentClocksEventReasons")
    nvml.set_module(fake)
    assert GpuCollector().collect()[0].throttle_reasons == ("power cap", "thermal slowdown")


def test_reasons_unknown_when_neither_function_answers() -> None:
    fake = fake_nvml.throttling()
    fake.unsupported |= {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"}
    nvml.set_module(fake)
    assert GpuCollector().collect()[0].throttle_reasons is None


@pytest.mark.parametrize(("mask", "words"), [
    (0, []),
    (pynvml.nvmlClocksEventReasonGpuIdle, []),  # idle alone is not throttling
    (pynvml.nvmlClocksEventReasonGpuIdle | pynvml.nvmlClocksEventReasonHwSlowdown, ["hardware slowdown"]),
    (pynvml.nvmlClocksEventReasonHwThermalSlowdown | pynvml.nvmlClocksEventReasonHwPowerBrakeSlowdown,
     ["hardware thermal slowdown", "power brake slowdown"]),
    (0x8000, ["other reason 0x8000"]),
    (None, None),
])
def test_throttle_words(mask: int | None, words: list[str] | None) -> None:
    assert throttle_words(mask) == (tuple(words) if words is not None else None)


def test_sampler_on_hopper_reports_gpm_and_energy_in_each_sample() -> None:
    nvml.set_module(fake_nvml.hopper_with_gpm())
    sampler = Sampler(0.1, monitor_gpus=True)
    assert sampler.gpm_reasons == {}
    first, second = sampler.sample_once(), sampler.sample_once()
    sampler.stop()
    data = second.to_dict()["gpus"][0]
    assert data["sm_active_percent"] == 62.5 and data["tensor_active_percent"] == 18.0
    assert data["energy_j"] > first.gpus[0].energy_j
    assert data["throttle_reasons"] == []
