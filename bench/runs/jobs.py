"""The run queue: runs (and the peak probes between them) executed one at a time, with thread-safe live snapshots.

A JobManager owns a FIFO and one dispatcher thread. Each run is handed to a Supervisor (bench/runs/supervisor.py), which
spawns its worker, samples it and folds its events into the run's state; writes to the store go through a RunWriter
(bench/runs/run_writer.py), which survives a failing store; with ``prestart=True`` (the dashboard's default) a SparePool
(bench/runs/prestart.py) keeps a worker with the framework loaded for the next run. Beside the runs it holds the two
owners that share its queue: ``peaks``, the peak-probe queue (bench/runs/peaks.py: a probe waits its turn like a run, so
it never overlaps a measured epoch), and ``groups``, the registry of comparison and sweep groups (bench/runs/groups.py).
Pages and the CLI act only through these and read immutable RunSnapshot copies.
"""

from __future__ import annotations

import collections
import logging
import multiprocessing as mp
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Protocol

from bench.vocab import records, settings
from bench.analysis import compare, sweeps
from bench.vocab.errors import RunActiveError, RunUnreadable
from bench.vocab.config import DeviceInventory, RunConfig
from bench.hardware import devices
from bench.hardware.peak_cache import PeakEntry
from bench.runs.changes import Listeners
from bench.runs.groups import GroupRegistry
from bench.runs.peaks import PeakQueue
from bench.runs.prestart import PRESTART_DELAY_S, SparePool
from bench.vocab.records import Status
from bench.vocab.record_types import RecordedHardware
from bench.vocab.run_info import RunError, RunInfo
from bench.runs.run_state import TERMINAL, RunGroup, RunSnapshot, RunState, finish, snapshot_of
from bench.runs.run_writer import RunWriter
from bench.store import Store, StoreError
from bench.runs.stored_view import StoredView
from bench.runs.supervisor import SamplerFactory, Supervisor, default_sampler
from bench.runs.worker_process import start_worker_process

__all__ = ["JobManager", "RunActiveError", "RunSnapshot", "TERMINAL", "default_sampler", "start_worker_process",
           "PRESTART_DELAY_S"]
log = logging.getLogger(__name__)
FinishedHook = Callable[[records.RunRecord], None]
# called once a group's runs have all ended, with the group and the records of its runs that trained
# a group's document as the CLI writes the same comparison or sweep; None for a group that is neither (a lesson step)
GroupDocument = records.Comparison | records.Sweep | None
# called once a group's last run ended, with the records of its runs that trained and the group's document
GroupHook = Callable[[list[records.RunRecord], GroupDocument], None]


class Machine(DeviceInventory, Protocol):
    """What a JobManager runs on: checked against (DeviceInventory) and kept in each run's record (``record``).
    ``bench.hardware.devices.Hardware`` is one (this machine), ``bench.cluster.launch.ClusterMachine`` another (a
    cluster's nodes as one machine)."""

    def record(self) -> RecordedHardware: ...


