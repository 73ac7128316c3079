"""The watch over one run's worker process: spawn it (or hand the run to a pre-started one), sample it, read its
events off its queue and feed them, its samples and, where it ends without a last event, the outcome its ending means
to the run's :class:`~bench.runs.recorder.Recorder` (which folds them into the RunState and writes them); enforce Stop
(cooperative at batch end, terminate after a grace period), hang detection and crash reporting. One Supervisor per
run, on the manager's dispatcher thread.
"""

from __future__ import annotations

import logging
import queue as queue_module
import signal
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from bench.hardware.monitor import Sample, Sampler
from bench.vocab.records import Status
from bench.vocab.run_info import RunError
from bench.runs.recorder import Recorder
from bench.runs.run_state import RunState
from bench.runs.run_writer import RunWriter
from bench.runs.worker_process import Spare, kill, start_worker_process

log = logging.getLogger("bench.runs.jobs")
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
    """A started worker: its process, its event queue and the sampler watching it."""

    process: Any
    events: Any
    sampler: Any


@dataclass
class _Outcome:
    """How the event loop ended: by the worker's own last event, or by ending the process ("stopped", "hung")."""

    ended_by_event: bool = False
    terminated_reason: str | None = None


class Supervisor:
    """Runs one RunState to its end. ``lock`` guards the state; ``stop_event`` is the run's Stop flag. What the run
    says is folded by ``self.recorder``; this class watches the process that says it."""

    def __init__(self, state: RunState, *, lock: threading.Lock, writer: RunWriter, ctx: Any,
                 worker_target: Callable[..., None], sampler_factory: SamplerFactory, stop_event: Any,
                 log_path: str | None, hang_timeout_s: float, stop_grace_s: float,
                 on_change: Callable[[], None] | None = None):
        self.state = state
        self.recorder = Recorder(state, lock=lock, writer=writer, on_change=on_change)
        self._lock = lock
        self._ctx = ctx
        self._target = worker_target
        self._sampler_factory = sampler_factory
        self.stop_event = stop_event
        self._log_path = log_path
        self.hang_timeout_s = hang_timeout_s
        self.stop_grace_s = stop_grace_s

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
        sampler = self._sampler_factory(state.config.sample_interval_s, self.recorder.on_sample)
        self.recorder.begin(sampler)
        if spare is not None:
            spare.inbox.put((state.config.to_dict(), self._log_path))
        else:
            start_worker_process(process)
        sampler.set_pid(process.pid)
        sampler.start()
        self.recorder.start_clock()  # t_s of samples and epochs share one origin: the moment the worker started
        return _Worker(process=process, events=events, sampler=sampler)

    def _loop(self, worker: _Worker, outcome: _Outcome) -> None:
        """Feed the worker's events to the recorder until the run ends: by its own last event, by exiting, by a Stop
        past its grace period or by hanging (the last two end the process)."""
        state = self.state
        last_event = time.monotonic()
        exited_at: float | None = None
        while True:
            try:
                event = worker.events.get(timeout=0.2)
            except (queue_module.Empty, EOFError, OSError):
                event = None
            now = time.monotonic()
            if event is not None:
                last_event = now
                if self.recorder.apply(event):
                    outcome.ended_by_event = True
                    return
            self.recorder.tick()
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
        """Close the run: a last sample for the epochs' energy, the outcome of a process that ended without its last
        event, the run closed by the recorder (stored before any reader sees it as ended), then the process and its
        queue ended."""
        recorder = self.recorder
        if recorder.unsettled and hasattr(worker.sampler, "sample_once"):
            try:  # one closing sample, so the last epoch's end lies between two samples
                recorder.on_sample(worker.sampler.sample_once())
            except Exception:  # noqa: BLE001 - a failed reading must not mask the run's outcome
                log.debug("closing sample failed", exc_info=True)
        worker.sampler.stop()
        if not outcome.ended_by_event:
            worker.process.join(timeout=5)
            status, error, hard_stop = self._end_of(worker.process.exitcode, outcome.terminated_reason)
            ended_as = getattr(worker.process, "ended_as", None)  # a cluster run: its node lost, or not placed
            if ended_as is not None and outcome.terminated_reason is None:
                status, error = Status(ended_as[0]), ended_as[1]
            recorder.ended(status, error, hard_stop=hard_stop)
        recorder.close()
        worker.process.join(timeout=15)
        if worker.process.is_alive():
            kill(worker.process)
        try:
            worker.events.close()
        except Exception:  # noqa: BLE001 - a broken queue must not mask the run's outcome
            pass

    def _end_of(self, exitcode: int | None, reason: str | None) -> tuple[Status, RunError | None, bool]:
        """The outcome of a worker that ended without a finished/failed event: (status, error, hard stop)."""
        if reason == "stopped":
            return Status.STOPPED, None, True
        if exitcode == 0 and self.state.stop_requested_at is not None:  # asked to stop, and it ended cleanly
            return Status.STOPPED, None, False
        if reason == "hung":
            return Status.FAILED, RunError(
                error_type="Hung",
                message=f"The worker sent nothing for {self.hang_timeout_s:.0f} s and was ended.",
                hint="Try a smaller model or batch; raise BENCH_HANG_TIMEOUT_S if a single batch really takes longer.",
            ), False
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
        return Status.FAILED, RunError(
            error_type="WorkerDied",
            message=f"The training process {how}. Epochs finished before then are kept.",
            hint="Lower the batch size, model size or sample limit, then start again.",
        ), False
