"""SQLite store: runs, epochs as they arrive, samples, interrupted runs, failures that say what to do."""

from __future__ import annotations

import json
import os
import sqlite3
from contextlib import closing

import pytest

from bench.store import Store, StoreError


def test_round_trip(tmp_path):
    store = Store(tmp_path / "a.sqlite3")
    run_id = store.create_run({"epochs": 2}, label="x")
    store.update_run(run_id, status="running", info={"placement": "/device:CPU:0"})
    store.add_epoch(run_id, {"epoch": 1, "epoch_seconds": 1.5, "includes_tracing": True})
    store.add_epoch(run_id, {"epoch": 2, "epoch_seconds": 0.5, "includes_tracing": False})
    store.add_samples(run_id, [{"t_s": 0.5, "cpu_percent": 10.0, "gpus": []},
                               {"t_s": 1.0, "cpu_percent": None, "gpus": []}])
    run = store.get_run(run_id)
    assert run.status == "running" and run.config.to_dict() == {"epochs": 2}
    assert run.info.placement == "/device:CPU:0"
    assert [e.epoch for e in run.epochs] == [1, 2]
    assert run.samples[1].carries("cpu_percent") and run.samples[1].cpu_percent is None
    assert [r.id for r in store.list_runs()] == [run_id]
    assert store.delete_run(run_id) and store.get_run(run_id) is None


def test_list_is_oldest_first_and_visible_to_another_connection(tmp_path):
    path = tmp_path / "b.sqlite3"
    a, b = Store(path), Store(path)
    ids = [a.create_run({"epochs": i + 1}) for i in range(3)]
    assert [r.id for r in b.list_runs()] == ids


def test_unknown_column_is_refused(tmp_path):
    store = Store(tmp_path / "c.sqlite3")
    with pytest.raises(ValueError, match="unknown run column"):
        store.update_run(store.create_run({}), colour="red")


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions, so a read-only store cannot be made")
def test_read_only_store_says_what_to_do(tmp_path):
    path = tmp_path / "ro.sqlite3"
    Store(path)
    path.chmod(0o444)
    with pytest.raises(StoreError, match="BENCH_STORE"):
        Store(path).create_run({})


