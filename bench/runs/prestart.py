"""The pre-started worker pool: one spare worker process that has already imported the framework.

The dashboard keeps one, made PRESTART_DELAY_S after it starts (for the default run) and again whenever a run ends
with nothing queued, with the environment of that run (backend, device, threads: worker.environment_key). The next
run with the same environment is sent to it instead of spawning cold; any other run discards it.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable

from bench.vocab.config import RunConfig
from bench.runs.worker_process import Spare, kill, start_worker_process

log = logging.getLogger("bench.runs.jobs")
PRESTART_DELAY_S = 5.0  # after a dashboard starts, before its first spare worker loads the framework (page first)


class SparePool:
    """At most one spare worker. ``log_path(name)`` says where a worker's own output goes."""

    def __init__(self, ctx: Any, log_path: Callable[[str], str | None]):
        self._ctx = ctx
        self._log_path = log_path
        self._lock = threading.Lock()
        self.spare: Spare | None = None

    def prestart_later(self, delay_s: float = PRESTART_DELAY_S) -> None:
        """A spare for the default run, once the server has had time to serve its first page."""
        timer = threading.Timer(delay_s, lambda: self.prestart(RunConfig()))
        timer.name, timer.daemon = "bench-prestart", True
        timer.start()

    def prestart(self, config: RunConfig) -> None:
        """Start a spare for runs like ``config`` unless one exists."""
        from bench.runs import worker

        with self._lock:
            if self.spare is not None:
                return
        env = config.to_dict()
        ctx = self._ctx
        spare = Spare(key=worker.environment_key(env), process=None, inbox=ctx.Queue(), events=ctx.Queue(),
                      stop_event=ctx.Event(), ready=ctx.Event())
        spare.process = ctx.Process(
            target=worker.spare_main, args=(env, spare.inbox, spare.events, spare.stop_event, spare.ready,
                                            self._log_path("spare")),
            name="bench-worker-spare", daemon=True)
        try:
            start_worker_process(spare.process)
        except Exception:  # noqa: BLE001 - no spare only means the next run starts cold
            log.exception("could not pre-start a worker")
            return
        with self._lock:
            if self.spare is None:
                self.spare = spare
                return
        discard(spare)  # another spare won the race

    def take(self, config: RunConfig) -> Spare | None:
        """The spare if it suits ``config``; a spare that does not suit is ended."""
        from bench.runs import worker

        with self._lock:
            spare, self.spare = self.spare, None
        if spare is None:
            return None
        if spare.key == worker.environment_key(config) and spare.process.is_alive():
            return spare
        discard(spare)
        return None

    def state(self) -> str | None:
        """None (no spare), "loading" (importing the framework) or "ready"."""
        with self._lock:
            spare = self.spare
        if spare is None or not spare.process.is_alive():
            return None
        return "ready" if spare.ready.is_set() else "loading"

    def close(self) -> None:
        with self._lock:
            spare, self.spare = self.spare, None
        if spare is not None:
            discard(spare)


def discard(spare: Spare) -> None:
    """Ask a spare to exit; end it if it does not."""
    try:
        spare.inbox.put(None)
    except (OSError, ValueError):
        pass
    spare.process.join(timeout=3)
    if spare.process.is_alive():
        kill(spare.process)
