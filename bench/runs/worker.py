"""The training worker: runs inside a spawned process, one per run.

It sets device visibility, thread counts and the Keras backend BEFORE the framework is imported, loads the data,
builds the model under ``keras.device(...)`` with precision and jit_compile set explicitly (``prepare_training``, which
the overhead harness's bare ``model.fit`` baseline shares), trains it, and reports everything as plain-dict events on
a queue (see DESIGN: started, phase, progress, epoch, finished, failed).
Nothing here may run in the server process: importing TensorFlow there would slow every page and pin GPU memory.
"""

from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing
import os
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from bench.hardware import devices, lifetime
from bench.runs import events
from bench.training.framework import Config, framework_setup, prepare_environment, typed, variable_device
from bench.training.parallel import (
    EVEN_SPLIT_BACKENDS,
    Cluster,
    Parallel,
    logical_cpus,
    parallel_of,
    requested_devices,
    shard,
    split_evenly,
)

PROGRESS_MIN_INTERVAL_S = 0.1  # at most ~10 progress events per second


def keras_device_name(device: Any) -> str:
    """Our device choice (a Target, or a config's device text) -> the name keras.device() takes inside the worker
    (visibility already narrowed): Target.keras_device."""
    from bench.vocab.target import Target

    return (device if isinstance(device, Target) else Target.from_device(device)).keras_device


def _device_scope(keras: Any, backend: str, target: str) -> Any:
    """keras.device(target), except under torch: there it makes variables non-leaf tensors that get no gradients,
    and torch already places them on the one device CUDA_VISIBLE_DEVICES leaves it ("cuda" if any, else "cpu")."""
    if backend == "torch":
        return contextlib.nullcontext()
    return keras.device(target)


def _classify_error(exc: BaseException) -> tuple[str, str]:
    """(error_type, hint) for a training failure; the hint says what to change."""
    name = type(exc).__name__
    text = str(exc)
    if name in ("ResourceExhaustedError", "OutOfMemoryError") or "out of memory" in text.lower() or "OOM" in text:
        return "OutOfMemory", "The model or batch does not fit in device memory: lower the batch size or the model size."
    if isinstance(exc, MemoryError):
        return "OutOfMemory", "The host ran out of memory: lower the sample limit, the batch size or the model size."
    if name == "DatasetError":
        return name, "Pick another dataset, or place the file the message names."
    if name == "ModelFileError":
        return name, "Pick another model file, or a data set it fits."
    return name, "See the message above; try a smaller configuration or the synthetic dataset."


