"""Apple silicon's GPU as GPU sources (bench.hardware.monitor.sources): the IOAccelerator statistics ``ioreg`` prints
(no sudo), and macmon (IOReport, no sudo) where the ``macmon-lib`` package is installed.

Apple publishes no GPU utilization API. ``ioreg -r -d 1 -w 0 -c IOAccelerator -a`` prints a plist: one dict per
accelerator whose ``PerformanceStatistics`` holds "Device Utilization %", "Renderer Utilization %", "Tiler
Utilization %" and "In use system memory" (bytes) - keys Apple does not document, so the readings say so. ioreg gives
no power, clock or temperature; macmon reads the GPU's active residency and power from IOReport (``Sampler().metrics()``:
``gpu_usage[0].usage``, ``power.gpu``), and where it loads it gives utilization and power, ioreg the memory.
``powermetrics`` needs sudo and is not used. The Mac's GPU shares the machine's memory, so there is no GPU memory
total; memory in use is what the GPU driver holds for all processes (a run's own share is
``torch.mps.driver_allocated_memory()`` in its worker).
"""

from __future__ import annotations

import plistlib
import threading
from typing import Any

from bench.hardware.monitor.source_types import (Figure, HostAccess, Reading, ReadingCollector, SourceGpu, SourceInfo,
                                                 bounded, figure, key, number, text)

__all__ = ["IOREG_INFO", "IoregSource", "MACMON_INFO", "MacmonSource", "open_ioreg", "open_macmon", "statistics"]

_MIB = 2**20
UNDOCUMENTED = ("read from IOAccelerator's PerformanceStatistics, keys Apple does not document (they may change "
                "with macOS)")
NO_GPM = "SM, tensor and DRAM activity are NVIDIA GPM figures; Apple gives no counterpart."
NO_TOTAL = "Apple silicon's GPU shares the Mac's memory: there is no GPU memory total (the RAM is the limit)."
IOREG_INFO = SourceInfo(
    name="IOAccelerator (ioreg)", vendor="apple",
    utilization=("IOAccelerator's \"Device Utilization %\": the share of time the GPU was busy with any work, "
                 f"{UNDOCUMENTED}; not how much of the chip worked."),
    not_measured={"power_w": "ioreg gives no GPU power: `pip install macmon-lib` reads it from IOReport without "
                             "sudo (powermetrics would need sudo).",
                  "energy_j": "no energy counter on a Mac; with macmon-lib, power integrated over the samples.",
                  "temp_c": "ioreg gives no GPU temperature.", "sm_clock_mhz": "ioreg gives no GPU clock.",
                  "mem_total_mib": NO_TOTAL, "sm_active_percent": NO_GPM, "tensor_active_percent": NO_GPM,
                  "throttle_reasons": "macOS gives no clock-limit reasons without sudo."},
    documented=False)
MACMON_INFO = SourceInfo(
    name="macmon (IOReport)", vendor="apple",
    utilization=("macmon's GPU usage: the GPU's active residency from IOReport (the share of time it was not idle), "
                 "through Apple's private IOReport interface; not how much of the chip worked."),
    not_measured={"energy_j": "no energy counter on a Mac: energy is macmon's power integrated over the samples "
                              "(an estimate).",
                  "mem_total_mib": NO_TOTAL, "sm_active_percent": NO_GPM, "tensor_active_percent": NO_GPM,
                  "throttle_reasons": "macOS gives no clock-limit reasons without sudo."},
    documented=False)
NOT_A_MAC = "This is not a Mac ({system}): Apple's GPU sources run on macOS."


def statistics(plist: bytes | None) -> list[dict[str, Any]]:
    """The accelerators in ioreg's plist that carry PerformanceStatistics, as the plist has them; [] when unreadable."""
    if not plist:
        return []
    try:
        parsed = plistlib.loads(plist)
    except (plistlib.InvalidFileException, ValueError, TypeError):
        return []
    entries = parsed if isinstance(parsed, list) else [parsed]
    return [e for e in entries if isinstance(e, dict) and isinstance(key(e, "PerformanceStatistics"), dict)]


def _name(entry: dict[str, Any]) -> str:
    model = key(entry, "model")
    cores = number(key(entry, "gpu-core-count"))
    base = (text(model) if isinstance(model, str) else None) or text(key(entry, "IOClass")) or "Apple GPU"
    return f"{base} ({cores:.0f}-core GPU)" if cores and 0 < cores < 100_000 else base


def _percent(stats: Any, name: str) -> Figure:
    return figure(key(stats, name), "util_percent", who="ioreg")


