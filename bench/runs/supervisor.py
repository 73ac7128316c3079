"""The supervision of one run's worker process: spawn it (or hand the run to a pre-started one), sample it, fold
its events into the RunState, write each epoch as it arrives, and enforce Stop (cooperative at batch end, terminate
after a grace period), hang detection and crash reporting. One Supervisor per run, on the manager's dispatcher thread.
"""

from __future__ import annotations

import logging
import queue as queue_module
import signal
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from bench.hardware import energy
from bench.runs import events
from bench.analysis import metrics
from bench.hardware.monitor import Sample, Sampler
from bench.vocab.readings import Epoch
from bench.vocab.records import Status
from bench.vocab.run_info import RunError
from bench.runs.run_state import TERMINAL, Progress, RunState, finish
from bench.runs.run_writer import SAMPLE_FLUSH_S, RunWriter
from bench.runs.worker_process import Spare, kill, start_worker_process

log = logging.getLogger("bench.runs.jobs")
MAX_LIVE_SAMPLES = 8000  # in memory per run; older halves are thinned 2:1 beyond this (the store keeps all)
# After the worker process has ended, how long its queue is still read for the events it sent last (its feeder thread
# flushed them into the pipe before it exited, but under load they may not be readable yet).
EXIT_DRAIN_S = 1.0


SamplerFactory = Callable[[float, Callable[[Sample], None]], Any]
"""Builds the sampler of one run from (interval_s, on_sample): an object with set_pid(pid), start() and stop()."""


def default_sampler(interval_s: float, on_sample: Callable[[Sample], None]) -> Sampler:
    """psutil + NVML sampling of the worker process, on the monotonic clock the supervisor also uses."""
    return Sampler(interval_s, on_sample=on_sample, clock=time.monotonic)



@dataclass
class _Worker:
    """A started worker: its process, its event queue, the sampler watching it and the wall time it started."""

    process: Any
    events: Any
    sampler: Any
    t0_wall: float


@dataclass
class _Outcome:
    """How the event loop ended: by the worker's own last event, or by ending the process ("stopped", "hung")."""

    ended_by_event: bool = False
    terminated_reason: str | None = None


