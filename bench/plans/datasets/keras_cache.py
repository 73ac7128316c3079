"""The keras downloads (mnist, fashion-mnist, cifar10, imdb): read from the keras cache folder, else downloaded.

The cache files are parsed directly, without keras (``~/.keras/datasets`` or ``$KERAS_HOME/datasets``, or a given
``cache_dir``). When they are absent, a 3 s connectivity check comes first, then ``keras.datasets.<x>.load_data()``;
offline, the error names the file(s) to place and the synthetic set to pick instead.
"""

from __future__ import annotations

import gzip
import io
import os
import pickle
import socket
import threading
import zipfile
from typing import Any, Callable

import numpy as np

from bench.plans.datasets.registry import (
    CONNECT_TIMEOUT_S,
    DATASETS,
    DOWNLOAD_SOCKET_TIMEOUT_S,
    IMDB_NUM_WORDS,
    Dataset,
    DatasetError,
    _make_dataset,
    _pad_sequences,
)

_KERAS_BASE_URL = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"
_CIFAR10_URL = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
_FASHION_FILES = (
    "train-labels-idx1-ubyte.gz",
    "train-images-idx3-ubyte.gz",
    "t10k-labels-idx1-ubyte.gz",
    "t10k-images-idx3-ubyte.gz",
)
_CIFAR_BATCH_FILES = ("data_batch_1", "data_batch_2", "data_batch_3", "data_batch_4", "data_batch_5", "test_batch")
# Where keras leaves the extracted CIFAR-10 batches, relative to the datasets folder: keras 3 extracts its download
# into "cifar-10-batches-py-target/"; older keras, and extracting cifar-10-python.tar.gz by hand, give the second.
_CIFAR_DIRS = (os.path.join("cifar-10-batches-py-target", "cifar-10-batches-py"), "cifar-10-batches-py")

_SYNTHETIC_FALLBACK = {
    "mnist": "synthetic-mnist",
    "fashion-mnist": "synthetic-mnist",
    "cifar10": "synthetic-cifar10",
    "imdb": "synthetic-imdb",
}
_DOWNLOAD_HOST = {
    "mnist": "storage.googleapis.com",
    "fashion-mnist": "storage.googleapis.com",
    "imdb": "storage.googleapis.com",
    "cifar10": "www.cs.toronto.edu",
}
_DOWNLOAD_URL = {
    "mnist": _KERAS_BASE_URL + "mnist.npz",
    "fashion-mnist": _KERAS_BASE_URL + "(4 idx .gz files)",
    "imdb": _KERAS_BASE_URL + "imdb.npz",
    "cifar10": _CIFAR10_URL,
}


def default_cache_dir() -> str:
    """The folder keras caches datasets in: ``$KERAS_HOME/datasets``, else ``~/.keras/datasets``."""
    home = os.environ.get("KERAS_HOME") or os.path.join("~", ".keras")
    return os.path.join(os.path.expanduser(home), "datasets")


def find_cache(name: str, cache_dir: str | None = None) -> str | None:
    """Path of the cached keras files for ``name`` in ``cache_dir`` (default: the keras one), or None if absent.

    For fashion-mnist and cifar10 the path is the folder holding the files.
    """
    if name not in _KERAS_PARSERS:
        raise DatasetError(f"{name!r} is not a keras download; those are {', '.join(_KERAS_PARSERS)}")
    folder = os.path.expanduser(cache_dir) if cache_dir else default_cache_dir()
    if name == "mnist" or name == "imdb":
        path = os.path.join(folder, f"{name}.npz")
        return path if os.path.isfile(path) else None
    if name == "fashion-mnist":
        path = os.path.join(folder, "fashion-mnist")
        return path if all(os.path.isfile(os.path.join(path, f)) for f in _FASHION_FILES) else None
    for sub in _CIFAR_DIRS:
        path = os.path.join(folder, sub)
        if all(os.path.isfile(os.path.join(path, f)) for f in _CIFAR_BATCH_FILES):
            return path
    return None


