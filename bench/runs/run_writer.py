"""A run's writes to the store, surviving a store that fails.

Every epoch is written as it arrives and samples every SAMPLE_FLUSH_S. When a write fails, the run is marked dirty:
later writes wait (nothing is dropped: the run keeps every epoch, and the samples the store has not got), the user is
told once, and a keeper thread retries every few seconds by rewriting the whole run (its row, every epoch, the unsaved
samples). When that succeeds, the store holds everything measured and writes go on as before. The same thread renews
the heartbeat of this process's active runs (see store.Owner).

Every write names the run by its store.RunKey (its row's id and its creation stamp), so the store tells a row it lost
(the file deleted, or replaced by one without the run: the row is made again and every sample the run still holds is
written again, under its number) from a row that now holds another run (an older copy of the file put back: that run is
left alone, and this one gets a new row, ``RunState.store_id``, and goes on there; its id in memory, which the pages
show, stays as it was, and ``store_error`` says where it went).
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable, Iterable

from bench.vocab import settings
from bench.analysis import run_summary
from bench.analysis.run_summary import RunSummary
from bench.vocab.readings import Epoch, Sample
from bench.runs.run_state import TERMINAL, RunState
from bench.store import RunKey, RunReplaced, Store, StoreError

log = logging.getLogger("bench.runs.jobs")
SAMPLE_FLUSH_S = 2.0
MAX_UNSAVED_SAMPLES = 200_000  # samples held for a failing store (hours at the default interval); oldest go first


class RunWriter:
    """Writes runs to ``store`` (None: runs live in memory only). ``lock`` is the one that guards every RunState."""

    def __init__(self, store: Store | None, lock: threading.Lock):
        self.store = store
        self._lock = lock
        self._resync_lock = threading.RLock()  # one rewrite at a time, so an older copy never lands after a newer one
        self._keeper_stop = threading.Event()
        self._keeper: threading.Thread | None = None

    # -- the run's row ----------------------------------------------------------------------------------------------
    def create(self, state: RunState) -> None:
        """Give a new run its row (its id becomes the row's); on failure the run lives in memory and says so."""
        if self.store is None:
            state.stored = False
            return
        try:
            state.id = self.store.create_run(state.config.to_dict(), label=state.config.label(),
                                             created_at=state.created_at)
        except StoreError as exc:
            state.stored = False
            state.store_error = (f"Results could not be saved: {exc} The run goes on in memory only: export it "
                                 f"(or use --json) to keep it.")
            return
        state.stored = True
        # what the run carries from its start (a lab's mark) is in its row from the first write
        known = {"info": state.info} if state.info.to_dict() else {}
        self.update(state, hardware=state.hardware, **known)

    # -- writes -----------------------------------------------------------------------------------------------------
    def write(self, state: RunState, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        """One write of a run's progress. Once a write has failed, later ones wait for resync()."""
        if self.store is None or not state.stored:
            return
        with self._lock:
            if state.dirty:
                state.dirty_mark += 1
                return
        try:
            fn(*args, **kwargs)
        except StoreError as exc:
            self.failed(state, exc)

    def update(self, state: RunState, **fields: Any) -> None:
        if self.store is not None:
            self.write(state, self.store.update_run, _key(state), **fields)

    def add_epoch(self, state: RunState, epoch: Epoch) -> None:
        if self.store is not None:
            self.write(state, self.store.add_epoch, _key(state), epoch.to_dict())

    def keep_sample(self, state: RunState, sample: Sample) -> int:
        """Number a sample in its run and hold it for the next flush (call under the lock). Returns its number, which
        the run keeps beside the sample (RunState.sample_seqs) for a re-write of the whole run."""
        seq = state.next_sample_seq
        state.next_sample_seq += 1
        if self.store is not None and state.stored:
            state.unsaved_samples.append((seq, sample))
            _trim(state)
        return seq

    def flush_samples(self, state: RunState) -> None:
        """Write the samples the store has not got; while it fails they wait for resync()."""
        if self.store is None or not state.stored:
            return
        with self._lock:
            if state.dirty or not state.unsaved_samples:
                return
            batch = _take_samples(state)
            key = _key(state)
        try:
            _write_samples(self.store, key, batch)
        except StoreError as exc:
            with self._lock:
                _return_samples(state, batch)
            self.failed(state, exc)
            return
        with self._lock:
            state.samples_in_flight -= len(batch)

    def persist_end(self, state: RunState, status: str | None = None) -> None:
        """The outcome and summary, before any reader can see the run as ended; one more rewrite if it was dirty.
        Under the rewrite lock: a rewrite already under way lands first, so the older status it read never lands
        after the outcome, and the samples it carries are in the store before the run reads as ended."""
        final = status or state.status
        with self._resync_lock:
            self.update(state, status=final, started_at=state.started_at, ended_at=state.ended_at, info=state.info,
                        error=state.error, summary=_summary(state))
            if state.dirty:  # one more try now, so a CLI that exits next knows whether the store has the run
                if self.resync(state):
                    self.update(state, status=final, ended_at=state.ended_at, summary=_summary(state))

    def failed(self, state: RunState, exc: StoreError) -> None:
        with self._lock:
            first = not state.dirty
            state.dirty = True
            state.dirty_mark += 1
            state.store_error = (f"Results could not be saved: {exc} The run goes on in memory and the store is "
                                 f"retried every few seconds; what it missed is written when it answers again.")
        if first:  # once per outage, not once per sample
            log.warning("run %s: %s", state.id, exc)

    # -- recovery ---------------------------------------------------------------------------------------------------
    def resync(self, state: RunState) -> bool:
        """Rewrite a run whose writes failed: its row, every epoch and the samples the store has not got; every
        sample held in memory too when the store lost the row (made again) or the row came to hold another run (the
        run moves to a new row, see _move).
        Returns True when the store now holds everything measured so far."""
        if self.store is None or not state.stored:
            return False
        with self._resync_lock:
            with self._lock:
                mark = state.dirty_mark
                ended = state.status in TERMINAL
                fields: dict[str, Any] = dict(status=state.status, started_at=state.started_at,
                                              ended_at=state.ended_at if ended else None, info=state.info,
                                              error=state.error, hardware=state.hardware)
                if ended:
                    fields["summary"] = _summary(state)
                epochs = list(state.epochs)
                samples = _take_samples(state)
                held = list(zip(state.sample_seqs, state.samples))
                key = _key(state)
            try:
                try:
                    made = self.store.ensure_run(key, state.config.to_dict(), created_at=state.created_at,
                                                 label=state.config.label())
                except RunReplaced as exc:
                    key, made = self._move(state, exc), True
                if made:
                    with self._lock:
                        state.rewrite_whole = True  # until a re-write has written it all, even if this one fails
                with self._lock:
                    whole = state.rewrite_whole
                self.store.update_run(key, **fields)
                self.store.add_epochs(key, [e.to_dict() for e in epochs])
                _write_samples(self.store, key, _union(samples, held) if whole else samples)
            except StoreError as exc:
                with self._lock:
                    _return_samples(state, samples)
                self.failed(state, exc)
                return False
            with self._lock:
                state.samples_in_flight -= len(samples)
                if whole:
                    state.rewrite_whole = False
                if state.dirty and state.dirty_mark == mark:
                    state.dirty = False
                    state.store_error = moved_note(state)
                    log.info("run %s: the store answers again; everything measured so far is written", state.id)
                return not state.dirty

    def _move(self, state: RunState, exc: RunReplaced) -> RunKey:
        """Give a run whose row came to hold another run (``exc``) a new row, and write there from now on; the other
        run's row is left as it is. Returns the new row's key."""
        assert self.store is not None  # a run is moved only by resync, with a store
        new_id = self.store.create_run(state.config.to_dict(), status=state.status, label=state.config.label(),
                                       created_at=state.created_at)
        with self._lock:
            state.store_id = new_id
            note = moved_note(state)
        log.warning("run %s: %s (%s)", state.id, note, exc)
        return _key(state)

    def start_keeper(self, runs: Callable[[], Iterable[RunState]]) -> None:
        """Every few seconds: renew the heartbeat of the active runs of ``runs()``, and retry the dirty ones (only
        those: see _failing)."""
        if self.store is None:
            return
        self._keeper = threading.Thread(target=self._keep, args=(runs,), name="bench-store-keeper", daemon=True)
        self._keeper.start()

    def close(self, runs: Iterable[RunState], timeout_s: float = 10.0) -> None:
        """Stop the keeper, with a last try at writing what a failing store missed."""
        self._keeper_stop.set()
        if self._keeper is not None:
            self._keeper.join(timeout_s)
        with self._lock:
            unsaved = [s for s in runs if s.stored and (s.dirty or s.unsaved_samples)]
        for state in unsaved:
            self.resync(state)

    def _failing(self, runs: Iterable[RunState]) -> list[RunState]:
        """The runs whose writes failed. A healthy run's samples are its own flushes' to write: a rewrite of it
        would race them and its end."""
        with self._lock:
            return [s for s in runs if s.stored and s.dirty]

    def _keep(self, runs: Callable[[], Iterable[RunState]]) -> None:
        interval = max(0.5, min(5.0, settings.heartbeat_limit_s() / 6))
        while not self._keeper_stop.wait(interval):
            current = list(runs())
            with self._lock:
                ids = [_key(s) for s in current if s.stored and s.status not in TERMINAL]
            try:
                assert self.store is not None  # the keeper starts only with a store
                self.store.owners.heartbeat(ids)
            except StoreError as exc:
                log.debug("heartbeat not written: %s", exc)
            except Exception:  # noqa: BLE001 - the keeper must outlive any one failure
                log.exception("heartbeat failed")
            for state in self._failing(current):
                try:
                    self.resync(state)
                except Exception:  # noqa: BLE001
                    log.exception("store retry failed for run %s", state.id)



def moved_note(state: RunState) -> str | None:
    """What the user is told of a run written under another row than its id (see RunWriter._move); None if not."""
    if state.store_id is None or state.store_id == state.id:
        return None
    return (f"Run #{state.id}'s row in the store now belongs to another run (a restored or replaced store file): "
            f"this run goes on as run #{state.store_id} in the store.")


def _key(state: RunState) -> RunKey:
    """The run's row as its writes name it: its id there and its creation stamp (see store.RunKey)."""
    return RunKey(state.store_id if state.store_id is not None else state.id, state.created_at)


def _union(unsaved: list[tuple[int, Sample]], held: list[tuple[int, Sample]]) -> list[tuple[int, Sample]]:
    """The samples the store has not got and those held in memory, once each, in order of their numbers."""
    return sorted({seq: sample for seq, sample in [*held, *unsaved]}.items(), key=lambda pair: pair[0])


def _take_samples(state: RunState) -> list[tuple[int, Sample]]:
    """Take every unsaved sample out for one write (call under the lock): a flush and a re-write running at once
    never take the same sample, and samples kept meanwhile wait for the next write."""
    batch = list(state.unsaved_samples)
    state.unsaved_samples.clear()
    state.samples_in_flight += len(batch)
    return batch


def _return_samples(state: RunState, batch: list[tuple[int, Sample]]) -> None:
    """Put back a batch whose write failed, ahead of the samples kept meanwhile (call under the lock)."""
    state.unsaved_samples[:0] = batch
    state.samples_in_flight -= len(batch)
    _trim(state)


def _trim(state: RunState) -> None:
    if len(state.unsaved_samples) > MAX_UNSAVED_SAMPLES:
        del state.unsaved_samples[:len(state.unsaved_samples) - MAX_UNSAVED_SAMPLES]


def _write_samples(store: Store, run_id: int, batch: list[tuple[int, Sample]]) -> None:
    store.add_samples(run_id, [sample.to_dict() for _, sample in batch], seqs=[seq for seq, _ in batch])


def _summary(state: RunState) -> RunSummary:
    """The run's summary, its diagnosis read from its info and config too."""
    return run_summary.summarize(state.epochs, state.samples, info=state.info, config=state.config)