def test_locked_store_says_what_to_do(tmp_path):
    path = tmp_path / "locked.sqlite3"
    store = Store(path, busy_timeout_s=0.3)  # the busy wait is a setting: the test need not sit out 30 s
    holder = sqlite3.connect(path)
    holder.execute("PRAGMA locking_mode=EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(StoreError, match="lock"):
            store.create_run({})
    finally:
        holder.rollback()
        holder.close()


def test_the_busy_timeout_comes_from_the_setting_and_a_bad_one_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCH_STORE_BUSY_TIMEOUT_S", "0.25")
    assert Store(tmp_path / "a.sqlite3").busy_timeout_s == 0.25
    assert Store(tmp_path / "a.sqlite3", busy_timeout_s=2.0).busy_timeout_s == 2.0, "the argument wins"
    monkeypatch.setenv("BENCH_STORE_BUSY_TIMEOUT_S", "soon")
    with pytest.raises(StoreError, match="BENCH_STORE_BUSY_TIMEOUT_S='soon' is not a number of seconds"):
        Store(tmp_path / "a.sqlite3")  # a StoreError: the CLI says it and exits 2, the dashboard runs in memory
    with pytest.raises(StoreError, match="must be > 0"):
        Store(tmp_path / "a.sqlite3", busy_timeout_s=0)


def test_unwritable_folder_is_a_store_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(StoreError, match="BENCH_STORE"):
        Store(blocker / "runs.sqlite3")


# -- owners: a run is interrupted only when the process running it is gone ------------------------------------------
def dead_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def set_owner(store: Store, run_id: int, **columns) -> None:
    with sqlite3.connect(store.path) as con:
        cols = ", ".join(f"{k} = ?" for k in columns)
        con.execute(f"UPDATE runs SET {cols} WHERE id = ?", (*columns.values(), run_id))


def heartbeat_at(store: Store, run_id: int) -> float | None:
    """The run's heartbeat, as the store's row holds it (bookkeeping kept in SQLite, not in the run's record)."""
    with closing(sqlite3.connect(store.path)) as con:
        return con.execute("SELECT heartbeat_at FROM runs WHERE id = ?", (run_id,)).fetchone()[0]


def test_new_run_records_its_owner_and_a_heartbeat(tmp_path):
    import socket

    store = Store(tmp_path / "o.sqlite3")
    run_id = store.create_run({"epochs": 2}, status="running")
    owner = store.owners.owner_of(run_id)
    assert owner is not None and owner.pid == os.getpid() and owner.host == socket.gethostname()
    assert owner.started > 0 and heartbeat_at(store, run_id) is not None
    before = heartbeat_at(store, run_id)
    store.owners.heartbeat([run_id])
    assert heartbeat_at(store, run_id) >= before


def test_exporting_a_killed_owners_run_says_interrupted_without_a_listing_first(isolated_store, tmp_path, capsys):
    from bench.cli import main as cli

    store = Store(isolated_store)
    run_id = store.create_run({}, status="running")
    store.add_epoch(run_id, {"epoch": 1, "epoch_seconds": 2.0, "includes_tracing": True})
    set_owner(store, run_id, owner_pid=dead_pid())  # a CLI killed with SIGKILL: nobody lists runs afterwards
    out = tmp_path / "run.json"
    assert cli.main(["export", str(run_id), "--out", str(out)]) == 0, capsys.readouterr().err
    record = json.loads(out.read_text(encoding="utf-8"))
    assert record["status"] == "interrupted" and record["error"]["error_type"] == "Interrupted"
    assert [e["epoch"] for e in record["epochs"]] == [1], "what it measured is kept"


def test_a_live_owners_run_is_never_marked_interrupted(tmp_path):
    store = Store(tmp_path / "o.sqlite3")
    run_id = store.create_run({}, status="running")
    set_owner(store, run_id, heartbeat_at=0.0)  # an old heartbeat does not matter while the process is alive here
    other = Store(store.path)
    assert other.owners.mark_orphans_interrupted() == []
    assert other.list_runs()[0].status == "running"


def test_a_dead_owners_run_is_marked_interrupted_with_a_summary(tmp_path):
    store = Store(tmp_path / "o.sqlite3")
    run_id = store.create_run({}, status="running")
    store.add_epoch(run_id, {"epoch": 1, "epoch_seconds": 2.0, "includes_tracing": True, "samples_per_s": 50.0})
    store.add_epoch(run_id, {"epoch": 2, "epoch_seconds": 1.0, "includes_tracing": False, "samples_per_s": 100.0,
                             "t_start_s": 2.0, "t_end_s": 3.0})
    store.add_samples(run_id, [{"t_s": 2.5, "cpu_percent": 40.0, "gpus": []}])
    set_owner(store, run_id, owner_pid=dead_pid())
    assert store.owners.mark_orphans_interrupted() == [run_id]
    run = store.get_run(run_id)
    assert run.status == "interrupted" and run.error.error_type == "Interrupted"
    assert run.summary is not None, "the summary is stored with the run, not computed when read"
    assert run.summary.steady_epoch_seconds == 1.0, "History can show what the run measured"
    assert run.summary.mean_cpu_percent == 40.0
    assert store.owners.mark_orphans_interrupted() == [], "marked once"


def test_a_reused_pid_does_not_keep_a_run_alive(tmp_path):
    store = Store(tmp_path / "o.sqlite3")
    run_id = store.create_run({}, status="running")
    set_owner(store, run_id, owner_started=store.owner.started - 3600)  # our pid, but another process's start
    assert store.owners.mark_orphans_interrupted() == [run_id]


@pytest.mark.parametrize(("age_s", "marked"), [(5.0, False), (120.0, True)])
def test_another_hosts_run_is_judged_by_its_heartbeat(tmp_path, age_s, marked):
    import time

    store = Store(tmp_path / "o.sqlite3")
    run_id = store.create_run({}, status="running")
    set_owner(store, run_id, owner_host="another-host.example", owner_pid=1, heartbeat_at=time.time() - age_s)
    assert store.owners.mark_orphans_interrupted(heartbeat_limit_s=30.0) == ([run_id] if marked else [])


def test_listing_marks_orphans_and_a_run_written_before_owners_by_its_age(tmp_path):
    import time

    store = Store(tmp_path / "o.sqlite3")
    old = store.create_run({}, status="running", created_at=time.time() - 3600)
    set_owner(store, old, owner_pid=None, owner_host=None, heartbeat_at=None)
    fresh = store.create_run({}, status="queued")
    statuses = {r.id: r.status for r in store.list_runs()}
    assert statuses == {old: "interrupted", fresh: "queued"}


def test_a_file_from_before_owners_gets_the_new_columns(tmp_path):
    path = tmp_path / "old.sqlite3"
    with sqlite3.connect(path) as con:
        con.executescript("""
            CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, created_at REAL NOT NULL, started_at REAL,
                ended_at REAL, status TEXT NOT NULL, config TEXT NOT NULL, hardware TEXT, info TEXT, error TEXT,
                summary TEXT, label TEXT);
            INSERT INTO runs (created_at, status, config) VALUES (1.0, 'finished', '{}');
        """)
    store = Store(path)
    run_id = store.create_run({}, status="running")
    assert store.get_run(1).status == "finished"
    owner = store.owners.owner_of(run_id)
    assert owner is not None and owner.pid == os.getpid()
