"""Worker stand-ins for fast job-queue tests (importable by spawned processes; no framework import)."""

from __future__ import annotations

import os
import time
from typing import Any


def _emit(queue: Any, kind: str, **data: Any) -> None:
    queue.put({"type": kind, "time": time.time(), **data})


def quick(config: dict[str, Any], queue: Any, stop_event: Any, log_path: str | None = None) -> None:
    """Reports config['epochs'] epochs of 0.2 s each, honouring stop between batches."""
    _emit(queue, "started", pid=os.getpid(), framework="fake 0", devices_seen=["cpu"], placement="/device:CPU:0")
    for epoch in range(config["epochs"]):
        t0 = time.time()
        for batch in range(4):
            if stop_event.is_set():
                _emit(queue, "finished", status="stopped")
                return
            time.sleep(0.05)
            _emit(queue, "progress", epoch=epoch + 1, batch=batch + 1, batches=4)
        _emit(queue, "epoch", epoch=epoch + 1, epoch_seconds=time.time() - t0, samples_per_s=100.0, loss=1.0,
              accuracy=0.5, val_loss=1.0, val_accuracy=0.5, includes_tracing=epoch == 0, started_wall=t0,
              ended_wall=time.time())
    _emit(queue, "finished", status="finished")


def silent(config: dict[str, Any], queue: Any, stop_event: Any, log_path: str | None = None) -> None:
    """Starts, then never says anything again (a hung worker)."""
    _emit(queue, "started", pid=os.getpid(), framework="fake 0", devices_seen=["cpu"], placement="/device:CPU:0")
    time.sleep(600)


def deaf(config: dict[str, Any], queue: Any, stop_event: Any, log_path: str | None = None) -> None:
    """Keeps reporting progress but ignores Stop (needs the hard stop)."""
    _emit(queue, "started", pid=os.getpid(), framework="fake 0", devices_seen=["cpu"], placement="/device:CPU:0")
    for i in range(6000):
        time.sleep(0.1)
        _emit(queue, "progress", epoch=1, batch=i + 1, batches=6000)


def one_epoch_then_die(config: dict[str, Any], queue: Any, stop_event: Any, log_path: str | None = None) -> None:
    """Finishes one epoch, then the process is SIGKILLed (as the kernel's OOM killer would)."""
    import signal

    _emit(queue, "started", pid=os.getpid(), framework="fake 0", devices_seen=["cpu"], placement="/device:CPU:0")
    t0 = time.time()
    time.sleep(0.1)
    _emit(queue, "epoch", epoch=1, epoch_seconds=0.1, samples_per_s=100.0, loss=1.0, accuracy=0.5, val_loss=None,
          val_accuracy=None, includes_tracing=True, started_wall=t0, ended_wall=time.time())
    time.sleep(0.5)
    os.kill(os.getpid(), signal.SIGKILL)
