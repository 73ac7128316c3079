"""The worker's events: what a training process tells its supervisor, one typed event per message on a
multiprocessing queue (a :class:`PhaseBegan`, :class:`Started`, ... holding the run's typed parts, each stamped with
the wall time it was made). The one place events are made, by the worker, the test fakes and the benchmark stand-ins
alike (:func:`event`: built as its model where it is made, so a worker cannot send what its supervisor would refuse),
and the one list of their kinds; the supervisor dispatches on the event's type and never looks into a dict.

- ``phase``: a start-up phase began (``phase``: importing, loading data, building the model, ...);
- ``started``: the first step is about to run (``info``: placement, framework, parameter count, ...);
- ``progress``: a batch ended (``epoch``, ``batch``, ``batches``);
- ``epoch``: an epoch ended (its figures, with ``started_wall`` and ``ended_wall``);
- ``finished`` (``status``) or ``failed`` (``error_type``, ``message``, ``hint``, ``traceback``): the run's last event.
"""

from __future__ import annotations

import time
from typing import Annotated, Any, Callable, Literal, Union

from pydantic import BaseModel, ConfigDict, Field

from bench.vocab.readings import Epoch
from bench.vocab.run_info import RunError, RunInfo

PHASE: Literal["phase"] = "phase"
STARTED: Literal["started"] = "started"
PROGRESS: Literal["progress"] = "progress"
EPOCH: Literal["epoch"] = "epoch"
FINISHED: Literal["finished"] = "finished"
FAILED: Literal["failed"] = "failed"
KINDS = (PHASE, STARTED, PROGRESS, EPOCH, FINISHED, FAILED)
LAST = (FINISHED, FAILED)  # a run's last event: the supervisor stops reading after it


class WorkerEvent(BaseModel):
    """What every event holds: its kind and the wall time it was made (seconds since the epoch)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    time: float = Field(default_factory=time.time)

    def on_clock(self, offset_s: float) -> WorkerEvent:
        """This event with its wall times moved by ``offset_s`` (a node's clock onto this machine's)."""
        return self.model_copy(update={"time": self.time + offset_s})


class PhaseBegan(WorkerEvent):
    """A start-up phase began."""

    kind: Literal["phase"] = PHASE
    phase: str


class Started(WorkerEvent):
    """The first step is about to run; ``info`` is what the worker learned (placement, framework, the model, ...)."""

    kind: Literal["started"] = STARTED
    info: RunInfo


class BatchEnded(WorkerEvent):
    """A batch ended: ``batch`` of ``batches`` in epoch ``epoch``."""

    kind: Literal["progress"] = PROGRESS
    epoch: int
    batch: int
    batches: int


class EpochEnded(WorkerEvent):
    """An epoch ended: its figures (``epoch``, times from the samples' origin still to be set) and its wall times."""

    kind: Literal["epoch"] = EPOCH
    epoch: Epoch
    started_wall: float
    ended_wall: float

    def on_clock(self, offset_s: float) -> EpochEnded:
        return self.model_copy(update={"time": self.time + offset_s, "started_wall": self.started_wall + offset_s,
                                       "ended_wall": self.ended_wall + offset_s})


class Finished(WorkerEvent):
    """The run's last event when it ended on its own or on Stop: ``status`` as the worker saw it."""

    kind: Literal["finished"] = FINISHED
    status: str = FINISHED


class Failed(WorkerEvent):
    """The run's last event when it failed."""

    kind: Literal["failed"] = FAILED
    error: RunError


Event = Annotated[Union[PhaseBegan, Started, BatchEnded, EpochEnded, Finished, Failed], Field(discriminator="kind")]


def _epoch(fields: dict[str, Any]) -> EpochEnded:
    # an epoch sent without ``includes_tracing`` is a steady one, as it always was
    figures = {k: v for k, v in fields.items() if k not in ("started_wall", "ended_wall")}
    return EpochEnded(epoch=Epoch.model_validate({"includes_tracing": False, **figures}),
                      started_wall=fields["started_wall"], ended_wall=fields["ended_wall"])


# kind -> the event made of its fields; a started, epoch or failed event's fields are its record's (RunInfo, Epoch,
# RunError), read with the keys they were given
_MAKERS: dict[str, Callable[[dict[str, Any]], WorkerEvent]] = {
    PHASE: lambda fields: PhaseBegan(**fields),
    STARTED: lambda fields: Started(info=RunInfo.model_validate(fields)),
    PROGRESS: lambda fields: BatchEnded(**fields),
    EPOCH: _epoch,
    FINISHED: lambda fields: Finished(**fields),
    FAILED: lambda fields: Failed(error=RunError.model_validate(fields)),
}


def event(kind: str, **fields: Any) -> WorkerEvent:
    """One event of ``kind`` made of ``fields``, stamped with the wall time now; the fields of a ``started``,
    ``epoch`` or ``failed`` event are checked by the record they become (RunInfo, Epoch, RunError).

    Raises:
        ValueError: ``kind`` is not one of KINDS; RecordError (a ValueError): a field its record refuses.
    """
    if kind not in _MAKERS:
        raise ValueError(f"unknown worker event {kind!r}; one of {', '.join(KINDS)}")
    return _MAKERS[kind](fields)


def emit(queue: Any, kind: str, **fields: Any) -> None:
    """Put one event on the supervisor's queue."""
    queue.put(event(kind, **fields))
