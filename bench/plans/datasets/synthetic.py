"""Synthetic sets generated with numpy from a seed: shaped like MNIST, CIFAR-10 and IMDB, learnable, offline.

Each generator maps (n_train, n_test, seed) -> x_train, y_train, x_test, y_test in the common convention. The task
(class prototypes, cue words) is fixed by ``_TASK_SEED``; the run seed varies the samples, so one seed always gives the
same bytes.
"""

from __future__ import annotations

import functools
from typing import Callable

import numpy as np

from bench.plans.datasets.registry import IMDB_NUM_WORDS, TEXT_LENGTH

_TASK_SEED = 20240917  # fixes the synthetic *tasks* (class prototypes, cue words); the run seed varies the samples


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

    The noise is uniform with standard deviation ``noise``, drawn as uint8: several times faster than gaussian
    float32, and the set's shape and learnability need no more.
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
