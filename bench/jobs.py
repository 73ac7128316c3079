"""Runs queued one at a time, each supervised by a background thread, with thread-safe live snapshots.

A JobManager owns a FIFO of runs and one dispatcher thread. For each run it spawns a worker process
(multiprocessing "spawn"), starts a Sampler on the worker's pid, turns worker events into RunState updates, writes
each epoch to the store as it arrives, and enforces Stop (cooperative at batch end, terminate after a grace period),
hang detection and crash reporting. Pages and the CLI only ever read immutable RunSnapshot copies.

With ``prestart=True`` (the dashboard's default) the manager keeps one spare worker, made PRESTART_DELAY_S after it
starts (for the default run) and again whenever a run ends with nothing queued: a process whose environment matches that run (backend, device, threads) and which has already imported the
framework. The next run with the same environment is sent to it instead of spawning cold; any other run discards it.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import multiprocessing as mp
import multiprocessing.spawn as mp_spawn
import queue as queue_module
import signal
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from bench import metrics, records, settings
from bench.config import RunConfig
from bench.monitor import Sample, Sampler
from bench.records import Status
from bench.store import Store, StoreError

log = logging.getLogger(__name__)
_SPAWN_LOCK = threading.Lock()


def start_worker_process(process: Any) -> None:
    """Start a spawned process WITHOUT re-running the parent's __main__ in it.

    Under `streamlit run`, __main__ is the dashboard script itself; a spawned child would execute every page in bare
    mode before training. The worker needs nothing from __main__ (its target lives in bench.worker), so the
    main-module entries are dropped from the spawn preparation data while this process starts.
    """
    original = mp_spawn.get_preparation_data

    def without_main(name: str) -> dict[str, Any]:
        data = original(name)
        data.pop("init_main_from_path", None)
        data.pop("init_main_from_name", None)
        return data

    with _SPAWN_LOCK:
        mp_spawn.get_preparation_data = without_main
        try:
            process.start()
        finally:
            mp_spawn.get_preparation_data = original

SamplerFactory = Callable[[float, Callable[[Sample], None]], Any]
"""Builds the sampler of one run from (interval_s, on_sample): an object with set_pid(pid), start() and stop()."""


def default_sampler(interval_s: float, on_sample: Callable[[Sample], None]) -> Sampler:
    """psutil + NVML sampling of the worker process, on the monotonic clock the supervisor also uses."""
    return Sampler(interval_s, on_sample=on_sample, clock=time.monotonic)


TERMINAL = records.TERMINAL
MAX_LIVE_SAMPLES = 8000  # in memory per run; older halves are thinned 2:1 beyond this (the store keeps all)
MAX_UNSAVED_SAMPLES = 200_000  # samples held for a failing store (hours at the default interval); oldest go first
SAMPLE_FLUSH_S = 2.0
STORED_REFRESH_S = 2.0  # a run of another process, shown from the store, is re-read at most this often
PRESTART_DELAY_S = 5.0  # after a dashboard starts, before its first spare worker loads the framework (page first)


@dataclass(frozen=True)
class RunSnapshot:
    """An immutable copy of one run's live state, safe to read from any thread."""

    id: int
    config: RunConfig
    status: str
    created_at: float
    started_at: float | None
    ended_at: float | None
    phase: str
    info: dict[str, Any]
    progress: dict[str, Any]
    epochs: list[dict[str, Any]]
    samples: list[dict[str, Any]]
    error: dict[str, Any] | None
    store_error: str | None
    hardware: dict[str, Any]
    queue_position: int | None
    saved: bool = True  # everything measured so far is in the store
    owner: str | None = None  # set when another process runs this run (shown from the store; it cannot be stopped here)

    @property
    def active(self) -> bool:
        return self.status not in TERMINAL

    @property
    def summary(self) -> dict[str, Any]:
        return metrics.summarize(self.epochs, self.samples)

    def elapsed_s(self, now: float | None = None) -> float | None:
        if self.started_at is None:
            return None
        end = self.ended_at if self.ended_at is not None else (now or time.time())
        return end - self.started_at

    def eta_s(self) -> float | None:
        """Seconds left, from the steady epoch time (or the first epoch) and the batch progress."""
        epochs_total = self.config.epochs
        per_epoch = metrics.steady_epoch_seconds(self.epochs) or (
            self.epochs[-1]["epoch_seconds"] if self.epochs else None
        )
        if per_epoch is None or not self.active:
            return None
        done = len(self.epochs)
        batches = self.progress.get("batches") or 0
        in_epoch = (self.progress.get("batch", 0) / batches) if batches and self.progress.get("epoch") == done + 1 else 0
        return max(0.0, (epochs_total - done - in_epoch) * per_epoch)

    @classmethod
    def from_stored(cls, run: dict[str, Any], *, owner: str | None = None) -> RunSnapshot:
        """A run read back from the store (``Store.get_run``): after a restart, or one another process runs."""
        return cls(
            id=int(run["id"]), config=RunConfig.from_dict(run.get("config") or {}), status=Status(run["status"]),
            created_at=float(run.get("created_at") or 0.0), started_at=run.get("started_at"),
            ended_at=run.get("ended_at"), phase=str(run["status"]), info=dict(run.get("info") or {}), progress={},
            epochs=list(run.get("epochs") or []), samples=list(run.get("samples") or []), error=run.get("error"),
            store_error=None, hardware=dict(run.get("hardware") or {}), queue_position=None, saved=True, owner=owner)

    def record(self) -> dict[str, Any]:
        """The ``bench.run/1`` record the CLI writes and exports use (built by ``records.run_record``)."""
        return records.run_record(
            id=self.id, status=self.status, config=self.config.to_dict(), hardware=self.hardware, info=self.info,
            created_at=self.created_at, started_at=self.started_at, ended_at=self.ended_at, error=self.error,
            store_error=self.store_error, epochs=self.epochs, samples=self.samples)


