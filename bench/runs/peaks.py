"""The peak-probe queue: matmul peak probes waiting their turn in the run queue, so that none overlaps an epoch.

A PeakQueue hands each probe to the run queue (bench/runs/jobs.py) as a task between runs; the dispatcher runs it in its
turn. A probe measures an idle device, so it first waits (up to PEAK_WAIT_S) while another process's run is active.
Its outcome is its future's: ``probe.cached_peak``'s result, or its error. A finished run that achieved more than its
target's cached peak flags that peak stale and queues a new probe (``recheck``). The run queue builds one PeakQueue and
hands it out as ``JobManager.peaks``; a peak stand-in (BENCH_PEAK_TARGET, bench.vocab.settings.peak_target) takes the
probe's place there, as a worker stand-in takes the worker's.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Container
import functools
import logging
import threading
import time
from dataclasses import dataclass, field

from bench.vocab import records
from bench.analysis import compare, run_summary
from bench.hardware import peak_cache, probe
from bench.hardware.peak_cache import PeakEntry
from bench.vocab.records import Status
from bench.runs.run_state import RunState
from bench.store import Store, StoreError

__all__ = ["PEAK_WAIT_S", "PeakFuture", "PeakQueue"]
log = logging.getLogger(__name__)
PEAK_WAIT_S = 600.0  # a peak probe waits at most this long for another process's run to end

PeakFuture = concurrent.futures.Future  # of a probe: ``probe.cached_peak``'s result (a peak cache entry), or its error


@dataclass
class _PeakJob:
    """A matmul peak probe queued or running (see bench.hardware.probe.cached_peak)."""

    device: str
    cpu_threads: int | None
    refresh: bool
    future: PeakFuture[PeakEntry] = field(default_factory=PeakFuture)


class PeakQueue:
    """Peak probes queued in the run queue, one at a time between runs.

    Args:
        store: the run store, asked whether another process's run is active; None: no other process is waited for.
        enqueue: puts a task at the end of the run queue; its dispatcher calls it in its turn.
        own_runs: the ids of the run queue's own runs (those are never waited for).
        stopping: whether the run queue is shutting down (a probe then stops waiting for other processes).
        state_lock: the lock the run queue updates its runs' states under (a finished run is read under it).
        measure: called in a probe's turn as ``probe.cached_peak`` is (device, cpu_threads=, refresh=); None: that.
    """

    def __init__(self, store: Store | None, *, enqueue: Callable[[Callable[[], None]], None],
                 own_runs: Container[int], stopping: Callable[[], bool], state_lock: threading.Lock,
                 measure: Callable[..., PeakEntry] | None = None) -> None:
        self._store = store
        self._measure = measure or probe.cached_peak
        self._state_lock = state_lock
        self._enqueue = enqueue
        self._own_runs = own_runs
        self._stopping = stopping
        self._lock = threading.Lock()
        self._jobs: list[_PeakJob] = []  # queued or running, in the order they were queued

    def queue(self, device: str, *, cpu_threads: int | None = None,
              refresh: bool = False) -> PeakFuture[PeakEntry]:
        """Probe a device's matmul peak in the queue, after the runs before it and never during one. The future
        gives ``probe.cached_peak``'s result, or raises its error."""
        job = _PeakJob(device, cpu_threads, refresh)
        with self._lock:
            self._jobs.append(job)
        self._enqueue(functools.partial(self._run, job))
        return job.future

    def pending(self) -> list[PeakFuture[PeakEntry]]:
        """The futures of the peak probes still queued or running (e.g. re-probes after a run beat a peak)."""
        with self._lock:
            return [job.future for job in self._jobs]

    def recheck(self, state: RunState) -> PeakFuture[PeakEntry] | None:
        """A finished run that achieved more than its target's cached peak flags that peak stale and queues a new
        probe behind the queued runs; returns that probe's future, or None when the run beat no peak (or the peak
        was flagged already)."""
        target = state.config.target()
        if state.status != Status.FINISHED or target.kind == "gpus":
            return None
        with self._state_lock:
            epochs, info = tuple(state.epochs), state.info
        achieved = compare.achieved_of(run_summary.summarize(epochs, (), info=info, config=state.config), info)
        try:
            flagged = achieved is not None and peak_cache.mark_stale(
                state.config.device, achieved, cpu_threads=state.config.cpu_threads,
                backend=state.config.backend, run_id=state.id)
        except (ValueError, OSError) as exc:
            log.warning("could not check run %s against its peak: %s", state.id, exc)
            return None
        if not flagged:
            return None
        future = self.queue(state.config.device, cpu_threads=state.config.cpu_threads, refresh=True)
        log.info("run %s achieved %.1f GFLOP/s, more than the measured peak of %s: probing it again", state.id,
                 achieved, target)
        return future

    def cancel(self) -> None:
        """Cancel every probe that has not started (at shutdown); a running one finishes."""
        with self._lock:
            jobs = list(self._jobs)
        for job in jobs:
            job.future.cancel()

    def _run(self, job: _PeakJob) -> None:
        """Called by the run queue's dispatcher in the probe's turn."""
        try:
            if not job.future.set_running_or_notify_cancel():
                return
            self._wait_for_other_processes()
            try:
                result = self._measure(job.device, cpu_threads=job.cpu_threads, refresh=job.refresh)
            except Exception as exc:  # noqa: BLE001 - a failed probe is reported, the queue goes on
                job.future.set_exception(exc)
                return
            job.future.set_result(result)
        finally:
            with self._lock:
                self._jobs.remove(job)

    def _wait_for_other_processes(self) -> None:
        """A probe measures an idle device: wait (up to PEAK_WAIT_S) while another process's run is active."""
        if self._store is None:
            return
        deadline = time.monotonic() + PEAK_WAIT_S
        while time.monotonic() < deadline and not self._stopping():
            try:
                self._store.owners.mark_orphans_interrupted()
                busy = [r.id for r in self._store.list_runs()
                        if r.status in records.ACTIVE and r.id not in self._own_runs]
            except StoreError:
                return
            if not busy:
                return
            time.sleep(1.0)
