"""The worker's events: what a training process tells its supervisor, one plain dict per event on a multiprocessing
queue (``{"type": kind, "time": wall seconds, **fields}``). The one place events are made, by the worker, the test
fakes and the benchmark stand-ins alike, the one list of their kinds, and the one place they are read: :func:`read`
types each event as it comes off the queue (a :class:`Phase`, :class:`Started`, ... holding the run's typed parts),
so the supervisor never looks into a dict.

- ``phase``: a start-up phase began (``phase``: importing, loading data, building the model, ...);
- ``started``: the first step is about to run (``**info``: placement, framework, parameter count, ...);
- ``progress``: a batch ended (``epoch``, ``batch``, ``batches``);
- ``epoch``: an epoch ended (its figures, with ``started_wall`` and ``ended_wall``);
- ``finished`` (``status``) or ``failed`` (``error_type``, ``message``, ``hint``, ``traceback``): the run's last event.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Union

from bench.vocab.readings import Epoch
from bench.vocab.record_base import Record
from bench.vocab.run_info import RunError, RunInfo

PHASE = "phase"
STARTED = "started"
PROGRESS = "progress"
EPOCH = "epoch"
FINISHED = "finished"
FAILED = "failed"
KINDS = (PHASE, STARTED, PROGRESS, EPOCH, FINISHED, FAILED)
LAST = (FINISHED, FAILED)  # a run's last event: the supervisor stops reading after it
_ENVELOPE = ("type", "time")
_WALL = ("started_wall", "ended_wall")  # an epoch event's wall times: the event's, not the epoch's


def event(kind: str, **fields: Any) -> dict[str, Any]:
    """One event of ``kind``, stamped with the wall time now; the fields of a ``started``, ``epoch`` or ``failed``
    event are checked by the record they become (RunInfo, Epoch, RunError), so a worker cannot send what its
    supervisor would refuse.

    Raises:
        ValueError: ``kind`` is not one of KINDS; RecordError (a ValueError): a field its record refuses.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown worker event {kind!r}; one of {', '.join(KINDS)}")
    model = _MODELS.get(kind)
    if model is not None:  # written under the types it is read with: a value out of bounds is refused here
        model.model_validate({"includes_tracing": False, **fields_of(fields, *_WALL)} if kind == EPOCH else fields)
    return {"type": kind, "time": time.time(), **fields}


def emit(queue: Any, kind: str, **fields: Any) -> None:
    """Put one event on the supervisor's queue."""
    queue.put(event(kind, **fields))


def fields_of(evt: dict[str, Any], *also_drop: str) -> dict[str, Any]:
    """An event's own fields: everything but its kind and time (and ``also_drop``)."""
    return {k: v for k, v in evt.items() if k not in _ENVELOPE and k not in also_drop}


# -- read: one typed event per dict taken off the queue -------------------------------------------------------------
@dataclass(frozen=True)
class Phase:
    """A start-up phase began."""

    time: float
    phase: str


@dataclass(frozen=True)
class Started:
    """The first step is about to run; ``info`` is what the worker learned (placement, framework, the model, ...)."""

    time: float
    info: RunInfo


@dataclass(frozen=True)
class Progress:
    """A batch ended: ``batch`` of ``batches`` in epoch ``epoch``."""

    time: float
    epoch: int
    batch: int
    batches: int


@dataclass(frozen=True)
class EpochEnded:
    """An epoch ended: its figures (``epoch``, times from the samples' origin still to be set) and its wall times."""

    time: float
    epoch: Epoch
    started_wall: float
    ended_wall: float


@dataclass(frozen=True)
class Finished:
    """The run's last event when it ended on its own or on Stop: ``status`` as the worker saw it."""

    time: float
    status: str


@dataclass(frozen=True)
class Failed:
    """The run's last event when it failed."""

    time: float
    error: RunError


Event = Union[Phase, Started, Progress, EpochEnded, Finished, Failed]
_MODELS: dict[str, type[Record]] = {STARTED: RunInfo, EPOCH: Epoch, FAILED: RunError}  # the events holding a record


def read(evt: Mapping[str, Any]) -> Event:
    """The typed form of one event this project's worker (or a stand-in) made with :func:`event`.

    Raises:
        ValueError: not an event of a known kind.
    """
    kind, at = evt.get("type"), float(evt.get("time") or time.time())
    if kind == PHASE:
        return Phase(at, str(evt.get("phase")))
    if kind == STARTED:
        return Started(at, RunInfo.model_validate(fields_of(dict(evt))))
    if kind == PROGRESS:
        return Progress(at, int(evt["epoch"]), int(evt["batch"]), int(evt["batches"]))
    if kind == EPOCH:
        # an epoch sent without ``includes_tracing`` is a steady one, as it always was
        return EpochEnded(at, Epoch.model_validate({"includes_tracing": False, **fields_of(dict(evt), *_WALL)}),
                          float(evt["started_wall"]), float(evt["ended_wall"]))
    if kind == FINISHED:
        return Finished(at, str(evt.get("status") or FINISHED))
    if kind == FAILED:
        return Failed(at, RunError.model_validate(fields_of(dict(evt))))
    raise ValueError(f"unknown worker event {kind!r}; one of {', '.join(KINDS)}")
