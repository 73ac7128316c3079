"""Dataset loaders: turn a registry name into train/test numpy arrays in one convention, offline whenever possible.

Four kinds of source sit behind one call, ``load(name)``:

- synthetic sets (``synthetic-mnist``, ``synthetic-cifar10``, ``synthetic-imdb``): generated with numpy from a seed,
  shaped like the real sets, learnable, never touching the network. ``synthetic-mnist`` is the default.
- ``digits``: scikit-learn's bundled 8x8 handwritten digits (real data, shipped with scikit-learn, no network).
- keras downloads (``mnist``, ``fashion-mnist``, ``cifar10``, ``imdb``): read straight from the keras cache folder
  (``~/.keras/datasets`` or ``$KERAS_HOME/datasets``, or ``cache_dir``) when the files are there; otherwise a 3 s
  connectivity check, then ``keras.datasets.<x>.load_data()``. Offline, the error names the file to place.
- ``npz``: the user's own file holding ``x_train, y_train, x_test, y_test``, validated by ``check_npz``.

Every loader returns the same convention: images float32 in [0, 1] shaped (N, H, W, C) (or (N, D) for flat
features); text int32 token ids shaped (N, 200) with 0 = padding; labels int32 class indices shaped (N,).

Only numpy and the standard library are imported at module level; keras and scikit-learn are imported inside the
functions that need them, so the Streamlit server can import this module (and call ``get_info``) without TensorFlow.
"""

from __future__ import annotations

import dataclasses
import functools
import gzip
import io
import os
import pickle
import socket
import threading
import zipfile
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

__all__ = [
    "DATASETS",
    "DEFAULT_DATASET",
    "Dataset",
    "DatasetError",
    "DatasetInfo",
    "check_npz",
    "default_cache_dir",
    "find_cache",
    "get_info",
    "load",
    "load_keras_cached",
]


class DatasetError(ValueError):
    """A dataset cannot be provided; the message says what is wrong and what to do."""


@dataclass(frozen=True)
class DatasetInfo:
    """What a dataset is, without its arrays (cheap: building one never loads data or imports keras)."""

    name: str  # registry key, e.g. "synthetic-mnist"
    title: str  # short label for a select box
    description: str  # one line: what it is, shapes, synthetic or real, source
    input_shape: tuple[int, ...]  # per sample, e.g. (28, 28, 1), or (200,) for token sequences
    num_classes: int
    n_train: int  # samples in the training split
    n_test: int  # samples in the test split
    modality: str  # "image" or "text"
    vocab_size: int | None  # text only: token ids are in 0..vocab_size-1, 0 = padding
    synthetic: bool  # generated with numpy, not real data
    needs_download: bool  # fetched by keras.datasets unless already cached
    cache_file: str | None  # where keras keeps it, e.g. "~/.keras/datasets/mnist.npz" (named in the offline error)


@dataclass
class Dataset:
    """A loaded dataset: its info (reflecting the real returned sizes) and its four arrays."""

    info: DatasetInfo
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray


TEXT_LENGTH = 200  # tokens per sequence for the text sets (imdb, synthetic-imdb)
IMDB_NUM_WORDS = 10000  # vocabulary kept for imdb, as keras.datasets.imdb.load_data(num_words=10000)
NPZ_MAX_BYTES = 200 * 2**20  # default size limit of a user's .npz (on disk, and its arrays uncompressed)
NPZ_MAX_CLASSES = 10_000  # more outputs than this is a mislabelled file, not a classifier worth timing
NPZ_MAX_VOCAB = 1_000_000  # largest token id + 1 accepted from a user's text .npz
NPZ_KEYS = ("x_train", "y_train", "x_test", "y_test")
CONNECT_TIMEOUT_S = 3.0  # connectivity check before a keras download
DOWNLOAD_SOCKET_TIMEOUT_S = 60.0  # a stalled download fails after this instead of hanging
_TASK_SEED = 20240917  # fixes the synthetic *tasks* (class prototypes, cue words); the run seed varies the samples
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


def _info(**fields: Any) -> DatasetInfo:
    defaults: dict[str, Any] = {
        "modality": "image",
        "vocab_size": None,
        "synthetic": False,
        "needs_download": False,
        "cache_file": None,
    }
    defaults.update(fields)
    return DatasetInfo(**defaults)


