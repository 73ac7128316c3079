"""A run is its id and its creation stamp together (store.RunKey): a store file deleted mid-run gets the run back
whole, every sample it still holds under its number; a store file put back from an older copy, holding another run
under the same id, never has that run written into, and the live run goes on under a new row."""

from __future__ import annotations

import shutil
import sqlite3
import threading
import time
from contextlib import closing
from pathlib import Path

import pytest

from bench.vocab.record_types import RecordedHardware
from bench.vocab.readings import Epoch, Sample
from bench.runs import recorder as recorder_module
from bench.runs.run_state import RunState
from bench.runs.run_writer import RunWriter
from bench.runs.recorder import Recorder
from bench.store import RunKey, RunLost, RunReplaced, Store
from tests.fixtures import TINY


def live_run(store: Store) -> tuple[threading.Lock, RunWriter, RunState, Recorder]:
    """A run given its row by a RunWriter (as JobManager.submit does), and the recorder whose on_sample keeps its
    samples (no worker is started: the test plays the sampler and the epochs)."""
    lock = threading.Lock()
    writer = RunWriter(store, lock)
    state = RunState(id=0, config=TINY, created_at=time.time(), hardware=RecordedHardware())
    writer.create(state)
    assert state.stored and state.id > 0
    sup = Recorder(state, lock=lock, writer=writer)
    with lock:
        state.status = "running"
    writer.update(state, status="running")
    return lock, writer, state, sup


def sample(sup: Recorder, n: int) -> None:
    sup.on_sample(Sample(t_s=float(n), cpu_percent=float(n % 100)))


def epoch(writer: RunWriter, lock: threading.Lock, state: RunState) -> None:
    new = Epoch(epoch=len(state.epochs) + 1, epoch_seconds=1.0, includes_tracing=not state.epochs)
    with lock:
        state.epochs.append(new)
    writer.add_epoch(state, new)


def end(writer: RunWriter, lock: threading.Lock, state: RunState) -> None:
    """The run's end, as Recorder.close does it: a last flush, then the outcome."""
    writer.flush_samples(state)
    with lock:
        state.ended_at = time.time()
    writer.persist_end(state, "finished")
    with lock:
        state.status = "finished"


def seqs_in(path: Path, run_id: int) -> list[int]:
    with closing(sqlite3.connect(path)) as con:
        return [n for (n,) in con.execute("SELECT seq FROM samples WHERE run_id = ? ORDER BY seq", (run_id,))]


def remove_store(path: Path) -> None:
    for file in path.parent.glob(path.name + "*"):
        file.unlink()


