"""The store's schema versions (bench.store.schema): a store file of every version this project wrote opens with
this version, its runs, epochs, samples and bundles read back, and it is brought to the newest version; a file of a
newer version is refused, saying what to do, and left as it was. The old files are made from tests/fixtures/
store_schemas/vN.sql, each the DDL that version's code made (found in git history) with a few rows."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from bench.vocab import records
from bench.store import SCHEMA_VERSION, Store, StoreError, StoreTooNew
from bench.store import schema

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "store_schemas"
SHIPPED_BUNDLE = Path(__file__).resolve().parents[2] / "docs" / "results" / "bundle-cpu-2core.json"
OLD_VERSIONS = (1, 2, 3, 4)


def old_store(tmp_path: Path, version: int) -> Path:
    """A store file as the code of schema ``version`` left it (user_version 0: no version was kept then)."""
    path = tmp_path / f"v{version}.sqlite3"
    with sqlite3.connect(path) as con:
        con.executescript((FIXTURES / f"v{version}.sql").read_text(encoding="utf-8"))
        if version >= 4:
            con.execute("INSERT INTO bundles (added_at, label, doc) VALUES (?, ?, ?)",
                        (1763900000.0, "old bundle", json.dumps(json.loads(SHIPPED_BUNDLE.read_text()))))
    return path


def _columns(path: Path, table: str) -> set[str]:
    with sqlite3.connect(path) as con:
        return {row[1] for row in con.execute(f"PRAGMA table_info({table})")}


def _user_version(path: Path) -> int:
    with sqlite3.connect(path) as con:
        return int(con.execute("PRAGMA user_version").fetchone()[0])


def test_every_version_this_project_wrote_has_a_fixture_and_a_migration() -> None:
    assert sorted(schema.MIGRATIONS) == list(range(1, SCHEMA_VERSION + 1))
    assert [int(p.stem[1:]) for p in sorted(FIXTURES.glob("v*.sql"))] == list(range(1, SCHEMA_VERSION))


@pytest.mark.parametrize("version", OLD_VERSIONS)
def test_an_old_store_is_recognised_by_its_tables(tmp_path: Path, version: int) -> None:
    path = old_store(tmp_path, version)
    with sqlite3.connect(path) as con:
        assert schema.found_version(con) == version


@pytest.mark.parametrize("version", OLD_VERSIONS)
def test_an_old_store_reads_back_whole_and_is_brought_to_the_newest_version(tmp_path: Path, version: int) -> None:
    path = old_store(tmp_path, version)
    store = Store(path)
    assert _user_version(path) == SCHEMA_VERSION
    assert {"owner_pid", "imported_at", "import_source", "source_id", "import_digest"} <= _columns(path, "runs")
    assert "seq" in _columns(path, "samples")

    listing = store.listing()
    assert listing.unreadable == []
    assert [r.id for r in listing.runs] == [1, 2]
    here = store.get_run(1)
    assert here is not None and here.label == "a run measured here" and str(here.status) == "finished"
    assert [(e.epoch, e.epoch_seconds) for e in here.epochs] == [(1, 3.0), (2, 2.0)]
    assert [(s.t_s, s.cpu_percent) for s in here.samples] == [(0.5, 80.0), (1.0, 60.0)]
    assert here.config.model == "mlp" and here.config.epochs == 2
    assert not here.info.imported, "a run measured here stays one"

    # a run an earlier version imported carried the mark in its info alone: it is the store's own now
    old_import = store.get_run(2)
    assert old_import is not None and old_import.info.imported and old_import.info.source_id == 41
    assert old_import.info.imported_at == 1763810000.0
    with sqlite3.connect(path) as con:
        assert con.execute("SELECT imported_at, source_id FROM runs WHERE id = 2").fetchone() == (1763810000.0, 41)

    bundles = store.bundles.list()
    if version >= 4:
        [(bundle_id, doc)] = bundles
        assert bundle_id == 1 and records.load_bundle(doc).label == json.loads(SHIPPED_BUNDLE.read_text())["label"]
    else:
        assert bundles == []  # the table the version lacked is there, empty

    # the file works as a new one does: a run is written and read back, a bundle kept
    new = store.create_run({"model": "mlp", "epochs": 1}, status="finished")
    store.add_epoch(new, {"epoch": 1, "epoch_seconds": 1.0, "includes_tracing": True})
    store.add_samples(new, [{"t_s": 0.5, "cpu_percent": 10.0}], seqs=[0])
    store.add_samples(new, [{"t_s": 0.5, "cpu_percent": 10.0}], seqs=[0])  # a retried write stores nothing twice
    run = store.get_run(new)
    assert run is not None and len(run.epochs) == 1 and len(run.samples) == 1
    assert store.bundles.add(json.loads(SHIPPED_BUNDLE.read_text()))[1] is (version < 4)


@pytest.mark.parametrize("version", OLD_VERSIONS)
def test_opening_an_old_store_again_changes_nothing(tmp_path: Path, version: int) -> None:
    path = old_store(tmp_path, version)
    Store(path)
    with sqlite3.connect(path) as con:
        before = con.execute("SELECT * FROM runs ORDER BY id").fetchall()
    Store(path)
    with sqlite3.connect(path) as con:
        assert con.execute("SELECT * FROM runs ORDER BY id").fetchall() == before


def test_a_new_store_starts_at_the_newest_version(tmp_path: Path) -> None:
    path = tmp_path / "new.sqlite3"
    Store(path)
    assert _user_version(path) == SCHEMA_VERSION
    with sqlite3.connect(path) as con:
        assert schema.found_version(con) == SCHEMA_VERSION


def test_a_store_of_a_newer_version_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    path = old_store(tmp_path, 4)
    with sqlite3.connect(path) as con:
        con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    before = path.read_bytes()
    with pytest.raises(StoreTooNew) as caught:
        Store(path)
    message = str(caught.value)
    assert isinstance(caught.value, StoreError)
    assert f"schema version {SCHEMA_VERSION + 1}" in message and f"up to version {SCHEMA_VERSION}" in message
    assert "newer version" in message and "BENCH_STORE" in message and "git pull" in message
    assert path.read_bytes() == before
    assert _columns(path, "runs") == _columns(tmp_path / "v4.sqlite3", "runs")


def test_the_cli_says_what_to_do_with_a_newer_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    from bench.cli import main as cli

    path = tmp_path / "newer.sqlite3"
    Store(path)
    with sqlite3.connect(path) as con:
        con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 3}")
    monkeypatch.setenv("BENCH_STORE", str(path))
    code = cli.main(["runs"])
    out = capsys.readouterr()
    assert code == 2, out
    assert "newer version of this project" in out.err + out.out


def test_each_store_class_does_one_thing() -> None:
    from bench.store import BundleStore, ImportLog

    for cls in (Store, BundleStore, ImportLog):
        public = [name for name in dir(cls) if not name.startswith("_") and callable(getattr(cls, name))]
        assert len(public) <= 15, (cls.__name__, public)
    assert not any(hasattr(Store, name) for name in ("add_bundle", "list_bundles", "delete_bundle"))


def test_an_old_store_whose_ids_are_used_up_is_refused_at_migration(tmp_path: Path) -> None:
    """A row at SQLite's largest id (2**63-1) leaves no id for the next run: migrated, the store opened and then
    refused every write as "the disk is full". It is refused where it is opened, saying what it is and what to do,
    and left as it was."""
    path = old_store(tmp_path, 4)
    with sqlite3.connect(path) as con:
        con.execute("INSERT INTO runs (id, created_at, status, config) VALUES (?, 1763800000.0, 'finished', '{}')",
                    (2**63 - 1,))
    before = path.read_bytes()
    with pytest.raises(StoreError) as caught:
        Store(path)
    message = str(caught.value)
    assert "numbered 9,223,372,036,854,775,807, the largest id SQLite can give" in message
    assert "disk is full" not in message.replace("SQLite would say the disk is full", "")
    assert "BENCH_STORE" in message and "export" in message
    assert path.read_bytes() == before


def test_a_write_past_the_last_id_says_so_not_that_the_disk_is_full(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite3"
    store = Store(path)
    with sqlite3.connect(path) as con:  # a row at the largest id, as an outside program (or an old bug) left it
        con.execute("INSERT INTO runs (id, created_at, status, config) VALUES (?, 1763800000.0, 'finished', '{}')",
                    (2**63 - 1,))
    with pytest.raises(StoreError) as caught:
        store.create_run({"epochs": 1})
    message = str(caught.value)
    assert "the largest id SQLite can give" in message and "free space" not in message
