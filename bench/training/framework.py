"""The framework's set-up in a process of its own, shared by the training worker (bench.runs.worker) and the peak
probe's child (bench.hardware.probe): the environment it must have before the framework loads (device visibility,
thread counts, CPU affinity, the Keras backend), the backend's import with its thread and device settings, once per
process, and where a variable's storage lives. Nothing here may run in the server process: importing a framework
there would slow every page and pin GPU memory.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from bench.vocab import settings
from bench.vocab.config import RunConfig
from bench.hardware import devices
from bench.training.parallel import Cluster, gpus_taken, requested_devices

Config = RunConfig | Mapping[str, Any]  # a config as it crosses into the worker's process: read once, by typed()


def typed(config: Config) -> RunConfig:
    """The run's config, typed once where it enters the worker (the supervisor and the probe send its settings)."""
    return config if isinstance(config, RunConfig) else RunConfig.model_validate(dict(config))


def prepare_environment(config: Config) -> dict[str, str]:
    """Environment a worker must have before the framework loads. Returns the variables it set (for the record)."""
    cfg = typed(config)
    changes: dict[str, str] = {"KERAS_BACKEND": cfg.backend, "TF_CPP_MIN_LOG_LEVEL": "2"}
    device = cfg.device
    parallel = requested_devices(cfg)
    if device == "cpu":
        changes["CUDA_VISIBLE_DEVICES"] = ""  # a CPU run must not be able to touch a GPU
        changes["JAX_PLATFORMS"] = "cpu"
        if cfg.backend == "torch":  # Keras's torch backend would pick a Mac's GPU (MPS) for a CPU run
            changes["KERAS_TORCH_DEVICE"] = "cpu"
        if parallel > 1 and changes["KERAS_BACKEND"] == "jax":  # JAX splits the host into N devices at import
            kept = [f for f in settings.env("XLA_FLAGS").split() if "host_platform_device_count" not in f]
            changes["XLA_FLAGS"] = " ".join([*kept, f"--xla_force_host_platform_device_count={parallel}"])
    else:  # gpu:N or gpus: name GPUs by UUID so CUDA's numbering cannot pick a different card than NVML's
        hw = devices.discover()
        changes["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
        if device == "gpus":  # every GPU, or the first N of them (config "devices")
            gpus = [d for d in devices.device_choices(hw) if d != "cpu"]
            changes["CUDA_VISIBLE_DEVICES"] = ",".join(
                devices.cuda_visible_devices_for(d, hw) for d in gpus_taken(gpus, cfg))
        else:
            changes["CUDA_VISIBLE_DEVICES"] = devices.cuda_visible_devices_for(device, hw)
        if cfg.backend == "torch":  # a Mac's GPU through MPS; NVIDIA's and AMD's through torch's cuda device
            changes.update(devices.torch_device_env(device, hw))
        if hw.vendor == "tpu":  # a TPU's chips through JAX: gpu:N holds chip N alone
            changes.update(devices.tpu_device_env(device))
        # Allocate GPU memory as the model needs it: JAX would take 75 % and TensorFlow all of it at start, so NVML's
        # "memory used" would show the allocator's grab instead of what this model and batch size use.
        for name, value in (("XLA_PYTHON_CLIENT_PREALLOCATE", "false"), ("TF_FORCE_GPU_ALLOW_GROWTH", "true")):
            if name not in os.environ:
                changes[name] = value
    threads = cfg.cpu_threads
    if threads:
        for name in ("OMP_NUM_THREADS", "TF_NUM_INTRAOP_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            changes[name] = str(threads)
        changes["TF_NUM_INTEROP_THREADS"] = "1"
        if threads == 1:
            xla = changes.get("XLA_FLAGS", os.environ.get("XLA_FLAGS", ""))
            changes["XLA_FLAGS"] = (xla + " --xla_cpu_multi_thread_eigen=false").strip()
    os.environ.update(changes)
    if threads and hasattr(os, "sched_setaffinity"):
        cores = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, cores[: int(threads)])
    return changes


_SETUP: dict[tuple[Any, ...], tuple[str, list[str]]] = {}  # once per process (a pre-started worker)


def framework_setup(backend: str, threads: int | None, logical_cpus: int = 1,
                     cluster: Cluster | None = None) -> tuple[str, list[str]]:
    """Import the backend, apply thread limits (and split the CPU into ``logical_cpus`` devices under TensorFlow; join
    the multi-worker ``cluster`` under JAX), return (version string, devices it sees). Once per process: TensorFlow
    refuses thread and logical-device settings after its runtime is up, and JAX joins one cluster."""
    key = (backend, threads, logical_cpus, cluster)
    if key not in _SETUP:
        _SETUP[key] = setup_once(backend, threads, logical_cpus, cluster)
    return _SETUP[key]


# Packages Keras and TensorFlow import as they load only for features a run never uses, when they are installed:
# Keras's scikit-learn wrappers and image-gallery plots, TensorFlow Lite's JAX converter. Held back while the framework
# loads, they take 2.4 of the 6.3 CPU-s that loading Keras on TensorFlow costs here (docs/PERFORMANCE-METHOD.md).
NOT_LOADED_WITH = {"tensorflow": ("sklearn", "matplotlib", "jax"), "jax": ("sklearn", "matplotlib"),
                   "torch": ("sklearn", "matplotlib", "jax")}


@contextmanager
def unused_packages_held_back(backend: str) -> Iterator[None]:
    """While the block loads the framework, importing a package of NOT_LOADED_WITH[backend] that is not loaded yet
    fails as if it were not installed (Keras and TensorFlow go on without it); afterwards it imports as usual (the
    digits data set reads scikit-learn)."""
    wanted = NOT_LOADED_WITH[backend] if backend in NOT_LOADED_WITH else ()
    held = [name for name in wanted if name not in sys.modules]
    for name in held:
        # None in sys.modules is the import system's own "not found"
        sys.modules[name] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        for name in held:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]


