"""The store file's schema, one version at a time: SQLite's ``PRAGMA user_version`` says which version a file holds,
and one migration function per version brings a file from the version before to its own. A file this project wrote
before it kept a version number (user_version 0) is recognised by its tables and columns (:func:`found_version`).

The versions this project wrote:

1. runs, epochs, samples (the first store)
2. the runs' owner and heartbeat (owner_pid, owner_host, owner_started, heartbeat_at)
3. each sample's number in its run (samples.seq, unique per run: a retried write stores nothing twice)
4. machine bundles (bundles)
5. where an imported run came from (imported_at, import_source, source_id, import_digest, import_index): an import
   is a run of its own, never a local measurement; imports of an earlier version are marked from their info
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from bench.vocab.errors import StoreError


class StoreTooNew(StoreError):
    """The file holds a schema newer than this version knows: it is left as it is."""


class StoreIdsUsedUp(StoreError):
    """The file holds a row at SQLite's largest id: no new run (or bundle) could be stored in it."""


ID_MAX = 2**63 - 1  # SQLite's largest integer: an AUTOINCREMENT table past it fails every insert with SQLITE_FULL
_NUMBERED = ("runs", "bundles")  # the tables whose rows SQLite numbers (AUTOINCREMENT)


def used_up(con: sqlite3.Connection) -> str | None:
    """The table whose ids are used up (a row, or SQLite's sequence, at ID_MAX: the next insert fails with "database
    or disk is full"), or None."""
    tables = _tables(con)
    for table in _NUMBERED:
        if table in tables and con.execute(f"SELECT max(id) FROM {table}").fetchone()[0] == ID_MAX:
            return table
    if "sqlite_sequence" in tables:
        row = con.execute("SELECT name FROM sqlite_sequence WHERE seq >= ?", (ID_MAX,)).fetchone()
        if row is not None:
            return str(row[0])
    return None


def ids_used_up(table: str, path: object) -> StoreIdsUsedUp:
    return StoreIdsUsedUp(f"The run store at {path} holds a row of {table} numbered {ID_MAX:,}, the largest id SQLite "
                          f"can give: no new one can be stored in it (SQLite would say the disk is full). Export the "
                          f"runs you keep (`python -m bench export ID`), then move the file aside (e.g. `mv {path} "
                          f"{path}.used-up`) for a new, empty store at the next start, or point BENCH_STORE at another "
                          f"file; the file is left as it is.")


def _v1_runs(con: sqlite3.Connection) -> None:
    _script(con, """
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
    """)


def _script(con: sqlite3.Connection, sql: str) -> None:
    """Each statement of ``sql`` in the transaction that is open (``executescript`` would commit it first)."""
    for statement in sql.split(";"):
        if statement.strip():
            con.execute(statement)


def _add_columns(con: sqlite3.Connection, table: str, columns: dict[str, str]) -> None:
    have = _columns(con, table)
    for name, kind in columns.items():
        if name not in have:
            con.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")


def _v2_owners(con: sqlite3.Connection) -> None:
    _add_columns(con, "runs", {"owner_pid": "INTEGER", "owner_host": "TEXT", "owner_started": "REAL",
                               "heartbeat_at": "REAL"})


def _v3_sample_numbers(con: sqlite3.Connection) -> None:
    _add_columns(con, "samples", {"seq": "INTEGER"})
    # a sample's number in its run: a write retried after it landed adds nothing (NULLs: imported samples)
    con.execute("CREATE UNIQUE INDEX IF NOT EXISTS samples_seq ON samples(run_id, seq)")


def _v4_bundles(con: sqlite3.Connection) -> None:
    con.execute("""
        CREATE TABLE IF NOT EXISTS bundles (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            added_at REAL NOT NULL,
            label TEXT,
            doc TEXT NOT NULL UNIQUE
        )""")


