"""The vocabulary of the GPU sources (bench.hardware.monitor.sources): what a source is (:class:`SourceInfo`), one GPU
as it reports it (:class:`SourceGpu`), the source itself (:class:`GpuSource`) and where the sources look
(:class:`Machine`: the operating system, the sysfs trees, the ioreg command, the amdsmi, macmon, pyzes and libtpu
modules), which a test replaces to script a Mac, an AMD or Intel machine or a TPU VM. A leaf: each source (nvidia.py,
amd.py, apple.py, intel.py, tpu.py) imports it, and sources.py imports them.
"""

from __future__ import annotations

import importlib
import platform
import subprocess
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from bench.readings import GpuReading

__all__ = ["Collector", "GpuSource", "Machine", "ReadingCollector", "SourceGpu", "SourceInfo", "key", "number"]

IOREG_COMMAND = ("ioreg", "-r", "-d", "1", "-w", "0", "-c", "IOAccelerator", "-a")
DRM_ROOT = Path("/sys/class/drm")
PCI_ROOT = Path("/sys/bus/pci/devices")


@dataclass(frozen=True)
class SourceInfo:
    """What a source is and what its readings mean."""

    name: str  # "NVML", "AMD SMI", "amdgpu sysfs", "IOAccelerator (ioreg)", "macmon (IOReport)"
    vendor: str  # "nvidia", "amd", "apple", "intel", "tpu"
    utilization: str  # what util_percent means from this source, in one sentence
    not_measured: Mapping[str, str] = field(default_factory=dict)  # reading -> why this source cannot give it
    documented: bool = True  # False where the figures come from undocumented keys

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "vendor": self.vendor, "utilization": self.utilization,
                "not_measured": dict(self.not_measured), "documented": self.documented}


@dataclass(frozen=True)
class SourceGpu:
    """One GPU's static facts as its source reports them."""

    index: int
    name: str
    mem_total_mib: float | None = None
    driver: str | None = None
    runtime_version: str | None = None  # the CUDA the NVIDIA driver runs; ROCm's version; None on a Mac
    uuid: str | None = None


class Collector(Protocol):
    """Reads the chosen GPUs at every sample (the sampler's GPU side)."""

    indices: list[int]

    @property
    def gpm_reasons(self) -> dict[str, str]: ...

    def collect(self) -> list[GpuReading]: ...

    def close(self) -> None: ...


class GpuSource(Protocol):
    """A source of GPU readings: its description, its GPUs, and a collector of the chosen ones."""

    info: SourceInfo

    def gpus(self) -> list[SourceGpu]: ...

    def collector(self, indices: list[int] | None = None) -> Collector: ...


class Reader(Protocol):
    def read(self, index: int) -> GpuReading: ...


class ReadingCollector:
    """A collector over a source's ``read(index)``: each GPU read in turn, under a lock, never raising (a reading that
    fails is the GPU's index alone, every figure None)."""

    def __init__(self, reader: Reader, info: SourceInfo, indices: list[int], count: int) -> None:
        bad = [i for i in indices if not 0 <= i < count]
        if bad:
            raise ValueError(f"GPU index {bad[0]} does not exist: {info.name} sees {count} GPU(s), "
                             f"indices 0..{count - 1}.")
        self.indices = list(indices)
        self._reader = reader
        self._info = info
        self._lock = threading.Lock()

    @property
    def gpm_reasons(self) -> dict[str, str]:
        why = f"SM, tensor and DRAM activity come from NVIDIA's GPM; {self._info.name} gives none."
        return {f"gpu:{i}": why for i in self.indices}

    def collect(self) -> list[GpuReading]:
        with self._lock:
            return [self._safe(index) for index in self.indices]

    def close(self) -> None:
        return None

    def _safe(self, index: int) -> GpuReading:
        try:
            return self._reader.read(index)
        except Exception:  # noqa: BLE001 - a source that fails mid-run gives a gap, never a crash
            return GpuReading(index=index, source=self._info.name)


def _run_ioreg() -> bytes | None:
    """``ioreg``'s plist of the IOAccelerator services (no sudo); None where it cannot run."""
    try:
        done = subprocess.run(IOREG_COMMAND, capture_output=True, timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def _import(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except Exception:  # noqa: BLE001 - a binding whose native library is missing fails in many ways
        return None


def _tpumonitoring() -> Any:
    """libtpu's monitoring SDK (``from libtpu.sdk import tpumonitoring``), or None where libtpu is not installed."""
    sdk = _import("libtpu.sdk")
    return getattr(sdk, "tpumonitoring", None) if sdk is not None else None


@dataclass(frozen=True)
class Machine:
    """Where the sources look. The defaults read this machine; a test scripts another one."""

    system: str = field(default_factory=platform.system)  # "Linux", "Darwin", ...
    drm_root: Path = DRM_ROOT
    ioreg: Callable[[], bytes | None] = _run_ioreg
    amdsmi: Callable[[], Any] = lambda: _import("amdsmi")  # the module, or None where ROCm's library is absent
    macmon: Callable[[], Any] = lambda: _import("macmon")
    pyzes: Callable[[], Any] = lambda: _import("pyzes")  # Level Zero Sysman's binding; None without its loader
    tpumonitoring: Callable[[], Any] = _tpumonitoring
    pci_root: Path = PCI_ROOT  # where TPU chips are listed (Google's PCI vendor id)


def number(value: Any) -> float | None:
    """``value`` as a float, or None when it is missing, "N/A" or not a number (never 0 for a gap)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        result = float(value)
    except (TypeError, ValueError):
        return None
    return result if result == result else None


def key(mapping: Any, name: str) -> Any:
    """``mapping[name]`` where a source's answer (a plist dict, an amdsmi dict) has it, else None: the one place a
    source's outside answer is looked into, before its values become a typed reading."""
    return mapping[name] if isinstance(mapping, Mapping) and name in mapping else None
