"""The two entry points: ``get_info`` (describe a set, no arrays) and ``load`` (its arrays), dispatching by name."""

from __future__ import annotations

import numpy as np

from bench.plans.datasets import keras_cache, synthetic, user_npz
from bench.plans.datasets.registry import (
    DATASETS,
    NPZ_MAX_BYTES,
    Dataset,
    DatasetError,
    DatasetInfo,
    _check_name,
    _limit,
    _limited_sizes,
)


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
    return user_npz.check_npz(npz_path)


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

    if name in synthetic._GENERATORS:
        info = DATASETS[name]
        n_train, n_test = _limited_sizes(info.n_train, info.n_test, limit)
        x_train, y_train, x_test, y_test = synthetic._GENERATORS[name](n_train, n_test, seed)
        dataset = Dataset(info, x_train, y_train, x_test, y_test)
    elif name == "digits":
        dataset = _load_digits()
    elif name == "npz":
        if not npz_path:
            raise DatasetError("dataset 'npz' needs a file: pass npz_path (an .npz with x_train, y_train, x_test, y_test)")
        info, arrays = user_npz._read_npz(npz_path, NPZ_MAX_BYTES)
        dataset = Dataset(info, *user_npz._npz_to_convention(info, arrays))
    else:
        dataset = keras_cache._load_keras(name, cache_dir)
    return _limit(dataset, limit)


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
