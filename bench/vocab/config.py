"""RunConfig: what one training run is, and the one place its input is checked.

Every page and the CLI build a RunConfig and call ``validate(hardware)`` with the hardware they hold; the worker trusts
what it receives. A bad value raises ConfigError whose message says what is allowed, so the UI and CLI can show it as
is. This module discovers nothing: what the machine has comes in as a :class:`DeviceInventory` (``bench.hardware.devices.
Hardware`` is one), so the vocabulary of a run sits below the hardware layer that finds devices.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, ClassVar, Protocol

from pydantic import ConfigDict, Field, model_validator

from bench.vocab import safe_text, settings
from bench.plans import datasets, models
from bench.plans import model_file as user_models
from bench.vocab.errors import ConfigError as ConfigError  # raised by validate(); callers catch it from here
from bench.vocab.limits import (BATCH_MAX as BATCH_MAX, DEVICES_MAX as DEVICES_MAX, EPOCHS_MAX as EPOCHS_MAX,
                                INTERVAL_MAX_S as INTERVAL_MAX_S, INTERVAL_MIN_S as INTERVAL_MIN_S,
                                LEARNING_RATE_MAX as LEARNING_RATE_MAX, LIMIT_SAMPLES_MAX as LIMIT_SAMPLES_MAX,
                                STEPS_PER_EXECUTION_MAX as STEPS_PER_EXECUTION_MAX, WORKERS_MAX as WORKERS_MAX,
                                BatchSize, DeviceCount, Epochs, Flag, LearningRate, Line, SampleIntervalSeconds,
                                LINE_MAX, SampleLimit, Seed, StepsPerExecution, Text, Threads, WorkerIndex, Words,
                                problem)
from bench.vocab.record_base import PathError, Problems, Record, problems
from bench.vocab.target import DeviceText, Target

# Keras 3 runs several steps per call of its compiled train function on these backends only; its torch trainer
# raises "`steps_per_execution` must be 1 with the PyTorch backend".
STEPS_PER_EXECUTION_BACKENDS = ("tensorflow", "jax")
# Keras trains data-parallel through TensorFlow's MirroredStrategy and keras.distribution.DataParallel (JAX); Keras has
# no data-parallel distribution under torch.
DATA_PARALLEL_BACKENDS = ("tensorflow", "jax")
# Several processes (on this or other machines) training one model through JAX's distributed runtime, started by
# keras.distribution.initialize. TensorFlow's MultiWorkerMirroredStrategy does not train Keras 3 models
# (keras-team/keras#20585: model.fit fails on its per-replica batches), so a multi-worker run needs the JAX backend.
MULTI_WORKER_BACKENDS = ("jax",)
OPTIMIZERS = ("adam", "sgd", "rmsprop", "adamw")
PRECISIONS = ("float32", "mixed_float16")
DEFAULT_LEARNING_RATE = {"adam": 1e-3, "sgd": 1e-2, "rmsprop": 1e-3, "adamw": 1e-3}


class DeviceInventory(Protocol):
    """What validation checks a config against: ``bench.hardware.devices.Hardware`` is one (tests build their own)."""

    @property
    def gpus(self) -> Sequence[Any]: ...  # the targetable GPUs
    @property
    def gpu_reason(self) -> str | None: ...  # why no GPU is usable; None when one is
    @property
    def cores(self) -> int: ...  # the cores this process may run on: what "all cores" means for a CPU run
    def device_choices(self) -> list[str]: ...  # "cpu" and each usable "gpu:N"


def preset_training(model: str) -> dict[str, Any]:
    """The optimizer and learning rate a config for ``model`` starts from when the user names none: a seed preset
    trains as its article did ({} for a family: the config's defaults). The one home of that rule, for the CLI, the
    machine suite and the pages' preset buttons."""
    preset = models.PRESETS.get(model)
    return {"optimizer": preset.optimizer, "learning_rate": preset.learning_rate} if preset else {}


class RunConfig(Record):
    """One training run. Defaults suit a live demo: the first epoch shows within seconds on a laptop CPU.

    A pydantic model on bench.vocab.record_base.Record, checked by pydantic wherever it is made: every setting's type
    and bounds (bench.vocab.limits, declared once) and the rules between settings (``_consistent``) hold for a config
    built in code (a ConfigError listing every problem, each naming its setting and what is allowed) and for one read
    from a record (``model_validate``: a RecordError naming ``config.<setting>``; unknown settings refused, so a typo
    never passes silently). A config read from a record is written back with the keys it was read with, so a record
    older than a setting does not gain this machine's default for it (``recorded`` says whether it holds one).
    ``validate(hardware)`` checks what only this machine knows: its devices and cores, the data set and the model."""

    model_config = ConfigDict(extra="forbid")
    PATH: ClassVar[str] = "config"

    dataset: Annotated[Line, Words("a data set's name, e.g. 'synthetic-mnist'", always=True)] = "synthetic-mnist"
    # a family (mlp, cnn, text) or a seed preset (seed-cifar10-mlp, ...)
    model: Annotated[Line, Words("a model's name, e.g. 'mlp' or a seed preset", always=True)] = "mlp"
    size: Annotated[Line, Words(f"one of {', '.join(models.SIZES)} (empty for a seed preset)", always=True)] | None = "s"
    epochs: Epochs = 5
    batch_size: BatchSize = 128
    device: Annotated[DeviceText, Words("text like 'cpu', 'gpu:0' or 'gpus'", always=True)] = "cpu"
    cpu_threads: Threads | None = None  # None = all cores
    sample_interval_s: SampleIntervalSeconds = 0.5
    limit_samples: SampleLimit | None = 20000  # None = the whole training set
    seed: Seed = 42
    optimizer: Annotated[Line, Words(f"one of {', '.join(OPTIMIZERS)}", always=True)] = "adam"
    learning_rate: LearningRate | None = None  # None = the optimizer's default
    precision: Annotated[Line, Words(f"one of {', '.join(PRECISIONS)}", always=True)] = "float32"
    jit_compile: Flag = False
    steps_per_execution: StepsPerExecution = 1  # training steps per call of the compiled train function (Keras compile())
    npz_path: Text | None = None  # dataset "npz" only
    backend: Annotated[Line, Words(f"one of {', '.join(settings.BACKENDS)} (set KERAS_BACKEND)", always=True)] = Field(
        default_factory=settings.default_backend)
    # Data-parallel over the first N devices of the target's kind: cpu (or cpu/T) split into N logical CPU devices,
    # gpus the first N GPUs. None: the target's own (one device; every GPU for gpus).
    devices: DeviceCount | None = None
    # One member of a multi-worker run: every member's HOST:PORT (the first coordinates), and which one this is.
    workers: Line | None = None
    worker_index: WorkerIndex | None = None
    # A user's .keras file trained instead of a family or preset (``model`` then holds the file's name, ``size`` None);
    # checked by validate (user_models.check_model_file: safe mode, the data's shapes), built by the worker.
    model_file: Line | None = None

    @classmethod
    def built_error(cls, exc: Any) -> Exception:
        """A config built in code with bad settings: a ConfigError with one message per problem (the CLI and the
        pages show them as they are)."""
        return ConfigError(problems(exc, cls))

    @model_validator(mode="before")
    @classmethod
    def _known_settings(cls, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(cls.model_fields))
            if unknown:
                raise PathError("", f"holds unknown setting(s) {', '.join(map(repr, unknown))}; allowed: "
                                    f"{', '.join(sorted(cls.model_fields))}")
        return data

    @model_validator(mode="after")
    def _consistent(self) -> RunConfig:
        """The rules between settings (the device's form, data-parallel, multi-worker), each a
        message; every one broken is listed. What the Keras backend allows is ``validate``'s: the backend is this
        machine's (KERAS_BACKEND), and an old record without one reads with this machine's default."""
        found = [message for rule in _RULES for message in rule(self)]
        if found:
            raise Problems(found)
        return self

    # ----------------------------------------------------------------------------------------------------------------
    def effective_learning_rate(self) -> float:
        return self.learning_rate if self.learning_rate is not None else DEFAULT_LEARNING_RATE.get(self.optimizer, 1e-3)

    def threads(self, cores: int) -> int:
        """CPU threads the worker will use on a machine whose process may run on ``cores`` cores: the pinned count,
        else every core (the one rule of "all cores")."""
        return self.cpu_threads if self.cpu_threads is not None else cores

    def target(self) -> Target:
        """Where this run trains (device and threads as one value; ``str()`` gives cpu, cpu/N, gpu:N or gpus).

        Raises:
            ValueError: a device this version cannot parse (read from a record; ``validate()`` says so as a
                ConfigError).
        """
        return Target.of(self)

    def with_target(self, target: Target | str) -> RunConfig:
        """This config on another target (a Target, or its text: cpu, cpu/N, gpu:N, gpus); nothing else changes."""
        return self.replace(**(target if isinstance(target, Target) else Target.parse(target)).fields())

    def label(self) -> str:
        """The run in one line (History, the CLI, the store's label column): one line of at most LINE_MAX characters
        without control characters (``safe_text.one_line``), so a label a run is written with always reads back."""
        size = f" {self.size}" if self.size and not self.model.startswith("seed-") else ""
        spe = f" · {self.steps_per_execution} steps/exec" if self.steps_per_execution != 1 else ""
        on = f" × {self.devices} devices" if self.devices and self.devices > 1 else ""
        if self.workers:
            on += f" · worker {self.worker_index} of {len(self.worker_addresses())}"
        try:
            where = str(self.target())
        except ValueError:  # a device read from a record from elsewhere: shown as given
            where = self.device
        label = f"{self.model}{size} · {self.dataset} · {where}{on} · batch {self.batch_size}{spe}"
        return safe_text.one_line(label, LINE_MAX) or "run"  # what a record's label may hold, whatever the names

    def recorded(self, name: str) -> bool:
        """Whether this config holds the setting ``name`` as given (built here, or read from a record that has it):
        False for a record written before the setting existed, whose value here is today's default."""
        return name in self.model_fields_set

    def replace(self, **changes: Any) -> RunConfig:
        """This config with ``changes``: a new config, written whole and checked (ConfigError)."""
        return RunConfig(**{**{k: getattr(self, k) for k in type(self).model_fields}, **changes})

    # ----------------------------------------------------------------------------------------------------------------
    def validate(self, hardware: DeviceInventory) -> RunConfig:  # type: ignore[override]  # not pydantic's deprecated one
        """Check this config against ``hardware`` and what this bench can run: the devices and cores present, the
        data set, the model (a family's plan, or a user's file), the choices (optimizer, precision, backend). Types,
        bounds and the rules between settings were checked when the config was made. Return self when valid.

        Args:
            hardware: what this machine has (``bench.hardware.devices.Hardware``, as the caller already holds it).

        Raises:
            ConfigError: listing every problem found, each with what is allowed.
        """
        errors: list[str] = []
        if self.optimizer not in OPTIMIZERS:
            errors.append(f"optimizer {self.optimizer!r} is unknown; pick one of {', '.join(OPTIMIZERS)}")
        if self.precision not in PRECISIONS:
            errors.append(f"precision {self.precision!r} is unknown; pick one of {', '.join(PRECISIONS)}")
        if self.backend not in settings.BACKENDS:
            errors.append(f"Keras backend {self.backend!r} is unknown; set KERAS_BACKEND to one of "
                          f"{', '.join(settings.BACKENDS)}")
        cores = hardware.cores
        if self.cpu_threads is not None and self.cpu_threads > cores:
            errors.append(f"CPU threads must be from 1 to {cores} on this machine, or empty for all "
                          f"(got {self.cpu_threads!r})")
        errors.extend(self._backend_errors())
        errors.extend(self._device_errors(hardware))
        errors.extend(self._device_count_errors(hardware))

        info = None
        if self.dataset not in datasets.DATASETS:
            errors.append(f"dataset {self.dataset!r} is unknown; pick one of {', '.join(datasets.DATASETS)}")
        elif self.dataset == "npz" and not self.npz_path:
            errors.append("dataset 'npz' needs a file: upload one, or pass --npz PATH (x_train, y_train, x_test, "
                          "y_test)")
        else:
            try:
                info = datasets.get_info(self.dataset, npz_path=self.npz_path)
            except datasets.DatasetError as exc:
                errors.append(str(exc))

        if info is not None:
            try:
                if self.model_file is not None:
                    user_models.check_model_file(self.model_file, info.input_shape, info.num_classes, info.vocab_size,
                                                 backend=self.backend,
                                                 device_memory_mib=device_memory_mib(self.device, hardware))
                else:
                    models.plan(self.model, self.size, info.input_shape, info.num_classes, info.vocab_size)
            except models.ModelError as exc:
                errors.append(str(exc))
            n_train = info.n_train if self.limit_samples is None else min(info.n_train, self.limit_samples)
            if self.batch_size > n_train >= 1:
                errors.append(
                    f"batch size {self.batch_size} is larger than the {n_train} training samples; "
                    f"pick at most {n_train}, or raise the sample limit"
                )
        if errors:
            raise ConfigError(errors)
        return self

    def _backend_errors(self) -> list[str]:
        """What the Keras backend allows: several steps a call, several devices, several workers."""
        errors, spe, n = [], self.steps_per_execution, self.devices
        if spe > 1 and self.backend not in STEPS_PER_EXECUTION_BACKENDS:
            errors.append(f"steps per execution {spe} needs the TensorFlow or JAX backend: Keras runs one step per "
                          f"call under {self.backend}; set it to 1, or set KERAS_BACKEND to tensorflow or jax")
        if n is not None and n > 1 and self.backend not in DATA_PARALLEL_BACKENDS:
            errors.append(f"training on {n} devices needs the TensorFlow or JAX backend: Keras has no data-parallel "
                          f"distribution under {self.backend}; set devices to 1, or set KERAS_BACKEND to tensorflow "
                          "or jax")
        if self.workers is not None and self.backend not in MULTI_WORKER_BACKENDS:
            errors.append(f"a multi-worker run trains through JAX's distributed runtime: set KERAS_BACKEND=jax (under "
                          f"{self.backend}, Keras 3 cannot train with TensorFlow's MultiWorkerMirroredStrategy)")
        return errors

    def _device_count_errors(self, hardware: DeviceInventory) -> list[str]:
        """``devices`` within what the target's kind has here: a core per logical CPU device, a GPU per device."""
        n = self.devices
        if n is None or n == 1:
            return []
        try:
            target = self.target()
        except ValueError:
            return []  # the device's own message says what is wrong
        if target.is_cpu:
            cores = self.threads(hardware.cores)
            if n > cores:
                return [f"devices {n} is more than the {cores} CPU core(s) this run has: each logical CPU device "
                        f"needs a core; pick at most {cores}"]
        elif target.kind == "gpus" and n > len(hardware.gpus):
            count = len(hardware.gpus)
            return [f"devices {n} is more than the {count} GPU(s) this machine has; pick at most {count}"]
        return []

    def worker_addresses(self) -> list[str]:
        """The members of a multi-worker run as HOST:PORT, the coordinator first; [] for a run on its own."""
        return [w.strip() for w in self.workers.split(",") if w.strip()] if self.workers is not None else []

    def device_count(self, hardware: DeviceInventory) -> int:
        """How many devices this run trains on: ``devices``, else one (every GPU of ``hardware`` for 'gpus')."""
        if self.devices is not None:
            return self.devices
        if self.device == "gpus":
            return max(1, len(hardware.gpus))
        return 1

    def _device_errors(self, hardware: DeviceInventory) -> list[str]:
        return device_problems(self.device, hardware)


# -- one setting's rule each, for validate() and for whoever records a run it did not start (a script's callback) --
def device_memory_mib(device: Any, hardware: DeviceInventory) -> float | None:
    """The memory of the device a run trains on, for the bound on a model file's size: the smallest GPU's it uses, as
    its source reports it; None for the CPU (the RAM available when the file is checked) or where it is not known."""
    try:
        target = Target.from_device(device) if isinstance(device, str) else None
    except ValueError:
        return None
    if target is None or target.kind == "cpu":
        return None
    gpus = [g for g in hardware.gpus if target.kind == "gpus" or getattr(g, "index", None) == target.index]
    sizes = [float(m) for g in gpus if (m := getattr(g, "mem_total_mib", None))]
    return min(sizes) if sizes else None


def batch_size_problem(value: Any) -> str | None:
    """What is wrong with ``value`` as a run's batch size (limits.BatchSize); None when it may be used."""
    found = problem(value, "batch_size")
    return f"batch size {found}" if found else None


def interval_problem(value: Any) -> str | None:
    """What is wrong with ``value`` as the seconds between a run's samples (limits.SampleIntervalSeconds); None
    when the sampler may take it."""
    found = problem(value, "sample_interval_s")
    return f"sampling interval {found}" if found else None


def device_problems(device: Any, hardware: DeviceInventory) -> list[str]:
    """What is wrong with ``device`` (cpu, gpu:N, gpus) on ``hardware`` (this machine, as discovered): a malformed
    one, a GPU where none is usable, a GPU index this machine does not have; [] when a run may train there."""
    if not isinstance(device, str):
        return [f"device must be text like 'cpu' or 'gpu:0' (got {device!r:.60})"]
    try:
        target = Target.from_device(device)
    except ValueError as exc:
        return [f"{exc} (or 'gpus' for all GPUs)"]
    if target.is_cpu:
        return []
    choices = hardware.device_choices()
    if choices == ["cpu"]:
        reason = hardware.gpu_reason or "no GPU was found."
        return [f"device {device!r} asks for a GPU, but none is usable here: {reason} Pick 'cpu'."]
    if target.kind == "gpu" and str(target) not in choices:
        return [f"device {device!r} does not exist here; pick one of {', '.join(choices)}"]
    return []


# -- the rules between settings (RunConfig._consistent): each returns its messages --------------------------------
def _device_rule(c: RunConfig) -> list[str]:
    """CPU threads on a CPU device only. A device this version cannot parse is validate()'s: a record from elsewhere
    that names one ('tpu') is read and shown as stored, never run."""
    try:
        target = Target.from_device(c.device)
    except ValueError:
        return []
    if not target.is_cpu and c.cpu_threads is not None:
        return ["CPU threads apply to CPU runs only; leave them empty for a GPU device"]
    return []


def _data_parallel_rule(c: RunConfig) -> list[str]:
    """``devices`` above one: a target of a kind with several devices, the batch split evenly."""
    n = c.devices
    if n is None or n == 1:
        return []
    errors = []
    try:
        target = Target.from_device(c.device)
    except ValueError:
        target = None  # the device's own rule says what is wrong
    if target is not None and target.kind == "gpu":
        errors.append(f"{c.device} is one GPU; to train on {n} GPUs pick the target 'gpus' with devices {n}")
    if c.batch_size % n:
        errors.append(f"batch size {c.batch_size} does not split evenly over {n} devices; pick a multiple of {n} "
                      f"(each device trains batch size / {n} samples a step)")
    return errors


def _worker_rule(c: RunConfig) -> list[str]:
    """``workers`` and ``worker_index``: given together, at least two HOST:PORT members, this one among them, the
    global batch split evenly over the members."""
    if c.workers is None and c.worker_index is None:
        return []
    if c.workers is None or c.worker_index is None:
        return ["a multi-worker run needs both --workers HOST:PORT,HOST:PORT (every member, the first coordinates) "
                "and --worker-index I (which member this process is)"]
    members = c.worker_addresses()
    errors = [f"worker {m!r} is not HOST:PORT with a port from 1 to 65535" for m in members if not _address(m)]
    if not 2 <= len(members) <= WORKERS_MAX:
        errors.append(f"a multi-worker run needs from 2 to {WORKERS_MAX} members in --workers (got {len(members)})")
    if len(set(members)) != len(members):
        errors.append("--workers names a member twice; give each process its own HOST:PORT")
    if not c.worker_index < max(1, len(members)):
        errors.append(f"--worker-index must be from 0 to {max(0, len(members) - 1)}, this process's place in "
                      f"--workers (got {c.worker_index!r})")
    if c.devices not in (None, 1):
        errors.append("devices applies to one process; in a multi-worker run each member trains on its own device "
                      "(leave devices empty)")
    if members and c.batch_size % len(members):
        errors.append(f"batch size {c.batch_size} does not split evenly over {len(members)} workers; pick a "
                      f"multiple of {len(members)} (each member trains batch size / {len(members)} a step)")
    return errors


_RULES = (_device_rule, _data_parallel_rule, _worker_rule)


def _address(text: str) -> bool:
    """Whether ``text`` is HOST:PORT (a port from 1 to 65535)."""
    host, _, port = text.rpartition(":")
    return bool(host) and port.isdigit() and 1 <= int(port) <= 65535
