"""Who is told that something changed: the run queue (a run queued, started, a phase, a sample or an epoch reported, a
run ended: the live feed and the lab's board listen), a live feed's new event, the lab board's new version (the
stream's wakers listen). Each listener is called from the thread that made the change, without its lock, and must
return at once; one that fails is logged and never stops the others or the change."""

from __future__ import annotations

import logging
from typing import Callable

log = logging.getLogger("bench.runs.jobs")


class Listeners:
    """The listeners of one source of changes (``JobManager.changes``, a live feed's or the lab room's publishing)."""

    def __init__(self, logger: logging.Logger = log) -> None:
        self._listeners: list[Callable[[], None]] = []
        self._log = logger

    def add(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` on every change from now on."""
        self._listeners.append(listener)

    def tell(self) -> None:
        """Call every listener; one that raises is logged and the others are still called."""
        for listener in list(self._listeners):
            try:
                listener()
            except Exception:  # noqa: BLE001 - a listener must never stop a run
                self._log.exception("a change listener failed")
