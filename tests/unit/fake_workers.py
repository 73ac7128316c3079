"""Worker stand-ins for fast job-queue tests (importable by spawned processes; no framework import).

Their sleeps are the pace of the work they stand in for (a batch, an epoch, a hang), never a test's wait: a test
waits on what they send."""

from __future__ import annotations

import os
import time
from typing import Any

from bench.runs.events import emit as _emit  # the worker's own event maker: fakes send what the real worker sends


def quick(config: dict[str, Any], queue: Any, stop_event: Any, log_path: str | None = None) -> None:
    """Reports config['epochs'] epochs of 0.2 s each, honouring stop between batches."""
    _emit(queue, "started", pid=os.getpid(), framework="fake 0", devices_seen=["cpu"], placement="/device:CPU:0")
    for epoch in range(config["epochs"]):
        t0 = time.time()
        for batch in range(4):
            if stop_event.is_set():
                _emit(queue, "finished", status="stopped")
                return
            time.sleep(0.05)  # stand-in: one batch's work
            _emit(queue, "progress", epoch=epoch + 1, batch=batch + 1, batches=4)
        _emit(queue, "epoch", epoch=epoch + 1, epoch_seconds=time.time() - t0, samples_per_s=100.0, loss=1.0,
              accuracy=0.5, val_loss=1.0, val_accuracy=0.5, includes_tracing=epoch == 0, started_wall=t0,
              ended_wall=time.time())
    _emit(queue, "finished", status="finished")


def silent(config: dict[str, Any], queue: Any, stop_event: Any, log_path: str | None = None) -> None:
    """Starts, then never says anything again (a hung worker)."""
    _emit(queue, "started", pid=os.getpid(), framework="fake 0", devices_seen=["cpu"], placement="/device:CPU:0")
    time.sleep(600)  # stand-in: a hung worker, ended by the supervisor


def deaf(config: dict[str, Any], queue: Any, stop_event: Any, log_path: str | None = None) -> None:
    """Keeps reporting progress but ignores Stop (needs the hard stop)."""
    _emit(queue, "started", pid=os.getpid(), framework="fake 0", devices_seen=["cpu"], placement="/device:CPU:0")
    for i in range(6000):
        time.sleep(0.1)  # stand-in: one batch's work
        _emit(queue, "progress", epoch=1, batch=i + 1, batches=6000)


def one_epoch_then_die(config: dict[str, Any], queue: Any, stop_event: Any, log_path: str | None = None) -> None:
    """Finishes one epoch, then the process is SIGKILLed (as the kernel's OOM killer would)."""
    import signal

    _emit(queue, "started", pid=os.getpid(), framework="fake 0", devices_seen=["cpu"], placement="/device:CPU:0")
    t0 = time.time()
    time.sleep(0.1)  # stand-in: the epoch's work
    _emit(queue, "epoch", epoch=1, epoch_seconds=0.1, samples_per_s=100.0, loss=1.0, accuracy=0.5, val_loss=None,
          val_accuracy=None, includes_tracing=True, started_wall=t0, ended_wall=time.time())
    time.sleep(0.5)  # stand-in: into the next epoch when the kernel's OOM killer strikes
    os.kill(os.getpid(), signal.SIGKILL)


def stops_without_a_word(config: dict[str, Any], queue: Any, stop_event: Any, log_path: str | None = None) -> None:
    """Trains until Stop, then exits with code 0 without its `finished` event (the last event lost, as in CI once)."""
    _emit(queue, "started", pid=os.getpid(), framework="fake 0", devices_seen=["cpu"], placement="/device:CPU:0")
    epoch = 0
    while not stop_event.is_set():
        epoch += 1
        _fake_epoch(queue, epoch, 0.05)
    os._exit(0)


def exits_0_without_a_word(config: dict[str, Any], queue: Any, stop_event: Any, log_path: str | None = None) -> None:
    """One epoch, then exits with code 0 without reporting, no Stop asked: that is a failure, not a stop."""
    _emit(queue, "started", pid=os.getpid(), framework="fake 0", devices_seen=["cpu"], placement="/device:CPU:0")
    _fake_epoch(queue, 1, 0.05)
    time.sleep(0.3)  # stand-in: work after the epoch, then a silent exit
    os._exit(0)


# -- stand-ins for tests/unit/test_faults.py ------------------------------------------------------------------------
def _fake_epoch(queue: Any, epoch: int, seconds: float = 0.1) -> None:
    t0 = time.time()
    time.sleep(seconds)  # stand-in: the epoch's work
    _emit(queue, "epoch", epoch=epoch, epoch_seconds=seconds, samples_per_s=100.0, loss=1.0, accuracy=0.5,
          val_loss=1.0, val_accuracy=0.5, includes_tracing=epoch == 1, started_wall=t0, ended_wall=time.time())


