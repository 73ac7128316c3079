"""The bare side of the overhead pass: a plain Keras ``model.fit``, in its own process, on exactly what a run trains.

``bench.runs.worker.prepare_training`` (after ``bench.training.framework.prepare_environment``) gives it the worker's data and input pipeline, model, loss, metrics, optimizer,
seed, dtype policy, jit_compile and device scope; what it leaves out is everything of ours around the fit (the event
callback, the queue, the supervisor, the sampler). Its one hook only reads the clock, the way the worker's callback
times an epoch, so both sides pay Keras's per-batch callback dispatch.

Usage (as the harness runs it): ``python -c "from benchmarks.baseline import child_main; child_main(sys.argv[1:])"
bare CONFIG_JSON OUT_JSON``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any


def epoch_timer(batches: int) -> Any:
    """A Keras callback that times each epoch as the worker does: from on_epoch_begin to the end of the last
    training batch (its loss read, so the step has finished), validation excluded."""
    import keras

    class EpochTimer(keras.callbacks.Callback):
        async_safe = True  # as the worker's callback: Keras need not read every step's loss on the training thread

        def __init__(self) -> None:
            super().__init__()
            self.seconds: list[float] = []
            self.t0 = 0.0

        def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
            self.t0 = time.perf_counter()

        def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
            if batch + 1 >= batches:
                float((logs or {})["loss"])
                self.seconds.append(time.perf_counter() - self.t0)

    return EpochTimer()


def bare_fit(config: dict[str, Any]) -> list[dict[str, Any]]:
    """Train ``config`` with a plain model.fit; returns its epochs as the worker reports them (times only)."""
    from bench.runs import worker
    from bench.training import framework

    framework.prepare_environment(config)  # the worker's environment, affinity and thread variables, before the import
    training = worker.prepare_training(config)
    timer = epoch_timer(max(1, -(-training.n_train // training.config.batch_size)))
    with training.scope():
        training.model.fit(**training.fit_arguments(), callbacks=[timer])
    return [{"epoch": i + 1, "epoch_seconds": s, "includes_tracing": i == 0} for i, s in enumerate(timer.seconds)]


def replayed_fit(config: dict[str, Any]) -> list[dict[str, Any]]:
    """The smallest configuration's bare side: the stand-in worker (benchmarks.standins.STEADY_WORKER) run in this
    process, with no queue reader but this one; its epochs, as bare_fit returns them."""
    import queue
    import threading

    from bench.runs import events
    from benchmarks.standins import STEADY_WORKER

    box: queue.Queue[events.WorkerEvent] = queue.Queue()
    STEADY_WORKER(config, box, threading.Event())
    out = []
    while not box.empty():
        evt = box.get()
        if isinstance(evt, events.EpochEnded):
            epoch = evt.epoch
            out.append({"epoch": epoch.epoch, "epoch_seconds": epoch.epoch_seconds,
                        "includes_tracing": epoch.epoch == 1})
    return out


FITS = {"bare": bare_fit, "replayed": replayed_fit}


def child_main(argv: list[str]) -> None:
    """``bare|replayed CONFIG_JSON OUT_JSON``: write {"epochs": [...]} of bare_fit(CONFIG) (or of replayed_fit) to
    OUT."""
    kind, spec, out = argv[0], argv[1], argv[2]
    if kind not in FITS:
        raise SystemExit(f"unknown baseline child {kind!r}")
    epochs = FITS[kind](json.loads(Path(spec).read_text(encoding="utf-8")))
    Path(out).write_text(json.dumps({"epochs": epochs}), encoding="utf-8")
