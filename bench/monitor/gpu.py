"""GPU collector: one reading per GPU (utilization, memory, power, temperature, SM clock) from NVML.

All NVML access goes through :mod:`bench.monitor.nvml`. A reading NVML cannot give (NotSupported on this GPU, the GPU
lost mid-run, no handle) is None, never 0, so a chart shows a gap instead of a false zero. ``collect`` never raises.
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, fields
from typing import Any

from bench.monitor import nvml

__all__ = ["GpuCollector", "GpuReading", "GpuUnavailable"]

_MIB = 2**20
# NVML constants, from nvml.h (pynvml.NVML_TEMPERATURE_GPU / NVML_CLOCK_SM); read from the module when it has them.
_NVML_TEMPERATURE_GPU = 0
_NVML_CLOCK_SM = 1


class GpuUnavailable(RuntimeError):
    """NVML cannot be used here; ``reason`` (also the message) says why in plain words."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class GpuReading:
    """One GPU at one instant. Every measurement is None when NVML could not give it."""

    index: int  # NVML index
    name: str | None
    util_percent: float | None  # share of the last sample period in which any kernel ran, 0..100
    mem_util_percent: float | None  # share of the period in which device memory was read or written, 0..100
    mem_used_mib: float | None
    mem_total_mib: float | None
    power_watts: float | None
    temp_c: float | None
    sm_clock_mhz: float | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict with one key per field."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GpuReading:
        """Inverse of :meth:`to_dict`; keys this version does not know are ignored, missing ones become None."""
        known = {f.name for f in fields(cls)}
        values: dict[str, Any] = {name: None for name in known}
        values.update({key: value for key, value in data.items() if key in known})
        return cls(**values)


class GpuCollector:
    """Reads the GPUs at the given NVML indices (all GPUs NVML sees when ``indices`` is None).

    Raises:
        GpuUnavailable: NVML is not usable (no driver, no pynvml, no GPU); ``reason`` says why.
        ValueError: an index names no GPU that NVML sees.
    """

    def __init__(self, indices: list[int] | None = None) -> None:
        ok, reason = nvml.available()
        if not ok:
            raise GpuUnavailable(reason)
        count = int(nvml.query("nvmlDeviceGetCount", default=0))
        if indices is None:
            indices = list(range(count))
        else:
            bad = [i for i in indices if not 0 <= i < count]
            if bad:
                raise ValueError(
                    f"GPU index {bad[0]} does not exist: NVML sees {count} GPU(s), indices 0..{count - 1}."
                )
        self.indices: list[int] = list(indices)
        module = nvml.NVML_MODULE
        self._temperature_sensor: int = getattr(module, "NVML_TEMPERATURE_GPU", _NVML_TEMPERATURE_GPU)
        self._sm_clock: int = getattr(module, "NVML_CLOCK_SM", _NVML_CLOCK_SM)
        self._handles: dict[int, Any] = {}
        self._names: dict[int, str] = {}
        self._lock = threading.Lock()
        for index in self.indices:
            self._handle(index)

    def collect(self) -> list[GpuReading]:
        """One reading per index, in the order of ``indices``; never raises."""
        with self._lock:
            return [self._read(index) for index in self.indices]

    def _handle(self, index: int) -> Any:
        """The cached NVML handle for ``index``, fetched again while it could not be had (None then)."""
        handle = self._handles.get(index)
        if handle is None:
            handle = nvml.query("nvmlDeviceGetHandleByIndex", index)
            if handle is not None:
                self._handles[index] = handle
                name = nvml.query("nvmlDeviceGetName", handle)
                if name:
                    self._names[index] = str(name)
        return handle

    def _read(self, index: int) -> GpuReading:
        handle = self._handle(index)
        name = self._names.get(index)
        if handle is None:
            return GpuReading(index, name, None, None, None, None, None, None, None)
        util = nvml.query("nvmlDeviceGetUtilizationRates", handle)
        memory = nvml.query("nvmlDeviceGetMemoryInfo", handle)
        power_mw = nvml.query("nvmlDeviceGetPowerUsage", handle)
        temp_c = nvml.query("nvmlDeviceGetTemperature", handle, self._temperature_sensor)
        sm_clock_mhz = nvml.query("nvmlDeviceGetClockInfo", handle, self._sm_clock)
        return GpuReading(
            index=index,
            name=name,
            util_percent=_number(getattr(util, "gpu", None)),
            mem_util_percent=_number(getattr(util, "memory", None)),
            mem_used_mib=_scaled(getattr(memory, "used", None), _MIB),
            mem_total_mib=_scaled(getattr(memory, "total", None), _MIB),
            power_watts=_scaled(power_mw, 1000),
            temp_c=_number(temp_c),
            sm_clock_mhz=_number(sm_clock_mhz),
        )


def _number(value: Any) -> float | None:
    """``value`` as a float, or None when it is missing or not a number."""
    if value is None or isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _scaled(value: Any, divisor: float) -> float | None:
    number = _number(value)
    return None if number is None else number / divisor