DATASETS: dict[str, DatasetInfo] = {
    "synthetic-mnist": _info(
        name="synthetic-mnist",
        title="Synthetic MNIST-shaped (offline)",
        description=(
            "Synthetic MNIST-shaped stroke patterns, 28x28x1 grayscale, 10 classes, 60000 train / 10000 test; "
            "generated offline with numpy from the seed; not real MNIST"
        ),
        input_shape=(28, 28, 1),
        num_classes=10,
        n_train=60000,
        n_test=10000,
        synthetic=True,
    ),
    "synthetic-cifar10": _info(
        name="synthetic-cifar10",
        title="Synthetic CIFAR-10-shaped (offline)",
        description=(
            "Synthetic CIFAR-10-shaped colour textures, 32x32x3, 10 classes, 50000 train / 10000 test; "
            "generated offline with numpy from the seed; not real CIFAR-10"
        ),
        input_shape=(32, 32, 3),
        num_classes=10,
        n_train=50000,
        n_test=10000,
        synthetic=True,
    ),
    "synthetic-imdb": _info(
        name="synthetic-imdb",
        title="Synthetic IMDB-shaped text (offline)",
        description=(
            f"Synthetic IMDB-shaped token sequences, length {TEXT_LENGTH}, vocabulary {IMDB_NUM_WORDS}, 2 classes, "
            "25000 train / 25000 test; random words with class-dependent cue words, generated offline; not real reviews"
        ),
        input_shape=(TEXT_LENGTH,),
        num_classes=2,
        n_train=25000,
        n_test=25000,
        modality="text",
        vocab_size=IMDB_NUM_WORDS,
        synthetic=True,
    ),
    "digits": _info(
        name="digits",
        title="Digits 8x8 (real, bundled)",
        description=(
            "Real handwritten digits from scikit-learn (UCI optical digits), 8x8x1 grayscale, 10 classes, "
            "1437 train / 360 test by a fixed split; bundled with scikit-learn, no download"
        ),
        input_shape=(8, 8, 1),
        num_classes=10,
        n_train=1437,
        n_test=360,
    ),
    "mnist": _info(
        name="mnist",
        title="MNIST (download)",
        description="Real MNIST handwritten digits, 28x28x1 grayscale, 10 classes, 60000 train / 10000 test; keras.datasets download (11 MB)",
        input_shape=(28, 28, 1),
        num_classes=10,
        n_train=60000,
        n_test=10000,
        needs_download=True,
        cache_file="~/.keras/datasets/mnist.npz",
    ),
    "fashion-mnist": _info(
        name="fashion-mnist",
        title="Fashion-MNIST (download)",
        description="Real Zalando clothing images, 28x28x1 grayscale, 10 classes, 60000 train / 10000 test; keras.datasets download (30 MB)",
        input_shape=(28, 28, 1),
        num_classes=10,
        n_train=60000,
        n_test=10000,
        needs_download=True,
        cache_file="~/.keras/datasets/fashion-mnist/",
    ),
    "cifar10": _info(
        name="cifar10",
        title="CIFAR-10 (download)",
        description="Real CIFAR-10 colour photos, 32x32x3, 10 classes, 50000 train / 10000 test; keras.datasets download (163 MB)",
        input_shape=(32, 32, 3),
        num_classes=10,
        n_train=50000,
        n_test=10000,
        needs_download=True,
        cache_file="~/.keras/datasets/cifar-10-batches-py-target/cifar-10-batches-py/",
    ),
    "imdb": _info(
        name="imdb",
        title="IMDB reviews (download)",
        description=(
            f"Real IMDB movie reviews as token ids (top {IMDB_NUM_WORDS} words), padded/truncated to {TEXT_LENGTH}, "
            "2 classes (sentiment), 25000 train / 25000 test; keras.datasets download (17 MB)"
        ),
        input_shape=(TEXT_LENGTH,),
        num_classes=2,
        n_train=25000,
        n_test=25000,
        modality="text",
        vocab_size=IMDB_NUM_WORDS,
        needs_download=True,
        cache_file="~/.keras/datasets/imdb.npz",
    ),
    "npz": _info(
        name="npz",
        title="Your own .npz file",
        description=(
            "Your .npz file with arrays x_train, y_train, x_test, y_test; shapes, classes and sizes are read from "
            "the file (the zeros here are placeholders until a file is given)"
        ),
        input_shape=(),
        num_classes=0,
        n_train=0,
        n_test=0,
    ),
}
DEFAULT_DATASET = "synthetic-mnist"

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


