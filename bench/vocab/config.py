"""RunConfig: what one training run is, and the one place its input is checked.

Every page and the CLI build a RunConfig and call ``validate(hardware)`` with the hardware they hold; the worker trusts
what it receives. A bad value raises ConfigError whose message says what is allowed, so the UI and CLI can show it as
is. This module discovers nothing: what the machine has comes in as a :class:`Machine` (``bench.hardware.devices.
Hardware`` is one), so the vocabulary of a run sits below the hardware layer that finds devices.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Protocol

from pydantic import ConfigDict, Field, model_validator

from bench.vocab import safe_text, settings
from bench.plans import datasets, models
from bench.plans import model_file as user_models
from bench.vocab.errors import ConfigError as ConfigError  # raised by validate(); callers catch it from here
from bench.vocab.limits import LINE_MAX, Count, Flag, Line, Number, Text, Whole
from bench.vocab.record_base import PathError, Record, is_int
from bench.vocab.target import Target

EPOCHS_MAX = 1000
BATCH_MAX = 65536
STEPS_PER_EXECUTION_MAX = 1024
# Keras 3 runs several steps per call of its compiled train function on these backends only; its torch trainer
# raises "`steps_per_execution` must be 1 with the PyTorch backend".
STEPS_PER_EXECUTION_BACKENDS = ("tensorflow", "jax")
DEVICES_MAX = 64
# Keras trains data-parallel through TensorFlow's MirroredStrategy and keras.distribution.DataParallel (JAX); Keras has
# no data-parallel distribution under torch.
DATA_PARALLEL_BACKENDS = ("tensorflow", "jax")
# Several processes (on this or other machines) training one model through JAX's distributed runtime, started by
# keras.distribution.initialize. TensorFlow's MultiWorkerMirroredStrategy does not train Keras 3 models
# (keras-team/keras#20585: model.fit fails on its per-replica batches), so a multi-worker run needs the JAX backend.
MULTI_WORKER_BACKENDS = ("jax",)
WORKERS_MAX = 64
INTERVAL_MIN_S = 0.1
INTERVAL_MAX_S = 10.0
LEARNING_RATE_MAX = 10.0
OPTIMIZERS = ("adam", "sgd", "rmsprop", "adamw")
PRECISIONS = ("float32", "mixed_float16")
DEFAULT_LEARNING_RATE = {"adam": 1e-3, "sgd": 1e-2, "rmsprop": 1e-3, "adamw": 1e-3}


class Machine(Protocol):
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



LIMIT_SAMPLES_MAX = 1_000_000_000  # more samples than any data set holds: a link's 2**63 is a typo, not a limit


class RunConfig(Record):
    """One training run. Defaults suit a live demo: the first epoch shows within seconds on a laptop CPU.

    A pydantic model on bench.vocab.record_base.Record: a record's config is read with every setting's type checked
    (``model_validate``: unknown settings refused, so a typo never passes silently) and written back with the keys it
    was read with, so a record older than a setting does not gain this machine's default for it (``recorded`` says
    whether it holds one). One built in code is not checked when built: ``validate`` checks every value against this
    machine before a run starts, and says what is allowed."""

    model_config = ConfigDict(extra="forbid")
    PATH: ClassVar[str] = "config"

    dataset: Line = "synthetic-mnist"
    model: Line = "mlp"  # a family (mlp, cnn, text) or a seed preset (seed-cifar10-mlp, ...)
    size: Line | None = "s"  # xs, s, m, l, xl; ignored by presets
    epochs: Whole = 5
    batch_size: Count = 128  # a file's batch size past 10^12 is refused where it is read (validate holds the form to BATCH_MAX)
    device: Line = "cpu"  # cpu, gpu:N, gpus
    cpu_threads: Whole | None = None  # None = all cores
    sample_interval_s: Number = 0.5
    limit_samples: Whole | None = 20000  # None = the whole training set
    seed: Whole = 42
    optimizer: Line = "adam"
    learning_rate: Number | None = None  # None = the optimizer's default
    precision: Line = "float32"
    jit_compile: Flag = False
    steps_per_execution: Whole = 1  # training steps per call of the compiled train function (Keras compile())
    npz_path: Text | None = None  # dataset "npz" only
    backend: Line = Field(default_factory=settings.default_backend)
    # Data-parallel over the first N devices of the target's kind: cpu (or cpu/T) split into N logical CPU devices,
    # gpus the first N GPUs. None: the target's own (one device; every GPU for gpus).
    devices: Whole | None = None
    # One member of a multi-worker run: every member's HOST:PORT (the first coordinates), and which one this is.
    workers: Line | None = None
    worker_index: Whole | None = None
    # A user's .keras file trained instead of a family or preset (``model`` then holds the file's name, ``size`` None);
    # checked by validate (user_models.check_model_file: safe mode, the data's shapes), built by the worker.
    model_file: Line | None = None

    def __init__(self, /, **data: Any) -> None:
        """A config built in code (a form, the CLI): held as given, every setting set; ``validate`` checks it."""
        unknown = sorted(set(data) - set(type(self).model_fields))
        if unknown:
            raise TypeError(f"RunConfig has no setting(s) {', '.join(unknown)}")
        built = type(self).model_construct(**data)
        object.__setattr__(self, "__dict__", built.__dict__)
        object.__setattr__(self, "__pydantic_fields_set__", set(type(self).model_fields))
        object.__setattr__(self, "__pydantic_extra__", None)
        object.__setattr__(self, "__pydantic_private__", None)

    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]

    @model_validator(mode="before")
    @classmethod
    def _known_settings(cls, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(cls.model_fields))
            if unknown:
                raise PathError("", f"holds unknown setting(s) {', '.join(map(repr, unknown))}; allowed: "
                                    f"{', '.join(sorted(cls.model_fields))}")
        return data

    # ----------------------------------------------------------------------------------------------------------------
    def effective_learning_rate(self) -> float:
        return self.learning_rate if self.learning_rate is not None else DEFAULT_LEARNING_RATE.get(self.optimizer, 1e-3)

    def threads(self, cores: int) -> int:
        """CPU threads the worker will use on a machine whose process may run on ``cores`` cores: the pinned count,
        else every core (the one rule of "all cores")."""
        return self.cpu_threads if isinstance(self.cpu_threads, int) and self.cpu_threads > 0 else cores

    def target(self) -> Target:
        """Where this run trains (device and threads as one value; ``str()`` gives cpu, cpu/N, gpu:N or gpus).

        Raises:
            ValueError: the device or thread count is malformed (``validate()`` says so as a ConfigError).
        """
        return Target.of(self)

    def with_target(self, target: Target | str) -> RunConfig:
        """This config on another target (a Target, or its text: cpu, cpu/N, gpu:N, gpus); nothing else changes."""
        return self.replace(**(target if isinstance(target, Target) else Target.parse(target)).fields())

    def label(self) -> str:
        """The run in one line (History, the CLI, the store's label column): one line of at most LINE_MAX characters
        without control characters (``safe_text.one_line``), so a label a run is written with always reads back."""
        size = f" {self.size}" if self.size and not self.model.startswith("seed-") else ""
        try:
            where = str(self.target())
        except ValueError:  # not validated yet: show the device as given
            where = str(self.device)
        spe = f" · {self.steps_per_execution} steps/exec" if self.steps_per_execution != 1 else ""
        on = f" × {self.devices} devices" if self.devices and self.devices > 1 else ""
        if self.workers:
            on += f" · worker {self.worker_index} of {len(self.worker_addresses())}"
        label = f"{self.model}{size} · {self.dataset} · {where}{on} · batch {self.batch_size}{spe}"
        return safe_text.one_line(label, LINE_MAX) or "run"  # what a record's label may hold, whatever the names

    def recorded(self, name: str) -> bool:
        """Whether this config holds the setting ``name`` as given (built here, or read from a record that has it):
        False for a record written before the setting existed, whose value here is today's default."""
        return name in self.model_fields_set

    def replace(self, **changes: Any) -> RunConfig:
        """This config with ``changes``: a new config, written whole."""
        return RunConfig(**{**{k: getattr(self, k) for k in type(self).model_fields}, **changes})

    # ----------------------------------------------------------------------------------------------------------------
    def validate(self, hardware: Machine) -> RunConfig:  # type: ignore[override]  # not pydantic's deprecated one
        """Check every field against ``hardware``; return self when valid.

        Args:
            hardware: what this machine has (``bench.hardware.devices.Hardware``, as the caller already holds it).

        Raises:
            ConfigError: listing every problem found, each with what is allowed.
        """
        errors: list[str] = []
        if not is_int(self.epochs) or not 1 <= self.epochs <= EPOCHS_MAX:
            errors.append(f"epochs must be a whole number from 1 to {EPOCHS_MAX} (got {self.epochs!r})")
        if not is_int(self.seed) or not 0 <= self.seed < 2**31:
            errors.append(f"seed must be a whole number from 0 to {2**31 - 1} (got {self.seed!r})")
        errors.extend(p for p in [interval_problem(self.sample_interval_s)] if p)
        if self.optimizer not in OPTIMIZERS:
            errors.append(f"optimizer {self.optimizer!r} is unknown; pick one of {', '.join(OPTIMIZERS)}")
        if self.learning_rate is not None and (
            isinstance(self.learning_rate, bool)
            or not isinstance(self.learning_rate, (int, float))
            or not 0 < self.learning_rate <= LEARNING_RATE_MAX
        ):
            errors.append(f"learning rate must be > 0 and <= {LEARNING_RATE_MAX:g}, or empty for the default "
                          f"(got {self.learning_rate!r})")
        if self.precision not in PRECISIONS:
            errors.append(f"precision {self.precision!r} is unknown; pick one of {', '.join(PRECISIONS)}")
        if not isinstance(self.jit_compile, bool):
            errors.append(f"jit_compile must be true or false (got {self.jit_compile!r})")
        spe = self.steps_per_execution
        if not is_int(spe) or not 1 <= spe <= STEPS_PER_EXECUTION_MAX:
            errors.append(f"steps per execution must be a whole number from 1 to {STEPS_PER_EXECUTION_MAX} "
                          f"(got {spe!r}); 1 runs one step per call, as Keras does by default")
        elif spe > 1 and self.backend not in STEPS_PER_EXECUTION_BACKENDS:
            errors.append(f"steps per execution {spe} needs the TensorFlow or JAX backend: Keras runs one step per "
                          f"call under {self.backend}; set it to 1, or set KERAS_BACKEND to tensorflow or jax")
        if self.backend not in settings.BACKENDS:
            errors.append(f"Keras backend {self.backend!r} is unknown; set KERAS_BACKEND to one of {', '.join(settings.BACKENDS)}")
        cores = hardware.cores
        if self.cpu_threads is not None and (not is_int(self.cpu_threads) or not 1 <= self.cpu_threads <= cores):
            errors.append(f"CPU threads must be from 1 to {cores} on this machine, or empty for all (got {self.cpu_threads!r})")
        if self.limit_samples is not None and (not is_int(self.limit_samples)
                                               or not 1 <= self.limit_samples <= LIMIT_SAMPLES_MAX):
            errors.append(f"sample limit must be a whole number from 1 to {LIMIT_SAMPLES_MAX:,}, or empty for the whole "
                          f"set (got {self.limit_samples!r})")

        errors.extend(self._device_errors(hardware))
        errors.extend(self._data_parallel_errors(hardware))
        errors.extend(self._worker_errors())

        info = None
        if not isinstance(self.dataset, str) or (self.dataset not in datasets.DATASETS):
            errors.append(f"dataset {self.dataset!r} is unknown; pick one of {', '.join(datasets.DATASETS)}")
        elif self.dataset == "npz" and not self.npz_path:
            errors.append("dataset 'npz' needs a file: upload one, or pass --npz PATH (x_train, y_train, x_test, y_test)")
        elif self.dataset == "npz" and not isinstance(self.npz_path, str):
            errors.append(f"the npz file must be given as a path (text), e.g. --npz data/mine.npz (got {self.npz_path!r})")
        else:
            try:
                info = datasets.get_info(self.dataset, npz_path=self.npz_path)
            except datasets.DatasetError as exc:
                errors.append(str(exc))

        if info is not None:
            try:
                if self.model_file is not None:
                    if not isinstance(self.model_file, str):
                        raise user_models.ModelFileError(f"the model file must be given as a path (text), e.g. "
                                                    f"--model-file mine.keras (got {self.model_file!r})")
                    user_models.check_model_file(self.model_file, info.input_shape, info.num_classes, info.vocab_size,
                                                 backend=self.backend,
                                                 device_memory_mib=device_memory_mib(self.device, hardware))
                else:
                    models.plan(self.model, self.size, info.input_shape, info.num_classes, info.vocab_size)
            except models.ModelError as exc:
                errors.append(str(exc))
            limit = self.limit_samples if is_int(self.limit_samples) else None
            n_train = info.n_train if limit is None else min(info.n_train, limit)
            if is_int(self.batch_size) and self.batch_size > n_train >= 1:
                errors.append(
                    f"batch size {self.batch_size} is larger than the {n_train} training samples; "
                    f"pick at most {n_train}, or raise the sample limit"
                )
        errors.extend(p for p in [batch_size_problem(self.batch_size)] if p)

        if errors:
            raise ConfigError(errors)
        return self

    def _data_parallel_errors(self, hardware: Machine) -> list[str]:
        """``devices``: a whole number within what the target's kind has here, on a backend that trains data-parallel,
        splitting the batch evenly."""
        n = self.devices
        if n is None:
            return []
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= DEVICES_MAX:
            return [f"devices must be a whole number from 1 to {DEVICES_MAX}, or empty for the target's own "
                    f"(got {n!r})"]
        try:
            target = Target.from_device(self.device)
        except (TypeError, ValueError):
            return []  # the device's own message says what is wrong
        if n == 1:
            return []
        errors = []
        if self.backend not in DATA_PARALLEL_BACKENDS:
            errors.append(f"training on {n} devices needs the TensorFlow or JAX backend: Keras has no data-parallel "
                          f"distribution under {self.backend}; set devices to 1, or set KERAS_BACKEND to tensorflow "
                          "or jax")
        if target.kind == "gpu":
            errors.append(f"{self.device} is one GPU; to train on {n} GPUs pick the target 'gpus' with devices {n}")
        elif target.is_cpu:
            cores = self.threads(hardware.cores)
            if n > cores:
                errors.append(f"devices {n} is more than the {cores} CPU core(s) this run has: each logical CPU "
                              f"device needs a core; pick at most {cores}")
        else:
            count = len(hardware.gpus)
            if n > count:
                errors.append(f"devices {n} is more than the {count} GPU(s) this machine has; pick at most {count}")
        if isinstance(self.batch_size, int) and self.batch_size % n:
            errors.append(f"batch size {self.batch_size} does not split evenly over {n} devices; pick a multiple of "
                          f"{n} (each device trains batch size / {n} samples a step)")
        return errors

    def worker_addresses(self) -> list[str]:
        """The members of a multi-worker run as HOST:PORT, the coordinator first; [] for a run on its own."""
        return [w.strip() for w in self.workers.split(",") if w.strip()] if isinstance(self.workers, str) else []

    def _worker_errors(self) -> list[str]:
        """``workers`` and ``worker_index``: given together, at least two HOST:PORT members, this one among them, on
        the JAX backend, the global batch split evenly over the members."""
        if self.workers is None and self.worker_index is None:
            return []
        if self.workers is None or self.worker_index is None:
            return ["a multi-worker run needs both --workers HOST:PORT,HOST:PORT (every member, the first "
                    "coordinates) and --worker-index I (which member this process is)"]
        if not isinstance(self.workers, str):
            return [f"workers must be text like 'host-a:7000,host-b:7000' (got {self.workers!r})"]
        members = self.worker_addresses()
        errors = [f"worker {m!r} is not HOST:PORT with a port from 1 to 65535" for m in members if not _address(m)]
        if not 2 <= len(members) <= WORKERS_MAX:
            errors.append(f"a multi-worker run needs from 2 to {WORKERS_MAX} members in --workers (got {len(members)})")
        if len(set(members)) != len(members):
            errors.append("--workers names a member twice; give each process its own HOST:PORT")
        index = self.worker_index
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < max(1, len(members)):
            errors.append(f"--worker-index must be from 0 to {max(0, len(members) - 1)}, this process's place in "
                          f"--workers (got {index!r})")
        if self.backend not in MULTI_WORKER_BACKENDS:
            errors.append(f"a multi-worker run trains through JAX's distributed runtime: set KERAS_BACKEND=jax (under "
                          f"{self.backend}, Keras 3 cannot train with TensorFlow's MultiWorkerMirroredStrategy)")
        if self.devices not in (None, 1):
            errors.append("devices applies to one process; in a multi-worker run each member trains on its own "
                          "device (leave devices empty)")
        if isinstance(self.batch_size, int) and members and self.batch_size % len(members):
            errors.append(f"batch size {self.batch_size} does not split evenly over {len(members)} workers; pick a "
                          f"multiple of {len(members)} (each member trains batch size / {len(members)} a step)")
        return errors

    def device_count(self, hardware: Machine) -> int:
        """How many devices this run trains on: ``devices``, else one (every GPU of ``hardware`` for 'gpus')."""
        if self.devices is not None:
            return self.devices
        if self.device == "gpus":
            return max(1, len(hardware.gpus))
        return 1

    def _device_errors(self, hardware: Machine) -> list[str]:
        return device_problems(self.device, hardware, self.cpu_threads)


def device_memory_mib(device: Any, hardware: Machine) -> float | None:
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


# -- one setting's rule each, for validate() and for whoever records a run it did not start (a script's callback) --
def batch_size_problem(value: Any) -> str | None:
    """What is wrong with ``value`` as a run's batch size (a whole number from 1 to BATCH_MAX); None when it may be
    used."""
    if not is_int(value) or not 1 <= value <= BATCH_MAX:
        return f"batch size must be a whole number from 1 to {BATCH_MAX} (got {value!r:.60})"
    return None


def interval_problem(value: Any) -> str | None:
    """What is wrong with ``value`` as the seconds between a run's samples (INTERVAL_MIN_S to INTERVAL_MAX_S); None
    when the sampler may take it."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not INTERVAL_MIN_S <= value <= INTERVAL_MAX_S:
        return f"sampling interval must be from {INTERVAL_MIN_S} to {INTERVAL_MAX_S} seconds (got {value!r:.60})"
    return None


def device_problems(device: Any, hardware: Machine, cpu_threads: Any = None) -> list[str]:
    """What is wrong with ``device`` (cpu, gpu:N, gpus) on ``hardware`` (this machine, as discovered): a malformed
    one, a GPU where none is usable, a GPU index this machine does not have, threads asked of a GPU; [] when a run
    may train there."""
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
    if target.kind == "gpu" and device not in choices:
        return [f"device {device!r} does not exist here; pick one of {', '.join(choices)}"]
    if cpu_threads is not None:
        return ["CPU threads apply to CPU runs only; leave them empty for a GPU device"]
    return []


_SETTINGS = frozenset(RunConfig.model_fields)


def _address(text: str) -> bool:
    """Whether ``text`` is HOST:PORT (a port from 1 to 65535)."""
    host, _, port = text.rpartition(":")
    return bool(host) and port.isdigit() and 1 <= int(port) <= 65535
