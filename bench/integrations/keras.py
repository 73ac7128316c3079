"""BenchCallback: any Keras training script or notebook recorded in the dashboard's store, as ``bench run`` records
its own runs, with one object in ``callbacks=[...]``.

    from bench.integrations.keras import BenchCallback
    model.fit(x, y, batch_size=64, epochs=5, callbacks=[BenchCallback(batch_size=64)])

The script's own process plays the worker's part. The callback makes the same events a worker makes (each epoch
timed by the worker's own callback, ``bench.runs.worker.event_callback``: training only, validation excluded, the
first epoch flagged as holding the tracing); a :class:`~bench.runs.recorder.Recorder`, fed by a thread of this process,
folds them into the run exactly as it folds a worker's, with CPU/GPU samples of this process from the same sampler,
and writes through a RunWriter: the run is created owned by this process, with its heartbeat, so a dashboard on the
same store (BENCH_STORE) shows it live on Train and lists it in History, and a script killed mid-run leaves an
``interrupted`` run with the epochs it finished (the store's orphan marking), never one shown as live.

Its arguments are held to the rules of a stored run when it is built (a ValueError naming the argument, before
``fit``); the model's name is made one line by the rule a run's label is made with. Past that, the training never
fails because of it: every hook is guarded, and a failure in recording is a warning.
"""

from __future__ import annotations

import functools
import logging
import os
import queue
import re
import threading
import time
from pathlib import Path
from typing import Any, Callable, TypeVar

import keras
from pydantic import TypeAdapter, ValidationError

from bench.hardware import devices
from bench.runs import events, worker
from bench.runs.recorder import Recorder
from bench.runs.run_state import RunState
from bench.runs.run_writer import RunWriter
from bench.runs.supervisor import default_sampler
from bench.store import Store, StoreError
from bench.training import keras_build
from bench.vocab import config as run_config
from bench.vocab import limits, safe_text, settings
from bench.vocab.config import RunConfig
from bench.vocab.records import Status
from bench.vocab.target import on_gpu

log = logging.getLogger("bench.integrations.keras")
DEFAULT_DATASET = "own data"
DEFAULT_MODEL = "own model"  # a model whose name leaves nothing once made one line
INPUT_PIPELINE = "the script's own"
WORKER_START = "the script's own process (bench.integrations.keras.BenchCallback)"
CLOSE_TIMEOUT_S = 30.0  # how long the end of fit waits for the run's last writes
EVENT_WAIT_S = 0.2  # how long the recording thread waits for an event before it settles epochs and flushes samples
# Samples are taken in the training's own process here (a bench run's are taken in its supervisor's): every second,
# not every half second as bench run does, halves what the sampler takes from the training (docs/CALLBACK.md).
DEFAULT_SAMPLE_INTERVAL_S = 1.0
_NAME = TypeAdapter(limits.Name)
_Hook = TypeVar("_Hook", bound=Callable[..., None])


class _Events(queue.Queue):  # type: ignore[type-arg]  # of worker events
    """The run's events on their way to its recording thread, the first progress event only: the batch progress a
    worker reports (up to ten a second) would wake that thread as often, each wake taking the GIL from the training
    thread, and no other process sees it (a dashboard reads this run's epochs from the store). The first one marks
    where training began on the utilization chart."""

    def __init__(self) -> None:
        super().__init__()
        self._progressed = False

    def put(self, item: events.WorkerEvent, block: bool = True, timeout: float | None = None) -> None:
        if isinstance(item, events.BatchEnded):
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
    visible = [v.strip() for v in settings.env("CUDA_VISIBLE_DEVICES").split(",") if v.strip()]
    if index < len(visible) and visible[index].isdigit():
        index = int(visible[index])
    return f"gpu:{index}"


def model_name(model: Any) -> str:
    """The name a run records for ``model``: ``model.name`` made one line of at most NAME_MAX characters by the rule
    a run's label is made with (``safe_text.one_line``), so its run reads back and shows live."""
    return safe_text.one_line(getattr(model, "name", None), limits.NAME_MAX) or DEFAULT_MODEL


def _argument_problems(batch_size: Any, samples: Any, dataset: Any, store: Any, sample_interval_s: Any,
                       device: Any) -> list[str]:
    """What is wrong with the callback's arguments, each as ``BenchCallback ARGUMENT: why``, by the rules a stored
    run is held to: the run config's (batch size, sampling interval, sample count, the device against this machine's
    discovery) and the record types' (a data set's name is a limits.Name)."""
    found: list[tuple[str, str | None]] = [
        ("batch_size", run_config.batch_size_problem(batch_size)),
        ("sample_interval_s", run_config.interval_problem(sample_interval_s)),
    ]
    if samples is not None and (isinstance(samples, bool) or not isinstance(samples, int)
                                or not 1 <= samples <= run_config.LIMIT_SAMPLES_MAX):
        found.append(("samples", f"the training samples per epoch must be a whole number from 1 to "
                                 f"{run_config.LIMIT_SAMPLES_MAX:,}, or None for steps x batch_size "
                                 f"(got {samples!r:.60})"))
    if dataset is not None:
        try:
            _NAME.validate_python(dataset, strict=True)
        except ValidationError:
            found.append(("dataset", f"the data set's name must be one line of at most {limits.NAME_MAX} characters "
                                     f"(no control characters), as History shows it (got {dataset!r:.60})"))
    if store is not None and not isinstance(store, (str, Path, Store)):
        found.append(("store", f"must be a path or a Store, or None for BENCH_STORE (got {store!r:.60})"))
    if device is not None:
        found += [("device", p) for p in run_config.device_problems(device, devices.discover())]
    return [f"BenchCallback {name}: {why}" for name, why in found if why]


