"""SQLite store: runs, epochs as they arrive, samples, interrupted runs, failures that say what to do."""

from __future__ import annotations

import os
import sqlite3

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
    assert run["status"] == "running" and run["config"] == {"epochs": 2}
    assert run["info"]["placement"] == "/device:CPU:0"
    assert [e["epoch"] for e in run["epochs"]] == [1, 2]
    assert run["samples"][1]["cpu_percent"] is None
    assert [r["id"] for r in store.list_runs()] == [run_id]
    assert store.delete_run(run_id) and store.get_run(run_id) is None


def test_list_is_oldest_first_and_visible_to_another_connection(tmp_path):
    path = tmp_path / "b.sqlite3"
    a, b = Store(path), Store(path)
    ids = [a.create_run({"n": i}) for i in range(3)]
    assert [r["id"] for r in b.list_runs()] == ids


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
    store = Store(path)
    holder = sqlite3.connect(path)
    holder.execute("PRAGMA locking_mode=EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(StoreError, match="lock"):
            store.create_run({})
    finally:
        holder.rollback()
        holder.close()


def test_unwritable_folder_is_a_store_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(StoreError, match="BENCH_STORE"):
        Store(blocker / "runs.sqlite3")
