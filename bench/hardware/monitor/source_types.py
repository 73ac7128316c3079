"""The vocabulary of the GPU sources (bench.hardware.monitor.sources): what a source is (:class:`SourceInfo`), one GPU
as it reports it (:class:`SourceGpu`), the source itself (:class:`GpuSource`) and where the sources look
(:class:`HostAccess`: the operating system, the sysfs trees, the ioreg command, the amdsmi, macmon, pyzes and libtpu
modules), which a test replaces to script a Mac, an AMD or Intel machine or a TPU VM. A leaf: each source (nvidia.py,
amd.py, apple.py, intel.py, tpu.py) imports it, and sources.py imports them.
"""

from __future__ import annotations

import importlib
import logging
import math
import platform
import subprocess
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from pydantic import BaseModel, ConfigDict, Field

from bench.vocab.readings import GpuReading, Sample
from bench.vocab.limits import NAME_MAX
from bench.vocab.safe_text import one_line, terminal

__all__ = ["Collector", "Figure", "GpuSource", "HostAccess", "NotMeasured", "Reading", "ReadingCollector",
           "Sentinels", "SourceGpu", "SourceInfo", "TEXT_LIMIT", "bounded", "figure", "key", "number", "text"]

logger = logging.getLogger(__name__)

IOREG_COMMAND = ("ioreg", "-r", "-d", "1", "-w", "0", "-c", "IOAccelerator", "-a")
DRM_ROOT = Path("/sys/class/drm")
PCI_ROOT = Path("/sys/bus/pci/devices")


class SourceInfo(BaseModel):
    """What a source is and what its readings mean. Its JSON form (a run's ``hardware.gpu_source``) is pydantic's
    ``model_dump(mode="json")``: its fields in order, ``not_measured`` as a plain object."""

    model_config = ConfigDict(frozen=True)

    name: str  # "NVML", "AMD SMI", "amdgpu sysfs", "IOAccelerator (ioreg)", "macmon (IOReport)"
    vendor: str  # "nvidia", "amd", "apple", "intel", "tpu"
    utilization: str  # what util_percent means from this source, in one sentence
    not_measured: Mapping[str, str] = Field(default_factory=dict)  # reading -> why this source cannot give it
    documented: bool = True  # False where the figures come from undocumented keys


@dataclass(frozen=True)
class SourceGpu:
    """One GPU's static facts as its source reports them."""

    index: int
    name: str
    mem_total_mib: float | None = None
    driver: str | None = None
    runtime_version: str | None = None  # the CUDA the NVIDIA driver runs; ROCm's version; None on a Mac
    uuid: str | None = None
    not_measured: Mapping[str, str] = field(default_factory=dict)  # a fact refused by its bounds -> why


class Collector(Protocol):
    """Reads the chosen GPUs at every sample (the sampler's GPU side)."""

    indices: list[int]

    @property
    def gpm_reasons(self) -> dict[str, str]: ...

    @property
    def not_measured(self) -> dict[str, dict[str, str]]: ...

    def collect(self) -> list[GpuReading]: ...

    def close(self) -> None: ...


class GpuSource(Protocol):
    """A source of GPU readings: its description, its GPUs, and a collector of the chosen ones."""

    info: SourceInfo

    def gpus(self) -> list[SourceGpu]: ...

    def collector(self, indices: list[int] | None = None) -> Collector: ...


class Reader(Protocol):
    def read(self, index: int) -> Reading: ...


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
        self._refused = NotMeasured(info.name)

    @property
    def gpm_reasons(self) -> dict[str, str]:
        why = f"SM, tensor and DRAM activity come from NVIDIA's GPM; {self._info.name} gives none."
        return {f"gpu:{i}": why for i in self.indices}

    def collect(self) -> list[GpuReading]:
        with self._lock:
            return [self._safe(index) for index in self.indices]

    @property
    def not_measured(self) -> dict[str, dict[str, str]]:
        """``"gpu:N"`` -> {reading: why} for each figure of the latest reading its bounds refused."""
        return self._refused.latest()

    def close(self) -> None:
        return None

    def _safe(self, index: int) -> GpuReading:
        try:
            reading = self._reader.read(index)
        except Exception:  # noqa: BLE001 - a source that fails mid-run gives a gap, never a crash
            return GpuReading(index=index, source=self._info.name)
        self._refused.note(index, reading.not_measured)
        return reading.gpu


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
class HostAccess:
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
    """``value`` as a finite float, or None when it is missing, "N/A", not a number or not finite (never 0 for a
    gap). Not a reading's figure: those pass :func:`figure`."""
    if value is None or isinstance(value, bool):
        return None
    try:
        result = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return result if math.isfinite(result) else None


def key(mapping: Any, name: str) -> Any:
    """``mapping[name]`` where a source's answer (a plist dict, an amdsmi dict) has it, else None: the one place a
    source's outside answer is looked into, before its values become a typed reading."""
    return mapping[name] if isinstance(mapping, Mapping) and name in mapping else None


# -- a vendor's raw value made a figure: the one bounds check every source's readings pass ---------------------------
# A vendor library says "no value" with a number (AMD SMI's UINT16/32/64_MAX, NVML's 0xFFFFFFFF), a driver may give a
# negative power, an infinity or a NaN, a name or a version with a newline in it. Each source turns its raw values into
# a reading through :func:`figure` (numbers) and :func:`text` (names, versions), here alone: a figure outside
# the bounds of GpuReading's fields (those an imported record is held to) is None with the reason, never a record that cannot
# be read back; text is valid Unicode on one line.
TEXT_LIMIT = NAME_MAX  # characters of a name, driver version or UUID a source may give


