"""Every epoch and every sample reaches the store exactly once, however the store behaves: slow, failing, failing
after it has written (the commit landed but the caller saw an error), and recovering. Several runs write at once,
each with its sampler's flushes and the keeper's re-writes racing, as in a dashboard or several CLI processes."""

from __future__ import annotations

import random
import sqlite3
import threading
import time
from collections import Counter
from typing import Any

from bench.vocab.record_types import RecordedHardware
from bench.vocab.readings import Epoch, Sample
from bench.runs.run_state import RunState
from bench.runs.run_writer import RunWriter
from bench.store import Store, StoreError
from tests.fixtures import TINY

RUNS = 4
SAMPLES_PER_RUN = 150
EPOCHS_PER_RUN = 6


class UnreliableStore(Store):
    """A real store whose sample and epoch writes are slow, and sometimes fail before or after they land."""

    def __init__(self, path: Any, seed: int) -> None:
        super().__init__(path)
        self.rng = random.Random(seed)
        self.rng_lock = threading.Lock()
        self.down = False
        self.failures = Counter[str]()
        # the first two writes fail, one each way, so that both are met however the threads interleave (under load
        # the writes batch up: a run with 10 writes refused before and none after was seen)
        self.scripted = ["before", "after"]

    def _roll(self) -> float:
        with self.rng_lock:
            return self.rng.random()

    def _unreliable(self, write: Any, *args: Any) -> None:
        time.sleep(0.002 + 0.01 * self._roll())  # stand-in: a slow write; other threads take their turn meanwhile
        with self.rng_lock:
            scripted = self.scripted.pop(0) if self.scripted else None
        if self.down or scripted == "before" or (scripted is None and self._roll() < 0.15):
            self.failures["before"] += 1
            raise StoreError(self._explain(sqlite3.OperationalError("database is locked")))
        write(*args)
        if scripted == "after" or (scripted is None and self._roll() < 0.1):  # the rows landed; the caller is told not
            self.failures["after"] += 1
            raise StoreError(self._explain(sqlite3.OperationalError("disk I/O error")))

    def add_samples(self, run_id: int, samples: Any, *args: Any, **kwargs: Any) -> None:
        self._unreliable(lambda: super(UnreliableStore, self).add_samples(run_id, samples, *args, **kwargs))

    def add_epoch(self, run_id: int, epoch: dict[str, Any]) -> None:
        self._unreliable(lambda: super(UnreliableStore, self).add_epoch(run_id, epoch))

    def add_epochs(self, run_id: int, epochs: Any) -> None:
        self._unreliable(lambda: super(UnreliableStore, self).add_epochs(run_id, epochs))


def _produce(writer: RunWriter, lock: threading.Lock, state: RunState, rng: random.Random) -> None:
    """One run's sampler and epochs: samples kept as they come, flushed now and then, an epoch every 25 samples."""
    for n in range(SAMPLES_PER_RUN):
        with lock:
            writer.keep_sample(state, Sample(t_s=float(n), cpu_percent=float(n % 100)))
        if n % 25 == 24 and len(state.epochs) < EPOCHS_PER_RUN:
            epoch = Epoch(epoch=len(state.epochs) + 1, epoch_seconds=1.0, includes_tracing=not state.epochs)
            with lock:
                state.epochs.append(epoch)
            writer.add_epoch(state, epoch)
        if rng.random() < 0.3:
            writer.flush_samples(state)
        time.sleep(0.001)  # stand-in: the sampler's pace, so the runs' writes interleave


def test_every_sample_and_epoch_is_stored_once(isolated_store: Any) -> None:
    store = UnreliableStore(isolated_store, seed=7)
    lock = threading.Lock()
    writer = RunWriter(store, lock)
    states = []
    for _ in range(RUNS):
        state = RunState(id=0, config=TINY, created_at=time.time(), hardware=RecordedHardware())
        writer.create(state)
        assert state.stored
        states.append(state)
    stop = threading.Event()

    def keeper() -> None:  # the keeper's re-writes race the flushes, as bench-store-keeper does
        while not stop.wait(0.003):  # its pace, as bench-store-keeper's; ended at once by stop
            for state in states:
                if state.dirty or state.unsaved_samples:
                    writer.resync(state)

    threads = [threading.Thread(target=_produce, args=(writer, lock, s, random.Random(i)))
               for i, s in enumerate(states)]
    keeper_thread = threading.Thread(target=keeper)
    keeper_thread.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    stop.set()
    keeper_thread.join(60)
    assert store.failures["before"] and store.failures["after"], "the store never failed: the test proves nothing"

    store.down = False
    store.rng = random.Random(1)  # recovering: still failing now and then, until everything is written
    deadline = time.monotonic() + 60
    while any(s.dirty or s.unsaved_samples for s in states) and time.monotonic() < deadline:
        for state in states:
            writer.resync(state)
    for state in states:
        assert not state.dirty and not state.unsaved_samples, state.store_error

    for state in states:
        stored = Store(isolated_store).get_run(state.id)
        times = Counter(s.t_s for s in stored.samples)
        duplicated = {t: n for t, n in times.items() if n > 1}
        lost = sorted(set(map(float, range(SAMPLES_PER_RUN))) - set(times))
        assert not duplicated and not lost, (f"run {state.id}: {len(stored.samples)} rows for "
                                             f"{len(times)} samples; duplicated {duplicated}, lost {lost}")
        assert [e.epoch for e in stored.epochs] == list(range(1, EPOCHS_PER_RUN + 1))


class HeldStore(Store):
    """A real store whose first run update from the keeper thread waits until the test lets it go."""

    def __init__(self, path: Any) -> None:
        super().__init__(path)
        self.keeper_inside = threading.Event()
        self.release = threading.Event()

    def update_run(self, run_id: int, **fields: Any) -> None:
        if threading.current_thread().name == "bench-store-keeper" and not self.keeper_inside.is_set():
            self.keeper_inside.set()
            self.release.wait(10)
        super().update_run(run_id, **fields)


def test_a_run_that_ends_while_the_keeper_writes_is_stored_ended_with_every_sample(
        isolated_store: Any, monkeypatch: Any) -> None:
    """The end of a healthy run (last flush, then its outcome) racing the keeper's periodic thread: the store ends
    up with the outcome, never the older status the keeper read, and with every sample before the outcome."""
    monkeypatch.setenv("BENCH_HEARTBEAT_LIMIT_S", "3")  # the keeper looks every 0.5 s
    store = HeldStore(isolated_store)
    lock = threading.Lock()
    writer = RunWriter(store, lock)
    state = RunState(id=0, config=TINY, created_at=time.time(), hardware=RecordedHardware())
    writer.create(state)
    with lock:
        state.status = "running"
        for n in range(5):
            writer.keep_sample(state, Sample(t_s=float(n), cpu_percent=1.0))
    writer.start_keeper(lambda: [state])
    store.keeper_inside.wait(2.0)  # a keeper that re-writes healthy runs is now inside, holding what it read
    try:
        writer.flush_samples(state)  # the run's end, as Supervisor._finish does it
        with lock:
            state.ended_at = time.time()
        threading.Timer(1.0, store.release.set).start()  # the keeper's write lands a second later, after this:
        writer.persist_end(state, "finished")
        with lock:
            state.status = "finished"
    finally:
        store.release.set()
        writer.close([state])
    stored = Store(isolated_store).get_run(state.id)
    assert stored.status == "finished" and stored.ended_at is not None, (
        f"the store says {str(stored.status)!r}: an older copy landed after the outcome")
    assert sorted(s.t_s for s in stored.samples) == [0.0, 1.0, 2.0, 3.0, 4.0]
