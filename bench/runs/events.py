"""The worker's events: what a training process tells its supervisor, one plain dict per event on a multiprocessing
queue (``{"type": kind, "time": wall seconds, **fields}``). The one place events are made, by the worker, the test
fakes and the benchmark stand-ins alike, and the one list of their kinds.

- ``phase``: a start-up phase began (``phase``: importing, loading data, building the model, ...);
- ``started``: the first step is about to run (``**info``: placement, framework, parameter count, ...);
- ``progress``: a batch ended (``epoch``, ``batch``, ``batches``);
- ``epoch``: an epoch ended (its figures, with ``started_wall`` and ``ended_wall``);
- ``finished`` (``status``) or ``failed`` (``error_type``, ``message``, ``hint``, ``traceback``): the run's last event.
"""

from __future__ import annotations

import time
from typing import Any

PHASE = "phase"
STARTED = "started"
PROGRESS = "progress"
EPOCH = "epoch"
FINISHED = "finished"
FAILED = "failed"
KINDS = (PHASE, STARTED, PROGRESS, EPOCH, FINISHED, FAILED)
LAST = (FINISHED, FAILED)  # a run's last event: the supervisor stops reading after it
_ENVELOPE = ("type", "time")


def event(kind: str, **fields: Any) -> dict[str, Any]:
    """One event of ``kind``, stamped with the wall time now.

    Raises:
        ValueError: ``kind`` is not one of KINDS.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown worker event {kind!r}; one of {', '.join(KINDS)}")
    return {"type": kind, "time": time.time(), **fields}


def emit(queue: Any, kind: str, **fields: Any) -> None:
    """Put one event on the supervisor's queue."""
    queue.put(event(kind, **fields))


def fields_of(evt: dict[str, Any], *also_drop: str) -> dict[str, Any]:
    """An event's own fields: everything but its kind and time (and ``also_drop``)."""
    return {k: v for k, v in evt.items() if k not in _ENVELOPE and k not in also_drop}
