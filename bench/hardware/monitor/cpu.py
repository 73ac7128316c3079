"""CPU collector: host CPU utilization (total and per core), RAM, and the training worker's process tree, via psutil.

Host utilization is computed from this collector's own ``psutil.cpu_times(percpu=True)`` snapshots, with psutil's
formula, rather than ``psutil.cpu_percent(interval=None)``: psutil keeps that baseline per calling thread, so priming it
in ``__init__`` (main thread) would not prime the sampler thread, and any other caller in the same thread would steal
the interval. A reading that cannot be computed yet (no time has passed) is None / an empty list, never 0.

Process figures cover the worker AND all its descendants (data-loader or compiler subprocesses); ``psutil.Process``
objects are cached across calls so ``cpu_percent(None)`` measures since the previous call. A process seen for the
first time contributes nothing to that call (its first delta is meaningless); a vanished one is skipped.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

import psutil

__all__ = ["CpuCollector", "CpuReading"]

_MIB = 2**20
_MIN_INTERVAL_S = 0.05  # below this the per-core tick deltas (10 ms jiffies) are too coarse to mean anything


@dataclass(frozen=True)
class CpuReading:
    """Host and worker-process CPU/RAM at one instant; None where it could not be measured."""

    cpu_percent: float | None  # mean over cores, 0..100
    cpu_per_core: list[float] = field(default_factory=list)  # each 0..100; empty when not measurable yet
    process_cpu_percent: float | None = None  # worker tree, percent of ONE core (can exceed 100 on several cores)
    process_rss_mib: float | None = None  # resident memory of the worker tree
    ram_used_mib: float | None = None  # host RAM in use (psutil virtual_memory().used)


class CpuCollector:
    """Samples host CPU per core, host RAM and (when a pid is set) the CPU and RSS of that process and its children."""

    def __init__(self, pid: int | None = None) -> None:
        self._lock = threading.Lock()
        self._last_times: list[Any] = psutil.cpu_times(percpu=True)
        self._last_times_at_s: float = time.monotonic()
        self._last_per_core: list[float] = []
        self._pid: int | None = None
        self._procs: dict[int, psutil.Process] = {}
        self.set_pid(pid)

    @property
    def pid(self) -> int | None:
        """The pid of the watched process, or None."""
        return self._pid

    def set_pid(self, pid: int | None) -> None:
        """Watch ``pid`` (and its descendants) from now on; None stops watching. Primes the CPU deltas."""
        with self._lock:
            if pid == self._pid:
                return
            self._pid = pid
            self._procs = {}
            if pid is not None:
                self._process_tree()  # primes cpu_percent for every process so the next collect has a delta

    def collect(self) -> CpuReading:
        """One reading; never raises for a vanished process."""
        with self._lock:
            per_core = self._per_core_percent()
            cpu_percent = sum(per_core) / len(per_core) if per_core else None
            process_cpu_percent, process_rss_mib = self._process_tree()
        try:
            ram_used_mib: float | None = psutil.virtual_memory().used / _MIB
        except (OSError, RuntimeError):
            ram_used_mib = None
        return CpuReading(
            cpu_percent=cpu_percent,
            cpu_per_core=per_core,
            process_cpu_percent=process_cpu_percent,
            process_rss_mib=process_rss_mib,
            ram_used_mib=ram_used_mib,
        )

    def _per_core_percent(self) -> list[float]:
        """Busy percent of each core since the previous call.

        Called again within ``_MIN_INTERVAL_S`` it repeats the last result (an empty list before the first one).
        """
        now_s = time.monotonic()
        if now_s - self._last_times_at_s < _MIN_INTERVAL_S:
            return list(self._last_per_core)
        times = psutil.cpu_times(percpu=True)
        previous = self._last_times
        self._last_times, self._last_times_at_s = times, now_s
        if len(times) != len(previous):  # a core went on- or offline: start over
            self._last_per_core = []
            return []
        per_core: list[float] = []
        for before, after in zip(previous, times):
            total_s = _total_time_s(after) - _total_time_s(before)
            busy_s = _busy_time_s(after) - _busy_time_s(before)
            if total_s <= 0:
                self._last_per_core = []
                return []
            per_core.append(round(min(100.0, max(0.0, 100.0 * busy_s / total_s)), 1))
        self._last_per_core = per_core
        return per_core

    def _process_tree(self) -> tuple[float | None, float | None]:
        """(CPU percent, RSS MiB) summed over the watched process and its descendants; (None, None) if it is gone."""
        if self._pid is None:
            return None, None
        root = self._cached(self._pid)
        if root is None:
            self._procs = {}
            return None, None
        try:
            if root.status() in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD):
                return None, None
            members = [root, *root.children(recursive=True)]
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            self._procs = {}
            return None, None
        cpu_percent_sum = 0.0
        measured = False
        rss_bytes = 0
        seen: dict[int, psutil.Process] = {}
        for member in members:
            proc = self._procs.get(member.pid)
            is_new = proc is None or proc != member  # psutil compares pid AND creation time (pid reuse)
            proc = member if is_new or proc is None else proc
            try:
                with proc.oneshot():
                    cpu = proc.cpu_percent(None)
                    rss_bytes += proc.memory_info().rss
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            seen[proc.pid] = proc
            if not is_new:
                cpu_percent_sum += cpu
                measured = True
        self._procs = seen
        if not seen:
            return None, None
        return (cpu_percent_sum if measured else None), rss_bytes / _MIB

    def _cached(self, pid: int) -> psutil.Process | None:
        """The cached Process for ``pid`` if still the same process, else a fresh one; None if it does not exist."""
        proc = self._procs.get(pid)
        try:
            if proc is not None and proc.is_running():
                return proc
            return psutil.Process(pid)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            return None


def _total_time_s(times: Any) -> float:
    """All CPU time in a cpu_times() tuple; on Linux guest time is already inside user/nice (as psutil does)."""
    total = float(sum(times))
    total -= getattr(times, "guest", 0.0)
    total -= getattr(times, "guest_nice", 0.0)
    return total


def _busy_time_s(times: Any) -> float:
    """Non-idle CPU time in a cpu_times() tuple (idle and iowait removed, as psutil does)."""
    return _total_time_s(times) - times.idle - getattr(times, "iowait", 0.0)