class IoregSource:
    """The Mac's GPU(s) as ioreg's IOAccelerator statistics list them."""

    info = IOREG_INFO

    def __init__(self, machine: HostAccess, entries: list[dict[str, Any]]) -> None:
        self._machine = machine
        self._names = [_name(e) for e in entries]

    def gpus(self) -> list[SourceGpu]:
        return [SourceGpu(index=i, name=name) for i, name in enumerate(self._names)]

    def collector(self, indices: list[int] | None = None) -> ReadingCollector:
        chosen = list(range(len(self._names))) if indices is None else indices
        return ReadingCollector(self, self.info, chosen, len(self._names))

    def read(self, index: int) -> Reading:
        entries = statistics(self._machine.ioreg())
        return self.reading(index, key(entries[index], "PerformanceStatistics") if index < len(entries) else None)

    def reading(self, index: int, stats: Any, source: str | None = None,
                more: dict[str, Figure] | None = None) -> Reading:
        """ioreg's figures of GPU ``index`` (``stats``: its PerformanceStatistics; None: no reading), and ``more``
        (another source's figures over the same GPU)."""
        extra = {name: figure.value for name, figure in (
            ("renderer_util_percent", _percent(stats, "Renderer Utilization %")),
            ("tiler_util_percent", _percent(stats, "Tiler Utilization %"))) if figure.value is not None}
        return bounded(index, source or self.info.name, {
            "util_percent": _percent(stats, "Device Utilization %"),
            "mem_used_mib": figure(key(stats, "In use system memory"), "mem_used_mib", scale=1 / _MIB, who="ioreg"),
            **(more or {})}, extra=dict(extra))


def open_ioreg(machine: HostAccess) -> IoregSource | str:
    """ioreg's source on a Mac whose ioreg lists an accelerator with statistics; else why not."""
    if machine.system != "Darwin":
        return NOT_A_MAC.format(system=machine.system)
    entries = statistics(machine.ioreg())
    if not entries:
        return ("ioreg lists no IOAccelerator with PerformanceStatistics (`ioreg -r -d 1 -w 0 -c IOAccelerator -a` "
                "printed none): this Mac's GPU cannot be read.")
    return IoregSource(machine, entries)


class MacmonSource:
    """The Mac's GPU read by macmon (utilization and power) and ioreg (memory, name)."""

    info = MACMON_INFO

    def __init__(self, machine: HostAccess, module: Any, sampler: Any) -> None:
        self._ioreg = IoregSource(machine, statistics(machine.ioreg()) or [{"PerformanceStatistics": {}}])
        self._machine = machine
        self._module = module
        self._sampler = sampler
        self._lock = threading.Lock()

    def gpus(self) -> list[SourceGpu]:
        return self._ioreg.gpus()[:1]  # macmon reads the one GPU of an Apple chip

    def collector(self, indices: list[int] | None = None) -> ReadingCollector:
        return ReadingCollector(self, self.info, [0] if indices is None else indices, 1)

    def read(self, index: int) -> Reading:
        with self._lock:
            metrics = self._sampler.metrics()
        usage = getattr(metrics, "gpu_usage", None) or ()
        first = usage[0] if isinstance(usage, (list, tuple)) and usage else None
        entries = statistics(self._ioreg_plist())
        stats = key(entries[index], "PerformanceStatistics") if index < len(entries) else None
        return self._ioreg.reading(index, stats, self.info.name, {
            "util_percent": figure(getattr(first, "usage", None), "util_percent", scale=100, who="macmon"),  # a ratio
            "power_w": figure(getattr(getattr(metrics, "power", None), "gpu", None), "power_w", who="macmon"),
            "sm_clock_mhz": figure(getattr(first, "freq_mhz", None), "sm_clock_mhz", who="macmon")})

    def _ioreg_plist(self) -> bytes | None:
        return self._machine.ioreg()


def open_macmon(machine: HostAccess) -> MacmonSource | str:
    """macmon's source on a Mac where macmon-lib is installed and samples; else why not."""
    if machine.system != "Darwin":
        return NOT_A_MAC.format(system=machine.system)
    module = machine.macmon()
    if module is None:
        return ("macmon-lib is not installed: `pip install macmon-lib` adds the GPU's power and IOReport usage "
                "(no sudo); ioreg's statistics are read without it.")
    try:
        sampler = module.Sampler()
        sampler.metrics()
    except Exception as exc:  # noqa: BLE001 - a native binding fails in its own ways
        return f"macmon-lib could not sample ({type(exc).__name__}: {exc})."
    return MacmonSource(machine, module, sampler)
