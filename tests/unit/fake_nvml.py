"""Fake pynvml modules, one per scenario, so NVML code is tested on machines without a GPU (as gpustat's tests do).

Each factory returns a :class:`FakeNvml` exposing the pynvml functions the project uses, the NVML constants it reads,
and pynvml's REAL exception classes (``NVMLError`` and its ``NVMLError_*`` subclasses), so ``except module.NVMLError``
behaves exactly as with the real library. Inject one with ``bench.hardware.monitor.nvml.set_module(fake)``.

Scenarios: :func:`two_gpus`, :func:`not_supported`, :func:`gpu_lost_after`, :func:`missing`, :func:`no_gpu`, and for
what the GPU really did: :func:`hopper_with_gpm`, :func:`older_without_gpm`, :func:`no_energy_counter`,
:func:`throttling`. GPM is scripted with pynvml's real ctypes structures (``c_nvmlGpmMetricsGet_t``, GPM sample
pointers), so the code that fills them is the code that runs on a Hopper GPU.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from types import SimpleNamespace
from typing import Any

import pynvml

GIB = 2**30


@dataclass
class FakeGpu:
    """Static facts and current readings of one fake GPU (units as NVML returns them)."""

    name: str
    uuid: str
    mem_total_bytes: int
    mem_used_bytes: int
    util_gpu_percent: int
    util_memory_percent: int
    power_milliwatts: int
    temp_c: int
    sm_clock_mhz: int
    power_limit_milliwatts: int = 700_000
    energy_millijoules: int = 5_000_000  # the total energy counter; each read advances it by a tenth of a second
    clock_event_reasons: int = 0  # nvmlClocksEventReason* bitmask
    gpm: dict[int, float] | None = None  # GPM metric id -> value over any interval; None: GPM not supported
    gpm_unsupported_metrics: frozenset[int] = field(default_factory=frozenset)


class FakeNvml:
    """A stand-in for the ``pynvml`` module.

    Args:
        gpus: the GPUs NVML "sees".
        unsupported: names of pynvml functions that raise NVMLError_NotSupported.
        lost_after: after this many per-device calls (``nvmlDevice*`` except ``nvmlDeviceGetCount``), every
            per-device call raises NVMLError_GpuIsLost; None never.
        init_error: exception class nvmlInit raises (e.g. NVMLError_LibraryNotFound); None initialises fine.
    """

    NVMLError = pynvml.NVMLError
    NVMLError_NotSupported = pynvml.NVMLError_NotSupported
    NVMLError_GpuIsLost = pynvml.NVMLError_GpuIsLost
    NVMLError_LibraryNotFound = pynvml.NVMLError_LibraryNotFound
    NVMLError_DriverNotLoaded = pynvml.NVMLError_DriverNotLoaded
    NVMLError_InvalidArgument = pynvml.NVMLError_InvalidArgument
    NVMLError_Uninitialized = pynvml.NVMLError_Uninitialized
    NVML_TEMPERATURE_GPU = pynvml.NVML_TEMPERATURE_GPU
    NVML_CLOCK_SM = pynvml.NVML_CLOCK_SM
    NVML_GPM_METRICS_GET_VERSION = pynvml.NVML_GPM_METRICS_GET_VERSION
    c_nvmlGpmMetricsGet_t = pynvml.c_nvmlGpmMetricsGet_t
    NVML_GPM_METRIC_SM_UTIL = pynvml.NVML_GPM_METRIC_SM_UTIL
    NVML_GPM_METRIC_SM_OCCUPANCY = pynvml.NVML_GPM_METRIC_SM_OCCUPANCY
    NVML_GPM_METRIC_ANY_TENSOR_UTIL = pynvml.NVML_GPM_METRIC_ANY_TENSOR_UTIL
    NVML_GPM_METRIC_DRAM_BW_UTIL = pynvml.NVML_GPM_METRIC_DRAM_BW_UTIL
    NVML_GPM_METRIC_FP32_UTIL = pynvml.NVML_GPM_METRIC_FP32_UTIL
    NVML_GPM_METRIC_FP16_UTIL = pynvml.NVML_GPM_METRIC_FP16_UTIL

    def __init__(
        self,
        gpus: list[FakeGpu],
        *,
        unsupported: Iterable[str] = (),
        lost_after: int | None = None,
        init_error: type[Exception] | None = None,
        driver_version: str = "550.54.15",
        cuda_driver_version: int = 12040,
    ) -> None:
        self.gpus = gpus
        self.unsupported = set(unsupported)
        self.lost_after = lost_after
        self.init_error = init_error
        self.driver_version = driver_version
        self.cuda_driver_version = cuda_driver_version
        self.initialised = False
        self.init_calls = 0
        self.shutdown_calls = 0
        self.device_calls = 0
        self.gpm_samples: dict[int, Any] = {}  # address -> the allocated sample (kept alive while allocated)
        self.gpm_taken: dict[int, tuple[int, dict[int, float]]] = {}  # address -> (GPU index, metrics when taken)
        self.gpm_frees = 0

    # -- library -------------------------------------------------------------------------------------------------
    def nvmlInit(self) -> None:
        self.init_calls += 1
        if self.init_error is not None:
            raise self.init_error()
        self.initialised = True

    def nvmlShutdown(self) -> None:
        self._check_init()
        self.shutdown_calls += 1
        self.initialised = False

    def nvmlSystemGetDriverVersion(self) -> str:
        self._check("nvmlSystemGetDriverVersion")
        return self.driver_version

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        self._check("nvmlSystemGetCudaDriverVersion")
        return self.cuda_driver_version

    def nvmlDeviceGetCount(self) -> int:
        self._check("nvmlDeviceGetCount")
        return len(self.gpus)

    # -- per device ----------------------------------------------------------------------------------------------
    def nvmlDeviceGetHandleByIndex(self, index: int) -> SimpleNamespace:
        self._device_call("nvmlDeviceGetHandleByIndex")
        if not 0 <= index < len(self.gpus):
            raise pynvml.NVMLError_InvalidArgument()
        return SimpleNamespace(index=index)

    def nvmlDeviceGetName(self, handle: SimpleNamespace) -> bytes:
        # bytes, as old pynvml versions return: nvml.query must decode it
        return self._gpu("nvmlDeviceGetName", handle).name.encode()

    def nvmlDeviceGetUUID(self, handle: SimpleNamespace) -> str:
        return self._gpu("nvmlDeviceGetUUID", handle).uuid

    def nvmlDeviceGetMemoryInfo(self, handle: SimpleNamespace) -> SimpleNamespace:
        gpu = self._gpu("nvmlDeviceGetMemoryInfo", handle)
        used, total = gpu.mem_used_bytes, gpu.mem_total_bytes
        return SimpleNamespace(total=total, used=used, free=total - used)

    def nvmlDeviceGetUtilizationRates(self, handle: SimpleNamespace) -> SimpleNamespace:
        gpu = self._gpu("nvmlDeviceGetUtilizationRates", handle)
        return SimpleNamespace(gpu=gpu.util_gpu_percent, memory=gpu.util_memory_percent)

    def nvmlDeviceGetPowerUsage(self, handle: SimpleNamespace) -> int:
        return self._gpu("nvmlDeviceGetPowerUsage", handle).power_milliwatts

    def nvmlDeviceGetTemperature(self, handle: SimpleNamespace, sensor: int) -> int:
        gpu = self._gpu("nvmlDeviceGetTemperature", handle)
        if sensor != pynvml.NVML_TEMPERATURE_GPU:
            raise pynvml.NVMLError_InvalidArgument()
        return gpu.temp_c

    def nvmlDeviceGetClockInfo(self, handle: SimpleNamespace, clock_type: int) -> int:
        gpu = self._gpu("nvmlDeviceGetClockInfo", handle)
        if clock_type != pynvml.NVML_CLOCK_SM:
            raise pynvml.NVMLError_InvalidArgument()
        return gpu.sm_clock_mhz

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: SimpleNamespace) -> int:
        return self._gpu("nvmlDeviceGetEnforcedPowerLimit", handle).power_limit_milliwatts

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: SimpleNamespace) -> int:
        gpu = self._gpu("nvmlDeviceGetTotalEnergyConsumption", handle)
        gpu.energy_millijoules += gpu.power_milliwatts // 10
        return gpu.energy_millijoules

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: SimpleNamespace) -> int:
        return self._gpu("nvmlDeviceGetCurrentClocksEventReasons", handle).clock_event_reasons

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle: SimpleNamespace) -> int:
        return self._gpu("nvmlDeviceGetCurrentClocksThrottleReasons", handle).clock_event_reasons

    # -- GPM -----------------------------------------------------------------------------------------------------
    def nvmlGpmQueryDeviceSupport(self, handle: SimpleNamespace) -> SimpleNamespace:
        gpu = self._gpu("nvmlGpmQueryDeviceSupport", handle)
        return SimpleNamespace(version=1, isSupportedDevice=int(gpu.gpm is not None))

    def nvmlGpmSampleAlloc(self) -> Any:
        self._check("nvmlGpmSampleAlloc")
        sample = ctypes.pointer(pynvml.struct_c_nvmlGpmSample_t())
        self.gpm_samples[ctypes.addressof(sample.contents)] = sample
        return sample

    def nvmlGpmSampleFree(self, sample: Any) -> None:
        self._check("nvmlGpmSampleFree")
        address = ctypes.addressof(sample.contents)
        if self.gpm_samples.pop(address, None) is None:
            raise pynvml.NVMLError_InvalidArgument()
        self.gpm_taken.pop(address, None)
        self.gpm_frees += 1

    def nvmlGpmSampleGet(self, handle: SimpleNamespace, sample: Any) -> Any:
        gpu = self._gpu("nvmlGpmSampleGet", handle)
        address = ctypes.addressof(sample.contents)
        if address not in self.gpm_samples or gpu.gpm is None:
            raise pynvml.NVMLError_InvalidArgument()
        self.gpm_taken[address] = (handle.index, dict(gpu.gpm))
        return sample

    def nvmlGpmMetricsGet(self, request: Any) -> Any:
        """Fills ``request.metrics`` as NVML does: the values of the GPU when sample2 was taken (the interval's)."""
        self._check("nvmlGpmMetricsGet")
        if not isinstance(request, pynvml.c_nvmlGpmMetricsGet_t) or request.version != 1:
            raise pynvml.NVMLError_InvalidArgument()
        try:
            first = self.gpm_taken[ctypes.addressof(request.sample1.contents)]
            second = self.gpm_taken[ctypes.addressof(request.sample2.contents)]
        except (KeyError, ValueError):  # a sample never taken, or a NULL pointer
            raise pynvml.NVMLError_InvalidArgument() from None
        if first[0] != second[0] or first is second:
            raise pynvml.NVMLError_InvalidArgument()
        unsupported = self.gpus[second[0]].gpm_unsupported_metrics
        for i in range(request.numMetrics):
            metric = request.metrics[i]
            if metric.metricId in unsupported or metric.metricId not in second[1]:
                metric.nvmlReturn = pynvml.NVML_ERROR_NOT_SUPPORTED
                continue
            metric.nvmlReturn = pynvml.NVML_SUCCESS
            metric.value = second[1][metric.metricId]
        return request

    # -- helpers -------------------------------------------------------------------------------------------------
    def lose_gpus_now(self) -> None:
        """From the next per-device call on, every GPU is lost."""
        self.lost_after = self.device_calls

    def _check_init(self) -> None:
        if not self.initialised:
            raise pynvml.NVMLError_Uninitialized()

    def _check(self, func_name: str) -> None:
        self._check_init()
        if func_name in self.unsupported:
            raise pynvml.NVMLError_NotSupported()

    def _device_call(self, func_name: str) -> None:
        self._check_init()
        self.device_calls += 1
        if self.lost_after is not None and self.device_calls > self.lost_after:
            raise pynvml.NVMLError_GpuIsLost()
        if func_name in self.unsupported:
            raise pynvml.NVMLError_NotSupported()

    def _gpu(self, func_name: str, handle: SimpleNamespace) -> FakeGpu:
        self._device_call(func_name)
        return self.gpus[handle.index]


def _h100(index: int) -> FakeGpu:
    return FakeGpu(
        name="NVIDIA H100 80GB HBM3",
        uuid=f"GPU-0000000{index}-aaaa-bbbb-cccc-dddddddddddd",
        mem_total_bytes=80 * GIB,
        mem_used_bytes=(10 + 20 * index) * GIB,
        util_gpu_percent=40 + 50 * index,
        util_memory_percent=15 + 30 * index,
        power_milliwatts=150_000 + 300_000 * index,
        temp_c=45 + 20 * index,
        sm_clock_mhz=1500 + 480 * index,
    )


def two_gpus() -> FakeNvml:
    """Two healthy GPUs with distinct readings (GPU 0: 40 % util, 10 GiB used, 150 W; GPU 1: 90 %, 30 GiB, 450 W)."""
    return FakeNvml([_h100(0), _h100(1)])


def not_supported() -> FakeNvml:
    """Two GPUs on which power and SM clock raise NVMLError_NotSupported (as on some consumer or virtual GPUs)."""
    return FakeNvml([_h100(0), _h100(1)], unsupported={"nvmlDeviceGetPowerUsage", "nvmlDeviceGetClockInfo"})


def gpu_lost_after(n_calls: int) -> FakeNvml:
    """Two GPUs that fall off the bus after ``n_calls`` per-device calls: every later one raises GpuIsLost."""
    return FakeNvml([_h100(0), _h100(1)], lost_after=n_calls)


HOPPER_GPM = {
    pynvml.NVML_GPM_METRIC_SM_UTIL: 62.5,
    pynvml.NVML_GPM_METRIC_SM_OCCUPANCY: 31.0,
    pynvml.NVML_GPM_METRIC_ANY_TENSOR_UTIL: 18.0,
    pynvml.NVML_GPM_METRIC_DRAM_BW_UTIL: 44.0,
    pynvml.NVML_GPM_METRIC_FP32_UTIL: 12.0,
    pynvml.NVML_GPM_METRIC_FP16_UTIL: 3.5,
}


def hopper_with_gpm() -> FakeNvml:
    """One H100 with GPM (SM 62.5 %, occupancy 31 %, tensor 18 %, DRAM 44 %, FP32 12 %, FP16 3.5 %), the energy
    counter, a 700 W limit and no clock-event reason."""
    return FakeNvml([replace(_h100(0), gpm=dict(HOPPER_GPM))])


def older_without_gpm() -> FakeNvml:
    """A V100 (Volta): the energy counter and clock reasons work, GPM is not supported on the device."""
    gpu = FakeGpu(name="Tesla V100-SXM2-16GB", uuid="GPU-v100", mem_total_bytes=16 * GIB, mem_used_bytes=4 * GIB,
                  util_gpu_percent=70, util_memory_percent=30, power_milliwatts=200_000, temp_c=50, sm_clock_mhz=1380,
                  power_limit_milliwatts=300_000)
    return FakeNvml([gpu])


def no_energy_counter() -> FakeNvml:
    """A Pascal GPU: no total energy counter (NotSupported) and no GPM; power draw and its limit are read."""
    gpu = FakeGpu(name="Tesla P100-PCIE-16GB", uuid="GPU-p100", mem_total_bytes=16 * GIB, mem_used_bytes=4 * GIB,
                  util_gpu_percent=70, util_memory_percent=30, power_milliwatts=180_000, temp_c=50, sm_clock_mhz=1189,
                  power_limit_milliwatts=250_000)
    return FakeNvml([gpu], unsupported={"nvmlDeviceGetTotalEnergyConsumption"})


def throttling() -> FakeNvml:
    """An H100 held at its power cap and slowed for heat (SW power cap | SW thermal slowdown), SM clock 1095 MHz."""
    reasons = pynvml.nvmlClocksEventReasonSwPowerCap | pynvml.nvmlClocksEventReasonSwThermalSlowdown
    return FakeNvml([replace(_h100(0), gpm=dict(HOPPER_GPM), clock_event_reasons=reasons, sm_clock_mhz=1095,
                             power_milliwatts=699_000)])


def missing() -> FakeNvml:
    """No NVIDIA driver: nvmlInit raises NVMLError_LibraryNotFound."""
    return FakeNvml([], init_error=pynvml.NVMLError_LibraryNotFound)


def no_gpu() -> FakeNvml:
    """A driver that loads but reports no GPU."""
    return FakeNvml([])