class Supervisor:
    """Runs one RunState to its end. ``lock`` guards the state; ``stop_event`` is the run's Stop flag."""

    def __init__(self, state: RunState, *, lock: threading.Lock, writer: RunWriter, ctx: Any,
                 worker_target: Callable[..., None], sampler_factory: SamplerFactory, stop_event: Any,
                 log_path: str | None, hang_timeout_s: float, stop_grace_s: float,
                 on_change: Callable[[], None] | None = None):
        self.state = state
        self._lock = lock
        self.writer = writer
        self._ctx = ctx
        self._target = worker_target
        self._sampler_factory = sampler_factory
        self.stop_event = stop_event
        self._log_path = log_path
        self.hang_timeout_s = hang_timeout_s
        self.stop_grace_s = stop_grace_s
        self._unsettled: list[int] = []  # the epochs (numbers) whose energy waits for a sample after their end
        self._changed = on_change or (lambda: None)  # told of every sample, phase, epoch and the end (the live feed)

    def run(self, spare: Spare | None = None) -> None:
        """Supervise the worker until the run ends; the outcome is stored before it is shown."""
        worker = self._start(spare)
        outcome = _Outcome()
        try:
            self._loop(worker, outcome)
        finally:
            self._finish(worker, outcome)

    def _start(self, spare: Spare | None) -> _Worker:
        """Start the worker (or hand the run to the spare) and its sampler; the sampler's clock starts with it."""
        state = self.state
        if spare is not None:
            process, events = spare.process, spare.events
        else:
            events = self._ctx.Queue()
            process = self._ctx.Process(target=self._target,
                                        args=(state.config.to_dict(), events, self.stop_event, self._log_path),
                                        name=f"bench-worker-{state.id}", daemon=True)
        sampler = self._sampler_factory(state.config.sample_interval_s, self._on_sample)
        with self._lock:  # why energy or GPM figures will be None; kept in the run's info for its summary
            state.info = state.info.updated(energy_reasons=dict(getattr(sampler, "energy_reasons", None) or {}),
                                            gpm_reasons=dict(getattr(sampler, "gpm_reasons", None) or {}))
        self.writer.update(state, status=Status.STARTING, started_at=state.started_at)
        if spare is not None:
            spare.inbox.put((state.config.to_dict(), self._log_path))
        else:
            start_worker_process(process)
        sampler.set_pid(process.pid)
        sampler.start()
        # t_s of samples and epochs share one origin: the moment the worker started
        return _Worker(process=process, events=events, sampler=sampler, t0_wall=time.time())

    def _on_sample(self, sample: Sample) -> None:
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

    def _loop(self, worker: _Worker, outcome: _Outcome) -> None:
        """Fold the worker's events into the run until it ends: by its own last event, by exiting, by a Stop past
        its grace period or by hanging (the last two end the process)."""
        state = self.state
        last_event = last_flush = time.monotonic()
        exited_at: float | None = None
        while True:
            try:
                event = worker.events.get(timeout=0.2)
            except (queue_module.Empty, EOFError, OSError):
                event = None
            now = time.monotonic()
            if event is not None:
                last_event = now
                if self._apply_event(state, event, worker.t0_wall):
                    outcome.ended_by_event = True
                    return
            if self._unsettled:
                self._settle(state)
            if now - last_flush >= SAMPLE_FLUSH_S:
                self.writer.flush_samples(state)
                last_flush = now
            if event is None and not worker.process.is_alive():
                # its last events can still be on their way through the queue's pipe: read them for a moment
                exited_at = now if exited_at is None else exited_at
                if now - exited_at >= EXIT_DRAIN_S:
                    return
                continue
            if state.stop_requested_at is not None and time.time() - state.stop_requested_at > self.stop_grace_s:
                outcome.terminated_reason = "stopped"
            elif now - last_event > self.hang_timeout_s:
                outcome.terminated_reason = "hung"
            if outcome.terminated_reason is not None:
                kill(worker.process)
                return

    def _finish(self, worker: _Worker, outcome: _Outcome) -> None:
        """Close the run: a last sample and the epochs' energy, the outcome stored before any reader sees the run
        as ended, then the process and its queue ended."""
        state = self.state
        if self._unsettled and hasattr(worker.sampler, "sample_once"):
            try:  # one closing sample, so the last epoch's end lies between two samples
                self._on_sample(worker.sampler.sample_once())
            except Exception:  # noqa: BLE001 - a failed reading must not mask the run's outcome
                log.debug("closing sample failed", exc_info=True)
        worker.sampler.stop()
        self._settle(state, final=True)
        self.writer.flush_samples(state)
        if not outcome.ended_by_event:
            worker.process.join(timeout=5)
            with self._lock:
                self._classify_end(state, worker.process.exitcode, outcome.terminated_reason)
                ended_as = getattr(worker.process, "ended_as", None)  # a cluster run: its node lost, or not placed
                if ended_as is not None and outcome.terminated_reason is None:
                    state.pending_status, state.error = ended_as
        final = state.pending_status or Status.FAILED
        state.ended_at = time.time()
        # the store learns the outcome before any reader can see the run as ended
        self.writer.persist_end(state, final)
        with self._lock:
            finish(state, final)
        self._changed()
        worker.process.join(timeout=15)
        if worker.process.is_alive():
            kill(worker.process)
        try:
            worker.events.close()
        except Exception:  # noqa: BLE001 - a broken queue must not mask the run's outcome
            pass

    def _settle(self, state: RunState, final: bool = False) -> None:
        """Give each epoch a sample has been taken after (every one when ``final``) its joules and throttle reasons
        from the samples around it, and write it again when that changed it."""
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

    def _classify_end(self, state: RunState, exitcode: int | None, reason: str | None) -> None:
        """Decide the outcome of a worker that ended without a finished/failed event."""
        if reason == "stopped":
            state.error = None
            state.pending_status = Status.STOPPED
            state.info = state.info.updated(hard_stop=True)
            return
        if exitcode == 0 and state.stop_requested_at is not None:  # asked to stop, and it ended cleanly
            state.error = None
            state.pending_status = Status.STOPPED
            return
        if reason == "hung":
            state.error = RunError(
                error_type="Hung",
                message=f"The worker sent nothing for {self.hang_timeout_s:.0f} s and was ended.",
                hint="Try a smaller model or batch; raise BENCH_HANG_TIMEOUT_S if a single batch really takes longer.",
            )
        else:
            if exitcode is not None and exitcode < 0:
                try:
                    name = signal.Signals(-exitcode).name
                except ValueError:
                    name = f"signal {-exitcode}"
                how = f"was killed by {name}"
                if -exitcode == signal.SIGKILL:
                    how += " (often the system running out of memory)"
            else:
                how = f"exited with code {exitcode} without reporting"
            state.error = RunError(
                error_type="WorkerDied",
                message=f"The training process {how}. Epochs finished before then are kept.",
                hint="Lower the batch size, model size or sample limit, then start again.",
            )
        state.pending_status = Status.FAILED

    def _apply_event(self, state: RunState, raw: dict[str, Any], t0_wall: float) -> bool:
        """Fold one worker event into the run. Returns True when the event ends the run."""
        event = events.read(raw)
        with self._lock:
            self._mark_phase(state, event, t0_wall)
            if isinstance(event, events.Phase):
                state.phase = event.phase
            elif isinstance(event, events.Started):
                state.info = state.info.updated(**event.info.to_dict())
                state.status = Status.RUNNING
                state.phase = "training"
            elif isinstance(event, events.Progress):
                state.progress = Progress(epoch=event.epoch, batch=event.batch, batches=event.batches)
            elif isinstance(event, events.EpochEnded):
                state.epochs.append(self._epoch(state, event, t0_wall))
                self._unsettled.append(state.epochs[-1].epoch)
            elif isinstance(event, events.Finished):
                state.pending_status = Status(event.status) if event.status in TERMINAL else Status.FINISHED
                state.phase = "finishing"
            else:
                state.error = event.error
                state.pending_status = Status.FAILED
                state.phase = "finishing"
        if not isinstance(event, events.Progress):  # a batch's progress goes with the next sample
            self._changed()
        if isinstance(event, events.Started):
            self.writer.update(state, status=Status.RUNNING, info=state.info)
        elif isinstance(event, events.EpochEnded):
            self.writer.add_epoch(state, state.epochs[-1])
        return isinstance(event, (events.Finished, events.Failed))

    @staticmethod
    def _mark_phase(state: RunState, event: events.Event, t0_wall: float) -> None:
        """Start-up phases for the utilization chart: when each began, seconds from the samples' origin (the first
        progress after the first step starts "training")."""
        phases = state.info.phases or ()
        if isinstance(event, events.Phase):
            name = event.phase
        elif isinstance(event, events.Started):
            name = "first step"
        elif isinstance(event, events.Progress) and phases and phases[-1].phase == "first step":
            name = "training"
        else:
            return
        state.info = state.info.with_phase(name, round(event.time - t0_wall, 3))

    @staticmethod
    def _epoch(state: RunState, event: events.EpochEnded, t0_wall: float) -> Epoch:
        """An ended epoch placed on the samples' time line, with its achieved GFLOP/s; its energy and throttle
        figures wait for the samples that cover it (``_settle``)."""
        flops = state.info.flops_per_sample
        return Epoch(**{**dict(event.epoch), "t_start_s": event.started_wall - t0_wall,  # built here: written whole
                        "t_end_s": event.ended_wall - t0_wall,
                        "achieved_gflops": metrics.achieved_gflops(flops, event.epoch.samples_per_s) if flops else None,
                        "energy_j": {d: None for d in energy.devices_used(state.config.device, state.samples)},
                        "energy_estimated": (), "throttle_reasons": None})