def _guarded(hook: _Hook) -> _Hook:
    """A hook whose failure is a warning (said once a fit per hook) and never the training's."""

    @functools.wraps(hook)
    def guarded(self: BenchCallback, *args: Any, **kwargs: Any) -> None:
        try:
            hook(self, *args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - the training goes on whatever the recording meets
            if hook.__name__ not in self._failed_hooks:
                self._failed_hooks.add(hook.__name__)
                log.warning("bench: recording this run failed in %s (%s: %s); the training goes on",
                            hook.__name__, type(exc).__name__, exc)

    return guarded  # type: ignore[return-value]


class BenchCallback(keras.callbacks.Callback):
    """Records this ``model.fit`` as a run in the dashboard's store.

    Args:
        batch_size: the batch size given to ``fit`` (Keras does not tell callbacks; samples per second and the
            achieved GFLOP/s are computed from it): 1 to 65,536, as a run's.
        samples: training samples per epoch, when they are not ``steps x batch_size`` (a partial last batch): 1 to
            1,000,000,000.
        dataset: what the data is called in History (default "own data"): one line of at most 200 characters.
        store: the store's path (default: BENCH_STORE, else the dashboard's own), or a Store.
        sample_interval_s: seconds between CPU/GPU samples (0.1 .. 10; default 1, bench run's is 0.5).
        device: the target to record (``cpu``, ``gpu:N``), one this machine has; default: where the model's first
            variable lives.

    Raises:
        ValueError: an argument outside those bounds, its message starting ``BenchCallback ARGUMENT:``.

    A ``fit`` that raises (an error, Ctrl-C in a notebook) never reaches ``on_train_end``: its run stays live while
    this process lives (the next ``fit`` with this callback closes it as stopped) and turns ``interrupted`` when the
    process ends. Nothing in recording ever fails the training: each hook turns a failure into a warning.
    """

    async_safe = True  # like the worker's callback: Keras may run on_train_batch_end off the training thread

    def __init__(self, batch_size: int, *, samples: int | None = None, dataset: str | None = None,
                 store: str | Path | Store | None = None, sample_interval_s: float = DEFAULT_SAMPLE_INTERVAL_S,
                 device: str | None = None) -> None:
        super().__init__()
        problems = _argument_problems(batch_size, samples, dataset, store, sample_interval_s, device)
        if problems:
            raise ValueError("; ".join(problems))
        self.batch_size = batch_size
        self.samples = samples
        self.dataset = dataset or DEFAULT_DATASET
        self._store_arg = store
        self.sample_interval_s = float(sample_interval_s)
        self.device = device
        self.run_id: int | None = None  # the run's id in the store, once fit has begun
        self._inner: Any = None  # the worker's event callback, made at each fit's start
        self._events = _Events()
        self._recording: threading.Thread | None = None
        self._writer: RunWriter | None = None
        self._state: RunState | None = None
        self._failed_hooks: set[str] = set()

    # -- fit's start and end ----------------------------------------------------------------------------------------
    @_guarded
    def on_train_begin(self, logs: dict | None = None) -> None:
        self._failed_hooks = set()
        if self._recording is not None:  # the last fit with this callback raised before its end
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
            log.warning("bench: this run is not recorded (%s); the training goes on", exc)  # record is lost
            self._recording = None

    @_guarded
    def on_train_end(self, logs: dict | None = None) -> None:
        self._close(events.event(events.FINISHED, status=Status.FINISHED))

    # -- each epoch and batch: the worker's callback times them ---------------------------------------------------
    @_guarded
    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        self._inner.on_epoch_begin(epoch, logs)

    @_guarded
    def on_train_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        self._inner.on_train_batch_begin(batch, logs)

    @_guarded
    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        self._inner.on_train_batch_end(batch, logs)

    @_guarded
    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        self._inner.on_epoch_end(epoch, logs)

    # -- the run ----------------------------------------------------------------------------------------------------
    def _open(self, epochs: int, n_train: int) -> None:
        """Create the run (owned by this process), start its sampler and its recording thread, and say what the
        model is."""
        store = self._store_arg if isinstance(self._store_arg, Store) else Store(self._store_arg or
                                                                                 settings.store_path())
        model = self.model
        placement = worker.variable_device(model.trainable_variables[0]) if model.trainable_variables else "unknown"
        own = keras_build.own_model(model)
        config = RunConfig(dataset=self.dataset, model=model_name(model), size=None, epochs=epochs,
                           batch_size=self.batch_size, device=self.device or device_of(placement),
                           sample_interval_s=self.sample_interval_s, limit_samples=None,
                           precision=keras.config.dtype_policy().name, backend=keras.config.backend(),
                           jit_compile=bool(getattr(model, "jit_compile", False)),
                           steps_per_execution=int(getattr(model, "steps_per_execution", 1) or 1))
        started = events.event(  # as a worker says it; built before the run, so a model it refuses stores nothing
            events.STARTED, pid=os.getpid(), framework=_framework(), backend=config.backend,
            placement=placement, replicas=1, replica_devices=[placement], global_batch_size=self.batch_size,
            per_device_batch_size=self.batch_size, params=own.params, flops_per_sample=own.flops_per_sample,
            model_description=own.describe(), dataset_description=self.dataset, n_train=n_train,
            precision=config.precision, jit_compile=config.jit_compile,
            steps_per_execution=config.steps_per_execution, input_pipeline=INPUT_PIPELINE, worker_start=WORKER_START,
            threads=config.threads(devices.all_cores()) if config.device == "cpu" else None)
        lock = threading.Lock()
        state = RunState(id=0, config=config, created_at=time.time(), hardware=devices.discover().record())
        writer = RunWriter(store, lock)
        writer.create(state)
        if not state.stored:
            raise StoreError(state.store_error or "the store did not take the run")
        state.status, state.phase, state.started_at = Status.STARTING, "starting", time.time()
        writer.start_keeper(lambda: [state])
        recorder = Recorder(state, lock=lock, writer=writer)
        sampler = self._sampler(recorder)
        recorder.start_clock()  # t_s of samples and epochs count from the sampler's start, as a worker's do
        self._state, self._writer, self.run_id = state, writer, state.id
        self._recording = threading.Thread(target=_record, args=(recorder, self._events, sampler),
                                           name="bench-callback-recorder", daemon=True)
        self._recording.start()
        self._events.put(started)

    def _sampler(self, recorder: Recorder) -> Any:
        """This process's sampler, started; None (said once, as a warning) where it cannot be built or started: the
        run then records its epochs without CPU/GPU samples."""
        sampler = None
        try:
            sampler = default_sampler(self.sample_interval_s, recorder.on_sample)
            recorder.begin(sampler)
            sampler.set_pid(os.getpid())
            sampler.start()
            return sampler
        except Exception as exc:  # noqa: BLE001 - samples are a part of the record, never a reason to lose it
            log.warning("bench: no CPU/GPU samples for this run: the sampler could not start (%s: %s); its epochs "
                        "are recorded and the training goes on", type(exc).__name__, exc)
            if sampler is None:
                recorder.begin(None)
            else:
                _stop(sampler)
            return None

    def _close(self, last: events.WorkerEvent) -> None:
        """The run's last event; wait for its recording thread to store the outcome, then stop renewing its
        heartbeat."""
        thread = self._recording
        self._recording = None
        if thread is None:
            return
        self._events.put(last)
        thread.join(CLOSE_TIMEOUT_S)
        if self._writer is not None and self._state is not None:
            self._writer.close([self._state])


def _record(recorder: Recorder, inbox: queue.Queue, sampler: Any) -> None:  # type: ignore[type-arg]
    """The recording thread: feed the run's events to its recorder until the last one, settling epochs and writing
    samples between them; then a closing sample, the sampler stopped and the run closed (its outcome stored)."""
    try:
        while True:
            try:
                event = inbox.get(timeout=EVENT_WAIT_S)
            except queue.Empty:
                event = None
            if event is not None and recorder.apply(event):
                return
            recorder.tick()
    except Exception as exc:  # noqa: BLE001 - a thread's failure is said, and the run still closed
        log.warning("bench: recording this run failed (%s: %s); the training goes on", type(exc).__name__, exc)
    finally:
        if sampler is not None:
            if recorder.unsettled and hasattr(sampler, "sample_once"):
                try:  # one closing sample, so the last epoch's end lies between two samples
                    recorder.on_sample(sampler.sample_once())
                except Exception:  # noqa: BLE001 - a failed reading must not mask the run's outcome
                    log.debug("closing sample failed", exc_info=True)
            _stop(sampler)
        try:
            recorder.close()
        except Exception as exc:  # noqa: BLE001
            log.warning("bench: this run's end was not stored (%s: %s); the training goes on",
                        type(exc).__name__, exc)


def _stop(sampler: Any) -> None:
    try:
        sampler.stop()
    except Exception:  # noqa: BLE001 - a sampler that cannot stop is a daemon thread the process ends
        log.debug("the sampler did not stop", exc_info=True)


def _framework() -> str:
    """The backend and its version, as a worker reports them ("jax 0.4.30")."""
    backend = keras.config.backend()
    try:
        module = __import__(backend)
        return f"{backend} {module.__version__}"
    except Exception:  # noqa: BLE001 - a version is a label, never a reason to fail
        return backend
