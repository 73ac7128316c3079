"""The user's own .npz: x_train, y_train, x_test, y_test, checked before use and turned into the common convention."""

from __future__ import annotations

import functools
import math
import os
import struct
import tokenize
import zipfile
import zlib
from typing import Any

import numpy as np

from bench.plans.datasets.registry import (
    NPZ_KEYS,
    NPZ_MAX_BYTES,
    NPZ_MAX_CLASSES,
    NPZ_MAX_VOCAB,
    DatasetError,
    DatasetInfo,
)


def check_npz(path: str, max_bytes: int = NPZ_MAX_BYTES) -> DatasetInfo:
    """Validate a user's .npz and describe it.

    The file must hold exactly x_train, y_train, x_test, y_test (no object arrays); x numeric and finite with the same
    per-sample shape in both splits; y whole-number class indices 0..K-1 (K = max label + 1 >= 2), one per sample.
    x of shape (N, H, W) gains a channel axis, (N, H, W, C) is kept, (N, L) integers are token ids (text, vocabulary
    max id + 1), (N, D) floats are flat features. Before any array is read, the file and its members uncompressed must
    fit in ``max_bytes``, and so must the shape and dtype each member's .npy header declares, which must also match
    the bytes the member holds. Results are cached per (path, size, mtime).

    Raises:
        DatasetError: what is wrong with the file and what to do about it.
    """
    try:
        stat = os.stat(path)
    except OSError:
        return _read_npz(path, max_bytes)[0]  # raises the "not found" message
    return _check_npz_cached(os.path.realpath(path), stat.st_size, stat.st_mtime_ns, max_bytes)


@functools.lru_cache(maxsize=32)
def _check_npz_cached(path: str, size_bytes: int, mtime_ns: int, max_bytes: int) -> DatasetInfo:
    del size_bytes, mtime_ns  # cache key only: a changed file is checked again
    return _read_npz(path, max_bytes)[0]


def _mib(n_bytes: int) -> str:
    return f"{n_bytes / 2**20:.1f} MiB"


def _size(n_bytes: int) -> str:
    """A byte count in the largest fitting binary unit, e.g. "256 bytes", "250.0 KiB", "23.3 TiB"."""
    if n_bytes < 1024:
        return f"{n_bytes} bytes"
    size = float(n_bytes)
    for unit in ("KiB", "MiB", "GiB", "TiB", "PiB"):
        size /= 1024
        if size < 1024 or unit == "PiB":
            break
    return f"{size:.1f} {unit}"


# What reading a damaged or forged file raises from zipfile, zlib and numpy's .npy header parser (found by fuzzing:
# a header with a NUL byte is a SyntaxError, an unfinished one a TokenError, an unknown zip version
# NotImplementedError, an encrypted member RuntimeError): each means "not a valid .npz", never a crash.
_DAMAGED_FILE_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, SyntaxError, tokenize.TokenError,
                        NotImplementedError, RuntimeError, zlib.error, struct.error, TypeError, OverflowError,
                        KeyError, IndexError, MemoryError)


def _read_npz(path: str, max_bytes: int) -> tuple[DatasetInfo, dict[str, np.ndarray]]:
    """Validate the file (see check_npz) and return its info and raw arrays.

    Sizes are checked before any array is allocated: the file on disk, the members uncompressed, then the shape and
    dtype each member's .npy header declares (a forged header could otherwise ask numpy for terabytes).
    """
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
                    f"{what} holds {_mib(uncompressed_bytes)} of arrays uncompressed, over the {_mib(max_bytes)} "
                    "limit; save fewer samples"
                )
            members = _npz_members(what, archive)
            for key, member in members.items():
                _check_declared_size(what, archive, key, member, max_bytes)
            arrays = {}
            for key, member in members.items():
                with archive.open(member) as f:
                    arrays[key] = np.lib.format.read_array(f, allow_pickle=False)
    except DatasetError:
        raise
    except ValueError as exc:
        if "allow_pickle" in str(exc) or "Object arrays" in str(exc):
            raise DatasetError(
                f"{what} holds object arrays (pickled Python objects), which are refused for safety; save plain "
                "numeric arrays, e.g. np.asarray(x, dtype=np.float32), or pad ragged sequences to one length"
            ) from None
        raise DatasetError(f"{what} is not a valid .npz ({exc}); save it again with np.savez") from None
    except _DAMAGED_FILE_ERRORS as exc:
        raise DatasetError(f"{what} is not a valid .npz ({type(exc).__name__}: {exc}); save it again with np.savez") from None
    return _validate_npz_arrays(path, arrays), arrays


def _npz_members(what: str, archive: zipfile.ZipFile) -> dict[str, str]:
    """The zip member holding each of NPZ_KEYS, named as np.load names them ("x_train.npy" is key "x_train")."""
    names = archive.namelist()
    keys = sorted(name.removesuffix(".npy") for name in names)
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
    return {key: key if key in names else f"{key}.npy" for key in NPZ_KEYS}


def _check_declared_size(what: str, archive: zipfile.ZipFile, key: str, member: str, max_bytes: int) -> None:
    """Read only the .npy header of one member; refuse a declared size over the limit, or unlike the bytes held.

    Object arrays are let through here: reading them with allow_pickle=False refuses them with their own message.
    """
    with archive.open(member) as f:
        try:
            major, _minor = np.lib.format.read_magic(f)
        except ValueError:
            raise DatasetError(
                f"{what}: {key} is not a numpy array (its member {member} has no .npy header); "
                "save the file with np.savez(path, x_train=..., y_train=..., x_test=..., y_test=...)"
            ) from None
        if major == 1:
            shape, _fortran_order, dtype = np.lib.format.read_array_header_1_0(f)
        elif major in (2, 3):
            shape, _fortran_order, dtype = np.lib.format.read_array_header_2_0(f)
        else:
            raise ValueError(f"{member} is in .npy format version {major}, which numpy does not write")
        header_bytes = f.tell()
    if dtype.hasobject:
        return
    if any(d < 0 for d in shape):
        raise DatasetError(
            f"{what}: {key} declares the impossible shape {shape}; the file is damaged, save it again with np.savez"
        )
    declared = math.prod(shape) * dtype.itemsize
    held = max(archive.getinfo(member).file_size - header_bytes, 0)
    declares = f"{key}'s header declares shape {shape} of {dtype}, {_size(declared)} of data"
    if declared > max_bytes:
        raise DatasetError(
            f"{what}: {declares}, over the {_mib(max_bytes)} limit (and the file holds {_size(held)} of it, so it is "
            f"forged or damaged); nothing was loaded. Save the arrays again with np.savez, at most {_mib(max_bytes)}"
        )
    if declared != held:
        raise DatasetError(
            f"{what}: {declares}, but the file holds {_size(held)} of it, so it is truncated or damaged; "
            "save it again with np.savez"
        )


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
    xs: list[Any]
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
