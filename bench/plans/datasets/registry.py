"""The dataset registry: what each set is, the loaded form, the error every loader raises, and the array convention.

``DATASETS`` maps a registry name to a ``DatasetInfo`` (cheap: no arrays, no keras). Every loader returns a ``Dataset``
in one convention: images float32 in [0, 1] shaped (N, H, W, C) (or (N, D) for flat features); text int32 token ids
shaped (N, 200) with 0 = padding; labels int32 class indices shaped (N,). The helpers at the end turn raw arrays into
that convention and apply the sample limit.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np


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


# ---------------------------------------------------------------------------------------------------------------------
# Small helpers: names, the sample limit, the array convention


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


def _make_dataset(info: DatasetInfo, arrays: tuple[np.ndarray, ...]) -> Dataset:
    """A Dataset from (x_train, y_train, x_test, y_test)."""
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