def load_keras(backend: str) -> Any:
    """Keras on ``backend`` (KERAS_BACKEND set, as prepare_environment sets it), loaded without the packages a run
    never uses."""
    with unused_packages_held_back(backend):
        import keras
    return keras


def setup_once(backend: str, threads: int | None, logical_cpus: int,
               cluster: Cluster | None) -> tuple[str, list[str]]:
    with unused_packages_held_back(backend):
        loaded = load_backend(backend, threads, logical_cpus, cluster)
        import keras  # noqa: F401 - under the same hold: the run's own `import keras` finds it loaded
    return loaded


def load_backend(backend: str, threads: int | None, logical_cpus: int,
                 cluster: Cluster | None) -> tuple[str, list[str]]:
    if backend == "tensorflow":
        import tensorflow as tf

        if logical_cpus >= 2:
            cpu = tf.config.list_physical_devices("CPU")[0]
            tf.config.set_logical_device_configuration(
                cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(logical_cpus)])
        if threads:
            tf.config.threading.set_intra_op_parallelism_threads(int(threads))
            tf.config.threading.set_inter_op_parallelism_threads(1)
        devices = [d.name for d in tf.config.list_logical_devices()]
        return f"tensorflow {tf.__version__}", devices
    if backend == "jax":
        if cluster is not None:  # before JAX computes anything: it waits here until every member has joined
            import keras

            keras.distribution.initialize(job_addresses=",".join(cluster.workers), num_processes=len(cluster.workers),
                                          process_id=cluster.index)
        import jax

        return f"jax {jax.__version__}", [f"{d.platform}:{d.id} ({d.device_kind})" for d in jax.devices()]
    if backend == "torch":
        import torch

        if threads:
            torch.set_num_threads(int(threads))
        devices = ["cpu"] + [f"cuda:{i} ({torch.cuda.get_device_name(i)})" for i in range(torch.cuda.device_count())]
        if torch.backends.mps.is_available():  # a Mac's GPU, through Metal
            devices.append("mps:0")
        return f"torch {torch.__version__}", devices
    raise ValueError(f"unknown Keras backend {backend!r}")


def variable_device(variable: Any) -> str:
    """Where a Keras variable's storage actually lives, as the backend reports it."""
    value = getattr(variable, "value", variable)
    device = getattr(value, "device", None)
    if callable(device):  # jax arrays: .device is a method in some versions
        device = device()
    if device is None and hasattr(value, "devices"):
        device = ",".join(sorted(str(d) for d in value.devices()))
    if hasattr(device, "device_set"):  # a jax array over several devices gives its sharding: name the devices
        device = ",".join(sorted(str(d) for d in getattr(device, "device_set")))
    return str(device)
