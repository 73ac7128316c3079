"""The parts the JobManager is made of, each on its own: RunWriter (store writes that survive a failing store),
Supervisor (one worker's life), SparePool (the pre-started worker)."""

from __future__ import annotations

import multiprocessing as mp
import sqlite3
import threading

import pytest

from bench.vocab.record_types import RecordedHardware
from bench.vocab.readings import Epoch, Sample
from bench.vocab.records import Status
from bench.runs.run_state import RunState, snapshot_of
from bench.runs.run_writer import RunWriter
from bench.store import Store, StoreError
from bench.runs.supervisor import Supervisor
from tests.fixtures import TINY
from tests.unit import fake_workers



class FlakyStore(Store):
    """A real store whose writes fail while ``down`` is set."""

    down = False

    def _op(self):  # noqa: D401 - same contract as Store._op
        if self.down:
            raise StoreError(self._explain(sqlite3.OperationalError("database or disk is full")))
        return super()._op()


def new_run(store: Store) -> tuple[threading.Lock, RunWriter, RunState]:
    """A run given its store row by a RunWriter, as JobManager.submit does."""
    lock = threading.Lock()
    writer = RunWriter(store, lock)
    state = RunState(id=0, config=TINY, created_at=1.0, hardware=RecordedHardware())
    writer.create(state)
    return lock, writer, state


def test_writer_keeps_what_a_failing_store_missed_and_rewrites_it_when_it_answers(isolated_store):
    store = FlakyStore(isolated_store)
    lock, writer, state = new_run(store)
    assert state.stored and state.id > 0
    store.down = True
    for n in (1, 2, 3):
        state.epochs.append(Epoch(epoch=n, epoch_seconds=1.0, includes_tracing=n == 1))
        writer.add_epoch(state, state.epochs[-1])
        with lock:
            writer.keep_sample(state, Sample(t_s=float(n), cpu_percent=10.0))
        writer.flush_samples(state)
    assert state.dirty and "disk is full" in state.store_error
    assert not snapshot_of(state, queue_position=None, store_attached=True).saved
    assert writer.resync(state) is False, "still down"
    store.down = False
    assert writer.resync(state) is True
    assert state.store_error is None and not state.unsaved_samples
    stored = store.get_run(state.id)
    assert [e.epoch for e in stored.epochs] == [1, 2, 3] and len(stored.samples) == 3


def test_supervisor_runs_one_worker_to_its_end_and_stores_the_outcome_first(isolated_store):
    store = Store(isolated_store)
    lock, writer, state = new_run(store)
    ctx = mp.get_context("spawn")
    samplers = []

    class CountingSampler:
        def __init__(self, interval_s, on_sample):
            samplers.append(self)
            self.started = self.stopped = False

        def set_pid(self, pid):
            self.pid = pid

        def start(self):
            self.started = True

        def stop(self):
            self.stopped = True

    Supervisor(state, lock=lock, writer=writer, ctx=ctx, worker_target=fake_workers.quick,
               sampler_factory=CountingSampler, stop_event=ctx.Event(), log_path=None, hang_timeout_s=30,
               stop_grace_s=5).run()
    assert state.status == Status.FINISHED and len(state.epochs) == 3
    assert samplers[0].started and samplers[0].stopped and samplers[0].pid > 0
    assert store.get_run(state.id).status == "finished"


def spare_stand_in(env: dict, inbox, queue, stop_event, ready, log_path: str | None = None) -> None:
    """A spare that is ready at once and waits for its run, or None to exit, without a framework (spawned: importable
    by its module's name). A real spare loading the framework and taking a run is test_jobs.py's
    test_prestarted_worker_takes_the_next_matching_run_and_honours_stop."""
    from bench.hardware import lifetime

    lifetime.exit_with_parent()
    ready.set()
    inbox.get()


def test_spare_pool_hands_over_a_matching_spare_and_ends_one_that_does_not_match(tmp_path, monkeypatch):
    """The pool's own rules (one spare at most, a spare for another environment ended, a matching one handed over)
    on stand-in spares: the framework a real spare loads is not what is checked here."""
    from bench.runs import worker
    from bench.runs.prestart import SparePool

    monkeypatch.setattr(worker, "spare_main", spare_stand_in)
    pool = SparePool(mp.get_context("spawn"), lambda name: str(tmp_path / f"{name}.log"))
    assert pool.state() is None and pool.take(TINY) is None
    pool.prestart(TINY)
    first = pool.spare
    assert pool.state() in ("loading", "ready")
    pool.prestart(TINY)
    assert pool.spare is first, "one spare at most"
    assert pool.take(TINY.replace(cpu_threads=1)) is None, "another environment cannot use it"
    first.process.join(timeout=10)
    assert not first.process.is_alive(), "the unsuitable spare was ended"
    pool.prestart(TINY)
    spare = pool.take(TINY)
    assert spare is not None and pool.state() is None
    from bench.runs.prestart import discard

    discard(spare)
    assert not spare.process.is_alive()
