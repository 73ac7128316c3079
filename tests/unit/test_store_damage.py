"""A store file that is damaged, or deleted while the dashboard runs: the store says so and what to do, re-creates
what is missing, and a run that goes on is stored whole once the file is back."""

from __future__ import annotations

import sqlite3
import threading
import time
from contextlib import closing
from pathlib import Path

import pytest

from bench.vocab.record_types import RecordedHardware
from bench.vocab.readings import Epoch, Sample
from bench.runs.run_state import RunState
from bench.runs.run_writer import RunWriter
from bench.store import Store, StoreError
from tests.fixtures import TINY



@pytest.mark.parametrize("damage", [b"this is not a database at all" * 100, "truncated"])
def test_a_damaged_store_says_it_is_damaged_and_how_to_move_it_aside(tmp_path: Path, damage: bytes | str) -> None:
    path = tmp_path / "runs.sqlite3"
    store = Store(path)
    for _ in range(50):
        run_id = store.create_run(TINY.to_dict())
        store.add_samples(run_id, [{"t_s": float(i), "cpu_percent": 1.0, "pad": "x" * 200} for i in range(40)])
    if damage == "truncated":
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2] + b"\0" * 4096 + data[len(data) // 2 + 4096:])
    else:
        path.write_bytes(damage)
    for wal in tmp_path.glob("runs.sqlite3-*"):
        wal.unlink()
    with pytest.raises(StoreError) as caught:
        Store(path)
    message = str(caught.value)
    assert "damaged" in message and "mv " in message and ".damaged" in message, message
    assert "permissions" not in message, "a damaged file is not a permissions problem"


def test_a_store_deleted_while_open_is_made_again_and_a_running_run_is_written_whole(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite3"
    store = Store(path)
    lock = threading.Lock()
    writer = RunWriter(store, lock)
    state = RunState(id=0, config=TINY, created_at=time.time(), hardware=RecordedHardware())
    writer.create(state)
    first = Epoch(epoch=1, epoch_seconds=1.0, includes_tracing=True)
    state.epochs.append(first)
    writer.add_epoch(state, first)

    for file in tmp_path.glob("runs.sqlite3*"):
        file.unlink()  # someone deletes the store while the run goes on

    second = Epoch(epoch=2, epoch_seconds=1.0, includes_tracing=False)
    state.epochs.append(second)
    writer.add_epoch(state, second)  # the new, empty file has no row for the run: the write fails and waits
    with lock:
        writer.keep_sample(state, Sample(t_s=2.0, cpu_percent=5.0))
    writer.flush_samples(state)
    assert state.dirty
    assert writer.resync(state), state.store_error
    stored = Store(path).get_run(state.id)
    assert stored is not None, "the run's row was made again"
    assert [e.epoch for e in stored.epochs] == [1, 2], "every epoch the run kept is written again"
    assert [s.t_s for s in stored.samples] == [2.0]

    later = Store(path).create_run(TINY.to_dict())  # and later runs are stored as before
    assert Store(path).get_run(later) is not None


def test_a_store_emptied_while_open_is_made_again(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite3"
    store = Store(path)
    store.create_run(TINY.to_dict())
    for extra in tmp_path.glob("runs.sqlite3-*"):
        extra.unlink()
    path.write_bytes(b"")  # `: > runs.sqlite3`: an empty file is an empty database, without the tables
    assert store.list_runs() == []
    assert store.get_run(store.create_run(TINY.to_dict())) is not None


def test_a_store_replaced_by_another_database_heals_at_the_next_try(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite3"
    store = Store(path)
    store.create_run(TINY.to_dict())
    for extra in tmp_path.glob("runs.sqlite3*"):
        extra.unlink()
    with closing(sqlite3.connect(path)) as other, other:
        other.execute("CREATE TABLE notes (text TEXT)")  # another program's database where the store was
    with pytest.raises(StoreError, match="no such table.*made again"):
        store.create_run(TINY.to_dict())  # the first try says what happened ...
    run_id = store.create_run(TINY.to_dict())  # ... and the next finds the tables made again
    assert [r.id for r in store.list_runs()] == [run_id]
