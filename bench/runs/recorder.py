"""The folding of one run's events and samples into its RunState, and their writes: no process, no queue, no thread.

A :class:`Recorder` is fed a run's worker events (``apply``), its samples (``on_sample``) and, where a process ended
without its last event, the outcome decided from how it ended (``ended``); it keeps the state under the run's lock,
writes each epoch as it arrives and the samples every SAMPLE_FLUSH_S through the RunWriter, settles each epoch's energy
once a sample follows it, and closes the run with its outcome stored before any reader sees it as ended (``close``).
Two feeders: the Supervisor (bench/runs/supervisor.py) watching a worker process, and a script's own fit
(bench/integrations/keras.py), whose process is the worker.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable

from bench.analysis import metrics
from bench.hardware import energy
from bench.runs import events
from bench.runs.run_state import TERMINAL, Progress, RunState, finish
from bench.runs.run_writer import SAMPLE_FLUSH_S, RunWriter
from bench.vocab.readings import Epoch, Sample
from bench.vocab.records import Status
from bench.vocab.run_info import RunError

log = logging.getLogger("bench.runs.jobs")
MAX_LIVE_SAMPLES = 8000  # in memory per run; older halves are thinned 2:1 beyond this (the store keeps all)


class Recorder:
    """Folds one run's events and samples into ``state``. ``lock`` guards the state (the JobManager's, or the
    callback's own); ``writer`` writes it; ``on_change`` is told of every sample, phase, epoch and the end (the live
    feed)."""

    def __init__(self, state: RunState, *, lock: threading.Lock, writer: RunWriter,
                 on_change: Callable[[], None] | None = None) -> None:
        self.state = state
        self._lock = lock
        self.writer = writer
        self._changed = on_change or (lambda: None)
        self._unsettled: list[int] = []  # the epochs (numbers) whose energy waits for a sample after their end
        self.t0_wall = time.time()  # the samples' and epochs' origin: the moment the worker started (start_clock)
        self._last_flush = time.monotonic()

    # -- the start ----------------------------------------------------------------------------------------------------
    def begin(self, sampler: Any) -> None:
        """The run is starting, watched by ``sampler`` (None: no samples): why its energy or GPM figures will be None
        kept in the run's info for its summary, and the status written."""
        state = self.state
        with self._lock:
            state.info = state.info.updated(energy_reasons=dict(getattr(sampler, "energy_reasons", None) or {}),
                                            gpm_reasons=dict(getattr(sampler, "gpm_reasons", None) or {}))
        self.writer.update(state, status=Status.STARTING, started_at=state.started_at)

    def start_clock(self) -> None:
        """The worker has started: t_s of samples and epochs count from now."""
        self.t0_wall = time.time()

    # -- what the run says --------------------------------------------------------------------------------------------
    @property
    def unsettled(self) -> bool:
        """Whether an epoch's energy still waits for a sample after its end (a closing sample settles it)."""
        return bool(self._unsettled)

    def on_sample(self, sample: Sample) -> None:
        """Keep one sample in memory with its number in the run (older halves thinned 2:1 past MAX_LIVE_SAMPLES) and
        for the store."""
        state = self.state
        with self._lock:
            seq = self.writer.keep_sample(state, sample)
            state.samples.append(sample)
            state.sample_seqs.append(seq)
            if len(state.samples) > MAX_LIVE_SAMPLES:
                half = len(state.samples) // 2
                state.samples[:half] = state.samples[:half:2]
                state.sample_seqs[:half] = state.sample_seqs[:half:2]
        self._changed()

    def apply(self, event: events.WorkerEvent) -> bool:
        """Fold one worker event into the run. Returns True when the event ends the run (finished or failed)."""
        state, t0_wall = self.state, self.t0_wall
        first_batch = isinstance(event, events.BatchEnded) and state.progress is None
        with self._lock:
            self._mark_phase(state, event, t0_wall)
            if isinstance(event, events.PhaseBegan):
                state.phase = event.phase
            elif isinstance(event, events.Started):
                state.info = state.info.updated(**event.info.to_dict())
                state.status = Status.RUNNING
                state.phase = "training"
            elif isinstance(event, events.BatchEnded):
                state.progress = Progress(epoch=event.epoch, batch=event.batch, batches=event.batches)
            elif isinstance(event, events.EpochEnded):
                state.epochs.append(self._epoch(state, event, t0_wall))
                self._unsettled.append(state.epochs[-1].epoch)
            elif isinstance(event, events.Finished):
                state.pending_status = Status(event.status) if event.status in TERMINAL else Status.FINISHED
                state.phase = "finishing"
            elif isinstance(event, events.Failed):
                state.error = event.error
                state.pending_status = Status.FAILED
                state.phase = "finishing"
        if first_batch or not isinstance(event, events.BatchEnded):  # later batches' progress goes with the next sample
            self._changed()
        if isinstance(event, events.Started):
            self.writer.update(state, status=Status.RUNNING, info=state.info)
        elif isinstance(event, events.EpochEnded):
            self.writer.add_epoch(state, state.epochs[-1])
        return isinstance(event, (events.Finished, events.Failed))

    def tick(self) -> None:
        """Between events: settle the epochs a sample now follows, and write the kept samples every SAMPLE_FLUSH_S."""
        if self._unsettled:
            self.settle()
        now = time.monotonic()
        if now - self._last_flush >= SAMPLE_FLUSH_S:
            self.writer.flush_samples(self.state)
            self._last_flush = now

    def ended(self, status: Status, error: RunError | None = None, *, hard_stop: bool = False) -> None:
        """The run's outcome where its worker ended without a last event (as its feeder read the ending)."""
        with self._lock:
            self.state.error = error
            self.state.pending_status = status
            if hard_stop:
                self.state.info = self.state.info.updated(hard_stop=True)

    # -- the end ------------------------------------------------------------------------------------------------------
    def close(self) -> None:
        """Close the run: every epoch's energy settled, the samples written, the outcome (``failed`` where none was
        given) stored before any reader sees the run as ended, then shown."""
        state = self.state
        self.settle(final=True)
        self.writer.flush_samples(state)
        final = state.pending_status or Status.FAILED
        state.ended_at = time.time()
        self.writer.persist_end(state, final)  # the store learns the outcome before any reader can see the run ended
        with self._lock:
            finish(state, final)
        self._changed()

    def settle(self, final: bool = False) -> None:
        """Give each epoch a sample has been taken after (every one when ``final``) its joules and throttle reasons
        from the samples around it, and write it again when that changed it."""
        state = self.state
        settled = []
        with self._lock:
            for number in list(self._unsettled):
                at = next(i for i, e in enumerate(state.epochs) if e.epoch == number)
                epoch = state.epochs[at]
                if not final and not energy.covers(state.samples, epoch.t_end_s):
                    continue
                start, end = epoch.t_start_s, epoch.t_end_s
                devices = list(epoch.energy_j or {})
                joules, estimated = energy.epoch_energy(state.samples, start, end, devices)
                reasons = energy.epoch_throttle_reasons(state.samples, start, end, devices)
                now = epoch.updated(energy_j=joules, energy_estimated=tuple(estimated),
                                    throttle_reasons=tuple(reasons) if reasons is not None else None)
                self._unsettled.remove(number)
                if now != epoch:  # written again only when the samples added something to it
                    state.epochs[at] = now
                    settled.append(now)
        for epoch in settled:
            self.writer.add_epoch(state, epoch)

    # -- the parts ----------------------------------------------------------------------------------------------------
    @staticmethod
    def _mark_phase(state: RunState, event: events.WorkerEvent, t0_wall: float) -> None:
        """Start-up phases for the utilization chart: when each began, seconds from the samples' origin (the first
        progress after the first step starts "training")."""
        phases = state.info.phases or ()
        if isinstance(event, events.PhaseBegan):
            name = event.phase
        elif isinstance(event, events.Started):
            name = "first step"
        elif isinstance(event, events.BatchEnded) and phases and phases[-1].phase == "first step":
            name = "training"
        else:
            return
        state.info = state.info.with_phase(name, round(event.time - t0_wall, 3))

    @staticmethod
    def _epoch(state: RunState, event: events.EpochEnded, t0_wall: float) -> Epoch:
        """An ended epoch placed on the samples' time line, with its achieved GFLOP/s; its energy and throttle
        figures wait for the samples that cover it (``settle``)."""
        flops = state.info.flops_per_sample
        return Epoch(**{**dict(event.epoch), "t_start_s": event.started_wall - t0_wall,  # built here: written whole
                        "t_end_s": event.ended_wall - t0_wall,
                        "achieved_gflops": metrics.achieved_gflops(flops, event.epoch.samples_per_s) if flops else None,
                        "energy_j": {d: None for d in energy.devices_used(state.config.device, state.samples)},
                        "energy_estimated": (), "throttle_reasons": None})
