"""BenchCallback: any Keras training script or notebook recorded in the dashboard's store, as ``bench run`` records
its own runs, with one object in ``callbacks=[...]``.

    from bench.integrations.keras import BenchCallback
    model.fit(x, y, batch_size=64, epochs=5, callbacks=[BenchCallback(batch_size=64)])

The script's own process plays the worker's part. The callback makes the same events a worker makes (each epoch
timed by the worker's own callback, ``bench.runs.worker.event_callback``: training only, validation excluded, the
first epoch flagged as holding the tracing); a :class:`~bench.runs.supervisor.Supervisor` in a thread of this process
folds them into the run exactly as it folds a worker's, with CPU/GPU samples of this process from the same sampler,
and writes through a RunWriter: the run is created owned by this process, with its heartbeat, so a dashboard on the
same store (BENCH_STORE) shows it live on Train and lists it in History, and a script killed mid-run leaves an
``interrupted`` run with the epochs it finished (the store's orphan marking), never one shown as live.
"""

from __future__ import annotations

import logging
import math
import os
import queue
import re
import threading
import time
from pathlib import Path
from typing import Any

import keras

from bench.vocab import settings
from bench.vocab.config import RunConfig
from bench.hardware import devices
from bench.vocab.records import Status
from bench.runs import events, worker
from bench.runs.run_state import RunState
from bench.runs.run_writer import RunWriter
from bench.runs.supervisor import Supervisor, default_sampler
from bench.runs.worker_process import Spare
from bench.store import Store, StoreError
from bench.vocab.target import on_gpu
from bench.training import keras_build

log = logging.getLogger("bench.integrations.keras")
DEFAULT_DATASET = "own data"
INPUT_PIPELINE = "the script's own"
WORKER_START = "the script's own process (bench.integrations.keras.BenchCallback)"
CLOSE_TIMEOUT_S = 30.0  # how long the end of fit waits for the run's last writes
# Samples are taken in the training's own process here (a bench run's are taken in its supervisor's): every second,
# not every half second as bench run does, halves what the sampler takes from the training (docs/CALLBACK.md).
DEFAULT_SAMPLE_INTERVAL_S = 1.0