def load_keras_cached(name: str, cache_dir: str | None = None) -> Dataset:
    """Parse the keras cache files of ``name`` directly (no keras import, no network).

    Formats: mnist.npz (x_train, y_train, x_test, y_test uint8); fashion-mnist/ (4 gzipped idx files);
    cifar-10-batches-py/ (pickled batches data_batch_1..5 and test_batch); imdb.npz (object arrays of word-id lists,
    turned into ids as ``keras.datasets.imdb.load_data(num_words=10000)`` does, then padded to 200).

    Raises:
        DatasetError: the files are not there (naming where they go) or cannot be parsed.
    """
    path = find_cache(name, cache_dir)
    if path is None:
        folder = cache_dir or default_cache_dir()
        raise DatasetError(f"{name} is not cached in {folder}: place {_cache_hint(name, cache_dir)}")
    try:
        arrays = _KERAS_PARSERS[name](path)
    except DatasetError:
        raise
    except Exception as exc:  # any parse failure of a damaged or foreign file
        raise DatasetError(
            f"the cached {name} at {path} cannot be read ({type(exc).__name__}: {exc}); delete it so keras downloads "
            f"it again, or pick {_SYNTHETIC_FALLBACK[name]!r}, generated offline"
        ) from exc
    return _make_dataset(DATASETS[name], arrays)


class _NumpyOnlyUnpickler(pickle.Unpickler):
    """Unpickles numpy arrays (and plain containers) only: a tampered cache file cannot run code."""

    _ALLOWED = frozenset(
        {
            ("numpy", "ndarray"),
            ("numpy", "dtype"),
            ("numpy.core.multiarray", "_reconstruct"),
            ("numpy._core.multiarray", "_reconstruct"),
            ("numpy.core.numeric", "_frombuffer"),  # arrays in pickle protocol 5
            ("numpy._core.numeric", "_frombuffer"),
            ("_codecs", "encode"),  # bytes in pickle protocol 2 written by Python 3
        }
    )

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in self._ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"refusing to unpickle {module}.{name}: only numpy arrays are expected")


def _read_npz_members(path: str) -> dict[str, Any]:
    """All arrays of an .npz; object arrays are unpickled with the numpy-only unpickler."""
    arrays: dict[str, Any] = {}
    with zipfile.ZipFile(path) as archive:
        for member in archive.namelist():
            if not member.endswith(".npy"):
                continue
            buffer = io.BytesIO(archive.read(member))
            try:
                arrays[member[:-4]] = np.lib.format.read_array(buffer, allow_pickle=False)
            except ValueError:  # an object array: skip the header, then unpickle numpy-only
                buffer.seek(0)
                major, _ = np.lib.format.read_magic(buffer)
                if major == 1:
                    np.lib.format.read_array_header_1_0(buffer)
                else:
                    np.lib.format.read_array_header_2_0(buffer)
                arrays[member[:-4]] = _NumpyOnlyUnpickler(buffer).load()
    return arrays


def _parse_mnist(path: str) -> tuple[np.ndarray, ...]:
    with np.load(path, allow_pickle=False) as f:
        return f["x_train"], f["y_train"], f["x_test"], f["y_test"]


def _parse_fashion(folder: str) -> tuple[np.ndarray, ...]:
    def read(fname: str, offset: int) -> np.ndarray:
        with gzip.open(os.path.join(folder, fname), "rb") as f:
            return np.frombuffer(f.read(), np.uint8, offset=offset)

    y_train, y_test = read(_FASHION_FILES[0], 8), read(_FASHION_FILES[2], 8)
    x_train = read(_FASHION_FILES[1], 16).reshape(len(y_train), 28, 28)
    x_test = read(_FASHION_FILES[3], 16).reshape(len(y_test), 28, 28)
    return x_train, y_train, x_test, y_test


def _parse_cifar_batch(path: str) -> tuple[np.ndarray, np.ndarray]:
    with open(path, "rb") as f:
        batch = _NumpyOnlyUnpickler(f, encoding="bytes").load()
    data = np.asarray(batch[b"data"], dtype=np.uint8)
    return data.reshape(len(data), 3, 32, 32).transpose(0, 2, 3, 1), np.asarray(batch[b"labels"])


def _parse_cifar(folder: str) -> tuple[np.ndarray, ...]:
    parts = [_parse_cifar_batch(os.path.join(folder, f)) for f in _CIFAR_BATCH_FILES[:5]]
    x_test, y_test = _parse_cifar_batch(os.path.join(folder, "test_batch"))
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]), x_test, y_test


def _imdb_ids(x_train: Any, y_train: Any, x_test: Any, y_test: Any) -> tuple[np.ndarray, ...]:
    """What keras.datasets.imdb.load_data(num_words=10000) does with the raw file (defaults: seed 113, start 1,
    oov 2, index_from 3), then padding to TEXT_LENGTH."""
    rng = np.random.RandomState(113)
    order_train = np.arange(len(x_train))
    rng.shuffle(order_train)
    order_test = np.arange(len(x_test))
    rng.shuffle(order_test)
    out: list[np.ndarray] = []
    for xs, ys, order in ((x_train, y_train, order_train), (x_test, y_test, order_test)):
        seqs = []
        for i in order:
            ids = np.concatenate([[1], np.asarray(xs[i], dtype=np.int64) + 3])
            ids[ids >= IMDB_NUM_WORDS] = 2
            seqs.append(ids)
        out.extend([_pad_sequences(seqs), np.asarray(ys)[order]])
    return tuple(out)


