"""What the lab's JSON API answers, as records (docs/schemas/lab-*.schema.json are generated from them): the
board (every run of the lab in queue order, each with its student, status, node and figures), a submission's
answer and a refusal naming its field. Records hold what they are given: bench.lab.room fills them."""

from __future__ import annotations

from typing import ClassVar, Literal

from bench.lab.assignment import Assignment
from bench.vocab.limits import Count, Id, Line, Number, Percent, SamplesPerSecond, Seconds, Text, Timestamp, Whole
from bench.vocab.record_base import Record

LabState = Literal["none", "open", "closed"]


class BoardRow(Record):
    """One run of the lab: queued (``position`` in the queue, 0 next), under way or ended."""

    NOUN: ClassVar[str] = "board row"

    ticket: Count | None = None  # its number in the lab's queue (None: a run read back from the store)
    student: Line
    family: Line
    size: Line
    batch_size: Count
    epochs: Whole
    target: Line
    status: Line  # queued, starting, running, finished, failed, stopped, interrupted, cancelled
    position: Count | None = None
    run_id: Id | None = None
    node: Line | None = None  # where it ran: this machine's name, or the cluster node's address
    device: Line | None = None  # "cpu" or "gpu": what the chart colours it by
    params: Count | None = None
    epochs_done: Count = 0
    samples_per_s: SamplesPerSecond | None = None
    cpu_percent: Number | None = None  # mean process CPU (100 = one core) over the steady epochs
    gpu_percent: Percent | None = None
    seconds: Seconds | None = None  # the run's training time, start to end
    queued_at: Timestamp | None = None
    started_at: Timestamp | None = None
    ended_at: Timestamp | None = None
    message: Text | None = None  # why it failed or was cancelled


class Board(Record):
    """The lab as every page draws it: its state, its assignment, every run in queue order (the ones under way
    first, then the queued ones in the order they will start, then the ended ones, newest last)."""

    lab: Line | None = None
    state: LabState = "none"
    assignment: Assignment | None = None
    version: Count = 0
    rows: tuple[BoardRow, ...] = ()
    students: Count = 0


class SubmitAnswer(Record):
    """A run queued: its ticket, its place in the queue (0: next), the student's name as the lab shows it, and
    the token that name's later runs must carry."""

    ticket: Count
    position: Count
    student: Line
    token: Line
    run_id: Id | None = None


class Refusal(Record):
    """A request refused: what is wrong, and the field it names (None: the lab itself)."""

    error: Text
    field: Line | None = None


class Opened(Record):
    """The lab opened: its id and assignment."""

    lab: Line
    assignment: Assignment
