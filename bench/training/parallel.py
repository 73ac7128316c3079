"""Training on several devices at once, through the frameworks' own engines (the project writes no distribution of
its own): TensorFlow's MirroredStrategy and Keras's DataParallel on JAX for N devices in one process, and DataParallel
over the processes of a multi-worker run that keras.distribution.initialize joined. Imported by the worker process
only, after its environment is set; the frameworks are imported inside the functions that use them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, TypeVar

from bench.vocab.config import RunConfig

T = TypeVar("T")


def requested_devices(config: RunConfig) -> int:
    """The devices a run asked to train data-parallel on (config "devices"); 1 when it named none."""
    value = config.devices
    return value if value is not None and value > 1 else 1


def gpus_taken(gpus: Sequence[T], config: RunConfig) -> list[T]:
    """The GPUs a 'gpus' run trains on, of those listed in order: the first N when it names devices N, every one when
    it names none. The one rule of what 'gpus' means, applied when the worker narrows CUDA_VISIBLE_DEVICES and again
    when Keras's DataParallel picks its devices under JAX."""
    return list(gpus[:requested_devices(config)]) if config.devices else list(gpus)


@dataclasses.dataclass(frozen=True)
class Cluster:
    """This process as one member of a multi-worker run: every member's HOST:PORT (the first coordinates) and its
    place among them."""

    workers: tuple[str, ...]
    index: int

    @classmethod
    def of(cls, config: RunConfig) -> Cluster | None:
        workers = config.worker_addresses()
        return cls(tuple(workers), int(config.worker_index or 0)) if workers else None


@dataclasses.dataclass(frozen=True)
class Parallel:
    """Data-parallel training on several devices, through the engine TensorFlow or Keras provides (the project writes
    no distribution of its own): each device holds the model and trains batch size / N samples of every step."""

    engine: str  # "tf.distribute.MirroredStrategy" or "keras.distribution.DataParallel"
    handle: Any  # the strategy or the distribution; its scope() is where the model is built and trained
    devices: list[str]  # the replicas, as the engine names them (every member's, in a multi-worker run)
    cluster: dict[str, Any] | None = None  # a multi-worker run: id, index, size, workers (see _multi_worker)

    @property
    def replicas(self) -> int:
        return len(self.devices)


def _mirrored(cfg: RunConfig, count: int) -> Parallel:
    import tensorflow as tf

    if cfg.device == "gpus":
        strategy = tf.distribute.MirroredStrategy()  # every GPU this worker may see (the first N, when asked)
    else:
        strategy = tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(count)])
    return Parallel("tf.distribute.MirroredStrategy", strategy, list(strategy.extended.worker_devices))


def _keras_data_parallel(cfg: RunConfig, count: int) -> Parallel:
    import jax
    import keras

    visible = jax.devices()
    chosen = gpus_taken(visible, cfg) if cfg.device == "gpus" else visible[:count]
    distribution = keras.distribution.DataParallel(devices=chosen)
    return Parallel("keras.distribution.DataParallel", distribution, [str(d) for d in chosen])


DATA_PARALLEL = {"tensorflow": _mirrored, "jax": _keras_data_parallel}


def _multi_worker(cluster: Cluster) -> Parallel:
    """keras.distribution.DataParallel over every member's devices. Each member feeds its own shard of the data
    (auto-sharding is for tf.data only), and the coordinator draws the run's id, which every member records, so the
    members' records are known as one run wherever they are read."""
    import secrets

    import jax
    import keras
    import numpy as np
    from jax.experimental import multihost_utils

    distribution = keras.distribution.DataParallel(devices=jax.devices())
    distribution.auto_shard_dataset = False  # each member passes its own shard (shard)
    token = int(multihost_utils.broadcast_one_to_all(np.int32(secrets.randbelow(2**31))))
    info = {"id": f"{cluster.workers[0]}/{token:08x}", "index": cluster.index, "size": len(cluster.workers),
            "workers": list(cluster.workers), "process": jax.process_index()}
    return Parallel("keras.distribution.DataParallel over processes (jax.distributed)", distribution,
                    [str(d) for d in jax.devices()], cluster=info)


def shard(data: Any, y_train: Any, y_test: Any, cluster: Cluster) -> tuple[Any, Any, Any]:
    """This member's contiguous share of each split (every split first cut to a multiple of the member count, so
    every member runs the same number of steps: a member with one more step would wait for the others for ever)."""
    data, y_train, y_test = split_evenly(data, y_train, y_test, len(cluster.workers))
    n = len(cluster.workers)

    def part(array: Any) -> Any:
        size = len(array) // n
        return array[cluster.index * size:(cluster.index + 1) * size]

    local = dataclasses.replace(data, x_train=part(data.x_train), y_train=part(data.y_train),
                                x_test=part(data.x_test), y_test=part(data.y_test),
                                info=dataclasses.replace(data.info, n_train=len(part(data.x_train)),
                                                         n_test=len(part(data.x_test))))
    return local, part(y_train), part(y_test)


# keras.distribution.DataParallel shards every batch over the devices, the last one too, so each split's size must be
# a multiple of the device count (TensorFlow's MirroredStrategy splits a short last batch unevenly by itself).
EVEN_SPLIT_BACKENDS = ("jax",)


def split_evenly(data: Any, y_train: Any, y_test: Any, replicas: int) -> tuple[Any, Any, Any]:
    """The data with each split cut to a multiple of ``replicas`` (at most replicas - 1 samples dropped from each);
    the dataset's info then counts what trains."""
    n_train, n_test = len(data.x_train) // replicas * replicas, len(data.x_test) // replicas * replicas
    cut = dataclasses.replace(data, x_train=data.x_train[:n_train], y_train=data.y_train[:n_train],
                              x_test=data.x_test[:n_test], y_test=data.y_test[:n_test],
                              info=dataclasses.replace(data.info, n_train=n_train, n_test=n_test))
    return cut, y_train[:n_train], y_test[:n_test]


def logical_cpus(config: RunConfig) -> int:
    """Logical CPU devices TensorFlow must make at start-up: the run's devices on a CPU target, else 1."""
    return requested_devices(config) if config.device == "cpu" else 1


def parallel_of(cfg: RunConfig) -> Parallel | None:
    """Data-parallel on ``cfg.devices`` devices (every GPU for 'gpus' when it names none), else None for one device.

    Raises:
        RuntimeError: the backend has no data-parallel engine in Keras (torch).
    """
    cluster = Cluster.of(cfg)
    if cluster is not None:
        return _multi_worker(cluster)
    count = requested_devices(cfg)
    if count < 2 and cfg.device != "gpus":
        return None
    engine = DATA_PARALLEL.get(cfg.backend)
    if engine is None:
        raise RuntimeError(f"training on several devices needs the TensorFlow or JAX backend, not {cfg.backend}: "
                           "Keras has no data-parallel distribution there; pick a single device or set KERAS_BACKEND "
                           "to tensorflow or jax")
    return engine(cfg, count)