# ---------------------------------------------------------------------------------------------------------------------
# Public API


def get_info(name: str, npz_path: str | None = None) -> DatasetInfo:
    """Describe a dataset without loading its arrays (and without importing keras, TensorFlow or scikit-learn).

    Args:
        name: a key of ``DATASETS``.
        npz_path: the user's file, for ``name == "npz"`` only (ignored otherwise).

    Returns:
        The registry entry; for ``"npz"`` the info read from the file (shapes, classes, sizes).

    Raises:
        DatasetError: unknown name (the message lists the valid ones), ``"npz"`` without a path, or a bad file.
    """
    _check_name(name)
    if name != "npz":
        return DATASETS[name]
    if not npz_path:
        raise DatasetError("dataset 'npz' needs a file: pass npz_path (an .npz with x_train, y_train, x_test, y_test)")
    return check_npz(npz_path)


def load(
    name: str,
    *,
    seed: int = 0,
    limit_samples: int | None = None,
    npz_path: str | None = None,
    cache_dir: str | None = None,
) -> Dataset:
    """Load (or generate) a dataset in the common convention.

    Args:
        name: a key of ``DATASETS``.
        seed: seeds the synthetic generators (same seed, same bytes); the real sets ignore it.
        limit_samples: keep only the first N training samples, and min(n_test, max(N // 5, 1)) test samples;
            None keeps everything. Synthetic sets then generate only what is kept.
        npz_path: the user's file, for ``name == "npz"``.
        cache_dir: folder holding the keras cache files (as ``~/.keras/datasets``); default: the keras one.

    Returns:
        A Dataset whose info reflects the sizes actually returned.

    Raises:
        DatasetError: unknown name, bad limit, bad .npz, or a keras set neither cached nor downloadable.
    """
    _check_name(name)
    if limit_samples is not None and (
        isinstance(limit_samples, bool) or not isinstance(limit_samples, (int, np.integer)) or limit_samples < 1
    ):
        raise DatasetError(f"limit_samples must be a whole number >= 1, or None for the whole set (got {limit_samples!r})")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise DatasetError(f"seed must be a whole number >= 0 (got {seed!r})")
    seed = int(seed)
    limit = None if limit_samples is None else int(limit_samples)

    if name in _GENERATORS:
        info = DATASETS[name]
        n_train, n_test = _limited_sizes(info.n_train, info.n_test, limit)
        x_train, y_train, x_test, y_test = _GENERATORS[name](n_train, n_test, seed)
        dataset = Dataset(info, x_train, y_train, x_test, y_test)
    elif name == "digits":
        dataset = _load_digits()
    elif name == "npz":
        if not npz_path:
            raise DatasetError("dataset 'npz' needs a file: pass npz_path (an .npz with x_train, y_train, x_test, y_test)")
        info, arrays = _read_npz(npz_path, NPZ_MAX_BYTES)
        dataset = Dataset(info, *_npz_to_convention(info, arrays))
    else:
        dataset = _load_keras(name, cache_dir)
    return _limit(dataset, limit)


def check_npz(path: str, max_bytes: int = NPZ_MAX_BYTES) -> DatasetInfo:
    """Validate a user's .npz and describe it.

    The file must hold exactly x_train, y_train, x_test, y_test (no object arrays); x numeric and finite with the same
    per-sample shape in both splits; y whole-number class indices 0..K-1 (K = max label + 1 >= 2), one per sample.
    x of shape (N, H, W) gains a channel axis, (N, H, W, C) is kept, (N, L) integers are token ids (text, vocabulary
    max id + 1), (N, D) floats are flat features. Results are cached per (path, size, mtime).

    Raises:
        DatasetError: what is wrong with the file and what to do about it.
    """
    try:
        stat = os.stat(path)
    except OSError:
        return _read_npz(path, max_bytes)[0]  # raises the "not found" message
    return _check_npz_cached(os.path.realpath(path), stat.st_size, stat.st_mtime_ns, max_bytes)


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