class JobManager:
    """Queue of runs (and tasks between them: peak probes), executed one at a time by a dispatcher thread.

    ``peaks`` (a PeakQueue) queues peak probes here; ``groups`` (a GroupRegistry) queues comparisons and sweeps.
    ``worker_target`` and ``peak_target`` are stand-ins for the training worker and for the matmul peak probe
    (BENCH_WORKER_TARGET, BENCH_PEAK_TARGET: bench.vocab.settings); None: the real ones.
    ``store`` None keeps runs in memory only; ``store_error`` then says why (the StoreError of opening it: what went
    wrong and what to do), for pages that tell the user.
    """

    def __init__(
        self,
        store: Store | None = None,
        *,
        hardware: Machine | None = None,
        hang_timeout_s: float | None = None,
        stop_grace_s: float | None = None,
        worker_target: Callable[..., None] | None = None,
        peak_target: Callable[..., PeakEntry] | None = None,
        prestart: bool = False,
        sampler_factory: SamplerFactory | None = None,
        store_error: str | None = None,
        launcher: Any | None = None,
    ):
        self.store = store
        self.store_error = store_error if store is None else None
        self._sampler_factory = sampler_factory or default_sampler
        self._machine: Machine | None = hardware
        self._hardware: RecordedHardware | None = None
        self.hang_timeout_s = hang_timeout_s if hang_timeout_s is not None else settings.hang_timeout_s()
        self.stop_grace_s = stop_grace_s if stop_grace_s is not None else settings.stop_grace_s()
        self._worker_target = worker_target
        self.prestart = prestart and worker_target is None
        # runs go to a Ray cluster (bench.cluster.launch.ClusterLauncher: placed, side by side, each alone on its
        # device) when set; None: this machine, one at a time
        self.launcher = launcher
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        # Held from a run's store id to its place in the queue (and over a whole group), so that the queue runs in the
        # order of the ids, and a group's runs follow one another, when several sessions press Start at once.
        self._submit_lock = threading.RLock()
        self._runs: dict[int, RunState] = {}
        self._queue: collections.deque[int | Callable[[], None]] = collections.deque()  # run ids, tasks between runs
        self._stop_events: dict[int, Any] = {}
        self._next_memory_id = -1
        self._shutdown = False
        self._dispatcher: threading.Thread | None = None
        self._ctx = mp.get_context("spawn")
        self.interrupted_at_start: list[int] = []
        # name -> called with each ended run's record, in a daemon thread of its own (the dashboard's MLflow logging)
        self.finished_hooks: dict[str, FinishedHook] = {}
        # name -> called once with a comparison's or sweep's runs when its last run ended (a run of such a group goes
        # to this hook, not to the finished-run hook of the same name)
        self.group_hooks: dict[str, GroupHook] = {}
        self._groups_handed: set[int] = set()
        # told of every change (a run queued, started, a phase, a sample, an epoch, its end): the live feed listens
        self.changes = Listeners()
        self.stored = StoredView(store)  # the store's newest run: another process's, or one from before a restart
        self.writer = RunWriter(store, self._lock)
        self.pool = SparePool(self._ctx, self._log_path)
        self.peaks = PeakQueue(store, enqueue=self._enqueue_task, own_runs=self._runs,
                               stopping=lambda: self._shutdown, state_lock=self._lock, measure=peak_target)
        self.groups = GroupRegistry(submit=self.submit, peaks=self.peaks, order_lock=self._submit_lock,
                                    machine=lambda: self.machine)
        if self.prestart:  # the server's first run, too, should not wait for the framework import
            self.pool.prestart_later(PRESTART_DELAY_S)
        if store is not None:
            try:
                self.interrupted_at_start = store.owners.mark_orphans_interrupted()
            except StoreError as exc:
                log.warning("%s", exc)
            self.writer.start_keeper(self._all_states)

    # -- public API -------------------------------------------------------------------------------------------------
    @property
    def machine(self) -> Machine:
        """The machine runs are checked against and run on: given, else discovered once."""
        if self._machine is None:
            self._machine = devices.discover()
        return self._machine

    @property
    def hardware(self) -> RecordedHardware:
        """The machine as each run's record keeps it."""
        if self._hardware is None:
            self._hardware = self.machine.record()
        return self._hardware

    def submit(self, config: RunConfig, *, info: RunInfo | None = None) -> int:
        """Queue a validated run; returns its id. ``info``: what the run carries from the start (a lab's mark),
        written with its row. Raises ConfigError for bad input."""
        config.validate(self.machine)
        state = RunState(id=0, config=config, created_at=time.time(), hardware=self.hardware,
                         info=info if info is not None else RunInfo())
        with self._submit_lock:
            self.writer.create(state)
            with self._lock:
                if not state.stored:
                    state.id = self._next_memory_id
                    self._next_memory_id -= 1
                self._runs[state.id] = state
                if self.launcher is not None:
                    self.launcher.accept(state.id)
                self._queue.append(state.id)
                self._stop_events[state.id] = self._ctx.Event()
                self._ensure_dispatcher()
                self._wake.notify_all()
        return state.id

    def stop(self, run_id: int) -> bool:
        """Ask a run to stop: a queued run is dropped, a running one stops within a batch (killed after the grace)."""
        with self._lock:
            state = self._runs.get(run_id)
            if state is None or state.status in TERMINAL:
                return False
            state.stop_requested_at = time.time()
            if run_id in self._queue:
                self._queue.remove(run_id)
                finish(state, Status.STOPPED)
                self._wake.notify_all()  # wait() on it
            else:
                self._stop_events[run_id].set()
                state.phase = "stopping"
        if state.status == Status.STOPPED:
            self.writer.persist_end(state)
            group = self.groups.of_run(run_id)
            if group is not None:  # a group stopped before its last run: its runs that trained are handed on now
                self._after_group_run(group)
        return True

    def delete_run(self, run_id: int) -> None:
        """Forget a run here and in the store. Raises RunActiveError while it is active (here or in another
        process), with what to do."""
        with self._lock:
            state = self._runs.get(run_id)
            if state is not None and state.status not in TERMINAL:
                raise RunActiveError(f"Run #{run_id} is still {state.status}: stop it first, then delete it.")
        if self.store is not None:
            # a run moved to another row (RunState.store_id) leaves the run now under its id alone
            row = state.store_id if state is not None and state.store_id is not None else run_id
            try:
                stored = self.store.get_run(row, with_samples=False)
            except RunUnreadable:  # a row this version cannot read is not running here: it may go
                stored = None
            if stored is not None and stored.status in records.ACTIVE and state is None:
                owner = self.store.owners.owner_of(row)
                where = f"{owner.pid} on {owner.host}" if owner is not None else "no owner recorded"
                raise RunActiveError(f"Run #{run_id} is {stored.status} in another process ({where}): "
                                     "stop it there first.")
            self.store.delete_run(row)
        with self._lock:
            self._runs.pop(run_id, None)
            self._stop_events.pop(run_id, None)
            self.stored.forget()
            self._wake.notify_all()

    def snapshot(self, run_id: int) -> RunSnapshot | None:
        with self._lock:
            state = self._runs.get(run_id)
            return self._snapshot_locked(state) if state is not None else None

    def current(self) -> RunSnapshot | None:
        """The active run if any, else one that another process runs live in the store (a CLI run, a script's
        BenchCallback), else the most recent one here, else the latest run in the store (after a restart), else
        None."""
        with self._lock:
            active = [s for s in self._runs.values() if s.status in (Status.STARTING, Status.RUNNING)]
            if active:
                return self._snapshot_locked(active[0])
            queued = [q for q in self._queue if isinstance(q, int)]
            if queued:
                return self._snapshot_locked(self._runs[queued[0]])
            own = bool(self._runs)
        stored = self.stored.latest()
        with self._lock:
            if stored is not None and stored.active and stored.id not in self._runs:
                return stored  # another process's run, live: it is what this machine is training now
            if own:
                latest = max(self._runs.values(), key=lambda s: s.created_at)
                return self._snapshot_locked(latest)
        return stored

    def snapshots(self) -> list[RunSnapshot]:
        with self._lock:
            return [self._snapshot_locked(s) for s in sorted(self._runs.values(), key=lambda s: s.created_at)]

    def queued_ids(self) -> list[int]:
        with self._lock:
            return [q for q in self._queue if isinstance(q, int)]

    def wait(self, run_id: int, timeout_s: float | None = None) -> RunSnapshot:
        """Block until the run ends (or the timeout passes); returns the latest snapshot.

        Raises:
            KeyError: no such run here (or it was deleted while waited on).
        """
        with self._wake:
            state = self._wait_until(run_id, lambda s: s.status in TERMINAL, timeout_s)
            return self._snapshot_locked(state)

    def wait_first_batch(self, run_id: int, timeout_s: float) -> bool:
        """Block until the run has reported its first finished batch or ended, at most ``timeout_s``; whether it
        did. The Train page waits so after Start on a pre-started worker, whose first batch comes within about a
        second: the page's first redraw then shows it, rather than the refresh after."""
        with self._wake:
            state = self._wait_until(run_id, lambda s: s.progress is not None or s.status in TERMINAL, timeout_s)
            return state.progress is not None or state.status in TERMINAL

    def _wait_until(self, run_id: int, done: Callable[[RunState], bool], timeout_s: float | None) -> RunState:
        """Wait (holding ``_wake``) until ``done`` holds for the run or the timeout passes; its state then. Woken by
        the run's changes (``_changed``: its first batch, samples, epochs, end; a stop of a queued run) on the
        manager's own Condition: no polling.

        Raises:
            KeyError: no such run here (or it was deleted while waited on).
        """
        state = self._runs.get(run_id)
        if state is None:
            raise KeyError(f"no run {run_id}")

        def gone() -> bool:  # deleted while waited on
            return self._runs.get(run_id) is not state

        self._wake.wait_for(lambda: gone() or done(state), timeout_s)
        if gone():
            raise KeyError(f"no run {run_id}")
        return state

    def shutdown(self, timeout_s: float = 10.0) -> None:
        """Stop every run and the dispatcher; a last try at writing what a failing store missed."""
        with self._lock:
            ids = list(self._runs)
        for run_id in ids:
            self.stop(run_id)
        with self._lock:
            self._shutdown = True
            self._wake.notify_all()
        if self._dispatcher is not None:
            self._dispatcher.join(timeout_s)
        self.peaks.cancel()
        self.writer.close(self._all_states(), timeout_s)
        self.pool.close()

    # -- internals --------------------------------------------------------------------------------------------------
    def _all_states(self) -> list[RunState]:
        with self._lock:
            return list(self._runs.values())

    def _snapshot_locked(self, state: RunState) -> RunSnapshot:
        queued = [q for q in self._queue if isinstance(q, int)]
        position = queued.index(state.id) if state.id in queued else None
        return snapshot_of(state, queue_position=position, store_attached=self.store is not None)

    def _enqueue_task(self, task: Callable[[], None]) -> None:
        """Queue a task between runs (a peak probe): the dispatcher calls it in its turn."""
        with self._lock:
            self._queue.append(task)
            self._ensure_dispatcher()
            self._wake.notify_all()

    def _ensure_dispatcher(self) -> None:
        if self._dispatcher is None or not self._dispatcher.is_alive():
            self._dispatcher = threading.Thread(target=self._dispatch_loop, name="bench-dispatcher", daemon=True)
            self._dispatcher.start()

    def _changed(self) -> None:
        with self._wake:  # wait(): a run may have ended
            self._wake.notify_all()
        self.changes.tell()

    def _dispatch_loop(self) -> None:
        while True:
            with self._lock:
                while not self._queue and not self._shutdown:
                    self._wake.wait(1.0)
                if self._shutdown:
                    return
                item = self._queue.popleft()
            if not isinstance(item, int):
                item()
                continue
            if self.launcher is not None and self.launcher.holds(item):  # placed on the cluster, beside the others
                self.launcher.start(self._runs[item], self._lock, self._stop_events[item],
                                    lambda run_id=item: self._run_item(run_id))
                continue
            self._run_item(item)

    def _run_item(self, item: int) -> None:
        """Supervise run ``item`` to its end, then hand it on (hooks, its peak, the next spare)."""
        with self._lock:
            state = self._runs[item]
            state.status = Status.STARTING
            state.phase = "starting worker"
            state.started_at = time.time()
        self._changed()
        try:
            self._supervise(state)
        except Exception as exc:  # noqa: BLE001 - the dispatcher must survive anything a run does
            log.exception("supervisor failed for run %s", item)
            with self._lock:
                if state.status not in TERMINAL:
                    state.error = RunError(error_type=type(exc).__name__, message=str(exc),
                                           hint="This is a bug in the dashboard; the next run starts normally.")
                    finish(state, Status.FAILED)
            self.writer.persist_end(state)
        self._changed()
        self._after_run(state)
        if self.launcher is not None and self.launcher.holds(item):
            return  # a node's run: this machine's peaks and spare worker are not its
        try:
            self._recheck_peak(state)
        except Exception:  # noqa: BLE001 - a peak check must never stop the queue
            log.exception("checking run %s against its peak failed", item)
        self._prestart_after(state.config)

    def _after_run(self, state: RunState) -> None:
        """Hand an ended run's record to each finished hook, and a group's runs to each group hook once its last run
        ended, each in a daemon thread of its own: a hook (a tracking server slow or down) never delays the queue,
        fails the run or blocks a page."""
        group = self.groups.of_run(state.id)
        grouped = set(self.group_hooks) if group is not None else set()
        hooks = [(name, hook) for name, hook in self.finished_hooks.items() if name not in grouped]
        try:
            if hooks:
                with self._lock:
                    record = self._snapshot_locked(state).record()
                for name, hook in hooks:
                    threading.Thread(target=_call_hook, args=(name, hook, record), name=f"bench-finished-{name}",
                                     daemon=True).start()
            if group is not None:
                self._after_group_run(group)
        except Exception:  # noqa: BLE001 - the queue goes on whatever a hook's start does
            log.exception("handing run %s to the finished-run hooks failed", state.id)

    def _after_group_run(self, group: RunGroup) -> None:
        """Once every run of ``group`` ended (finished, failed or stopped, queued ones dropped included), hand the
        records of those that trained to each group hook, once."""
        hooks = list(self.group_hooks.items())
        if not hooks:
            return
        with self._lock:
            states = [self._runs[i] for i in group.run_ids if i in self._runs]
            if group.id in self._groups_handed or any(s.status not in TERMINAL for s in states):
                return
            self._groups_handed.add(group.id)
            trained = [self._snapshot_locked(s).record() for s in states if s.epochs]
        if not trained:
            return
        for name, hook in hooks:
            threading.Thread(target=_call_group_hook, args=(name, hook, group, trained),
                             name=f"bench-group-{name}", daemon=True).start()


    def _recheck_peak(self, state: RunState) -> None:
        """A finished run that beat its target's measured peak queues a new probe (PeakQueue.recheck); the group
        holding the run shows the figure flagged until the probe lands."""
        future = self.peaks.recheck(state)
        if future is not None:
            self.groups.reprobing(state.id, str(state.config.target()), future)

    def _prestart_after(self, config: RunConfig) -> None:
        """Keep a worker for the next run ready, like the one that just ended, when nothing else is queued."""
        with self._lock:
            busy = any(s.status in (Status.STARTING, Status.RUNNING) for s in self._runs.values())
            if not self.prestart or self._shutdown or self._queue or busy:
                return
        self.pool.prestart(config)

    def _supervise(self, state: RunState) -> None:
        from bench.runs import worker

        if self.launcher is not None and self.launcher.holds(state.id):  # the run's worker and sampler on its node
            launch = self.launcher.context(state, self._lock, self.writer)
            Supervisor(state, lock=self._lock, writer=self.writer, ctx=launch,
                       worker_target=self._worker_target or worker.worker_main, sampler_factory=launch.sampler,
                       stop_event=self._stop_events[state.id], log_path=self._log_path(state.id),
                       hang_timeout_s=self.hang_timeout_s, stop_grace_s=self.stop_grace_s,
                       on_change=self._changed).run()
            return
        spare = self.pool.take(state.config)
        if spare is not None:
            with self._lock:  # Stop now reaches the spare's event
                if self._stop_events[state.id].is_set():
                    spare.stop_event.set()
                self._stop_events[state.id] = spare.stop_event
        Supervisor(state, lock=self._lock, writer=self.writer, ctx=self._ctx,
                   worker_target=self._worker_target or worker.worker_main, sampler_factory=self._sampler_factory,
                   stop_event=self._stop_events[state.id], log_path=self._log_path(state.id),
                   hang_timeout_s=self.hang_timeout_s, stop_grace_s=self.stop_grace_s,
                   on_change=self._changed).run(spare)

    def _log_path(self, run_id: int | str) -> str | None:
        """Where the worker's own stdout/stderr go (framework chatter), next to the store."""
        for base in (self.store.path.parent if self.store is not None else settings.store_path().parent,
                     Path(tempfile.gettempdir()) / "bench-worker-logs"):
            try:
                (base / "logs").mkdir(parents=True, exist_ok=True)
            except OSError:  # the store's folder cannot be made: the run must not fail for its log's sake
                continue
            return str(base / "logs" / f"run-{run_id}.log")
        return None


def _call_group_hook(name: str, hook: GroupHook, group: RunGroup, runs: list[records.RunRecord]) -> None:
    try:
        hook(runs, group_document(group, runs))
    except Exception:  # noqa: BLE001 - a hook's failure is logged, never the runs'
        log.exception("the group hook %r failed for group %s", name, group.id)


def _call_hook(name: str, hook: FinishedHook, record: records.RunRecord) -> None:
    try:
        hook(record)
    except Exception:  # noqa: BLE001 - a hook's failure is logged, never the run's
        log.exception("the finished-run hook %r failed for run %s", name, record.id)


def group_document(group: RunGroup, runs: list[records.RunRecord]) -> GroupDocument:
    """The comparison or sweep document of ``group``'s runs that trained, as the CLI builds it for the same runs (the
    group's prices; each sweep point against its target's probed peak); None for a group of another kind."""
    if group.kind == "compare":
        return compare.comparison_record(runs, dict(group.prices or {}))
    if group.kind == "sweep":
        rows = [sweeps.sweep_row(r, group.peak(compare.target(r)).reference) for r in runs]
        peaks = {t: p.gflops for t, p in group.peaks.items()}
        return records.Sweep.model_validate(sweeps.sweep_record(rows, peaks, runs))
    return None
