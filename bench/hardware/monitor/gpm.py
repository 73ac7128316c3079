"""GPM (GPU Performance Monitoring, NVML on Hopper and newer): what the SMs did between two samples.

NVML's ``utilization.gpu`` only says that *a* kernel ran during the period; GPM says how much of the chip worked: the
share of SMs busy, of warp slots occupied, of cycles the tensor cores and the FP32/FP16 pipes were active, and of DRAM
bandwidth used. Each figure is computed by ``nvmlGpmMetricsGet`` from two GPM samples, so a :class:`GpmReader` keeps
the previous sample and every :meth:`GpmReader.read` reports the interval since the last one (the first read has no
interval yet and gives None). All NVML calls go through :func:`bench.hardware.monitor.nvml.query`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bench.hardware.monitor import nvml

__all__ = ["GPM_FIELDS", "Activity", "GpmReader"]

# reading field -> the pynvml metric id's name and its value in nvml.h (used when pynvml lacks the constant)
GPM_FIELDS: dict[str, tuple[str, int]] = {
    "sm_active_percent": ("NVML_GPM_METRIC_SM_UTIL", 2),
    "sm_occupancy_percent": ("NVML_GPM_METRIC_SM_OCCUPANCY", 3),
    "tensor_active_percent": ("NVML_GPM_METRIC_ANY_TENSOR_UTIL", 5),
    "dram_active_percent": ("NVML_GPM_METRIC_DRAM_BW_UTIL", 10),
    "fp32_active_percent": ("NVML_GPM_METRIC_FP32_UTIL", 12),
    "fp16_active_percent": ("NVML_GPM_METRIC_FP16_UTIL", 13),
}
_METRICS_GET_VERSION = 1  # pynvml.NVML_GPM_METRICS_GET_VERSION

NO_GPM_API_REASON = ("GPM is not available: this NVIDIA driver or pynvml has no GPM functions (driver 520 or newer "
                     "and nvidia-ml-py 12 or newer are needed).")
UNSUPPORTED_REASON = "GPM is not supported on this GPU (SM, tensor and DRAM activity need Hopper or newer)."
GPM_FAILED_REASON = "NVML GPM could not allocate its sample buffers on this GPU."

@dataclass(frozen=True)
class Activity:
    """One interval's GPM figures, in percent; None where GPM did not give one (the names of GPM_FIELDS)."""

    sm_active_percent: float | None = None
    sm_occupancy_percent: float | None = None
    tensor_active_percent: float | None = None
    dram_active_percent: float | None = None
    fp32_active_percent: float | None = None
    fp16_active_percent: float | None = None


def none() -> Activity:
    """Every GPM figure None: an interval GPM did not read."""
    return Activity()


@dataclass
class _Buffers:
    previous: Any
    current: Any
    previous_valid: bool = False


class GpmReader:
    """GPM metrics of one GPU, each over the interval since the previous :meth:`read`.

    ``reason`` is None when GPM works on this GPU, else a plain sentence saying why every figure is None.
    """

    def __init__(self, handle: Any) -> None:
        self._handle = handle
        self._buffers: _Buffers | None = None
        self.reason: str | None = None
        module = nvml.NVML_MODULE
        support = nvml.query("nvmlGpmQueryDeviceSupport", handle)
        if support is None:
            self.reason = NO_GPM_API_REASON if not hasattr(module, "nvmlGpmQueryDeviceSupport") else UNSUPPORTED_REASON
            return
        if not getattr(support, "isSupportedDevice", 0):
            self.reason = UNSUPPORTED_REASON
            return
        first = nvml.query("nvmlGpmSampleAlloc")
        second = nvml.query("nvmlGpmSampleAlloc")
        if first is None or second is None:
            for sample in (first, second):
                if sample is not None:
                    nvml.query("nvmlGpmSampleFree", sample)
            self.reason = GPM_FAILED_REASON
            return
        self._buffers = _Buffers(first, second)
        self._ids = {name: int(getattr(module, attr, default)) for name, (attr, default) in GPM_FIELDS.items()}
        self._struct = getattr(module, "c_nvmlGpmMetricsGet_t", None)
        self._version = int(getattr(module, "NVML_GPM_METRICS_GET_VERSION", _METRICS_GET_VERSION))
        if self._struct is None:
            self.close()
            self.reason = NO_GPM_API_REASON

    @property
    def supported(self) -> bool:
        return self.reason is None

    def read(self) -> Activity:
        """Take a GPM sample now; the figures over the interval since the previous one (None where not given)."""
        buffers = self._buffers
        if buffers is None:
            return none()
        if nvml.query("nvmlGpmSampleGet", self._handle, buffers.current) is None:
            buffers.previous_valid = False  # the next interval starts at the next good sample
            return none()
        values = self._metrics(buffers.previous, buffers.current) if buffers.previous_valid else none()
        buffers.previous, buffers.current = buffers.current, buffers.previous
        buffers.previous_valid = True
        return values

    def close(self) -> None:
        """Free the GPM sample buffers; safe to call more than once."""
        buffers, self._buffers = self._buffers, None
        if buffers is not None:
            nvml.query("nvmlGpmSampleFree", buffers.previous)
            nvml.query("nvmlGpmSampleFree", buffers.current)

    def _metrics(self, first: Any, second: Any) -> Activity:
        assert self._struct is not None  # checked when the reader was built
        request = self._struct()
        request.version = self._version
        request.numMetrics = len(self._ids)
        request.sample1 = first
        request.sample2 = second
        names = list(self._ids)
        for i, name in enumerate(names):
            request.metrics[i].metricId = self._ids[name]
        result = nvml.query("nvmlGpmMetricsGet", request)
        if result is None:
            return none()
        values: dict[str, float | None] = {}
        for i, name in enumerate(names):
            metric = result.metrics[i]
            if int(getattr(metric, "nvmlReturn", 1)) != 0:  # this metric alone is not available
                continue
            value = float(metric.value)
            values[name] = value if value == value and value >= 0 else None  # NaN or negative: not a reading
        return Activity(**values)