def _parse_imdb(path: str) -> tuple[np.ndarray, ...]:
    arrays = _read_npz_members(path)
    return _imdb_ids(arrays["x_train"], arrays["y_train"], arrays["x_test"], arrays["y_test"])


_KERAS_PARSERS: dict[str, Callable[[str], tuple[np.ndarray, ...]]] = {
    "mnist": _parse_mnist,
    "fashion-mnist": _parse_fashion,
    "cifar10": _parse_cifar,
    "imdb": _parse_imdb,
}


def _cache_hint(name: str, cache_dir: str | None) -> str:
    """The file(s) to place, in words, e.g. "~/.keras/datasets/mnist.npz"."""
    if cache_dir:
        folder = cache_dir.rstrip("/\\")
    elif os.environ.get("KERAS_HOME"):
        folder = default_cache_dir()
    else:
        folder = os.path.join("~", ".keras", "datasets")
    if name in ("mnist", "imdb"):
        return os.path.join(folder, f"{name}.npz")
    if name == "fashion-mnist":
        return f"{os.path.join(folder, 'fashion-mnist')}/ with {', '.join(_FASHION_FILES)}"
    return (
        f"{os.path.join(folder, 'cifar-10-batches-py')}/ (data_batch_1..5, test_batch: cifar-10-python.tar.gz "
        f"extracted there)"
    )


def _can_reach(host: str, port: int = 443, timeout_s: float = CONNECT_TIMEOUT_S) -> bool:
    """Whether a TCP connection to host:port opens within timeout_s, name lookup included (bounded by a thread)."""
    result: list[bool] = []

    def attempt() -> None:
        try:
            with socket.create_connection((host, port), timeout=timeout_s):
                result.append(True)
        except OSError:
            result.append(False)

    thread = threading.Thread(target=attempt, name=f"bench-connect-{host}", daemon=True)
    thread.start()
    thread.join(timeout_s)
    return bool(result and result[0])


def _download_with_keras(name: str) -> tuple[np.ndarray, ...]:
    """keras.datasets.<name>.load_data(), with a socket timeout so a stalled transfer fails instead of hanging.

    The timeout is process-wide while the download runs (this runs in a worker process, not the dashboard).
    """
    import keras

    loaders: dict[str, Callable[[], Any]] = {
        "mnist": keras.datasets.mnist.load_data,
        "fashion-mnist": keras.datasets.fashion_mnist.load_data,
        "cifar10": keras.datasets.cifar10.load_data,
        "imdb": lambda: keras.datasets.imdb.load_data(num_words=IMDB_NUM_WORDS),
    }
    previous = socket.getdefaulttimeout()
    socket.setdefaulttimeout(DOWNLOAD_SOCKET_TIMEOUT_S)
    try:
        (x_train, y_train), (x_test, y_test) = loaders[name]()
    finally:
        socket.setdefaulttimeout(previous)
    if name == "imdb":
        return _pad_sequences(x_train), np.asarray(y_train), _pad_sequences(x_test), np.asarray(y_test)
    return x_train, y_train, x_test, y_test


def _offline_error(name: str, cache_dir: str | None, reason: str) -> DatasetError:
    return DatasetError(
        f"{DATASETS[name].title.replace(' (download)', '')} is not cached at {_cache_hint(name, cache_dir)} and the "
        f"download from {_DOWNLOAD_URL[name]} failed ({reason}). Place the file(s) there, or pick "
        f"{_SYNTHETIC_FALLBACK[name]!r}, generated offline."
    )


def _load_keras(name: str, cache_dir: str | None) -> Dataset:
    if find_cache(name, cache_dir) is not None:
        return load_keras_cached(name, cache_dir)
    host = _DOWNLOAD_HOST[name]
    if not _can_reach(host):
        raise _offline_error(name, cache_dir, f"cannot reach {host}:443 within {CONNECT_TIMEOUT_S:g} s; offline?")
    try:
        arrays = _download_with_keras(name)
    except ImportError as exc:
        raise DatasetError(
            f"downloading {name} needs keras (pip install keras tensorflow), or pick {_SYNTHETIC_FALLBACK[name]!r}"
        ) from exc
    except Exception as exc:  # network errors, timeouts, bad hashes: all mean "no data"
        raise _offline_error(name, cache_dir, f"{type(exc).__name__}: {exc}") from exc
    return _make_dataset(DATASETS[name], arrays)