@dataclass
class _Spare:
    """A pre-started worker waiting for its run (see worker.spare_main)."""

    key: tuple[Any, ...]
    process: Any
    inbox: Any
    events: Any
    stop_event: Any
    ready: Any


@dataclass
class _RunState:
    id: int
    config: RunConfig
    created_at: float
    hardware: dict[str, Any]
    status: str = Status.QUEUED
    started_at: float | None = None
    ended_at: float | None = None
    phase: str = Status.QUEUED.value
    info: dict[str, Any] = field(default_factory=dict)
    progress: dict[str, Any] = field(default_factory=dict)
    epochs: list[dict[str, Any]] = field(default_factory=list)
    samples: list[dict[str, Any]] = field(default_factory=list)
    error: dict[str, Any] | None = None
    store_error: str | None = None
    stop_requested_at: float | None = None
    pending_status: str | None = None  # the outcome, set before it is stored and shown
    stored: bool = True  # the run has a row in the store (False: the store was not there when it was queued)
    dirty: bool = False  # the store failed a write: writes wait for the next whole re-write (_resync)
    dirty_mark: int = 0  # counts the writes that waited, so a re-write knows whether it caught up with them
    unsaved_samples: list[dict[str, Any]] = field(default_factory=list)  # not yet in the store


class JobManager:
    """Queue of runs, executed one at a time by a dispatcher thread that supervises each worker process."""

    def __init__(
        self,
        store: Store | None = None,
        *,
        hardware: dict[str, Any] | None = None,
        hang_timeout_s: float | None = None,
        stop_grace_s: float | None = None,
        worker_target: Callable[..., None] | None = None,
        prestart: bool = False,
        sampler_factory: SamplerFactory | None = None,
    ):
        self.store = store
        self._sampler_factory = sampler_factory or default_sampler
        self._hardware = hardware
        self.hang_timeout_s = hang_timeout_s if hang_timeout_s is not None else settings.hang_timeout_s()
        self.stop_grace_s = stop_grace_s if stop_grace_s is not None else settings.stop_grace_s()
        self._worker_target = worker_target
        self.prestart = prestart and worker_target is None
        self._spare: _Spare | None = None
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._runs: dict[int, _RunState] = {}
        self._queue: collections.deque[int] = collections.deque()
        self._stop_events: dict[int, Any] = {}
        self._next_memory_id = -1
        self._shutdown = False
        self._dispatcher: threading.Thread | None = None
        self._ctx = mp.get_context("spawn")
        self.interrupted_at_start: list[int] = []
        self._groups: list[dict[str, Any]] = []
        self._stored_view: tuple[float, RunSnapshot | None] | None = None  # (read at, latest stored run)
        self._keeper_stop = threading.Event()
        self._resync_lock = threading.RLock()
        self._keeper: threading.Thread | None = None
        if self.prestart:  # the server's first run, too, should not wait for the framework import
            timer = threading.Timer(PRESTART_DELAY_S, lambda: self._prestart_after(RunConfig()))
            timer.name, timer.daemon = "bench-prestart", True
            timer.start()
        if store is not None:
            try:
                self.interrupted_at_start = store.mark_orphans_interrupted()
            except StoreError as exc:
                log.warning("%s", exc)
            self._keeper = threading.Thread(target=self._keep_store, name="bench-store-keeper", daemon=True)
            self._keeper.start()

    # -- public API -------------------------------------------------------------------------------------------------
    @property
    def hardware(self) -> dict[str, Any]:
        if self._hardware is None:
            from bench import devices

            self._hardware = devices.discover().to_dict()
        return self._hardware

    def submit(self, config: RunConfig) -> int:
        """Queue a validated run; returns its id. Raises ConfigError for bad input."""
        config.validate()
        created = time.time()
        failure: StoreError | None = None
        run_id: int | None = None
        if self.store is not None:
            try:
                run_id = self.store.create_run(config.to_dict(), label=config.label(), created_at=created)
                self.store.update_run(run_id, hardware=self.hardware)
            except StoreError as exc:
                failure = exc
        with self._lock:
            if run_id is None:
                run_id = self._next_memory_id
                self._next_memory_id -= 1
            state = _RunState(id=run_id, config=config, created_at=created, hardware=self.hardware)
            state.stored = run_id > 0  # it has a row; what the row lacks is written by _resync
            if failure is not None and not state.stored:
                state.store_error = (f"Results could not be saved: {failure} The run goes on in memory only: "
                                     f"export it (or use --json) to keep it.")
            self._runs[run_id] = state
            self._queue.append(run_id)
            self._stop_events[run_id] = self._ctx.Event()
            self._ensure_dispatcher()
            self._wake.notify_all()
        if failure is not None and state.stored:
            self._store_failed(state, failure)
        return run_id

    def submit_group(self, kind: str, configs: list[RunConfig], meta: dict[str, Any] | None = None) -> int:
        """Queue several runs as one comparison or sweep (all validated before any is queued); returns the group id."""
        for config in configs:
            config.validate()
        run_ids = [self.submit(config) for config in configs]
        with self._lock:
            group = {"id": len(self._groups) + 1, "kind": kind, "run_ids": run_ids, "meta": dict(meta or {}),
                     "created_at": time.time()}
            self._groups.append(group)
            return group["id"]

    def latest_group(self, kind: str) -> dict[str, Any] | None:
        """The most recent group of this kind (shared by every browser session), or None."""
        with self._lock:
            for group in reversed(self._groups):
                if group["kind"] == kind:
                    return dict(group)
        return None

    def stop(self, run_id: int) -> bool:
        """Ask a run to stop: a queued run is dropped, a running one stops within a batch (killed after the grace)."""
        with self._lock:
            state = self._runs.get(run_id)
            if state is None or state.status in TERMINAL:
                return False
            state.stop_requested_at = time.time()
            if run_id in self._queue:
                self._queue.remove(run_id)
                self._finish_locked(state, Status.STOPPED)
            else:
                self._stop_events[run_id].set()
                state.phase = "stopping"
        if state.status == Status.STOPPED:
            self._persist_end(state)
        return True

    def snapshot(self, run_id: int) -> RunSnapshot | None:
        with self._lock:
            state = self._runs.get(run_id)
            return self._snapshot_locked(state) if state is not None else None

    def current(self) -> RunSnapshot | None:
        """The active run if any, else the most recent one, else the latest run in the store (after a restart, or
        one that another process runs), else None."""
        with self._lock:
            active = [s for s in self._runs.values() if s.status in (Status.STARTING, Status.RUNNING)]
            if active:
                return self._snapshot_locked(active[0])
            if self._queue:
                return self._snapshot_locked(self._runs[self._queue[0]])
            if self._runs:
                latest = max(self._runs.values(), key=lambda s: s.created_at)
                return self._snapshot_locked(latest)
        return self.latest_stored()

    def latest_stored(self) -> RunSnapshot | None:
        """The newest run in the store as a snapshot, re-read at most every STORED_REFRESH_S (while another process
        runs it, it grows); None without a store or runs."""
        now = time.monotonic()
        view = self._stored_view
        if view is not None and (now - view[0] < STORED_REFRESH_S or (view[1] is not None and not view[1].active)):
            return view[1]
        snap = None
        if self.store is not None:
            try:
                runs = self.store.list_runs()
                run = self.store.get_run(runs[-1]["id"]) if runs else None
            except StoreError as exc:
                log.debug("latest stored run unavailable: %s", exc)
                run = None
            if run is not None:
                owner = None
                if run["status"] not in TERMINAL:
                    owner = f"process {run.get('owner_pid')} on {run.get('owner_host')}"
                snap = RunSnapshot.from_stored(run, owner=owner)
        self._stored_view = (now, snap)
        return snap

    def snapshots(self) -> list[RunSnapshot]:
        with self._lock:
            return [self._snapshot_locked(s) for s in sorted(self._runs.values(), key=lambda s: s.created_at)]

    def queued_ids(self) -> list[int]:
        with self._lock:
            return list(self._queue)

    def wait(self, run_id: int, timeout_s: float | None = None, poll_s: float = 0.1) -> RunSnapshot:
        """Block until the run ends (or the timeout passes); returns the latest snapshot."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            snap = self.snapshot(run_id)
            if snap is None:
                raise KeyError(f"no run {run_id}")
            if not snap.active or (deadline is not None and time.monotonic() > deadline):
                return snap
            time.sleep(poll_s)

    def shutdown(self, timeout_s: float = 10.0) -> None:
        """Stop every run and the dispatcher."""
        with self._lock:
            ids = list(self._runs)
        for run_id in ids:
            self.stop(run_id)
        with self._lock:
            self._shutdown = True
            self._wake.notify_all()
        if self._dispatcher is not None:
            self._dispatcher.join(timeout_s)
        self._keeper_stop.set()
        if self._keeper is not None:
            self._keeper.join(timeout_s)
        for state in self._dirty_states():  # a last try, so that nothing measured is left only in memory
            self._resync(state)
        with self._lock:
            spare, self._spare = self._spare, None
        if spare is not None:
            self._discard(spare)

    def spare_state(self) -> str | None:
        """None (no pre-started worker), "loading" (importing the framework) or "ready"."""
        with self._lock:
            spare = self._spare
        if spare is None or not spare.process.is_alive():
            return None
        return "ready" if spare.ready.is_set() else "loading"

    # -- internals --------------------------------------------------------------------------------------------------
    def _snapshot_locked(self, state: _RunState) -> RunSnapshot:
        position = self._queue.index(state.id) if state.id in self._queue else None
        return RunSnapshot(
            id=state.id, config=state.config, status=state.status, created_at=state.created_at,
            started_at=state.started_at, ended_at=state.ended_at, phase=state.phase, info=dict(state.info),
            progress=dict(state.progress), epochs=list(state.epochs), samples=list(state.samples),
            error=dict(state.error) if state.error else None, store_error=state.store_error,
            hardware=state.hardware, queue_position=position,
            saved=self.store is not None and state.stored and not state.dirty and not state.unsaved_samples,
        )

    def _ensure_dispatcher(self) -> None:
        if self._dispatcher is None or not self._dispatcher.is_alive():
            self._dispatcher = threading.Thread(target=self._dispatch_loop, name="bench-dispatcher", daemon=True)
            self._dispatcher.start()

    def _dispatch_loop(self) -> None:
        while True:
            with self._lock:
                while not self._queue and not self._shutdown:
                    self._wake.wait(1.0)
                if self._shutdown:
                    return
                run_id = self._queue.popleft()
                state = self._runs[run_id]
                state.status = Status.STARTING
                state.phase = "starting worker"
                state.started_at = time.time()
            try:
                self._supervise(state)
            except Exception as exc:  # noqa: BLE001 - the dispatcher must survive anything a run does
                log.exception("supervisor failed for run %s", run_id)
                with self._lock:
                    if state.status not in TERMINAL:
                        state.error = {"error_type": type(exc).__name__, "message": str(exc),
                                       "hint": "This is a bug in the dashboard; the next run starts normally."}
                        self._finish_locked(state, Status.FAILED)
                self._persist_end(state)
            self._prestart_after(state.config)

    def _prestart_after(self, config: RunConfig) -> None:
        """Keep a worker for the next run ready, like the one that just ended, when nothing else is queued."""
        with self._lock:
            busy = any(s.status in (Status.STARTING, Status.RUNNING) for s in self._runs.values())
            if not self.prestart or self._shutdown or self._queue or busy or self._spare is not None:
                return
        from bench import worker

        env = config.to_dict()
        ctx = self._ctx
        spare = _Spare(key=worker.environment_key(env), process=None, inbox=ctx.Queue(), events=ctx.Queue(),
                       stop_event=ctx.Event(), ready=ctx.Event())
        spare.process = ctx.Process(
            target=worker.spare_main, args=(env, spare.inbox, spare.events, spare.stop_event, spare.ready,
                                            self._log_path("spare")),
            name="bench-worker-spare", daemon=True)
        try:
            start_worker_process(spare.process)
        except Exception:  # noqa: BLE001 - no spare only means the next run starts cold
            log.exception("could not pre-start a worker")
            return
        with self._lock:
            self._spare = spare

    def _take_spare(self, config: RunConfig) -> _Spare | None:
        """The pre-started worker if it suits ``config``; a spare that does not suit is ended."""
        from bench import worker

        with self._lock:
            spare, self._spare = self._spare, None
        if spare is None:
            return None
        if spare.key == worker.environment_key(config.to_dict()) and spare.process.is_alive():
            return spare
        self._discard(spare)
        return None

    def _discard(self, spare: _Spare) -> None:
        try:
            spare.inbox.put(None)
        except (OSError, ValueError):
            pass
        spare.process.join(timeout=3)
        if spare.process.is_alive():
            self._kill(spare.process)

    def _store_call(self, state: _RunState, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        """One write of a run's progress. Once a write has failed, later ones wait for _resync, which rewrites the
        whole run when the store answers again."""
        if self.store is None or not state.stored:
            return
        with self._lock:
            if state.dirty:
                state.dirty_mark += 1
                return
        try:
            fn(*args, **kwargs)
        except StoreError as exc:
            self._store_failed(state, exc)

    def _store_failed(self, state: _RunState, exc: StoreError) -> None:
        with self._lock:
            first = not state.dirty
            state.dirty = True
            state.dirty_mark += 1
            state.store_error = (f"Results could not be saved: {exc} The run goes on in memory and the store is "
                                 f"retried every few seconds; what it missed is written when it answers again.")
        if first:  # once per outage, not once per sample
            log.warning("run %s: %s", state.id, exc)

    def _dirty_states(self) -> list[_RunState]:
        with self._lock:
            return [s for s in self._runs.values() if s.stored and (s.dirty or s.unsaved_samples)]

    def _resync(self, state: _RunState) -> bool:
        """Rewrite a run whose writes failed: its row, every epoch and the samples the store has not got.
        Returns True when the store now holds everything measured so far."""
        if self.store is None or not state.stored:
            return False
        with self._resync_lock:  # one re-write at a time, so an older copy never lands after a newer one
            return self._resync_locked(state)

    def _resync_locked(self, state: _RunState) -> bool:
        with self._lock:
            mark = state.dirty_mark
            ended = state.status in TERMINAL
            fields = dict(status=state.status, started_at=state.started_at, ended_at=state.ended_at if ended else None,
                          info=dict(state.info), error=state.error, hardware=state.hardware)
            if ended:
                fields["summary"] = metrics.summarize(state.epochs, state.samples)
            epochs = list(state.epochs)
            samples = list(state.unsaved_samples)
        try:
            self.store.update_run(state.id, **fields)
            self.store.add_epochs(state.id, epochs)
            self.store.add_samples(state.id, samples)
        except StoreError as exc:
            self._store_failed(state, exc)
            return False
        with self._lock:
            del state.unsaved_samples[:len(samples)]
            if state.dirty and state.dirty_mark == mark:
                state.dirty = False
                state.store_error = None
                log.info("run %s: the store answers again; everything measured so far is written", state.id)
            return not state.dirty

    def _keep_store(self) -> None:
        """Renew the heartbeat of this process's active runs, and retry the store for runs whose writes failed."""
        interval = max(0.5, min(5.0, settings.heartbeat_limit_s() / 6))
        while not self._keeper_stop.wait(interval):
            with self._lock:
                ids = [s.id for s in self._runs.values() if s.stored and s.status not in TERMINAL]
            try:
                self.store.heartbeat(ids)
            except StoreError as exc:
                log.debug("heartbeat not written: %s", exc)
            except Exception:  # noqa: BLE001 - the keeper must outlive any one failure
                log.exception("heartbeat failed")
            for state in self._dirty_states():
                try:
                    self._resync(state)
                except Exception:  # noqa: BLE001
                    log.exception("store retry failed for run %s", state.id)

    def _finish_locked(self, state: _RunState, status: str) -> None:
        state.status = status
        state.phase = status
        state.ended_at = state.ended_at or time.time()

    def _persist_end(self, state: _RunState, status: str | None = None) -> None:
        summary = metrics.summarize(state.epochs, state.samples)
        self._store_call(state, self.store.update_run if self.store else None, state.id,
                         status=status or state.status,
                         started_at=state.started_at, ended_at=state.ended_at, info=state.info, error=state.error,
                         summary=summary)
        if state.dirty:  # one more try now, so a CLI that exits next knows whether the store has the run
            with self._lock:
                final = status or state.status
                if state.status not in TERMINAL:
                    state.pending_status = final
            self._resync_final(state, final)

    def _resync_final(self, state: _RunState, status: str) -> None:
        with self._resync_lock:
            if self._resync(state):
                self._store_call(state, self.store.update_run if self.store else None, state.id, status=status,
                                 ended_at=state.ended_at, summary=metrics.summarize(state.epochs, state.samples))

    def _supervise(self, state: _RunState) -> None:
        from bench import worker

        spare = self._take_spare(state.config)
        if spare is not None:
            process, events = spare.process, spare.events
            with self._lock:  # Stop now reaches the spare's event
                if self._stop_events[state.id].is_set():
                    spare.stop_event.set()
                self._stop_events[state.id] = spare.stop_event
        else:
            events = self._ctx.Queue()
            target = self._worker_target or worker.worker_main
            process = self._ctx.Process(
                target=target, args=(state.config.to_dict(), events, self._stop_events[state.id],
                                     self._log_path(state.id)),
                name=f"bench-worker-{state.id}", daemon=True,
            )
        def on_sample(sample: Sample) -> None:
            data = sample.to_dict()
            with self._lock:
                state.samples.append(data)
                if len(state.samples) > MAX_LIVE_SAMPLES:
                    half = len(state.samples) // 2
                    state.samples[:half] = state.samples[:half:2]
                if state.stored and self.store is not None:
                    state.unsaved_samples.append(data)
                    if len(state.unsaved_samples) > MAX_UNSAVED_SAMPLES:
                        del state.unsaved_samples[:len(state.unsaved_samples) - MAX_UNSAVED_SAMPLES]

        sampler = self._sampler_factory(state.config.sample_interval_s, on_sample)
        self._store_call(state, self.store.update_run if self.store else None, state.id, status=Status.STARTING,
                         started_at=state.started_at)
        if spare is not None:
            spare.inbox.put((state.config.to_dict(), self._log_path(state.id)))
        else:
            start_worker_process(process)
        sampler.set_pid(process.pid)
        sampler.start()
        # the sampler's clock starts with the worker: t_s of samples and epochs share one origin
        t0_wall = time.time()
        last_event = time.monotonic()
        last_flush = time.monotonic()
        ended_by_event = False
        terminated_reason: str | None = None
        try:
            while True:
                try:
                    event = events.get(timeout=0.2)
                except queue_module.Empty:
                    event = None
                except (EOFError, OSError):
                    event = None
                now = time.monotonic()
                if event is not None:
                    last_event = now
                    if self._apply_event(state, event, t0_wall):
                        ended_by_event = True
                        break
                if now - last_flush >= SAMPLE_FLUSH_S:
                    self._flush_samples(state)
                    last_flush = now
                if event is None and not process.is_alive():
                    break
                if state.stop_requested_at is not None and time.time() - state.stop_requested_at > self.stop_grace_s:
                    terminated_reason = "stopped"
                    self._kill(process)
                    break
                if now - last_event > self.hang_timeout_s:
                    terminated_reason = "hung"
                    self._kill(process)
                    break
        finally:
            sampler.stop()
            self._flush_samples(state)
            if not ended_by_event:
                process.join(timeout=5)
                with self._lock:
                    self._classify_end(state, process.exitcode, terminated_reason)
            final = state.pending_status or Status.FAILED
            state.ended_at = time.time()
            # the store learns the outcome before any reader can see the run as ended
            self._persist_end(state, final)
            with self._lock:
                self._finish_locked(state, final)
            process.join(timeout=15)
            if process.is_alive():
                self._kill(process)
            try:
                events.close()
            except Exception:  # noqa: BLE001 - a broken queue must not mask the run's outcome
                pass

    def _log_path(self, run_id: int | str) -> str | None:
        """Where the worker's own stdout/stderr go (framework chatter), next to the store."""
        for base in (self.store.path.parent if self.store is not None else settings.store_path().parent,
                     Path(tempfile.gettempdir()) / "bench"):
            try:
                (base / "logs").mkdir(parents=True, exist_ok=True)
            except OSError:  # the store's folder cannot be made: the run must not fail for its log's sake
                continue
            return str(base / "logs" / f"run-{run_id}.log")
        return None

    def _classify_end(self, state: _RunState, exitcode: int | None, reason: str | None) -> None:
        """Decide the outcome of a worker that ended without a finished/failed event."""
        if reason == "stopped":
            state.error = None
            state.pending_status = Status.STOPPED
            state.info["hard_stop"] = True
            return
        if reason == "hung":
            state.error = {
                "error_type": "Hung",
                "message": f"The worker sent nothing for {self.hang_timeout_s:.0f} s and was ended.",
                "hint": "Try a smaller model or batch; raise BENCH_HANG_TIMEOUT_S if a single batch really takes longer.",
            }
        else:
            if exitcode is not None and exitcode < 0:
                try:
                    name = signal.Signals(-exitcode).name
                except ValueError:
                    name = f"signal {-exitcode}"
                how = f"was killed by {name}"
                if -exitcode == signal.SIGKILL:
                    how += " (often the system running out of memory)"
            else:
                how = f"exited with code {exitcode} without reporting"
            state.error = {
                "error_type": "WorkerDied",
                "message": f"The training process {how}. Epochs finished before then are kept.",
                "hint": "Lower the batch size, model size or sample limit, then start again.",
            }
        state.pending_status = Status.FAILED

    def _kill(self, process: Any) -> None:
        process.terminate()
        process.join(timeout=3)
        if process.is_alive():
            process.kill()
            process.join(timeout=3)

    def _flush_samples(self, state: _RunState) -> None:
        """Write the samples the store has not got; while it fails they wait for _resync."""
        if self.store is None or not state.stored:
            return
        with self._lock:
            if state.dirty or not state.unsaved_samples:
                return
            batch = list(state.unsaved_samples)
        try:
            self.store.add_samples(state.id, batch)
        except StoreError as exc:
            self._store_failed(state, exc)
            return
        with self._lock:
            del state.unsaved_samples[:len(batch)]

    def _apply_event(self, state: _RunState, event: dict[str, Any], t0_wall: float) -> bool:
        """Fold one worker event into the run. Returns True when the event ends the run."""
        kind = event.get("type")
        with self._lock:
            if kind == "phase":
                state.phase = str(event.get("phase"))
            elif kind == "started":
                info = {k: v for k, v in event.items() if k not in ("type", "time")}
                state.info.update(info)
                state.status = Status.RUNNING
                state.phase = "training"
            elif kind == "progress":
                state.progress = {"epoch": event["epoch"], "batch": event["batch"], "batches": event["batches"]}
            elif kind == "epoch":
                epoch = {k: v for k, v in event.items() if k not in ("type", "time", "started_wall", "ended_wall")}
                epoch["t_start_s"] = event["started_wall"] - t0_wall
                epoch["t_end_s"] = event["ended_wall"] - t0_wall
                state.epochs.append(epoch)
            elif kind == "finished":
                status = event.get("status", Status.FINISHED)
                state.pending_status = Status(status) if status in TERMINAL else Status.FINISHED
                state.phase = "finishing"
            elif kind == "failed":
                state.error = {k: event.get(k) for k in ("error_type", "message", "hint", "traceback")}
                state.pending_status = Status.FAILED
                state.phase = "finishing"
        if kind == "started":
            self._store_call(state, self.store.update_run if self.store else None, state.id, status=Status.RUNNING,
                             info=state.info)
        elif kind == "epoch":
            self._store_call(state, self.store.add_epoch if self.store else None, state.id, state.epochs[-1])
        return kind in ("finished", "failed")


def replace_config(config: RunConfig, **changes: Any) -> RunConfig:
    return dataclasses.replace(config, **changes)
