"""Who a stored run is and who runs it: its key (id and creation stamp together) and its owner (the process)."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass

import psutil

_START_TIME_SLACK_S = 1.0  # process start times are rounded by the kernel's clock ticks
SAME_STAMP_S = 1e-6  # created_at goes to a REAL column and back unchanged; this only absorbs a decimal round trip


@dataclass(frozen=True)
class Owner:
    """The process that runs a run: its pid, host name and start time (so a reused pid is not mistaken for it)."""

    pid: int
    host: str
    started: float

    @classmethod
    def current(cls) -> Owner:
        return cls(pid=os.getpid(), host=socket.gethostname(), started=process_start(os.getpid()) or 0.0)

    def gone(self, now: float, heartbeat_at: float | None, limit_s: float) -> bool:
        """Whether this owner can no longer be running its run.

        On this host the process table decides; on another host only the heartbeat can.
        """
        if self.host == socket.gethostname():
            started = process_start(self.pid)
            return started is None or (self.started > 0 and abs(started - self.started) > _START_TIME_SLACK_S)
        return heartbeat_at is None or now - heartbeat_at > limit_s


def process_start(pid: int) -> float | None:
    """The start time of a live (non-zombie) process, or None if there is none with this pid."""
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return None
        return proc.create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied, ProcessLookupError):
        return None


class RunKey(int):
    """A run's id together with its creation stamp: a run is both, since a store file put back from a copy can hold
    another run under the same id. It is the id (every call that takes a run id takes it), and the store's writes of
    a run's progress given one check, in the write's transaction, that the row under the id is this run's: RunLost
    when there is none, RunReplaced when it is another run's."""

    created_at: float

    def __new__(cls, run_id: int, created_at: float) -> RunKey:
        key = super().__new__(cls, run_id)
        key.created_at = float(created_at)
        return key

    def __getnewargs__(self) -> tuple[int, float]:  # type: ignore[override]  # a copy or pickle keeps the stamp
        return int(self), self.created_at

    def __repr__(self) -> str:
        return f"RunKey({int(self)}, created_at={self.created_at!r})"