def _v5_import_provenance(con: sqlite3.Connection) -> None:
    _add_columns(con, "runs", {"imported_at": "REAL", "import_source": "TEXT", "source_id": "INTEGER",
                               "import_digest": "TEXT", "import_index": "INTEGER"})
    # one record's run imported once: the same file again is found, not stored twice
    con.execute("CREATE UNIQUE INDEX IF NOT EXISTS runs_import ON runs(import_digest, import_index) "
                "WHERE import_digest IS NOT NULL")
    if "info" not in _columns(con, "runs"):  # a runs table older than any this project wrote: no info to read
        return
    # runs an earlier version imported carry the mark in their info alone: the column makes it the store's own
    info_ok = "json_valid(info) AND json_type(info) = 'object'"
    con.execute(f"""
        UPDATE runs SET
            imported_at = COALESCE(
                CASE WHEN json_type(info, '$.imported_at') IN ('integer', 'real') THEN json_extract(info, '$.imported_at')
                END, created_at),
            import_source = 'an import by an earlier version',
            source_id = CASE WHEN json_type(info, '$.source_id') = 'integer' THEN json_extract(info, '$.source_id') END
        WHERE imported_at IS NULL AND {info_ok} AND json_type(info, '$.imported') = 'true'""")


# version -> the migration that brings a file of the version before to it
MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {
    1: _v1_runs,
    2: _v2_owners,
    3: _v3_sample_numbers,
    4: _v4_bundles,
    5: _v5_import_provenance,
}
VERSION = max(MIGRATIONS)


def _columns(con: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in con.execute(f"PRAGMA table_info({table})")}


def _tables(con: sqlite3.Connection) -> set[str]:
    return {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def found_version(con: sqlite3.Connection) -> int:
    """The schema version a file holds: its user_version, or for a file written before versions were kept (0), the
    last version whose tables and columns it has (0: an empty file)."""
    stated = int(con.execute("PRAGMA user_version").fetchone()[0])
    if stated:
        return stated
    tables = _tables(con)
    if "runs" not in tables:
        return 0
    if "owner_pid" not in _columns(con, "runs"):
        return 1
    if "seq" not in _columns(con, "samples"):
        return 2
    if "bundles" not in tables:
        return 3
    if "import_digest" not in _columns(con, "runs"):
        return 4
    return 5


def too_new(found: int, path: object) -> StoreTooNew:
    return StoreTooNew(f"The run store at {path} has schema version {found}, written by a newer version of this "
                       f"project (this one reads up to version {VERSION}): open it with that version (update this "
                       f"checkout: git pull, then pip install -e .), or point BENCH_STORE at another file; the file "
                       f"is left as it is.")


def migrate(con: sqlite3.Connection, path: object) -> int:
    """Bring the file to :data:`VERSION`, each migration after the version it holds in turn, in one transaction (a
    second process opening the file at the same time waits, then finds it done). Returns the version it held.

    Raises:
        StoreTooNew: the file's version is newer than this one knows; nothing is changed.
        StoreIdsUsedUp: the file holds a row at SQLite's largest id; nothing is changed.
    """
    stated = int(con.execute("PRAGMA user_version").fetchone()[0])
    if stated > VERSION:
        raise too_new(stated, path)  # before anything is written, the journal mode included
    table = used_up(con) if stated < VERSION else None
    if table is not None:  # migrated, it would open and then refuse every write as a full disk
        raise ids_used_up(table, path)
    con.execute("PRAGMA journal_mode=WAL")  # persistent in the file; readers never block the writer
    if stated == VERSION:
        return VERSION  # the usual open: nothing to take a write lock for
    if con.in_transaction:
        con.commit()
    con.execute("BEGIN IMMEDIATE")
    try:
        found = found_version(con)
        if found > VERSION:
            raise too_new(found, path)
        # a file without a version number is brought up by every migration: each finds done what the file has
        stated = int(con.execute("PRAGMA user_version").fetchone()[0])
        for version in range(stated + 1, VERSION + 1):
            MIGRATIONS[version](con)
        con.execute(f"PRAGMA user_version = {VERSION}")
        con.commit()
    except BaseException:
        con.rollback()
        raise
    return found
