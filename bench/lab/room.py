"""A lab's room: the open lab, its students and its fair queue (bench.lab.fair_queue), handing one run at a time
to the run queue (bench.runs.jobs.JobManager), where each runs as every run does, alone on its device, and lands in
the store as a normal run marked with the lab and the student (``info.lab``). On a Ray cluster (the run queue's
``launcher``) the room hands as many runs at once as the cluster has devices for the assignment's targets
(``ClusterLauncher.lanes``: a CPU node one run, a GPU node one a GPU), in the fair queue's order, and the launcher
places each alone on a free one; the board names each run's node.

One thread (``bench-lab``) is woken by the run queue's changes (JobManager.changes) and by each submission: it
hands the next run when a lane is free and publishes the board when what it shows changed, at most every
PUBLISH_MIN_S; listeners (the JSON API's waiting requests) are told the board's new version. Tests drive the same
steps (:meth:`LabRoom.pump`, :meth:`LabRoom.publish`) without the thread.

The lab (its id, its assignment, open or closed) is kept in a small JSON file beside the store, so a server restart
reopens it; its ended runs are read back from the store. Runs queued in the lab but not started yet are lost with
the server (the students queue them again)."""

from __future__ import annotations

import functools
import hmac
import json
import logging
import secrets
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from pathlib import Path

from bench.cluster.nodes import ClusterError, Placement
from bench.lab import names
from bench.lab.assignment import Assignment, Choice, LabError
from bench.lab.board import Board, BoardRow, LabState, Opened, SubmitAnswer
from bench.lab.fair_queue import CapReached, FairQueue
from bench.plans import datasets, models
from bench.runs.changes import Listeners
from bench.runs.jobs import JobManager
from bench.runs.run_state import RunSnapshot
from bench.store import StoreError
from bench.vocab import records
from bench.vocab.config import RunConfig
from bench.vocab.errors import ConfigError, RecordError
from bench.vocab.run_info import LabMark, RunInfo
from bench.vocab.target import Target

log = logging.getLogger(__name__)
PUBLISH_MIN_S = 0.25  # the board is published at most this often (a run's samples change nothing it shows)
STATE_FILE = "lab.json"


@dataclass
class _Entry:
    """One run the lab queued, as the room follows it."""

    ticket: int
    student: names.Student
    choice: Choice
    queued_at: float
    status: str = "queued"  # queued, handing, handed, cancelled
    run_id: int | None = None
    message: str | None = None
    stop_asked: bool = False
    row: BoardRow | None = None  # kept once its run ended: an ended run's row does not change


