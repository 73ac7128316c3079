"""The registry of comparison and sweep groups: several runs queued as one, shared by every browser session.

A GroupRegistry queues a group's peak probes (bench/runs/peaks.py) and then its runs (the run queue, bench/runs/jobs.py)
in one turn, and keeps each RunGroup (bench/runs/run_state.py) up to date as its probes land. The run queue builds one
GroupRegistry and hands it out as ``JobManager.groups``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import replace

from bench.vocab.config import RunConfig
from bench.vocab.config import DeviceInventory
from bench.hardware import devices
from bench.hardware.peak_cache import PeakEntry
from bench.runs.peaks import PeakFuture, PeakQueue
from bench.runs.run_state import GroupPeak, RunGroup

__all__ = ["GroupRegistry"]


class GroupRegistry:
    """The groups queued so far, newest last; each is a frozen RunGroup, replaced under this registry's lock.

    Args:
        submit: queues one validated run on the run queue; returns its id.
        peaks: the peak-probe queue a group's probes go to.
        machine: the machine the configs are checked against (the run queue's, discovered once).
        order_lock: held by the run queue from a run's id to its place in the queue; held here over a whole group,
            so that a group's runs follow one another when several sessions press Start at once.
    """

    def __init__(self, *, submit: Callable[[RunConfig], int], peaks: PeakQueue, order_lock: threading.RLock,
                 machine: Callable[[], DeviceInventory] = devices.discover) -> None:
        self._submit = submit
        self._machine = machine
        self._peaks = peaks
        self._order_lock = order_lock
        self._lock = threading.Lock()
        self._groups: list[RunGroup] = []

    def submit(self, kind: str, configs: list[RunConfig], *, targets: list[str] | tuple[str, ...],
               prices: Mapping[str, float] | None = None, peaks: dict[str, RunConfig] | None = None) -> int:
        """Queue several runs as one comparison or sweep (all validated before any is queued); returns the group id.

        ``targets`` are the group's targets as the user named them; ``prices`` their hourly prices, where entered.
        ``peaks`` maps a target to a config on it: its matmul peak is probed first, in the queue, and lands in the
        group's ``peaks[target]`` (a GroupPeak: the figure, or the reason the probe failed).

        Raises:
            ConfigError: for the first config that is not valid; nothing is queued then.
        """
        hardware = self._machine()
        for config in configs:
            config.validate(hardware)
        with self._order_lock:
            with self._lock:
                group = RunGroup(id=len(self._groups) + 1, kind=kind, targets=tuple(targets), created_at=time.time(),
                                 prices=dict(prices) if prices is not None else None,
                                 peaks={target: GroupPeak() for target in peaks or {}})
                self._groups.append(group)
            for target, config in (peaks or {}).items():
                self._land_when_done(group.id, target, self._peaks.queue(config.device, cpu_threads=config.cpu_threads))
            run_ids = tuple(self._submit(config) for config in configs)
        self._replace(group.id, lambda g: replace(g, run_ids=run_ids))
        return group.id

    def of_run(self, run_id: int) -> RunGroup | None:
        """The group that queued run ``run_id``, or None for a run queued on its own."""
        with self._lock:
            return next((group for group in self._groups if run_id in group.run_ids), None)

    def latest(self, kind: str) -> RunGroup | None:
        """The most recent group of this kind (shared by every browser session), or None."""
        with self._lock:
            return next((group for group in reversed(self._groups) if group.kind == kind), None)

    def reprobing(self, run_id: int, target: str, future: PeakFuture[PeakEntry]) -> None:
        """A run beat ``target``'s peak and ``future`` is the new probe: the newest group holding the run shows the
        figure flagged stale until the probe lands in it."""
        with self._lock:
            group = next((g for g in reversed(self._groups) if run_id in g.run_ids), None)
        if group is None:
            return
        self._replace(group.id, lambda g: g.with_stale_peak(target))
        self._land_when_done(group.id, target, future)

    def _land_when_done(self, group_id: int, target: str, future: PeakFuture[PeakEntry]) -> None:
        """When the probe ends, its figure (or the reason it failed) lands in the group; a cancelled probe lands
        nothing."""

        def land(done: PeakFuture[PeakEntry]) -> None:
            if done.cancelled():
                return
            error = done.exception()
            if error is not None:
                self._replace(group_id, lambda g: g.with_peak(target, None, None, str(error)))
                return
            result = done.result()
            self._replace(group_id, lambda g: g.with_peak(target, result.peak_gflops, result, None))

        future.add_done_callback(land)

    def _replace(self, group_id: int, change: Callable[[RunGroup], RunGroup]) -> None:
        with self._lock:
            for i, group in enumerate(self._groups):
                if group.id == group_id:
                    self._groups[i] = change(group)
                    return