def test_a_store_deleted_mid_run_gets_every_sample_back_under_its_number(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite3"
    lock, writer, state, sup = live_run(Store(path))
    for n in range(50):
        sample(sup, n)
        if n % 20 == 19:
            epoch(writer, lock, state)
    writer.flush_samples(state)
    assert seqs_in(path, state.id) == list(range(50)) and not state.dirty

    remove_store(path)  # someone deletes the store while the run goes on
    for n in range(50, 58):
        sample(sup, n)
    epoch(writer, lock, state)  # the new, empty file has no row for the run: the write fails and waits
    assert state.dirty and "no longer holds run" in (state.store_error or "")
    end(writer, lock, state)

    assert not state.dirty and state.store_error is None, state.store_error
    stored = Store(path).get_run(state.id)
    assert stored is not None and stored.status == "finished"
    assert seqs_in(path, state.id) == list(range(58)), "the samples written before the loss are written again"
    assert sorted(s.t_s for s in stored.samples) == [float(n) for n in range(58)]
    assert [e.epoch for e in stored.epochs] == [1, 2, 3]
    assert stored.created_at == state.created_at


def test_a_store_replaced_by_an_older_copy_keeps_its_run_and_the_live_run_moves_to_a_new_row(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "runs.sqlite3"
    backup = tmp_path / "backup.sqlite3"
    lock, writer, state, sup = live_run(Store(path))
    # an older copy of the store, holding another run under the live run's id
    old = Store(backup)
    other_id = old.create_run(TINY.replace(epochs=7).to_dict(), label="older run", created_at=state.created_at - 3600)
    assert other_id == state.id
    old.add_epochs(other_id, [{"epoch": 1, "epoch_seconds": 9.0, "includes_tracing": True}])
    old.add_samples(other_id, [{"t_s": 0.5, "cpu_percent": 42.0}], seqs=[0])
    old.update_run(other_id, status="finished", ended_at=state.created_at - 3000)
    before = old.get_run(other_id)
    assert before is not None

    for n in range(30):
        sample(sup, n)
    epoch(writer, lock, state)
    writer.flush_samples(state)

    remove_store(path)
    shutil.copyfile(backup, path)  # the backup put back while the run goes on
    for n in range(30, 40):
        sample(sup, n)
    epoch(writer, lock, state)
    with caplog.at_level("WARNING", logger="bench.runs.jobs"):
        writer.flush_samples(state)
        assert state.dirty, "nothing is written into the other run"
        assert writer.resync(state), state.store_error
    end(writer, lock, state)

    after = Store(path).get_run(other_id)
    assert after is not None and after.to_dict() == before.to_dict(), "the older run is left as it was"
    assert seqs_in(path, other_id) == [0]
    assert state.store_id is not None and state.store_id != state.id and state.id == other_id, (
        "the run keeps its id in memory and goes on under a new row")
    moved = Store(path).get_run(state.store_id)
    assert moved is not None and moved.status == "finished" and moved.created_at == state.created_at
    assert moved.config == TINY
    assert [e.epoch for e in moved.epochs] == [1, 2]
    assert seqs_in(path, state.store_id) == list(range(40)), "the whole run is written under its new row"
    note = state.store_error or ""
    assert f"Run #{state.id}'s row in the store now belongs to another run" in note, note
    assert f"goes on as run #{state.store_id}" in note, note
    assert len([r for r in caplog.records if "belongs to another run" in r.getMessage()]) == 1


def test_the_store_tells_a_lost_row_from_another_runs_row_and_plain_ids_write_as_before(tmp_path: Path) -> None:
    store = Store(tmp_path / "runs.sqlite3")
    run_id = store.create_run(TINY.to_dict(), created_at=1000.25)
    store.update_run(RunKey(run_id, 1000.25), status="running")  # its own row: written
    store.add_epoch(RunKey(run_id, 1000.25), {"epoch": 1, "epoch_seconds": 1.0, "includes_tracing": True})
    with pytest.raises(RunReplaced, match="another run under id"):
        store.add_epoch(RunKey(run_id, 2000.5), {"epoch": 2, "epoch_seconds": 1.0, "includes_tracing": False})
    with pytest.raises(RunReplaced):
        store.add_samples(RunKey(run_id, 2000.5), [{"t_s": 1.0}], seqs=[0])
    with pytest.raises(RunReplaced):
        store.update_run(RunKey(run_id, 2000.5), status="failed")
    with pytest.raises(RunLost, match="no longer holds run"):
        store.add_epochs(RunKey(run_id + 1, 1000.25), [{"epoch": 1, "epoch_seconds": 1.0, "includes_tracing": True}])
    stored = store.get_run(run_id)
    assert stored is not None and stored.status == "running" and [e.epoch for e in stored.epochs] == [1]
    assert stored.samples == ()

    store.add_epoch(run_id, {"epoch": 2, "epoch_seconds": 1.0, "includes_tracing": False})  # a plain id (imports, the CLI) is not checked
    assert [e.epoch for e in store.get_run(run_id).epochs] == [1, 2]

    with pytest.raises(RunReplaced):
        store.ensure_run(run_id, TINY.to_dict(), created_at=2000.5, label=None)
    assert store.ensure_run(run_id, TINY.to_dict(), created_at=1000.25, label=None) is False
    assert store.ensure_run(run_id + 5, TINY.to_dict(), created_at=3000.0, label=None) is True


def test_a_heartbeat_renews_only_its_own_run(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite3"
    store = Store(path)
    run_id = store.create_run(TINY.to_dict(), created_at=1000.25)

    def beat() -> float:
        with closing(sqlite3.connect(path)) as con:
            return float(con.execute("SELECT heartbeat_at FROM runs WHERE id = ?", (run_id,)).fetchone()[0])

    with closing(sqlite3.connect(path)) as con, con:  # an old beat: any renewal now writes a later one
        con.execute("UPDATE runs SET heartbeat_at = 1.0 WHERE id = ?", (run_id,))
    first = beat()
    store.owners.heartbeat([RunKey(run_id, 2000.5)])
    assert beat() == first, "another run's row is not kept alive"
    store.owners.heartbeat([RunKey(run_id, 1000.25)])
    assert beat() > first


def test_thinned_samples_keep_their_numbers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(recorder_module, "MAX_LIVE_SAMPLES", 20)
    lock, writer, state, sup = live_run(Store(tmp_path / "runs.sqlite3"))
    for n in range(100):
        sample(sup, n)
    assert len(state.samples) <= 21 and len(state.samples) == len(state.sample_seqs)
    assert [int(s.t_s) for s in state.samples] == state.sample_seqs, "each sample beside its own number"
