"""The owners of the store's active runs: each run records the process that runs it (pid, host, the process's start
time) and a heartbeat the owner renews; a run whose owner is gone (on this host: the process no longer exists; elsewhere:
its heartbeat older than BENCH_HEARTBEAT_LIMIT_S) is marked ``interrupted`` with a summary of what it kept. The owner's
columns are the store's bookkeeping, never part of a run's record (bench.store.rows reads the record's columns).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from typing import Any, Callable

from bench.vocab import records, settings
from bench.vocab.readings import is_int, is_number
from bench.store.connection import StoreFile
from bench.store.identity import SAME_STAMP_S, Owner, RunKey

ACTIVE_STATUSES = records.ACTIVE
Summarize = Callable[[sqlite3.Connection, int], "str | None"]
"""A run's summary computed from what the store holds of it, as the JSON text the store writes (None: unreadable)."""

_INTERRUPTED = {
    "error_type": "Interrupted",
    "message": "The process running this run ended before it did (a server or terminal that was closed or killed); "
               "the epochs finished before then are kept.",
    "hint": "Start the run again.",
}


class Owners:
    """Who runs each of the store's runs (``owner_of``), their heartbeats (``heartbeat``), and the runs whose owner is
    gone, marked interrupted (``mark_orphans_interrupted``)."""

    def __init__(self, file: StoreFile, summarize: Summarize):
        self._file = file
        self._summarize = summarize

    def owner_of(self, run_id: int) -> Owner | None:
        """The process that runs (or ran) ``run_id``, as its store row names it; None when no process claimed it."""
        with self._file._op() as con:
            row = con.execute("SELECT owner_pid, owner_host, owner_started FROM runs WHERE id = ?",
                              (run_id,)).fetchone()
        if row is None or not is_int(row[0]):
            return None
        return Owner(pid=row[0], host=str(row[1] or "?"), started=seconds(row[2]) or 0.0)

    def heartbeat(self, run_ids: Sequence[int]) -> None:
        """The owner says it is still running these runs. A RunKey's row is renewed only when it is this run's (a
        restored store's run under the same id is not kept alive by this process)."""
        if not run_ids:
            return
        now = time.time()
        with self._file._op() as con:
            con.executemany(
                "UPDATE runs SET heartbeat_at = ? WHERE id = ? AND imported_at IS NULL "
                "AND (? IS NULL OR abs(created_at - ?) <= ?)",
                [(now, int(r), stamp, stamp, SAME_STAMP_S)
                 for r in run_ids for stamp in [r.created_at if isinstance(r, RunKey) else None]])

    def mark_orphans_interrupted(self, *, heartbeat_limit_s: float | None = None,
                                 now: float | None = None) -> list[int]:
        """Active runs whose owner is gone (see Owner.gone) become ``interrupted``, with a summary of the epochs and
        samples they kept. A run with no owner recorded (written before owners existed) is judged by its heartbeat,
        start or creation time. Returns the ids marked."""
        limit = heartbeat_limit_s if heartbeat_limit_s is not None else settings.heartbeat_limit_s()
        now = time.time() if now is None else now
        marks = ",".join("?" * len(ACTIVE_STATUSES))
        with self._file._op() as con:
            rows = con.execute(
                f"SELECT id, owner_pid, owner_host, owner_started, heartbeat_at, started_at, created_at "
                f"FROM runs WHERE status IN ({marks})", ACTIVE_STATUSES).fetchall()
            orphans = [row[0] for row in rows if _gone(row, now, limit)]
            for run_id in orphans:
                summary = self._summarize(con, run_id)  # None: the run cannot be read (it lists as unreadable)
                con.execute(
                    f"UPDATE runs SET status = ?, error = ?, summary = ?, "
                    f"ended_at = COALESCE(ended_at, heartbeat_at, ?) WHERE id = ? AND status IN ({marks})",
                    (records.Status.INTERRUPTED.value, json.dumps(_INTERRUPTED), summary, now, run_id,
                     *ACTIVE_STATUSES))
            return orphans


def _gone(row: tuple[Any, ...], now: float, limit: float) -> bool:
    """Whether the owner of an active run's row is gone; the owner's columns are read, not trusted: a damaged one is
    not there."""
    _, pid, host, started, beat, started_at, created_at = row
    beat = seconds(beat)
    if is_int(pid) and 0 < pid < 2**31 and isinstance(host, str):
        return Owner(pid, host, seconds(started) or 0.0).gone(now, beat, limit)
    last = beat or seconds(started_at) or seconds(created_at)
    return last is None or now - last > limit


def seconds(value: Any) -> float | None:
    """A time column of the owner's bookkeeping as a number, None where it holds none."""
    return float(value) if is_number(value) else None
