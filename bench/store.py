"""SQLite store of runs, their epochs and their utilization samples (standard library sqlite3).

One short-lived connection per operation, WAL journal, so the Streamlit server, its supervisor threads and a CLI in
another process can all read and write the same file. Every epoch is written as it arrives; samples in small batches.
A failing store raises StoreError; callers keep the run in memory and tell the user (see jobs.py).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench import settings

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at REAL NOT NULL,
    started_at REAL,
    ended_at REAL,
    status TEXT NOT NULL,
    config TEXT NOT NULL,
    hardware TEXT,
    info TEXT,
    error TEXT,
    summary TEXT,
    label TEXT
);
CREATE TABLE IF NOT EXISTS epochs (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    epoch INTEGER NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (run_id, epoch)
);
CREATE TABLE IF NOT EXISTS samples (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    t_s REAL NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS samples_run ON samples(run_id, t_s);
"""

_JSON_COLUMNS = ("config", "hardware", "info", "error", "summary")
ACTIVE_STATUSES = ("queued", "starting", "running")


class StoreError(RuntimeError):
    """The store could not be read or written; the message says why and what to do."""


class Store:
    """Runs, epochs and samples in one SQLite file."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path is not None else settings.store_path()
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._connect() as con:
                con.executescript(SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(self._explain(exc)) from exc

    # ------------------------------------------------------------------------------------------------------------
    def _explain(self, exc: BaseException) -> str:
        text = str(exc)
        hint = "check the disk and permissions, or point BENCH_STORE at a writable file"
        if "locked" in text:
            hint = "another program holds a lock on it; close it or point BENCH_STORE elsewhere"
        elif "readonly" in text or "read-only" in text or "Permission" in text:
            hint = "the file or its folder is read-only; point BENCH_STORE at a writable file"
        elif "full" in text or "No space" in text:
            hint = "the disk is full; free space or point BENCH_STORE at another disk"
        return f"The run store at {self.path} failed ({text}): {hint}."

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        con = sqlite3.connect(self.path, timeout=5.0)
        try:
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA foreign_keys=ON")
            with con:
                yield con
        finally:
            con.close()

    @contextmanager
    def _op(self) -> Iterator[sqlite3.Connection]:
        try:
            with self._lock, self._connect() as con:
                yield con
        except sqlite3.Error as exc:
            raise StoreError(self._explain(exc)) from exc

    # ------------------------------------------------------------------------------------------------------------
    def create_run(self, config: dict[str, Any], *, status: str = "queued", label: str | None = None,
                   created_at: float | None = None) -> int:
        with self._op() as con:
            cur = con.execute(
                "INSERT INTO runs (created_at, status, config, label) VALUES (?, ?, ?, ?)",
                (created_at or time.time(), status, json.dumps(config), label),
            )
            return int(cur.lastrowid)

    def update_run(self, run_id: int, **fields: Any) -> None:
        """Set columns of a run: status, started_at, ended_at, hardware, info, error, summary, label."""
        allowed = {"status", "started_at", "ended_at", "hardware", "info", "error", "summary", "label", "config"}
        bad = set(fields) - allowed
        if bad:
            raise ValueError(f"unknown run column(s): {sorted(bad)}")
        if not fields:
            return
        values = [json.dumps(v) if k in _JSON_COLUMNS and v is not None else v for k, v in fields.items()]
        cols = ", ".join(f"{k} = ?" for k in fields)
        with self._op() as con:
            con.execute(f"UPDATE runs SET {cols} WHERE id = ?", (*values, run_id))

    def add_epoch(self, run_id: int, epoch: dict[str, Any]) -> None:
        with self._op() as con:
            con.execute(
                "INSERT OR REPLACE INTO epochs (run_id, epoch, data) VALUES (?, ?, ?)",
                (run_id, int(epoch["epoch"]), json.dumps(epoch)),
            )

    def add_samples(self, run_id: int, samples: Sequence[dict[str, Any]]) -> None:
        if not samples:
            return
        with self._op() as con:
            con.executemany(
                "INSERT INTO samples (run_id, t_s, data) VALUES (?, ?, ?)",
                [(run_id, float(s["t_s"]), json.dumps(s)) for s in samples],
            )

    def mark_interrupted(self) -> list[int]:
        """Runs left queued/starting/running by a server that died: mark them interrupted. Returns their ids."""
        with self._op() as con:
            marks = ",".join("?" * len(ACTIVE_STATUSES))
            ids = [r[0] for r in con.execute(f"SELECT id FROM runs WHERE status IN ({marks})", ACTIVE_STATUSES)]
            if ids:
                error = json.dumps({
                    "error_type": "Interrupted",
                    "message": "The server stopped while this run was active; the epochs finished before then are kept.",
                    "hint": "Start the run again.",
                })
                con.execute(
                    f"UPDATE runs SET status = 'interrupted', error = ?, ended_at = COALESCE(ended_at, ?) "
                    f"WHERE id IN ({','.join('?' * len(ids))})",
                    (error, time.time(), *ids),
                )
            return ids

    def delete_run(self, run_id: int) -> bool:
        with self._op() as con:
            con.execute("DELETE FROM samples WHERE run_id = ?", (run_id,))
            con.execute("DELETE FROM epochs WHERE run_id = ?", (run_id,))
            return con.execute("DELETE FROM runs WHERE id = ?", (run_id,)).rowcount > 0

    # ------------------------------------------------------------------------------------------------------------
    @staticmethod
    def _row_to_run(row: sqlite3.Row) -> dict[str, Any]:
        run = dict(row)
        for key in _JSON_COLUMNS:
            if run.get(key) is not None:
                run[key] = json.loads(run[key])
        return run

    def list_runs(self) -> list[dict[str, Any]]:
        """Every run, oldest first, with its epochs (no samples)."""
        with self._op() as con:
            con.row_factory = sqlite3.Row
            runs = [self._row_to_run(r) for r in con.execute("SELECT * FROM runs ORDER BY id")]
            epochs: dict[int, list[dict[str, Any]]] = {}
            for run_id, data in con.execute("SELECT run_id, data FROM epochs ORDER BY run_id, epoch"):
                epochs.setdefault(run_id, []).append(json.loads(data))
        for run in runs:
            run["epochs"] = epochs.get(run["id"], [])
        return runs

    def get_run(self, run_id: int, *, with_samples: bool = True) -> dict[str, Any] | None:
        """One run with its epochs and (optionally) samples, or None."""
        with self._op() as con:
            con.row_factory = sqlite3.Row
            row = con.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
            if row is None:
                return None
            run = self._row_to_run(row)
            run["epochs"] = [json.loads(d) for (d,) in con.execute(
                "SELECT data FROM epochs WHERE run_id = ? ORDER BY epoch", (run_id,))]
            run["samples"] = [json.loads(d) for (d,) in con.execute(
                "SELECT data FROM samples WHERE run_id = ? ORDER BY t_s", (run_id,))] if with_samples else []
        return run