class _ThisProcess:
    """The script's process as the supervisor sees a worker: alive while the run is open; never ended from here."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.exitcode: int | None = None
        self._open = threading.Event()
        self._open.set()

    def is_alive(self) -> bool:
        return self._open.is_set()

    def join(self, timeout: float | None = None) -> None:
        """Nothing to wait for: the script goes on."""

    def close_run(self) -> None:
        self._open.clear()
        self.exitcode = 0

    terminate = kill = close_run  # the supervisor never ends the script: it closes the run


class _Events(queue.Queue):  # type: ignore[type-arg]  # of event dicts
    """The run's events on their way to its supervisor, the first progress event only: the batch progress a worker
    reports (up to ten a second) would wake the supervisor's thread as often, each wake taking the GIL from the
    training thread, and no other process sees it (a dashboard reads this run's epochs from the store). The first
    one marks where training began on the utilization chart."""

    def __init__(self) -> None:
        super().__init__()
        self._progressed = False

    def put(self, item: dict[str, Any], block: bool = True, timeout: float | None = None) -> None:
        if item.get("type") == events.PROGRESS:
            if self._progressed:
                return
            self._progressed = True
        super().put(item, block, timeout)


def device_of(placement: str) -> str:
    """The target a run's placement names (``cpu`` or ``gpu:N``), as a config holds it: where its first variable
    lives, read through the project's one rule (``target.on_gpu``); N is the device's index as the backend numbers it,
    mapped through CUDA_VISIBLE_DEVICES when that lists plain indices."""
    if not on_gpu(None, placement):
        return "cpu"
    digits = re.findall(r"(\d+)", placement.rsplit("/", 1)[-1]) or ["0"]
    index = int(digits[-1])
    visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    if index < len(visible) and visible[index].isdigit():
        index = int(visible[index])
    return f"gpu:{index}"


class BenchCallback(keras.callbacks.Callback):
    """Records this ``model.fit`` as a run in the dashboard's store.

    Args:
        batch_size: the batch size given to ``fit`` (Keras does not tell callbacks; samples per second and the
            achieved GFLOP/s are computed from it).
        samples: training samples per epoch, when they are not ``steps x batch_size`` (a partial last batch).
        dataset: what the data is called in History (default "own data").
        store: the store's path (default: BENCH_STORE, else the dashboard's own), or a Store.
        sample_interval_s: seconds between CPU/GPU samples (0.1 .. 10; default 1, bench run's is 0.5).
        device: the target to record (``cpu``, ``gpu:N``); default: where the model's first variable lives.

    A ``fit`` that raises (an error, Ctrl-C in a notebook) never reaches ``on_train_end``: its run stays live while
    this process lives (the next ``fit`` with this callback closes it as stopped) and turns ``interrupted`` when the
    process ends.
    """

    async_safe = True  # like the worker's callback: Keras may run on_train_batch_end off the training thread

    def __init__(self, batch_size: int, *, samples: int | None = None, dataset: str | None = None,
                 store: str | Path | Store | None = None, sample_interval_s: float = DEFAULT_SAMPLE_INTERVAL_S,
                 device: str | None = None) -> None:
        super().__init__()
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be the whole number given to fit (got {batch_size!r})")
        self.batch_size = batch_size
        self.samples = samples
        self.dataset = dataset or DEFAULT_DATASET
        self._store_arg = store
        self.sample_interval_s = float(sample_interval_s)
        self.device = device
        self.run_id: int | None = None  # the run's id in the store, once fit has begun
        self._inner: Any = None  # the worker's event callback, made at each fit's start
        self._events = _Events()
        self._process: _ThisProcess | None = None
        self._supervisor: threading.Thread | None = None
        self._writer: RunWriter | None = None
        self._state: RunState | None = None

    # -- fit's start and end ----------------------------------------------------------------------------------------
    def on_train_begin(self, logs: dict | None = None) -> None:
        if self._supervisor is not None:  # the last fit with this callback raised before its end
            self._close(events.event(events.FINISHED, status=Status.STOPPED))
        steps = self.params.get("steps") if self.params else None
        epochs = int(self.params.get("epochs") or 1) if self.params else 1
        n_train = self.samples or (int(steps) * self.batch_size if steps else self.batch_size)
        self._events = _Events()
        self._inner = worker.event_callback(self._events, threading.Event(), n_train, self.batch_size, epochs)
        self._inner.set_model(self.model)
        self._inner.set_params(self.params)
        try:
            self._open(epochs, n_train)
        except Exception as exc:  # noqa: BLE001 - the training goes on whatever the recording meets; only its
            log.warning("bench: this run is not recorded: %s", exc)  # record is lost, and the user is told
            self._supervisor = None

    def on_train_end(self, logs: dict | None = None) -> None:
        self._close(events.event(events.FINISHED, status=Status.FINISHED))

    # -- each epoch and batch: the worker's callback times them ---------------------------------------------------
    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        self._inner.on_epoch_begin(epoch, logs)

    def on_train_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        self._inner.on_train_batch_begin(batch, logs)

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        self._inner.on_train_batch_end(batch, logs)

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        self._inner.on_epoch_end(epoch, logs)

    # -- the run ----------------------------------------------------------------------------------------------------
    def _open(self, epochs: int, n_train: int) -> None:
        """Create the run (owned by this process), start its supervisor and say what the model is."""
        store = self._store_arg if isinstance(self._store_arg, Store) else Store(self._store_arg or
                                                                                 settings.store_path())
        model = self.model
        placement = worker.variable_device(model.trainable_variables[0]) if model.trainable_variables else "unknown"
        own = keras_build.own_model(model)
        config = RunConfig(dataset=self.dataset, model=model.name, size=None, epochs=epochs,
                           batch_size=self.batch_size, device=self.device or device_of(placement),
                           sample_interval_s=self.sample_interval_s, limit_samples=None,
                           precision=keras.config.dtype_policy().name, backend=keras.config.backend(),
                           jit_compile=bool(getattr(model, "jit_compile", False)),
                           steps_per_execution=int(getattr(model, "steps_per_execution", 1) or 1))
        lock = threading.Lock()
        state = RunState(id=0, config=config, created_at=time.time(), hardware=devices.discover().record())
        writer = RunWriter(store, lock)
        writer.create(state)
        if not state.stored:
            raise StoreError(state.store_error or "the store did not take the run")
        state.status, state.phase, state.started_at = Status.STARTING, "starting", time.time()
        writer.start_keeper(lambda: [state])
        self._process = _ThisProcess()
        supervisor = Supervisor(state, lock=lock, writer=writer, ctx=None, worker_target=_no_worker,
                                sampler_factory=default_sampler, stop_event=threading.Event(), log_path=None,
                                hang_timeout_s=math.inf, stop_grace_s=math.inf)
        spare = Spare(key=(), process=self._process, inbox=queue.Queue(), events=self._events,
                      stop_event=threading.Event(), ready=None)
        self._supervisor = threading.Thread(target=supervisor.run, args=(spare,), name="bench-callback-supervisor",
                                            daemon=True)
        self._state, self._writer, self.run_id = state, writer, state.id
        self._supervisor.start()
        self._events.put(events.event(
            events.STARTED, pid=os.getpid(), framework=_framework(), backend=config.backend,
            placement=placement, replicas=1, replica_devices=[placement], global_batch_size=self.batch_size,
            per_device_batch_size=self.batch_size, params=own.params, flops_per_sample=own.flops_per_sample,
            model_description=own.describe(), dataset_description=self.dataset, n_train=n_train,
            precision=config.precision, jit_compile=config.jit_compile,
            steps_per_execution=config.steps_per_execution, input_pipeline=INPUT_PIPELINE, worker_start=WORKER_START,
            threads=config.threads(devices.all_cores()) if config.device == "cpu" else None))  # as a worker says

    def _close(self, last: dict[str, Any]) -> None:
        """The run's last event; wait for its supervisor to store the outcome, then stop renewing its heartbeat."""
        thread, process = self._supervisor, self._process
        self._supervisor = None
        if thread is None or process is None:
            return
        self._events.put(last)
        thread.join(CLOSE_TIMEOUT_S)
        process.close_run()
        if self._writer is not None and self._state is not None:
            self._writer.close([self._state])


def _no_worker(*args: Any) -> None:
    """The supervisor's worker target: never started here (the script's own process trains)."""


def _framework() -> str:
    """The backend and its version, as a worker reports them ("jax 0.4.30")."""
    backend = keras.config.backend()
    try:
        module = __import__({"tensorflow": "tensorflow", "jax": "jax", "torch": "torch"}.get(backend, backend))
        return f"{backend} {module.__version__}"
    except Exception:  # noqa: BLE001 - a version is a label, never a reason to fail
        return backend
