"""The run store: runs, their epochs and their utilization samples in the store's SQLite file (bench.store.connection).

Every epoch is written as it arrives; samples in small batches. A failing store raises StoreError; callers keep the
run in memory, retry, and tell the user (see jobs.py). A run is its id and its creation stamp together (RunKey): its
writer's writes check both, so a store file put back from an older copy, holding another run under the same id, is
never written into. An imported run is a run of its own, written once whole by ``imports`` (bench.store.imports) and
never written into by a run's writer: it has no owner.

Runs have owners. Each active run records the process that runs it (pid, host, the process's start time) and a
heartbeat the owner renews every few seconds. A process marks a run ``interrupted`` only when its owner is gone: on
this host, when the owner's process no longer exists (a pid reused by another process counts as gone); elsewhere,
when the heartbeat is older than BENCH_HEARTBEAT_LIMIT_S. Every process does this when it opens the store for a job
manager and whenever it lists runs, so a dashboard opened beside a CLI run sees that run as live.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.analysis import run_summary
from bench.vocab import records
from bench.vocab.errors import RunLost, RunReplaced, StoreError
from bench.store.bundles import BundleStore
from bench.store.connection import StoreFile
from bench.store.identity import SAME_STAMP_S, Owner, RunKey
from bench.store.imports import ImportLog
from bench.store.owners import ACTIVE_STATUSES, Owners
from bench.store.rows import ListingReader, RawRun, RunListing, RunRow, UnreadableRun, raw_run, read_run, to_column


class Store(StoreFile):
    """Runs, epochs and samples in one SQLite file; beside them, in the same file, the machine bundles (``bundles``),
    the record of what was imported (``imports``) and who runs each active run (``owners``)."""

    def __init__(self, path: str | Path | None = None, *, busy_timeout_s: float | None = None):
        super().__init__(path, busy_timeout_s=busy_timeout_s)
        self._listed = ListingReader()  # the last listing's readings, kept while a row is unchanged
        self.owner = Owner.current()
        self.bundles = BundleStore(self)
        self.imports = ImportLog(self)
        self.owners = Owners(self, self._summary)

    def _check_run(self, con: sqlite3.Connection, run_id: int) -> None:
        """For a RunKey, that the row under its id is this run's, in the transaction of the write that follows (taken
        now, so no other writer comes between): RunLost when there is no row, RunReplaced when it is another run's.
        A plain id (the CLI's own paths) is written as it is; neither is ever an imported run's (``imports``)."""
        if not con.in_transaction:
            con.execute("BEGIN IMMEDIATE")
        row = con.execute("SELECT created_at, imported_at FROM runs WHERE id = ?", (int(run_id),)).fetchone()
        if row is not None and row[1] is not None:
            raise RunReplaced(f"Run {int(run_id)} in the run store at {self.path} is an imported run: nothing is "
                              f"written into it; its measurements stay as they were imported.")
        if not isinstance(run_id, RunKey):
            return
        if row is None:
            raise RunLost(f"The run store at {self.path} no longer holds run {int(run_id)} (the file was deleted or "
                          f"replaced while the run went on): the run is written again whole.")
        if abs(float(row[0]) - run_id.created_at) > SAME_STAMP_S:
            raise RunReplaced(f"The run store at {self.path} holds another run under id {int(run_id)} (created at "
                              f"{float(row[0]):.6f}, this run at {run_id.created_at:.6f}): the file was replaced, by "
                              f"an older copy perhaps; that run is left as it is.")

    # ------------------------------------------------------------------------------------------------------------
    def create_run(self, config: dict[str, Any], *, status: str = records.Status.QUEUED, label: str | None = None,
                   created_at: float | None = None) -> int:
        """A new run, owned by this process (see Owner) while it is active."""
        now = time.time()
        with self._op() as con:
            cur = con.execute(
                "INSERT INTO runs (created_at, status, config, label, owner_pid, owner_host, owner_started, "
                "heartbeat_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (created_at or now, status, json.dumps(config), label, self.owner.pid, self.owner.host,
                 self.owner.started, now),
            )
            assert cur.lastrowid is not None  # an INSERT always sets it
            return int(cur.lastrowid)

    def update_run(self, run_id: int, **fields: Any) -> None:
        """Set columns of a run: status, started_at, ended_at, hardware, info, error, summary, label.

        Raises:
            RunLost, RunReplaced: ``run_id`` is a RunKey and the row under its id is not this run's (see RunKey).
            StoreError: the store failed, or a plain ``run_id`` has no row.
        """
        allowed = {"status", "started_at", "ended_at", "hardware", "info", "error", "summary", "label", "config"}
        bad = set(fields) - allowed
        if bad:
            raise ValueError(f"unknown run column(s): {sorted(bad)}")
        if not fields:
            return
        values = [to_column(k, v) for k, v in fields.items()]
        cols = ", ".join(f"{k} = ?" for k in fields)
        with self._op() as con:
            self._check_run(con, run_id)
            if con.execute(f"UPDATE runs SET {cols} WHERE id = ?", (*values, int(run_id))).rowcount == 0:
                raise sqlite3.OperationalError(f"run {int(run_id)} is not in the store (the file was replaced or the "
                                               f"run deleted)")

    def ensure_run(self, run_id: int, config: dict[str, Any], *, created_at: float, label: str | None) -> bool:
        """Give run ``run_id`` (created at ``created_at``) its row again if the store lost it (a store file deleted
        and made anew while the run went on); its row, when there, is left as it is.

        Returns:
            True when the row was made again (the store holds nothing of the run: write it whole).
        Raises:
            RunReplaced: the row under ``run_id`` is another run's (see RunKey); it is left as it is.
        """
        now = time.time()
        with self._op() as con:
            try:
                self._check_run(con, RunKey(run_id, created_at))
                return False
            except RunLost:
                pass
            con.execute(
                "INSERT INTO runs (id, created_at, status, config, label, owner_pid, owner_host, "
                "owner_started, heartbeat_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (int(run_id), created_at, records.Status.RUNNING.value, json.dumps(config), label, self.owner.pid,
                 self.owner.host, self.owner.started, now))
            return True

    def add_epoch(self, run_id: int, epoch: dict[str, Any]) -> None:
        """Write (or rewrite) one epoch. A RunKey is checked first (see RunKey)."""
        with self._op() as con:
            self._check_run(con, run_id)
            con.execute(
                "INSERT OR REPLACE INTO epochs (run_id, epoch, data) VALUES (?, ?, ?)",
                (int(run_id), int(epoch["epoch"]), json.dumps(epoch)),
            )

    def add_samples(self, run_id: int, samples: Sequence[dict[str, Any]],
                    seqs: Sequence[int] | None = None) -> None:
        """Append samples. With ``seqs`` (each sample's number in its run) a sample already stored under its number
        is left as it is, so a write retried after it landed stores nothing twice. A RunKey is checked first (see
        RunKey)."""
        if not samples:
            return
        numbers: Sequence[int | None] = seqs if seqs is not None else [None] * len(samples)
        if len(numbers) != len(samples):
            raise ValueError(f"{len(samples)} samples but {len(numbers)} sequence numbers")
        with self._op() as con:
            self._check_run(con, run_id)
            con.executemany(
                "INSERT OR IGNORE INTO samples (run_id, t_s, data, seq) VALUES (?, ?, ?, ?)",
                [(int(run_id), float(s["t_s"]), json.dumps(s), n) for s, n in zip(samples, numbers)],
            )

    def add_epochs(self, run_id: int, epochs: Sequence[dict[str, Any]]) -> None:
        """Write (or rewrite) several epochs at once: what a run kept in memory while the store failed. A RunKey is
        checked first (see RunKey)."""
        if not epochs:
            return
        with self._op() as con:
            self._check_run(con, run_id)
            con.executemany("INSERT OR REPLACE INTO epochs (run_id, epoch, data) VALUES (?, ?, ?)",
                            [(int(run_id), int(e["epoch"]), json.dumps(e)) for e in epochs])

    def _backfill_summaries(self) -> None:
        """Ended runs without a summary (an outcome written by an older version, or a store that failed at the end)
        get one computed from the epochs and samples they have."""
        marks = ",".join("?" * len(ACTIVE_STATUSES))
        with self._op() as con:
            ids = [r[0] for r in con.execute(
                f"SELECT id FROM runs WHERE summary IS NULL AND status NOT IN ({marks})", ACTIVE_STATUSES)]
            for run_id in ids:
                summary = self._summary(con, run_id)
                if summary is not None:  # one that cannot be read keeps none (it lists as unreadable)
                    con.execute("UPDATE runs SET summary = ? WHERE id = ?", (summary, run_id))

    @staticmethod
    def _rows(con: sqlite3.Connection, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        """The rows of a query, each as column -> value."""
        cur = con.execute(sql, params)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row)) for row in cur]

    @classmethod
    def _run_rows(cls, con: sqlite3.Connection, sql: str, params: Sequence[Any] = ()) -> list[RunRow]:
        """The rows of a query of the runs table, each read into a RunRow: nothing past here reads a runs row by
        key."""
        return [RunRow.of(row) for row in cls._rows(con, sql, params)]

    def _read(self, con: sqlite3.Connection, row: RunRow, *,
              with_samples: bool) -> records.RunRecord | UnreadableRun:
        """A runs row with its epochs (and samples) read into a record, or an UnreadableRun (rows.read_run)."""
        run_id = row.id
        epochs = [d for (d,) in con.execute("SELECT data FROM epochs WHERE run_id = ? ORDER BY epoch", (run_id,))]
        samples = [d for (d,) in con.execute("SELECT data FROM samples WHERE run_id = ? ORDER BY t_s", (run_id,))
                   ] if with_samples else []
        return read_run(row, epochs, samples)

    def _summary(self, con: sqlite3.Connection, run_id: int) -> str | None:
        """A run's summary computed from what the store holds of it (epochs, samples, info and config, for its
        diagnosis), as the JSON text the store writes; None when the run cannot be read."""
        [row] = self._run_rows(con, "SELECT * FROM runs WHERE id = ?", (run_id,))
        run = self._read(con, row, with_samples=True)
        if isinstance(run, UnreadableRun):
            return None
        return json.dumps(run_summary.summarize(run.epochs, run.samples, info=run.info, config=run.config).to_dict())

    def delete_run(self, run_id: int) -> bool:
        with self._op() as con:
            con.execute("DELETE FROM samples WHERE run_id = ?", (run_id,))
            con.execute("DELETE FROM epochs WHERE run_id = ?", (run_id,))
            return con.execute("DELETE FROM runs WHERE id = ?", (run_id,)).rowcount > 0

    # ------------------------------------------------------------------------------------------------------------
    def listing(self) -> RunListing:
        """Every run, oldest first, with its epochs (no samples), and apart the runs this version cannot read (each
        row is read by rows.read_run: one odd row never takes the listing down). Runs whose owner is gone are
        marked first."""
        try:
            self.owners.mark_orphans_interrupted()
            self._backfill_summaries()
        except StoreError:  # a read-only store can still be listed
            pass
        with self._op() as con:
            rows = self._run_rows(con, "SELECT * FROM runs ORDER BY id")
            epochs: dict[int, list[Any]] = {}
            for run_id, data in con.execute("SELECT run_id, data FROM epochs ORDER BY run_id, epoch"):
                epochs.setdefault(run_id, []).append(data)
        read = self._listed.read(rows, epochs)
        imports = {row.id: row.import_digest for row in rows}
        return RunListing(runs=_without_followers([r for r in read if isinstance(r, records.RunRecord)], imports),
                          unreadable=[r for r in read if isinstance(r, UnreadableRun)])

    def list_runs(self) -> list[records.RunRecord]:
        """The runs of :meth:`listing` that can be read."""
        return self.listing().runs

    def raw_run(self, run_id: int) -> RawRun | None:
        """A run's rows as stored, every value untouched (for a raw export of a run that cannot be read), or None."""
        with self._op() as con:
            rows = self._run_rows(con, "SELECT * FROM runs WHERE id = ?", (run_id,))
            if not rows:
                return None
            epochs = self._rows(con, "SELECT epoch, data FROM epochs WHERE run_id = ? ORDER BY epoch", (run_id,))
            samples = self._rows(con, "SELECT t_s, seq, data FROM samples WHERE run_id = ? ORDER BY t_s", (run_id,))
        return raw_run(rows[0], epochs, samples)

    def _is_active(self, run_id: int) -> bool:
        with self._op() as con:
            row = con.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()
        return row is not None and row[0] in ACTIVE_STATUSES

    def latest_run_version(self) -> tuple[int, str, int, int] | None:
        """(id, status, epochs, samples) of the newest run: a cheap way to tell whether it changed; None if empty."""
        with self._op() as con:
            row = con.execute("SELECT id, status FROM runs ORDER BY id DESC LIMIT 1").fetchone()
            if row is None:
                return None
            epochs = con.execute("SELECT COUNT(*) FROM epochs WHERE run_id = ?", (row[0],)).fetchone()[0]
            samples = con.execute("SELECT COUNT(*) FROM samples WHERE run_id = ?", (row[0],)).fetchone()[0]
        return int(row[0]), str(row[1]), int(epochs), int(samples)

    def get_run(self, run_id: int, *, with_samples: bool = True) -> records.RunRecord | None:
        """One run with its epochs and (optionally) samples, or None. An active run whose owner is gone is marked
        interrupted first, as list_runs does: a killed CLI's run never reads as running.

        Raises:
            RunUnreadable: the run's rows hold what this version cannot read (the message names the field and what
                to do).
        """
        if self._is_active(run_id):
            try:
                self.owners.mark_orphans_interrupted()
            except StoreError:  # a read-only store can still be read
                pass
        with self._op() as con:
            rows = self._run_rows(con, "SELECT * FROM runs WHERE id = ?", (run_id,))
            if not rows:
                return None
            run = self._read(con, rows[0], with_samples=with_samples)
            cluster = run.info.cluster if isinstance(run, records.RunRecord) else None
            if isinstance(run, records.RunRecord) and cluster is not None and cluster.index == 0:
                run = run.with_members(self._members(con, rows[0], cluster.id, with_samples=with_samples))
        if isinstance(run, UnreadableRun):
            raise run.error()
        return run

    def _members(self, con: sqlite3.Connection, lead: RunRow, cluster_id: str, *,
                 with_samples: bool) -> list[records.RunRecord]:
        """The other members of the multi-worker run whose coordinating row is ``lead``: the runs recording the same
        cluster id and written the same way (by members on this machine, or by the one import of the record that
        holds them all: an imported member never joins a run measured here), in member order. A member that cannot
        be read is left out (it lists as unreadable)."""
        cluster = "CASE WHEN json_valid(info) THEN json_extract(info, '$.cluster.{}') END"  # a row's info may be odd
        rows = self._run_rows(con, f"SELECT * FROM runs WHERE id != ? AND {cluster.format('id')} = ? "
                                   f"AND import_digest IS ? ORDER BY {cluster.format('index')}, id",
                              (lead.id, cluster_id, lead.import_digest))
        members = [self._read(con, row, with_samples=with_samples) for row in rows]
        return [m for m in members if isinstance(m, records.RunRecord)]


def _without_followers(runs: list[records.RunRecord], imports: dict[Any, Any]) -> list[records.RunRecord]:
    """``runs`` less the members of a multi-worker run whose coordinating member (index 0) is among them, written the
    same way (``imports``: run id -> the import it came from, None for a run measured here): those are read as part
    of its run (Store.get_run gives them as its ``members``)."""
    led = {(c.id, imports[r.id]) for r in runs if (c := r.info.cluster) is not None and c.index == 0}
    return [r for r in runs if (c := r.info.cluster) is None or c.index == 0 or (c.id, imports[r.id]) not in led]