# ---------------------------------------------------------------------------------------------------------------------
# Small helpers


def _check_name(name: str) -> None:
    if not isinstance(name, str) or name not in DATASETS:
        raise DatasetError(f"unknown dataset {name!r}; pick one of: {', '.join(DATASETS)}")


def _limited_sizes(n_train: int, n_test: int, limit: int | None) -> tuple[int, int]:
    if limit is None:
        return n_train, n_test
    return min(n_train, limit), min(n_test, max(limit // 5, 1))


def _limit(dataset: Dataset, limit: int | None) -> Dataset:
    """Truncate to the limited sizes (copies, so the full arrays can be freed) and make info match the arrays."""
    n_train, n_test = _limited_sizes(len(dataset.x_train), len(dataset.x_test), limit)
    if n_train < len(dataset.x_train) or n_test < len(dataset.x_test):
        dataset = Dataset(
            dataset.info,
            dataset.x_train[:n_train].copy(),
            dataset.y_train[:n_train].copy(),
            dataset.x_test[:n_test].copy(),
            dataset.y_test[:n_test].copy(),
        )
    info = dataclasses.replace(
        dataset.info,
        n_train=len(dataset.x_train),
        n_test=len(dataset.x_test),
        input_shape=tuple(int(d) for d in dataset.x_train.shape[1:]),
    )
    return dataclasses.replace(dataset, info=info)


def _images_to_convention(x: np.ndarray) -> np.ndarray:
    """uint8 (N, H, W[, C]) -> float32 (N, H, W, C) in [0, 1]; channels-first CIFAR is turned channels-last."""
    x = np.asarray(x)
    if x.ndim == 3:
        x = x[..., np.newaxis]
    elif x.ndim == 4 and x.shape[1] in (1, 3) and x.shape[-1] not in (1, 3):
        x = x.transpose(0, 2, 3, 1)
    out = np.empty(x.shape, dtype=np.float32)
    np.multiply(x, np.float32(1.0 / 255.0), out=out, casting="unsafe")
    return out


def _labels_to_convention(y: Any) -> np.ndarray:
    return np.asarray(y).reshape(-1).astype(np.int32)


def _make_dataset(info: DatasetInfo, arrays: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]) -> Dataset:
    x_train, y_train, x_test, y_test = arrays
    if info.modality == "image":
        x_train, x_test = _images_to_convention(x_train), _images_to_convention(x_test)
    return Dataset(info, x_train, _labels_to_convention(y_train), x_test, _labels_to_convention(y_test))


def _pad_sequences(sequences: Any, maxlen: int = TEXT_LENGTH) -> np.ndarray:
    """Like keras.utils.pad_sequences(maxlen=maxlen) (pre-padding with 0, pre-truncation), in numpy, as int32."""
    out = np.zeros((len(sequences), maxlen), dtype=np.int32)
    for i, seq in enumerate(sequences):
        tail = np.asarray(seq, dtype=np.int64)[-maxlen:]
        if len(tail):
            out[i, maxlen - len(tail) :] = tail
    return out


# ---------------------------------------------------------------------------------------------------------------------
# Synthetic generators: (n_train, n_test, seed) -> x_train, y_train, x_test, y_test


def _shift_bank(prototypes: np.ndarray, max_shift: int) -> np.ndarray:
    """(K, H, W, C) -> (K * S, H*W*C) with every shift in [-max_shift, max_shift]^2; row k*S + s is class k."""
    shifts = [(dy, dx) for dy in range(-max_shift, max_shift + 1) for dx in range(-max_shift, max_shift + 1)]
    bank = np.stack([np.roll(prototypes, shift, axis=(1, 2)) for shift in shifts], axis=1)
    return bank.reshape(len(prototypes) * len(shifts), -1).astype(np.float32)


@functools.lru_cache(maxsize=None)
def _stroke_bank() -> tuple[np.ndarray, int]:
    """Ten digit-like prototypes (smooth random polylines) at 28x28, shifted by up to 2 pixels each way."""
    rng = np.random.default_rng(_TASK_SEED)
    yy, xx = np.mgrid[0:28, 0:28].astype(np.float32)
    prototypes = np.empty((10, 28, 28, 1), dtype=np.float32)
    for k in range(10):
        corners = rng.uniform(7.0, 21.0, size=(int(rng.integers(3, 6)), 2))
        t = np.linspace(0.0, 1.0, 12, endpoint=False)
        points = np.concatenate([a + (b - a) * t[:, None] for a, b in zip(corners[:-1], corners[1:])])
        d2 = (yy[None] - points[:, 0, None, None]) ** 2 + (xx[None] - points[:, 1, None, None]) ** 2
        ink = np.exp(-d2 / (2 * 1.1**2)).sum(axis=0)
        prototypes[k, :, :, 0] = np.tanh(3.0 * ink / ink.max())
    return _shift_bank(prototypes, 2), 25


@functools.lru_cache(maxsize=None)
def _texture_bank() -> tuple[np.ndarray, int]:
    """Ten colour-texture prototypes (sums of low-frequency waves per channel) at 32x32x3, shifted up to 3 pixels."""
    rng = np.random.default_rng(_TASK_SEED + 1)
    yy, xx = np.mgrid[0:32, 0:32].astype(np.float32) / 32.0
    prototypes = np.empty((10, 32, 32, 3), dtype=np.float32)
    for k in range(10):
        base = rng.uniform(0.25, 0.75, size=3)
        for c in range(3):
            field = np.zeros((32, 32), dtype=np.float32)
            for _ in range(3):
                fy, fx = rng.integers(-3, 4, size=2)
                field += np.cos(2 * np.pi * (fy * yy + fx * xx) + rng.uniform(0, 2 * np.pi))
            prototypes[k, :, :, c] = base[c] + 0.12 * field
    return _shift_bank(np.clip(prototypes, 0.0, 1.0), 3), 49


def _synthetic_images(
    n: int,
    rng: np.random.Generator,
    bank: np.ndarray,
    n_shifts: int,
    shape: tuple[int, ...],
    *,
    noise: float,
    distractor: float,
    chunk: int = 8192,
) -> tuple[np.ndarray, np.ndarray]:
    """Class prototype (random shift and intensity) + a faint prototype of another class + noise, clipped to [0, 1].

    The noise is uniform with standard deviation ``noise``, drawn as uint8 (5x faster than gaussian float32 here).
    """
    num_classes = len(bank) // n_shifts
    y = rng.integers(0, num_classes, size=n).astype(np.int32)
    x = np.empty((n, bank.shape[1]), dtype=np.float32)
    noise_scale = np.float32(noise * np.sqrt(12.0) / 256.0)  # uint8 uniform 0..255 -> std `noise`
    tmp = np.empty((min(chunk, n), bank.shape[1]), dtype=np.float32)
    for start in range(0, n, chunk):
        stop = min(start + chunk, n)
        m = stop - start
        own = y[start:stop] * n_shifts + rng.integers(0, n_shifts, size=m)
        other_class = (y[start:stop] + rng.integers(1, num_classes, size=m)) % num_classes
        other = other_class * n_shifts + rng.integers(0, n_shifts, size=m)
        gain = rng.uniform(0.6, 1.1, size=(m, 1)).astype(np.float32)
        offset = rng.uniform(-0.1, 0.1, size=(m, 1)).astype(np.float32) - np.float32(127.5) * noise_scale
        block, scratch = x[start:stop], tmp[:m]
        np.multiply(bank[own], gain, out=block)
        np.multiply(bank[other], np.float32(distractor), out=scratch)
        block += scratch
        block += offset
        np.multiply(rng.integers(0, 256, size=block.shape, dtype=np.uint8), noise_scale, out=scratch)
        block += scratch
        np.clip(block, 0.0, 1.0, out=block)
    return x.reshape((n, *shape)), y


def _generate_mnist(n_train: int, n_test: int, seed: int) -> tuple[np.ndarray, ...]:
    bank, n_shifts = _stroke_bank()
    rng = np.random.default_rng(seed)
    x_train, y_train = _synthetic_images(n_train, rng, bank, n_shifts, (28, 28, 1), noise=0.25, distractor=0.25)
    x_test, y_test = _synthetic_images(n_test, rng, bank, n_shifts, (28, 28, 1), noise=0.25, distractor=0.25)
    return x_train, y_train, x_test, y_test


def _generate_cifar10(n_train: int, n_test: int, seed: int) -> tuple[np.ndarray, ...]:
    bank, n_shifts = _texture_bank()
    rng = np.random.default_rng(seed)
    x_train, y_train = _synthetic_images(n_train, rng, bank, n_shifts, (32, 32, 3), noise=0.4, distractor=0.7)
    x_test, y_test = _synthetic_images(n_test, rng, bank, n_shifts, (32, 32, 3), noise=0.4, distractor=0.7)
    return x_train, y_train, x_test, y_test


@functools.lru_cache(maxsize=None)
def _text_task() -> tuple[np.ndarray, np.ndarray]:
    """The fixed word distribution (Zipf-like over ids 3..vocab-1) as a CDF, and 150 cue words per class."""
    rng = np.random.default_rng(_TASK_SEED + 2)
    ids = np.arange(3, IMDB_NUM_WORDS)
    weights = 1.0 / (np.arange(len(ids)) + 20.0)
    cdf = np.cumsum(weights / weights.sum())
    cues = rng.choice(np.arange(2000, 9000), size=(2, 150), replace=False).astype(np.int32)
    return cdf, cues


def _synthetic_text(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Reviews of random length 40..200: start token 1, Zipf-like words, class cue words 6% vs 2% of the time."""
    cdf, cues = _text_task()
    y = rng.integers(0, 2, size=n).astype(np.int32)
    words = (np.searchsorted(cdf, rng.random((n, TEXT_LENGTH))) + 3).astype(np.int32)
    np.minimum(words, IMDB_NUM_WORDS - 1, out=words)
    u = rng.random((n, TEXT_LENGTH))
    pick = rng.integers(0, cues.shape[1], size=(n, TEXT_LENGTH))
    own = u < 0.06
    other = (u >= 0.06) & (u < 0.08)
    words[own] = cues[np.broadcast_to(y[:, None], own.shape)[own], pick[own]]
    words[other] = cues[np.broadcast_to(1 - y[:, None], other.shape)[other], pick[other]]
    lengths = rng.integers(40, TEXT_LENGTH + 1, size=n)
    first = TEXT_LENGTH - lengths  # pre-padding, as keras pad_sequences
    positions = np.arange(TEXT_LENGTH)[None, :]
    words[positions < first[:, None]] = 0
    words[np.arange(n), first] = 1
    return words, y


def _generate_imdb(n_train: int, n_test: int, seed: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    x_train, y_train = _synthetic_text(n_train, rng)
    x_test, y_test = _synthetic_text(n_test, rng)
    return x_train, y_train, x_test, y_test


_GENERATORS: dict[str, Callable[[int, int, int], tuple[np.ndarray, ...]]] = {
    "synthetic-mnist": _generate_mnist,
    "synthetic-cifar10": _generate_cifar10,
    "synthetic-imdb": _generate_imdb,
}


# ---------------------------------------------------------------------------------------------------------------------
# scikit-learn digits


def _load_digits() -> Dataset:
    """The 1797 bundled 8x8 digits, split 1437/360 by a fixed permutation (independent of the run seed)."""
    try:
        from sklearn.datasets import load_digits
    except ImportError as exc:
        raise DatasetError(
            "dataset 'digits' needs scikit-learn: pip install scikit-learn, or pick 'synthetic-mnist'"
        ) from exc
    bunch = load_digits()
    x = (np.asarray(bunch.images, dtype=np.float32) / np.float32(16.0)).reshape(-1, 8, 8, 1)
    y = np.asarray(bunch.target, dtype=np.int32)
    order = np.random.RandomState(1797).permutation(len(x))
    info = DATASETS["digits"]
    train, test = order[: info.n_train], order[info.n_train :]
    return Dataset(info, x[train], y[train], x[test], y[test])


# ---------------------------------------------------------------------------------------------------------------------
# keras downloads: cache parsers, connectivity check, download


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


# ---------------------------------------------------------------------------------------------------------------------
# The user's .npz


@functools.lru_cache(maxsize=32)
def _check_npz_cached(path: str, size_bytes: int, mtime_ns: int, max_bytes: int) -> DatasetInfo:
    del size_bytes, mtime_ns  # cache key only: a changed file is checked again
    return _read_npz(path, max_bytes)[0]


def _mib(n_bytes: int) -> str:
    return f"{n_bytes / 2**20:.1f} MiB"


def _read_npz(path: str, max_bytes: int) -> tuple[DatasetInfo, dict[str, np.ndarray]]:
    """Validate the file (see check_npz) and return its info and raw arrays."""
    what = f"the .npz file {path}"
    if not os.path.isfile(path):
        raise DatasetError(f"{what} does not exist; check the path, or upload the file again")
    size_bytes = os.path.getsize(path)
    if size_bytes > max_bytes:
        raise DatasetError(
            f"{what} is {_mib(size_bytes)}, over the {_mib(max_bytes)} limit; save fewer samples "
            f"(or use the limit on samples after splitting the file)"
        )
    try:
        with zipfile.ZipFile(path) as archive:
            uncompressed_bytes = sum(i.file_size for i in archive.infolist())
        if uncompressed_bytes > max_bytes:
            raise DatasetError(
                f"{what} holds {_mib(uncompressed_bytes)} of arrays uncompressed, over the {_mib(max_bytes)} limit; "
                "save fewer samples"
            )
        with np.load(path, allow_pickle=False) as npz:
            keys = sorted(npz.files)
            missing = [k for k in NPZ_KEYS if k not in keys]
            extra = [k for k in keys if k not in NPZ_KEYS]
            if missing or extra:
                raise DatasetError(
                    f"{what} must hold exactly the arrays {', '.join(NPZ_KEYS)}; "
                    + (f"missing: {', '.join(missing)}" if missing else "")
                    + ("; " if missing and extra else "")
                    + (f"unexpected: {', '.join(extra)}" if extra else "")
                    + ". Save it with np.savez(path, x_train=..., y_train=..., x_test=..., y_test=...)"
                )
            arrays = {k: npz[k] for k in NPZ_KEYS}
    except DatasetError:
        raise
    except ValueError as exc:
        if "allow_pickle" in str(exc) or "Object arrays" in str(exc):
            raise DatasetError(
                f"{what} holds object arrays (pickled Python objects), which are refused for safety; save plain "
                "numeric arrays, e.g. np.asarray(x, dtype=np.float32), or pad ragged sequences to one length"
            ) from None
        raise DatasetError(f"{what} is not a valid .npz ({exc}); save it again with np.savez") from None
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise DatasetError(f"{what} is not a valid .npz ({type(exc).__name__}: {exc}); save it again with np.savez") from None
    return _validate_npz_arrays(path, arrays), arrays


def _validate_npz_arrays(path: str, arrays: dict[str, np.ndarray]) -> DatasetInfo:
    what = f"the .npz file {path}"
    x_train, x_test = arrays["x_train"], arrays["x_test"]
    for key in ("x_train", "x_test"):
        x = arrays[key]
        if x.dtype == bool or not (np.issubdtype(x.dtype, np.floating) or np.issubdtype(x.dtype, np.integer)):
            raise DatasetError(f"{what}: {key} has dtype {x.dtype}; it must be float or integer numbers")
        if x.ndim < 2 or x.ndim > 4:
            raise DatasetError(
                f"{what}: {key} has shape {x.shape}; use (N, features), (N, length) token ids, (N, H, W) or (N, H, W, C)"
            )
        if len(x) < 1:
            raise DatasetError(f"{what}: {key} has no samples; each split needs at least 1")
        if np.issubdtype(x.dtype, np.floating) and not np.isfinite(x).all():
            raise DatasetError(f"{what}: {key} contains NaN or infinite values; replace or drop those samples")
    if x_train.shape[1:] != x_test.shape[1:]:
        raise DatasetError(
            f"{what}: x_train samples have shape {x_train.shape[1:]} but x_test samples {x_test.shape[1:]}; "
            "both splits need the same per-sample shape"
        )
    if np.issubdtype(x_train.dtype, np.integer) != np.issubdtype(x_test.dtype, np.integer):
        raise DatasetError(f"{what}: x_train is {x_train.dtype} but x_test is {x_test.dtype}; save both with one dtype")

    max_label = -1
    for split in ("train", "test"):
        x, y = arrays[f"x_{split}"], arrays[f"y_{split}"]
        if y.ndim == 2 and y.shape[1] == 1:
            y = y.reshape(-1)
        if y.ndim != 1:
            raise DatasetError(
                f"{what}: y_{split} has shape {y.shape}; it must be 1-D class indices (N,), not one-hot; "
                "use y.argmax(axis=1)"
            )
        if len(x) != len(y):
            raise DatasetError(f"{what}: x_{split} has {len(x)} samples but y_{split} has {len(y)}; they must match")
        if y.dtype == bool or not (np.issubdtype(y.dtype, np.integer) or np.issubdtype(y.dtype, np.floating)):
            raise DatasetError(f"{what}: y_{split} has dtype {y.dtype}; it must be whole-number class indices")
        if np.issubdtype(y.dtype, np.floating) and not (np.isfinite(y).all() and (y == np.round(y)).all()):
            raise DatasetError(f"{what}: y_{split} has non-whole numbers; labels must be class indices 0..K-1")
        if (y < 0).any():
            raise DatasetError(f"{what}: y_{split} has negative labels; labels must be class indices 0..K-1")
        max_label = max(max_label, int(y.max()))
    num_classes = max_label + 1
    if num_classes < 2:
        raise DatasetError(f"{what}: all labels are 0, so there is only one class; a classifier needs at least 2")
    if num_classes > NPZ_MAX_CLASSES:
        raise DatasetError(
            f"{what}: the largest label is {max_label}, which would make a model with {num_classes:,} outputs; "
            f"labels must be class indices 0..K-1 with K at most {NPZ_MAX_CLASSES:,} (renumber them, e.g. with "
            "np.unique(y, return_inverse=True))"
        )

    vocab_size = None
    if x_train.ndim == 2 and np.issubdtype(x_train.dtype, np.integer):
        modality = "text"
        if min(int(x_train.min()), int(x_test.min())) < 0:
            raise DatasetError(
                f"{what}: x is 2-D integers (read as token ids) but has negative values; token ids must be >= 0 "
                "(0 = padding), or save numeric features as float"
            )
        vocab_size = max(int(x_train.max()), int(x_test.max())) + 1
        if vocab_size > NPZ_MAX_VOCAB:
            raise DatasetError(
                f"{what}: the largest token id is {vocab_size - 1:,}; token ids must be below {NPZ_MAX_VOCAB:,} "
                "(renumber the vocabulary, or save numeric features as float)"
            )
        input_shape: tuple[int, ...] = (int(x_train.shape[1]),)
    else:
        modality = "image"
        input_shape = tuple(int(d) for d in x_train.shape[1:]) + ((1,) if x_train.ndim == 3 else ())
    base = os.path.basename(path)
    kind = "token sequences" if modality == "text" else ("flat features" if x_train.ndim == 2 else "images")
    return DatasetInfo(
        name="npz",
        title=f"Your file {base}",
        description=(
            f"Your file {base}: {kind} of shape {input_shape}, {num_classes} classes, "
            f"{len(x_train)} train / {len(x_test)} test" + (f", vocabulary {vocab_size}" if vocab_size else "")
        ),
        input_shape=input_shape,
        num_classes=num_classes,
        n_train=int(len(x_train)),
        n_test=int(len(x_test)),
        modality=modality,
        vocab_size=vocab_size,
        synthetic=False,
        needs_download=False,
        cache_file=None,
    )


def _npz_to_convention(info: DatasetInfo, arrays: dict[str, np.ndarray]) -> tuple[np.ndarray, ...]:
    """Validated raw arrays -> the common convention (int images divided by 255, or by their max when larger)."""
    out: list[np.ndarray] = []
    x_train, x_test = arrays["x_train"], arrays["x_test"]
    if info.modality == "text":
        xs = [x.astype(np.int32) for x in (x_train, x_test)]
    elif np.issubdtype(x_train.dtype, np.integer):
        peak = max(255, int(np.abs(x_train).max()), int(np.abs(x_test).max()))
        xs = [(x.astype(np.float32) / np.float32(peak)).reshape((len(x), *info.input_shape)) for x in (x_train, x_test)]
    else:
        xs = [x.astype(np.float32).reshape((len(x), *info.input_shape)) for x in (x_train, x_test)]
    for x, y in zip(xs, (arrays["y_train"], arrays["y_test"])):
        out.extend([x, np.asarray(y).reshape(-1).astype(np.int32)])
    return tuple(out)
