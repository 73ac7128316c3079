"""The store's SQLite file: opened (and brought to this version's schema, bench.store.schema), one short-lived
connection per operation, WAL journal and a busy timeout, so the Streamlit server, its supervisor threads and any
number of CLI processes can read and write the same file; every failure raised as StoreError saying what to do."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

from bench.vocab import settings
from bench.vocab.errors import StoreError
from bench.store import schema
from bench.store.rows import text_of


class StoreFile:
    """One SQLite file of the store; the run store and the bundle store both work through it (``_op``)."""

    def __init__(self, path: str | Path | None = None, *, busy_timeout_s: float | None = None):
        self.path = Path(path) if path is not None else settings.store_path()
        try:
            self.busy_timeout_s = busy_timeout_s if busy_timeout_s is not None else settings.store_busy_timeout_s()
        except ValueError as exc:  # a bad BENCH_STORE_BUSY_TIMEOUT_S: the store cannot be used as configured
            raise StoreError(str(exc)) from None
        if self.busy_timeout_s <= 0:
            raise StoreError(f"busy_timeout_s={busy_timeout_s!r} must be > 0 seconds")
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with closing(sqlite3.connect(self.path, timeout=self.busy_timeout_s)) as con:
                schema.migrate(con, self.path)
                damage = [row[0] for row in con.execute("PRAGMA quick_check(3)")]
        except StoreError:
            raise
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(self._explain(exc)) from exc
        if damage != ["ok"]:
            raise StoreError(self._explain(sqlite3.DatabaseError("database disk image is malformed: "
                                                                 + "; ".join(map(str, damage)))))

    def _explain(self, exc: BaseException) -> str:
        text = str(exc)
        hint = "check the disk and permissions, or point BENCH_STORE at a writable file"
        if any(word in text for word in ("not a database", "malformed", "corrupt")):
            hint = (f"the file is damaged (it is not an intact SQLite database): move it aside (e.g. `mv {self.path} "
                    f"{self.path}.damaged`) and a new, empty store is made at the next start, or point BENCH_STORE "
                    f"at another file")
        elif "no such table" in text:
            hint = ("the file lost the store's tables (another program replaced or emptied it); they are made again "
                    "for the next write, and a running run is written again whole")
        elif "locked" in text:
            hint = "another program holds a lock on it; close it or point BENCH_STORE elsewhere"
        elif "readonly" in text or "read-only" in text or "Permission" in text:
            hint = "the file or its folder is read-only; point BENCH_STORE at a writable file"
        elif "full" in text or "No space" in text:
            table = self._used_up()
            if table is not None:  # SQLite says "database or disk is full" for an AUTOINCREMENT past its largest id
                return str(schema.ids_used_up(table, self.path))
            hint = "the disk is full; free space or point BENCH_STORE at another disk"
        return f"The run store at {self.path} failed ({text}): {hint}."

    def _used_up(self) -> str | None:
        """The table whose ids are used up in this file (schema.used_up), or None (also when it cannot be read)."""
        try:
            with closing(sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=1.0)) as con:
                return schema.used_up(con)
        except sqlite3.Error:
            return None

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        # deleted (or emptied) since it was opened: the tables are made again before any use
        new = not self.path.exists() or self.path.stat().st_size == 0
        con = sqlite3.connect(self.path, timeout=self.busy_timeout_s)
        con.text_factory = text_of  # TEXT that is not UTF-8 reads as bytes: its row lists as unreadable
        try:
            if new:
                schema.migrate(con, self.path)
            con.execute("PRAGMA foreign_keys=ON")
            con.execute("PRAGMA synchronous=NORMAL")  # with WAL: durable across a process crash, fewer fsyncs
            with con:
                yield con
        finally:
            con.close()

    @contextmanager
    def _op(self) -> Iterator[sqlite3.Connection]:
        """A connection in a transaction, under this object's lock; a failure raised as StoreError."""
        try:
            with self._lock, self._connect() as con:
                yield con
        except sqlite3.Error as exc:
            if "no such table" in str(exc):  # another file put in its place: made whole for the next try
                self._heal()
            raise StoreError(self._explain(exc)) from exc

    def _heal(self) -> None:
        try:
            with self._lock, closing(sqlite3.connect(self.path, timeout=self.busy_timeout_s)) as con:
                schema.migrate(con, self.path)
        except (sqlite3.Error, StoreError):
            pass  # the caller reports the first error; the next try heals or reports again