@dataclass(frozen=True)
class Sentinels:
    """The whole numbers a source gives for "no value", and what it calls them."""

    values: frozenset[int]
    meaning: str  # "AMD SMI's 'not supported'"


def all_ones(*bits: int) -> frozenset[int]:
    """The unsigned maxima of the given widths (16 -> 0xFFFF)."""
    return frozenset(2**b - 1 for b in bits)


class Figure(NamedTuple):
    """One figure as a source turned its raw value into it: the value, or None and why it is not measured."""

    value: float | None
    why: str | None = None


class Reading(NamedTuple):
    """One GPU's reading and, for each figure its bounds refused, why."""

    gpu: GpuReading
    not_measured: dict[str, str]


def _shown(raw: Any) -> str:
    return terminal(raw if isinstance(raw, (int, str)) and not isinstance(raw, bool) else repr(raw))[:60]


def _whole(raw: Any) -> int | None:
    """``raw`` as a whole number where it is one exactly (an int, or text of digits as sysfs gives): sentinels are
    compared before any float loses their last digits."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return raw
    if isinstance(raw, (str, bytes)):
        digits = raw.strip()
        try:
            return int(digits) if digits and len(digits) < 40 else None
        except ValueError:
            return None
    return None


def field_bounds(name: str) -> tuple[float, float]:
    """The least and greatest value GpuReading's (else Sample's) field ``name`` holds, read from its declared type (bench.vocab.limits),
    so that a source refuses exactly what a record would."""
    found = {"ge": -math.inf, "le": math.inf}

    def walk(tp: Any) -> None:
        for meta in getattr(tp, "__metadata__", ()):
            for key in found:
                if hasattr(meta, key):
                    found[key] = getattr(meta, key)
            for inner in getattr(meta, "metadata", ()):
                for key in found:
                    if hasattr(inner, key):
                        found[key] = getattr(inner, key)
        for arg in getattr(tp, "__args__", ()):
            walk(arg)

    model = GpuReading if name in GpuReading.model_fields else Sample
    walk(model.model_fields[name].annotation)
    return float(found["ge"]), float(found["le"])


def figure(raw: Any, name: str, *, scale: float = 1.0, who: str = "the driver",
           sentinels: Sentinels | None = None) -> Figure:
    """``raw`` (as the vendor gave it: a number, digits as text, "N/A", None) times ``scale`` as the reading
    ``name`` (a GpuReading field): None where missing or not a number; None with the reason where it is one of the
    source's ``sentinels``, not finite, or outside the bounds GpuReading's field ``name`` is declared with."""
    whole = _whole(raw)
    if sentinels is not None and whole is not None and whole in sentinels.values:
        return Figure(None, f"not measured: {who} reported {whole} ({sentinels.meaning})")
    if raw is None or isinstance(raw, bool):
        return Figure(None)
    try:
        value = float(whole if whole is not None else raw) * scale
    except OverflowError:  # a whole number past any float
        return Figure(None, f"not measured: {who} reported {_shown(raw)}, not a finite number")
    except (TypeError, ValueError):
        return Figure(None)  # "N/A", an empty file: a gap the source's SourceInfo explains
    low, high = field_bounds(name)
    if not math.isfinite(value):
        return Figure(None, f"not measured: {who} reported {_shown(raw)}, not a finite number")
    if not low <= value <= high:
        return Figure(None, f"not measured: {who} reported {_shown(raw)}, outside the {low:g} to {high:g} a "
                            f"{name} can be")
    return Figure(value)


def bounded(index: int, source: str, figures: Mapping[str, Figure], **fields: Any) -> Reading:
    """A GPU reading of ``figures`` (each made by :func:`figure`) and the other ``fields`` as they are (name, throttle
    reasons, extra), with why each refused figure is not measured."""
    values: dict[str, Any] = {name: f.value for name, f in figures.items()}
    return Reading(GpuReading(index=index, source=source, **values, **fields),
                   {name: f.why for name, f in figures.items() if f.why is not None})


def text(raw: Any, limit: int = TEXT_LIMIT) -> str | None:
    """A name, version or UUID a source gave, as one line of valid Unicode: ``bench.vocab.safe_text.one_line`` (the
    one rule for names from outside) at ``limit`` characters; None where nothing is left (or it was no text)."""
    return one_line(raw, limit)


class NotMeasured:
    """The figures each GPU's latest reading had refused, each new one logged once (a sampler reads twice a second)."""

    def __init__(self, source: str) -> None:
        self._source = source
        self._latest: dict[int, dict[str, str]] = {}
        self._logged: set[tuple[int, str]] = set()
        self._lock = threading.Lock()

    def note(self, index: int, refused: Mapping[str, str]) -> None:
        with self._lock:
            self._latest[index] = dict(refused)
            for name, why in refused.items():
                if (index, name) not in self._logged:
                    self._logged.add((index, name))
                    logger.warning("%s, GPU %d, %s %s", self._source, index, name, why)

    def latest(self) -> dict[str, dict[str, str]]:
        with self._lock:
            return {f"gpu:{i}": dict(r) for i, r in self._latest.items() if r}
