"""Who is told that the run queue changed: a run queued, started, a phase, a sample or an epoch reported, a run ended.
The live feed and the lab's board listen; each listener is called from the thread that made the change, without the
queue's lock, and must return at once; one that fails is logged and never stops a run."""

from __future__ import annotations

import logging
from typing import Callable

log = logging.getLogger("bench.runs.jobs")


class Listeners:
    """The listeners of one run queue's changes (``JobManager.changes``)."""

    def __init__(self) -> None:
        self._listeners: list[Callable[[], None]] = []

    def add(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` on every change from now on."""
        self._listeners.append(listener)

    def tell(self) -> None:
        """Call every listener; one that raises is logged and the others are still called."""
        for listener in list(self._listeners):
            try:
                listener()
            except Exception:  # noqa: BLE001 - a listener must never stop a run
                log.exception("a change listener failed")
