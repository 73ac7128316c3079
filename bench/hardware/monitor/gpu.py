"""GPU collector: one reading per GPU from NVML: utilization, memory, power and its limit, temperature, SM clock,
clock-event (throttle) reasons, the cumulative energy counter and, on Hopper and newer, GPM activity (gpm.py).

All NVML access goes through :mod:`bench.hardware.monitor.nvml`. A reading NVML cannot give (NotSupported on this GPU, the GPU
lost mid-run, no handle) is None, never 0, so a chart shows a gap instead of a false zero. ``collect`` never raises.
"""

from __future__ import annotations

import threading
from typing import Any

from bench.hardware.monitor import nvml
from bench.hardware.monitor.gpm import GPM_FIELDS, GpmReader, none as gpm_none
from bench.hardware.monitor.source_types import Figure, NotMeasured, Sentinels, all_ones, bounded, figure, text
from bench.vocab.readings import GpuReading  # the one GPU reading type, shared with the records

__all__ = ["GpuCollector", "GpuReading", "GpuUnavailable", "throttle_words"]

_MIB = 2**20
# nvml.h: NVML_VALUE_NOT_AVAILABLE_uint / _ulonglong, what a field NVML cannot read on this GPU holds
NVML_NA = Sentinels(all_ones(32, 64), "NVML's 'not available'")
SOURCE = "NVML"  # the source every reading of this collector names (bench.hardware.monitor.nvidia)
# NVML constants, from nvml.h (pynvml.NVML_TEMPERATURE_GPU / NVML_CLOCK_SM); read from the module when it has them.
_NVML_TEMPERATURE_GPU = 0
_NVML_CLOCK_SM = 1
# nvmlClocksEventReason* bits (nvml.h) -> words. GpuIdle (0x1) is left out: an idle GPU is not held back.
_GPU_IDLE = 0x1
CLOCK_EVENT_WORDS: dict[int, str] = {
    0x2: "application clocks setting",
    0x4: "power cap",
    0x8: "hardware slowdown",
    0x10: "sync boost",
    0x20: "thermal slowdown",
    0x40: "hardware thermal slowdown",
    0x80: "power brake slowdown",
    0x100: "display clock setting",
    0x200: "board limit",
    0x400: "reliability limit",
}


class GpuUnavailable(RuntimeError):
    """NVML cannot be used here; ``reason`` (also the message) says why in plain words."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


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
        self._gpm: dict[int, GpmReader] = {}
        self._lock = threading.Lock()
        self._refused = NotMeasured(SOURCE)
        for index in self.indices:
            self._handle(index)

    @property
    def gpm_reasons(self) -> dict[str, str]:
        """``"gpu:N"`` -> why GPM figures are None on that GPU, for each GPU whose GPM is not available."""
        with self._lock:
            reasons = {f"gpu:{i}": "NVML gave no handle for this GPU." for i in self.indices if i not in self._gpm}
            reasons.update({f"gpu:{i}": g.reason for i, g in self._gpm.items() if g.reason is not None})
            return reasons

    @property
    def not_measured(self) -> dict[str, dict[str, str]]:
        """``"gpu:N"`` -> {reading: why} for each figure of the latest reading its bounds refused."""
        return self._refused.latest()

    def collect(self) -> list[GpuReading]:
        """One reading per index, in the order of ``indices``; never raises."""
        with self._lock:
            return [self._read(index) for index in self.indices]

    def close(self) -> None:
        """Free the GPM buffers; safe to call more than once."""
        with self._lock:
            for reader in self._gpm.values():
                reader.close()

    def _handle(self, index: int) -> Any:
        """The cached NVML handle for ``index``, fetched again while it could not be had (None then)."""
        handle = self._handles.get(index)
        if handle is None:
            handle = nvml.query("nvmlDeviceGetHandleByIndex", index)
            if handle is not None:
                self._handles[index] = handle
                name = text(nvml.query("nvmlDeviceGetName", handle))
                if name:
                    self._names[index] = name
                if index not in self._gpm:
                    self._gpm[index] = GpmReader(handle)
        return handle

    def _read(self, index: int) -> GpuReading:
        handle = self._handle(index)
        name = self._names.get(index)
        if handle is None:
            return GpuReading(index=index, name=name, source=SOURCE)
        util = nvml.query("nvmlDeviceGetUtilizationRates", handle)
        memory = nvml.query("nvmlDeviceGetMemoryInfo", handle)
        power_mw = nvml.query("nvmlDeviceGetPowerUsage", handle)
        temp_c = nvml.query("nvmlDeviceGetTemperature", handle, self._temperature_sensor)
        sm_clock_mhz = nvml.query("nvmlDeviceGetClockInfo", handle, self._sm_clock)
        limit_mw = nvml.query("nvmlDeviceGetEnforcedPowerLimit", handle)
        energy_mj = nvml.query("nvmlDeviceGetTotalEnergyConsumption", handle)
        reasons = nvml.query("nvmlDeviceGetCurrentClocksEventReasons", handle)
        if reasons is None:  # drivers before 535 have only the older name
            reasons = nvml.query("nvmlDeviceGetCurrentClocksThrottleReasons", handle)
        gpm = self._gpm[index].read() if index in self._gpm else gpm_none()  # every GPM field, None where not read
        reading = bounded(index, SOURCE, {
            "util_percent": _nvml(getattr(util, "gpu", None), "util_percent"),
            "mem_util_percent": _nvml(getattr(util, "memory", None), "mem_util_percent"),
            "mem_used_mib": _nvml(getattr(memory, "used", None), "mem_used_mib", 1 / _MIB),
            "mem_total_mib": _nvml(getattr(memory, "total", None), "mem_total_mib", 1 / _MIB),
            "power_w": _nvml(power_mw, "power_w", 1e-3),
            "temp_c": _nvml(temp_c, "temp_c"),
            "sm_clock_mhz": _nvml(sm_clock_mhz, "sm_clock_mhz"),
            "power_limit_w": _nvml(limit_mw, "power_limit_w", 1e-3),
            "energy_j": _nvml(energy_mj, "energy_j", 1e-3),
            **{name: _nvml(getattr(gpm, name), name) for name in GPM_FIELDS},
        }, name=name, throttle_reasons=throttle_words(reasons))
        self._refused.note(index, reading.not_measured)
        return reading.gpu


def throttle_words(mask: Any) -> tuple[str, ...] | None:
    """The clock-event reason bitmask as words ("power cap", ...); GpuIdle is not a reason; None when unknown."""
    if mask is None or isinstance(mask, bool):
        return None
    try:
        bits = int(mask) & ~_GPU_IDLE
    except (TypeError, ValueError):
        return None
    words = [word for bit, word in CLOCK_EVENT_WORDS.items() if bits & bit]
    unknown = bits & ~sum(CLOCK_EVENT_WORDS)
    if unknown:
        words.append(f"other reason 0x{unknown:x}")
    return tuple(words)


def _nvml(raw: Any, name: str, scale: float = 1.0) -> Figure:
    """NVML's raw value as the reading ``name``: the one bounds check (source_types.figure), NVML's sentinels named."""
    return figure(raw, name, scale=scale, who="NVML", sentinels=NVML_NA)