def epochs_then_hang(config: dict[str, Any], queue: Any, stop_event: Any, log_path: str | None = None) -> None:
    """Two epochs, then silence mid-epoch (a hung step): the supervisor must end it and keep the two epochs."""
    _emit(queue, "started", pid=os.getpid(), framework="fake 0", devices_seen=["cpu"], placement="/device:CPU:0")
    for epoch in (1, 2):
        _fake_epoch(queue, epoch)
    _emit(queue, "progress", epoch=3, batch=1, batches=4)
    time.sleep(600)  # stand-in: a hung step, ended by the supervisor


class ResourceExhaustedError(Exception):
    """Named as TensorFlow's tf.errors.ResourceExhaustedError (the worker classifies errors by class name)."""


def _train_one_epoch_then(error: BaseException) -> Any:
    def train(config: dict[str, Any], queue: Any, stop_event: Any, *, prestarted: bool = False,
              prepared: Any = None) -> str:
        _emit(queue, "started", pid=os.getpid(), framework="fake 0", devices_seen=["cpu"], placement="/device:CPU:0")
        _fake_epoch(queue, 1)
        raise error

    return train


def real_worker_gpu_oom(config: dict[str, Any], queue: Any, stop_event: Any, log_path: str | None = None) -> None:
    """bench.runs.worker.worker_main (the real error path) around a train() that hits the framework's device OOM."""
    from bench.runs import worker

    worker.train = _train_one_epoch_then(ResourceExhaustedError(
        "OOM when allocating tensor with shape[65536,4096] and type float on /job:localhost/replica:0/task:0/device:GPU:0"))
    worker.worker_main(config, queue, stop_event, log_path)


def real_worker_host_oom(config: dict[str, Any], queue: Any, stop_event: Any, log_path: str | None = None) -> None:
    """bench.runs.worker.worker_main (the real error path) around a train() that runs out of host memory."""
    from bench.runs import worker

    worker.train = _train_one_epoch_then(MemoryError("Unable to allocate 37.3 GiB for an array"))
    worker.worker_main(config, queue, stop_event, log_path)


def _slow_train(config: dict[str, Any], queue: Any, stop_event: Any, *, prestarted: bool = False,
                prepared: Any = None) -> str:
    _emit(queue, "started", pid=os.getpid(), framework="fake 0", devices_seen=["cpu"], placement="/device:CPU:0")
    for epoch in range(1, config["epochs"] + 1):
        if stop_event.is_set():
            return "stopped"
        _fake_epoch(queue, epoch, 0.2)
    return "finished"


def real_worker_slow(config: dict[str, Any], queue: Any, stop_event: Any, log_path: str | None = None) -> None:
    """bench.runs.worker.worker_main around a train() of config['epochs'] epochs of 0.2 s (no framework import)."""
    from bench.runs import worker

    worker.train = _slow_train
    worker.worker_main(config, queue, stop_event, log_path)


class StopAtCall:
    """A Stop event that reads as set from its ``n``-th ``is_set()`` on (the worker reads it once per execution)."""

    def __init__(self, n: int) -> None:
        self.n, self.calls = n, 0

    def is_set(self) -> bool:
        self.calls += 1
        return self.calls >= self.n


def stop_within_execution(config: dict[str, Any], queue: Any, stop_at_call: int) -> None:
    """The real worker's model and callback (bench.runs.worker) trained with a Stop that arrives at the ``stop_at_call``-th
    batch start; reports the steps the optimizer actually ran and whether the callback saw the Stop."""
    from bench.runs import worker

    worker.prepare_environment(config)
    training = worker.prepare_training(config)
    stop = StopAtCall(stop_at_call)
    callback = worker.event_callback(queue, stop, training.n_train, training.config.batch_size, training.config.epochs)
    with training.scope():
        training.model.fit(**training.fit_arguments(), callbacks=[callback])
    iterations = training.model.optimizer.iterations
    # a test-only report, not a worker event (bench.runs.events refuses kinds the worker does not send)
    queue.put({"type": "result", "time": time.time(),
               "iterations": int(iterations.numpy() if hasattr(iterations, "numpy") else iterations),
               "stopped": callback.stopped, "batch_starts": stop.calls,
               "compiled_steps_per_execution": int(training.model.steps_per_execution)})
