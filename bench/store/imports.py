"""Imported runs in the store: each import is runs of its own, written whole in one transaction, with where it came
from in columns of their own (``imported_at``, ``import_source``, ``source_id``, ``import_digest``, ``import_index``)
that no writer of a local run ever sets and that every reading of the row shows (bench.store.rows). An import never
writes into a run it did not create; the same record imported again is found by its digest, and nothing is written.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.store.connection import StoreFile
from bench.store.rows import to_column

# the run columns an import writes from its record (never the owner's: no process runs an imported run)
RUN_COLUMNS = ("created_at", "started_at", "ended_at", "status", "config", "hardware", "info", "error", "summary",
               "label")


@dataclass(frozen=True)
class Source:
    """Where an import came from: ``where`` in words (a file's name, an upload, an MLflow run), ``digest`` the
    record's content (the same record, the same digest), ``at`` when it was imported."""

    where: str
    digest: str
    at: float


@dataclass(frozen=True)
class ImportedRun:
    """One run of an imported record as the store keeps it: its columns (RUN_COLUMNS), its epochs and samples (as
    their record dicts), and its id where it came from (None where it had none the store can hold)."""

    columns: Mapping[str, Any]
    epochs: Sequence[Mapping[str, Any]] = field(default_factory=list)
    samples: Sequence[Mapping[str, Any]] = field(default_factory=list)
    source_id: int | None = None


class ImportLog:
    """The imported runs of one store file (``Store(...).imports``)."""

    def __init__(self, file: StoreFile):
        self._file = file

    def find(self, digest: str) -> list[int]:
        """The ids of the runs an import of the record with ``digest`` made, in the record's order ([]: none)."""
        with self._file._op() as con:
            return self._found(con, digest)

    @staticmethod
    def _found(con: sqlite3.Connection, digest: str) -> list[int]:
        return [int(i) for (i,) in con.execute(
            "SELECT id FROM runs WHERE import_digest = ? ORDER BY import_index", (digest,))]

    def add(self, source: Source, runs: Sequence[ImportedRun]) -> tuple[list[int], bool]:
        """Store ``runs`` (one record's, in order) as new runs, all or none, in one transaction; (their ids, True).
        A record already imported (the same digest) is left as it is: (the ids it was imported as, False)."""
        unknown = {k for run in runs for k in run.columns} - set(RUN_COLUMNS)
        if unknown:
            raise ValueError(f"unknown run column(s): {sorted(unknown)}")
        with self._file._op() as con:
            con.execute("BEGIN IMMEDIATE")  # the check and the writes as one: a second import waits, then finds it
            found = self._found(con, source.digest)
            if found:
                return found, False
            return [self._insert(con, source, index, run) for index, run in enumerate(runs)], True

    @staticmethod
    def _insert(con: sqlite3.Connection, source: Source, index: int, run: ImportedRun) -> int:
        names = [*run.columns, "imported_at", "import_source", "source_id", "import_digest", "import_index"]
        values = [*(to_column(k, v) for k, v in run.columns.items()), source.at, source.where, run.source_id,
                  source.digest, index]
        cur = con.execute(f"INSERT INTO runs ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})", values)
        assert cur.lastrowid is not None  # an INSERT always sets it
        run_id = int(cur.lastrowid)
        con.executemany("INSERT OR REPLACE INTO epochs (run_id, epoch, data) VALUES (?, ?, ?)",
                        [(run_id, int(e["epoch"]), json.dumps(e)) for e in run.epochs])
        con.executemany("INSERT INTO samples (run_id, t_s, data, seq) VALUES (?, ?, ?, NULL)",
                        [(run_id, float(s["t_s"]), json.dumps(s)) for s in run.samples])
        return run_id