class LabRoom:
    """The server's one lab (the dashboard makes one per JobManager: ui.lab_routes).

    Args:
        manager: the run queue runs are handed to.
        lanes: runs handed at once; None: as many as the run queue trains side by side for the assignment's
            targets (1 on this machine, one after the other; the cluster's devices when it has a launcher).
        state_path: where the open lab is kept across restarts (None: beside the manager's store, or nowhere).
        thread: start the ``bench-lab`` thread (tests drive pump/publish themselves).
    """

    def __init__(self, manager: JobManager, *, lanes: int | None = None, state_path: Path | None = None,
                 thread: bool = True) -> None:
        self.manager = manager
        self._fixed_lanes = None if lanes is None else max(1, lanes)
        self._cluster_lanes = 1  # the cluster's count as last read (kept while the cluster cannot be read)
        self._lock = threading.RLock()
        self._wake = threading.Condition()
        self._woken = False
        self._lab: str | None = None
        self._assignment: Assignment | None = None
        self._state: LabState = "none"
        self._queue: FairQueue[int] = FairQueue(cap=1)
        self._entries: dict[int, _Entry] = {}
        self._tokens: dict[str, tuple[str, str]] = {}  # student key -> (name as shown, token)
        self._removed: set[str] = set()
        self._stored: list[BoardRow] = []  # the lab's ended runs read back from the store (after a restart)
        self._version = 0
        self._board = Board()
        self._board_json = self._board.model_dump_json().encode()
        self._listeners = Listeners(log)
        self._last_publish = 0.0
        self._stopping = threading.Event()
        if state_path is None and manager.store is not None:
            state_path = manager.store.path.parent / STATE_FILE
        self._state_path = state_path
        self._restore()
        manager.changes.add(self._poke)
        self._thread: threading.Thread | None = None
        if thread:
            self._thread = threading.Thread(target=self._loop, name="bench-lab", daemon=True)
            self._thread.start()

    # -- the teacher -------------------------------------------------------------------------------------------------
    def open(self, assignment: Assignment) -> Opened:
        """Open a new lab with ``assignment`` (a lab already open is closed first: its queued runs cancelled)."""
        with self._lock:
            if self._state == "open":
                self._close_locked()
            self._lab = f"lab-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"
            self._assignment = assignment
            self._state = "open"
            self._queue = FairQueue(cap=assignment.cap)
            self._entries.clear()
            self._tokens.clear()
            self._removed.clear()
            self._stored = []
            self._save()
            opened = Opened(lab=self._lab, assignment=assignment)
        self._poke()
        return opened

    def close(self) -> int:
        """Close the lab: no more submissions, every queued run cancelled (runs under way go on). Returns how many
        were cancelled."""
        with self._lock:
            if self._state != "open":
                raise LabError("no lab is open", status=409)
            cancelled = self._close_locked()
            self._save()
        self._poke()
        return cancelled

    def _close_locked(self) -> int:
        dropped = self._queue.clear()
        for ticket in dropped:
            self._cancel(self._entries[ticket.id], "the lab was closed before it started")
        self._state = "closed"
        return len(dropped)

    def stop(self, ticket: int) -> bool:
        """Stop one run: a queued one leaves the queue, one under way stops (JobManager.stop). Whether it did."""
        with self._lock:
            entry = self._entries.get(ticket)
            if entry is None:
                return False
            if entry.status == "queued":
                self._queue.remove(ticket)
                self._cancel(entry, "stopped by the teacher before it started")
                run_id = None
            else:
                entry.stop_asked = True
                run_id = entry.run_id
        stopped = run_id is None or self.manager.stop(run_id)
        self._poke()
        return stopped

    def remove(self, student: str) -> int:
        """Remove a student: their queued runs cancelled, their run under way stopped, their rows off the board and
        their name free again. Returns how many runs were cancelled or stopped."""
        key = names.key_of(student)
        with self._lock:
            dropped = self._queue.drop_student(key)
            for ticket in dropped:
                self._cancel(self._entries[ticket.id], "the student was removed")
            running = [e.run_id for e in self._entries.values()
                       if e.student.key == key and e.status == "handed" and e.run_id is not None]
            for e in self._entries.values():
                if e.student.key == key and e.status in ("handing", "handed"):
                    e.stop_asked = True
            self._tokens.pop(key, None)
            self._removed.add(key)
        for run_id in running:
            self.manager.stop(run_id)
        self._poke()
        return len(dropped) + len(running)

    # -- a student ---------------------------------------------------------------------------------------------------
    def submit(self, choice: Choice) -> SubmitAnswer:
        """Queue ``choice``: checked against the assignment and this machine before anything is queued.

        Raises:
            LabError: naming the field (the name, a setting out of the assignment, the cap) or the lab (not open).
        """
        try:
            student = names.student(choice.student)
        except names.NameRefused as exc:
            raise LabError(str(exc), "student") from None
        with self._lock:
            if self._state != "open" or self._assignment is None:
                raise LabError("the lab is not open: wait for the teacher to open it", status=409)
            problem = choice.problem(self._assignment)
            if problem is not None:
                raise problem
            config = choice.config(self._assignment)
            known = self._tokens.get(student.key)
            if known is not None and not (choice.token and hmac.compare_digest(choice.token, known[1])):
                raise LabError(f"the name {known[0]!r} is taken in this lab: pick another (or use the page you "
                               f"joined from)", "student", status=409)
        try:  # the machine's own rules (a GPU that is not there, a batch past the data): before it is queued
            config.validate(self.manager.machine)
        except ConfigError as exc:
            raise LabError(f"this run cannot train here: {exc}", _field_of(str(exc))) from None
        with self._lock:
            if self._state != "open":
                raise LabError("the lab is not open: wait for the teacher to open it", status=409)
            try:
                ticket = self._queue.add(student.key, 0)
            except CapReached as exc:
                raise LabError(str(exc), "student", status=429) from None
            if known is None:
                known = self._tokens[student.key] = (student.name, secrets.token_urlsafe(12))
                self._removed.discard(student.key)
            shown = names.Student(known[0], student.key)  # the name as the lab first saw it
            self._entries[ticket.id] = _Entry(ticket.id, shown, choice, time.time())
            position = self._queue.position(ticket.id)
        self._poke()
        return SubmitAnswer(ticket=ticket.id, position=position or 0, student=shown.name, token=known[1])

    # -- the board ---------------------------------------------------------------------------------------------------
    def board(self) -> Board:
        """The board as last published (its ``version`` rises with each change it shows)."""
        with self._lock:
            return self._board

    def board_json(self) -> tuple[int, bytes]:
        """The board's version and its JSON, encoded once per version whoever asks."""
        with self._lock:
            return self._version, self._board_json

    def on_publish(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` (from the room's thread; it must return at once) when the board's version rises."""
        self._listeners.add(listener)

    def publish(self) -> bool:
        """Build the board; when what it shows changed, raise its version and tell the listeners. Whether it did."""
        with self._lock:
            board = self._build()
            same = board.model_copy(update={"version": self._version}) == self._board
            if same:
                return False
            self._version += 1
            self._board = board.model_copy(update={"version": self._version})
            self._board_json = self._board.model_dump_json().encode()
        self._listeners.tell()  # one that fails is logged and never stops the lab
        return True

    def _build(self) -> Board:
        order = {t.id: i for i, t in enumerate(self._queue.order())}
        rows = [self._row(e, order.get(e.ticket)) for e in self._entries.values() if e.student.key not in self._removed]
        rows += [r for r in self._stored if names.key_of(r.student) not in self._removed]
        rank = {"starting": 0, "running": 0, "queued": 1}

        def key(row: BoardRow) -> tuple[int, float, float]:
            group = rank.get(row.status, 2)
            if group == 1:
                return group, float(row.position or 0), 0.0
            return group, row.ended_at or row.started_at or 0.0, float(row.ticket or 0)

        rows.sort(key=key)
        students = len({names.key_of(r.student) for r in rows})
        return Board(lab=self._lab, state=self._state, assignment=self._assignment, version=self._version,
                     rows=tuple(rows), students=students)

    def _row(self, entry: _Entry, position: int | None) -> BoardRow:
        if entry.row is not None:
            return entry.row
        c = entry.choice
        base = dict(ticket=entry.ticket, student=entry.student.name, family=c.family, size=c.size,
                    batch_size=c.batch_size, epochs=c.epochs, target=c.target, queued_at=entry.queued_at,
                    device=_device(c.target), params=self._planned_params(c), message=entry.message)
        if entry.status in ("queued", "cancelled"):
            return BoardRow(**base, status=entry.status, position=position)
        snap = self.manager.snapshot(entry.run_id) if entry.run_id is not None else None
        if snap is None:
            return BoardRow(**base, status="starting")
        row = _from_run(base, snap)
        if not snap.active:
            entry.row = row
        return row

    def _planned_params(self, choice: Choice) -> int | None:
        if self._assignment is None:
            return None
        return _params(self._assignment.dataset, choice.family, choice.size)

    # -- handing runs ------------------------------------------------------------------------------------------------
    @property
    def lanes(self) -> int:
        """Runs handed at once now: the number given, else 1 on this machine and, on a cluster, as many as it has
        devices for the assignment's targets (read from its nodes alive now, at most every second)."""
        if self._fixed_lanes is not None:
            return self._fixed_lanes
        launcher, assignment = self.manager.launcher, self._assignment
        if launcher is None or assignment is None:
            return 1
        try:
            configs = [RunConfig(**Target.parse(t).fields()) for t in assignment.targets]
            self._cluster_lanes = launcher.lanes(configs)
        except (ClusterError, ConfigError, ValueError) as exc:
            log.warning("the lab counts the cluster's devices as before (%s): %s", self._cluster_lanes, exc)
        return self._cluster_lanes

    def pump(self) -> list[int]:
        """Hand queued runs to the run queue while a lane is free; returns the run ids handed."""
        handed: list[int] = []
        while True:
            lanes = self.lanes  # outside the lock: on a cluster it may ask Ray for the nodes
            with self._lock:
                busy = sum(1 for e in self._entries.values() if e.status == "handing" or (
                    e.status == "handed" and e.row is None and e.run_id is not None
                    and _active(self.manager.snapshot(e.run_id))))
                if busy >= lanes or self._assignment is None:
                    return handed
                ticket = self._queue.pop()
                if ticket is None:
                    return handed
                entry = self._entries[ticket.id]
                entry.status = "handing"
                lab, assignment = self._lab or "", self._assignment
            try:
                run_id = self.manager.submit(entry.choice.config(assignment),
                                             info=RunInfo(lab=LabMark(lab=lab, student=entry.student.name)))
            except (ConfigError, RecordError) as exc:
                with self._lock:
                    self._cancel(entry, f"it could not start: {exc}")
                continue
            with self._lock:
                entry.status, entry.run_id = "handed", run_id
                stop = entry.stop_asked
            if stop:
                self.manager.stop(run_id)
            handed.append(run_id)

    def _cancel(self, entry: _Entry, why: str) -> None:
        entry.status, entry.message = "cancelled", why

    def _poke(self) -> None:
        with self._wake:
            self._woken = True
            self._wake.notify_all()

    def _loop(self) -> None:
        while not self._stopping.is_set():
            with self._wake:
                if not self._woken:
                    self._wake.wait(1.0)
                self._woken = False
            try:
                self.pump()
                wait = PUBLISH_MIN_S - (time.monotonic() - self._last_publish)
                if wait > 0:
                    self._stopping.wait(wait)
                self._last_publish = time.monotonic()
                self.publish()
            except Exception:  # noqa: BLE001 - the lab's thread survives anything a run or the store does
                log.exception("the lab's thread failed a turn")

    def shutdown(self) -> None:
        self._stopping.set()
        self._poke()
        if self._thread is not None:
            self._thread.join(5.0)

    # -- kept across restarts ----------------------------------------------------------------------------------------
    def _save(self) -> None:
        if self._state_path is None or self._assignment is None:
            return
        body = {"lab": self._lab, "state": self._state, "assignment": self._assignment.to_dict()}
        try:
            tmp = self._state_path.with_suffix(".tmp")
            tmp.write_text(json.dumps(body), encoding="utf-8")
            tmp.replace(self._state_path)
        except OSError as exc:
            log.warning("the lab could not be kept at %s (%s): a restart forgets it", self._state_path, exc)

    def _restore(self) -> None:
        """The lab open (or closed) before a restart, and its ended runs from the store."""
        if self._state_path is None or not self._state_path.exists():
            return
        try:
            body = json.loads(self._state_path.read_text(encoding="utf-8"))
            assignment = Assignment.model_validate(body["assignment"])
            lab, state = str(body["lab"]), body["state"]
        except (OSError, ValueError, KeyError, TypeError, RecordError) as exc:
            log.warning("the lab kept at %s cannot be read (%s): no lab is open", self._state_path, exc)
            return
        self._lab, self._assignment = lab, assignment
        self._state = "closed" if state == "closed" else "open"
        self._queue = FairQueue(cap=assignment.cap)
        self._stored = self._stored_rows()
        self._board = self._build()
        self._board_json = self._board.model_dump_json().encode()

    def _stored_rows(self) -> list[BoardRow]:
        if self.manager.store is None or self._lab is None:
            return []
        try:
            runs = self.manager.store.list_runs()
        except StoreError as exc:
            log.warning("the lab's runs cannot be read back: %s", exc)
            return []
        rows = []
        for run in runs:
            mark = run.info.lab
            if mark is None or mark.lab != self._lab or run.status not in records.TERMINAL:
                continue
            c = run.config
            base = dict(student=mark.student, family=c.model, size=c.size or "", batch_size=c.batch_size,
                        epochs=c.epochs, target=str(c.target()), device=_device(str(c.target())),
                        params=run.info.params, queued_at=run.created_at)
            rows.append(_from_run(base, RunSnapshot.from_stored(run)))
        return rows


# -- a run's figures ---------------------------------------------------------------------------------------------------
def _active(snap: RunSnapshot | None) -> bool:
    return snap is not None and snap.active


def _device(target: str) -> str:
    try:
        return "gpu" if Target.parse(target).kind in ("gpu", "gpus") else "cpu"
    except ValueError:
        return "cpu"


def _field_of(message: str) -> str:
    """The choice's field a RunConfig's complaint is about (its words name the setting), else the target."""
    lowered = message.lower()
    for words, field in (("batch", "batch_size"), ("epoch", "epochs"), ("size", "size"), ("model", "family")):
        if words in lowered:
            return field
    return "target"


@functools.cache
def _params(dataset: str, family: str, size: str) -> int | None:
    data = datasets.DATASETS.get(dataset)
    if data is None:
        return None
    try:
        return models.plan(family, size, data.input_shape, data.num_classes, data.vocab_size).params
    except models.ModelError:
        return None


def _from_run(base: dict[str, Any], snap: RunSnapshot) -> BoardRow:
    """A row from a run's snapshot: its status and progress while it goes, its figures once it ended."""
    info = snap.info
    placement = Placement.of(info)  # a cluster run: its node (two nodes on one host told apart by their ids)
    row: dict[str, Any] = {**base, "status": str(snap.status), "run_id": snap.id, "started_at": snap.started_at,
                           "ended_at": snap.ended_at, "epochs_done": len(snap.epochs),
                           "node": placement.label() if placement is not None else snap.hardware.hostname}
    if info.params is not None:
        row["params"] = info.params
    if snap.error is not None and snap.error.message:
        row["message"] = snap.error.message[:500]
    if not snap.active and snap.epochs:
        summary = snap.summary
        rates = [e.samples_per_s for e in snap.epochs if e.samples_per_s is not None]
        row["samples_per_s"] = summary.steady_samples_per_s or (statistics.median(rates) if rates else None)
        row["cpu_percent"] = summary.mean_process_cpu_percent
        row["gpu_percent"] = summary.mean_gpu_util_percent
        row["seconds"] = snap.elapsed_s()
    return BoardRow(**row)
