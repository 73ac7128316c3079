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

Modules, by job:

- ``registry``: ``DatasetInfo``, ``Dataset``, ``DatasetError``, ``DATASETS``, the constants, the array convention.
- ``api``: ``get_info`` and ``load`` (dispatching by name), and scikit-learn's digits.
- ``synthetic``: the numpy generators.
- ``keras_cache``: the keras cache files, the connectivity check, the download and the offline messages.
- ``user_npz``: the checks of a user's .npz (sizes, headers, keys, contents) and its conversion.

Only numpy and the standard library are imported at module level; keras and scikit-learn are imported inside the
functions that need them, so the Streamlit server can import this package (and call ``get_info``) without TensorFlow.
Private helpers are not re-exported here: patch them in the module that defines them (e.g.
``bench.plans.datasets.keras_cache._can_reach``).
"""

from __future__ import annotations

from bench.plans.datasets.api import get_info, load
from bench.plans.datasets.keras_cache import default_cache_dir, find_cache, load_keras_cached
from bench.plans.datasets.registry import (
    CONNECT_TIMEOUT_S,
    DATASETS,
    DEFAULT_DATASET,
    DOWNLOAD_SOCKET_TIMEOUT_S,
    IMDB_NUM_WORDS,
    NPZ_KEYS,
    NPZ_MAX_BYTES,
    NPZ_MAX_CLASSES,
    NPZ_MAX_VOCAB,
    TEXT_LENGTH,
    Dataset,
    DatasetError,
    DatasetInfo,
)
from bench.plans.datasets.user_npz import check_npz

__all__ = [
    "CONNECT_TIMEOUT_S",
    "DATASETS",
    "DEFAULT_DATASET",
    "DOWNLOAD_SOCKET_TIMEOUT_S",
    "IMDB_NUM_WORDS",
    "NPZ_KEYS",
    "NPZ_MAX_BYTES",
    "NPZ_MAX_CLASSES",
    "NPZ_MAX_VOCAB",
    "TEXT_LENGTH",
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