def event_callback(queue: Any, stop_event: Any, n_train: int, batch_size: int, epochs: int) -> Any:
    """The Keras callback that turns a fit into this project's events on ``queue`` (see EventCallback): a worker's,
    and a script's through bench.integrations.keras."""
    import keras

    batches = max(1, -(-n_train // batch_size))

    class EventCallback(keras.callbacks.Callback):
        """Times each epoch's training (validation excluded), reports progress and honours Stop between batches.

        ``async_safe``: under JAX and torch Keras then runs ``on_train_batch_end`` in a thread pool. A callback
        without it makes Keras convert every step's loss to a Python float on the training thread, which waits for
        each step to finish before the next is dispatched, so a GPU idles between steps (docs/GPU.md, 'A finding
        these runs led to'). So what must happen in step order (Stop, progress) is in ``on_train_batch_begin``,
        which Keras always calls on the training thread, and ``on_train_batch_end`` only stops the clock after the
        last batch; ``on_epoch_end`` runs after Keras has waited for those calls.

        With ``steps_per_execution`` N, Keras calls the batch hooks once per execution of N steps: ``batch`` is the
        execution's first step in ``on_train_batch_begin`` (0, N, 2N, ...: the batches done so far, so progress and
        the ETA stay right at that granularity) and its last in ``on_train_batch_end`` (N-1, 2N-1, ..., at least
        ``batches - 1`` for the epoch's last, possibly partial, execution). Stop set before an execution begins ends
        the run after that execution: within N steps.
        """

        async_safe = True

        def __init__(self) -> None:
            super().__init__()
            self.stopped = False
            self._last_progress = 0.0
            self._epoch_t0 = 0.0
            self._train_end = 0.0
            self._epoch_wall_t0 = 0.0
            self._epoch = 0

        def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
            self._epoch = epoch + 1
            self._epoch_t0 = time.perf_counter()
            self._epoch_wall_t0 = time.time()
            self._train_end = 0.0

        def on_train_batch_begin(self, batch: int, logs: dict | None = None) -> None:
            if stop_event.is_set():  # this batch (or execution of N batches) is the last one run
                self.stopped = True
                self.model.stop_training = True
            now = time.perf_counter()
            if batch and now - self._last_progress >= PROGRESS_MIN_INTERVAL_S:
                self._last_progress = now
                events.emit(queue, events.PROGRESS, epoch=self._epoch, batch=batch, batches=batches)

        def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
            if batch + 1 < batches:
                return
            if logs and "loss" in logs:
                float(logs["loss"])  # forces the last step to finish before the clock stops
            self._train_end = time.perf_counter()
            if not self.stopped:
                events.emit(queue, events.PROGRESS, epoch=self._epoch, batch=batches, batches=batches)

        def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
            logs = logs or {}
            if self.stopped:
                return  # a partial epoch is not a measurement
            seconds = (self._train_end or time.perf_counter()) - self._epoch_t0

            def num(key: str) -> float | None:
                value = logs.get(key)
                return None if value is None else float(value)

            events.emit(queue, events.EPOCH,
                epoch=epoch + 1,
                epoch_seconds=seconds,
                samples_per_s=n_train / seconds if seconds > 0 else None,
                loss=num("loss"),
                accuracy=num("accuracy"),
                val_loss=num("val_loss"),
                val_accuracy=num("val_accuracy"),
                includes_tracing=epoch == 0,
                started_wall=self._epoch_wall_t0,
                ended_wall=self._epoch_wall_t0 + seconds,
            )

    return EventCallback()


def _optimizer(name: str, learning_rate: float) -> Any:
    import keras

    classes = {"adam": keras.optimizers.Adam, "sgd": keras.optimizers.SGD, "rmsprop": keras.optimizers.RMSprop,
               "adamw": keras.optimizers.AdamW}
    return classes[name](learning_rate=learning_rate)


def _tf_datasets(x_train: Any, y_train: Any, x_test: Any, y_test: Any, batch_size: int, seed: int) -> tuple[Any, Any]:
    """Training and validation tf.data pipelines with tf.data's autotuning switched off.

    Given NumPy arrays, Keras builds an autotuned tf.data pipeline; on small CPU machines its tuning pauses the
    training loop with no core busy, which makes steady epochs noisy and CPU numbers unfairly slow
    (docs/MEASUREMENTS.md, 'A finding: tf.data's autotuner stalls small CPUs'). A fixed prefetch of two batches keeps
    the device fed without the tuner. Same shuffle-every-epoch semantics as fit(shuffle=True), seeded, and the same
    partial last batch.
    """
    import tensorflow as tf

    options = tf.data.Options()
    options.autotune.enabled = False
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    train = (tf.data.Dataset.from_tensor_slices((x_train, y_train))
             .shuffle(len(x_train), seed=seed, reshuffle_each_iteration=True)
             .batch(batch_size).prefetch(2).with_options(options))
    val = tf.data.Dataset.from_tensor_slices((x_test, y_test)).batch(batch_size).prefetch(2).with_options(options)
    return train, val


INPUT_PIPELINES = {"tensorflow": "tf.data, autotune off, prefetch 2", "jax": "NumPy arrays", "torch": "NumPy arrays"}


@dataclasses.dataclass
class Training:
    """A run ready to ``model.fit``: what :func:`prepare_training` made from a config (see there)."""

    config: Any  # bench.vocab.config.RunConfig
    framework: str  # "tensorflow 2.x.y"
    devices_seen: list[str]
    data: Any  # bench.plans.datasets.Dataset
    plan: Any  # bench.plans.models.ModelPlan, or an OwnModel (a model file), set once it is loaded
    y_train: Any  # labels as the loss wants them (one-hot for categorical_crossentropy)
    y_test: Any
    parallel: Parallel | None  # data-parallel over several devices, or None for one device
    model: Any = None  # built and compiled inside scope()

    @property
    def n_train(self) -> int:
        """Samples this process trains on an epoch (its shard, in a multi-worker run)."""
        return int(len(self.data.x_train))

    @property
    def local_batch_size(self) -> int:
        """Samples this process feeds a step: the batch size, or its share of it in a multi-worker run."""
        members = self.parallel.cluster["size"] if self.parallel is not None and self.parallel.cluster else 1
        return self.config.batch_size // members

    def scope(self) -> Any:
        """Where the model is built and trained: the distribution's scope, else keras.device(...) (none under torch)."""
        if self.parallel is not None:
            return self.parallel.handle.scope()
        import keras

        return _device_scope(keras, self.config.backend, keras_device_name(self.config.device))

    def fit_arguments(self) -> dict[str, Any]:
        """``model.fit``'s data and loop arguments, no callbacks; call inside scope(), where the input pipeline is
        built: under TensorFlow the tf.data pipelines of ``_tf_datasets``, under JAX and torch the arrays."""
        cfg, data = self.config, self.data
        if cfg.backend == "tensorflow":
            train_data, val_data = _tf_datasets(data.x_train, self.y_train, data.x_test, self.y_test, cfg.batch_size,
                                                cfg.seed)
            return {"x": train_data, "epochs": cfg.epochs, "validation_data": val_data, "verbose": 0}
        return {"x": data.x_train, "y": self.y_train, "batch_size": self.local_batch_size, "epochs": cfg.epochs,
                "validation_data": (data.x_test, self.y_test), "shuffle": True, "verbose": 0}


def prepare_training(config: Config, on_phase: Callable[[str], None] | None = None) -> Training:
    """Everything a run needs before ``model.fit``: the framework set up (threads, logical devices), seed and dtype
    policy, the data and labels, the device scope (or MirroredStrategy), and the model built and compiled in it with
    the run's optimizer, loss, metrics and jit_compile.

    :func:`prepare_environment` must have run first in this process, before the framework was imported. The worker's
    :func:`train` and the overhead harness's bare ``model.fit`` baseline both start here, so the baseline trains
    exactly what a run trains. ``on_phase`` hears each phase as it begins ("importing ...", "loading data",
    "building model").
    """
    from bench.plans import datasets, models
    from bench.plans import model_file
    from bench.training import keras_build

    say = on_phase or (lambda phase: None)
    cfg = typed(config)
    say(f"importing {cfg.backend}")
    cluster = Cluster.of(cfg)
    version, devices_seen = framework_setup(cfg.backend, cfg.cpu_threads, logical_cpus(cfg), cluster)

    import keras
    import numpy as np

    keras.utils.set_random_seed(cfg.seed)
    keras.config.set_dtype_policy(cfg.precision)

    say("loading data")
    data = datasets.load(cfg.dataset, seed=cfg.seed, limit_samples=cfg.limit_samples, npz_path=cfg.npz_path)
    info = data.info
    # a model file is loaded inside the run's scope below; it trains on integer labels (model_file.fit_to_data)
    plan = None if cfg.model_file else models.plan(cfg.model, cfg.size, info.input_shape, info.num_classes,
                                                   info.vocab_size)
    y_train, y_test = data.y_train, data.y_test
    if plan is not None and plan.loss == "categorical_crossentropy":
        eye = np.eye(info.num_classes, dtype="float32")
        y_train, y_test = eye[y_train], eye[y_test]

    say("building model")
    parallel = parallel_of(cfg)
    if cluster is not None:
        data, y_train, y_test = shard(data, y_train, y_test, cluster)
    elif parallel is not None and cfg.backend in EVEN_SPLIT_BACKENDS:
        data, y_train, y_test = split_evenly(data, y_train, y_test, parallel.replicas)
    training = Training(config=cfg, framework=version, devices_seen=devices_seen, data=data, plan=plan,
                        y_train=y_train, y_test=y_test, parallel=parallel)
    with training.scope():
        if plan is None:  # a model file
            training.model, training.plan = keras_build.build_file(str(cfg.model_file), info.input_shape,
                                                                   info.num_classes, info.vocab_size)
        else:
            training.model = keras_build.build(plan)
        training.model.compile(
            optimizer=_optimizer(cfg.optimizer, cfg.effective_learning_rate()),
            loss=keras_build.build_loss(training.plan),
            metrics=keras_build.build_metrics(training.plan),
            jit_compile=cfg.jit_compile,
            steps_per_execution=cfg.steps_per_execution,
        )
    return training


# config keys that change nothing prepare_training builds: a run differing only in these can take a prepared Training
AFTER_PREPARATION = ("epochs", "sample_interval_s")


def same_preparation(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether ``prepare_training`` of ``a`` and of ``b`` build the same data and model (AFTER_PREPARATION aside)."""
    return ({k: v for k, v in a.items() if k not in AFTER_PREPARATION}
            == {k: v for k, v in b.items() if k not in AFTER_PREPARATION})


def train(config: Config, queue: Any, stop_event: Any, *, prestarted: bool = False,
          prepared: Training | None = None) -> str:
    """Train one run, emitting events. Returns the final status ('finished' or 'stopped').

    ``prepared``: what a pre-started worker built ahead for the likely next run (seeded as a fresh one would be),
    used when it was built from a config that :func:`same_preparation` matches, else built now."""
    cfg = typed(config)
    if prepared is not None and same_preparation(prepared.config.to_dict(), cfg.to_dict()):
        training = dataclasses.replace(prepared, config=cfg)
    else:
        training = prepare_training(cfg, on_phase=lambda phase: events.emit(queue, events.PHASE, phase=phase))
    cfg, model, parallel = training.config, training.model, training.parallel
    placement = variable_device(model.trainable_variables[0]) if model.trainable_variables else "unknown"
    events.emit(queue, events.STARTED,
        pid=os.getpid(),
        framework=training.framework,
        backend=cfg.backend,
        devices_seen=training.devices_seen,
        placement=placement,
        replicas=parallel.replicas if parallel is not None else 1,
        replica_devices=parallel.devices if parallel is not None else [placement],
        distribution=parallel.engine if parallel is not None else None,
        global_batch_size=cfg.batch_size,
        cluster=parallel.cluster if parallel is not None else None,
        per_device_batch_size=cfg.batch_size // parallel.replicas if parallel is not None else cfg.batch_size,
        params=training.plan.params,
        flops_per_sample=training.plan.flops_per_sample,
        model_description=training.plan.describe(),
        dataset_description=training.data.info.description,
        n_train=training.n_train,
        n_test=int(len(training.data.x_test)),
        precision=cfg.precision,
        jit_compile=cfg.jit_compile,
        steps_per_execution=int(getattr(model, "steps_per_execution", cfg.steps_per_execution) or 1),
        threads=cfg.threads(devices.all_cores()) if cfg.device == "cpu" else None,
        input_pipeline=INPUT_PIPELINES.get(cfg.backend, "NumPy arrays"),
        worker_start="pre-started (framework loaded before Start)" if prestarted else "cold (spawned at Start)",
    )
    callback = event_callback(queue, stop_event, training.n_train, training.local_batch_size, cfg.epochs)
    with training.scope():
        model.fit(**training.fit_arguments(), callbacks=[callback])
    return "stopped" if callback.stopped else "finished"


def _redirect_output(log_path: str | None) -> None:
    """Send the framework's own stdout/stderr chatter (absl, CUDA probing) to a log file, not the user's terminal."""
    if not log_path:
        return
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def _train_and_report(config: dict[str, Any], queue: Any, stop_event: Any, *, prestarted: bool = False,
                      prepared: Training | None = None) -> None:
    try:
        status = train(config, queue, stop_event, prestarted=prestarted, prepared=prepared)
        events.emit(queue, events.FINISHED, status=status)
    except BaseException as exc:  # noqa: BLE001 - every failure must reach the supervisor as an event
        error_type, hint = _classify_error(exc)
        events.emit(queue, events.FAILED,
            error_type=error_type,
            message=f"{type(exc).__name__}: {exc}"[:2000],
            hint=hint,
            traceback=traceback.format_exc()[-4000:],
        )
    finally:
        try:
            queue.close()
            queue.join_thread()
        except Exception:  # noqa: BLE001 - the queue may already be broken if the server went away
            pass


def worker_main(config: dict[str, Any], queue: Any, stop_event: Any, log_path: str | None = None) -> None:
    """Entry point of the spawned process."""
    lifetime.exit_with_parent()
    _redirect_output(log_path)
    prepare_environment(config)
    _train_and_report(config, queue, stop_event)


def environment_key(config: Config) -> tuple[Any, ...]:
    """What must match for a pre-started worker to take a run: everything fixed before the framework is imported."""
    cfg = typed(config)
    return (cfg.backend, cfg.device, cfg.cpu_threads or None,
            requested_devices(cfg) if cfg.device == "cpu" or cfg.devices else None, Cluster.of(cfg))


SPARE_READY_LINE = "bench spare worker ready"


def spare_main(env_config: dict[str, Any], inbox: Any, queue: Any, stop_event: Any, ready: Any,
               log_path: str | None = None) -> None:
    """A pre-started worker: sets the environment of ``env_config`` and imports the framework now, then waits for
    the run it will train, ``(config, log_path)`` on ``inbox`` (None: exit unused). Meanwhile it prepares the data
    and model of ``env_config`` itself (the last run's config: the likely next run). The seconds a cold start spends
    importing TensorFlow, building the data and compiling the model are then spent before Start, not after."""
    lifetime.exit_with_parent()
    _redirect_output(log_path)
    prepare_environment(env_config)
    env = typed(env_config)
    try:
        framework_setup(env.backend, env.cpu_threads, logical_cpus(env))
        import keras  # noqa: F401 - loaded now so the run does not wait for it

        from bench.plans import datasets, models  # noqa: F401
    except BaseException:  # noqa: BLE001 - a spare that cannot load reports it when a run arrives
        traceback.print_exc()
    prepared = None
    if inbox.empty():  # a run already waiting is not delayed by preparing another
        try:
            prepared = prepare_training(env_config)
        except BaseException:  # noqa: BLE001 - the run then prepares its own
            traceback.print_exc()
    ready.set()  # "ready": the likely next run starts at its first step
    print(SPARE_READY_LINE, flush=True)
    message = inbox.get()
    if message is None:
        return
    config, run_log = message
    if environment_key(config) != environment_key(env_config):  # the manager checks this; never train mismatched
        events.emit(queue, events.FAILED, error_type="WorkerMismatch",
                    message="pre-started worker got a run for another device",
                    hint="This is a bug in the dashboard; start the run again.", traceback="")
        return
    _redirect_output(run_log)
    _train_and_report(config, queue, stop_event, prestarted=True, prepared=prepared)
