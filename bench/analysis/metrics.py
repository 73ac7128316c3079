"""The arithmetic behind every number shown: steady-state epoch time, means, speed-ups and FLOP rates.

Honest-number rules live here, once:
- the first epoch includes graph tracing/compilation, so steady-state figures use epochs 2..N only;
- speed-up = median steady-state epoch time of A / of B, with the spread from min and max of both sides;
- a reading that is missing (None) is left out of a mean, never counted as 0.
"""

from __future__ import annotations

import bisect
import math
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from bench.vocab.readings import Epoch, Sample


def finite_values(values: Iterable[Any]) -> list[float]:
    """The finite int and float values of ``values`` as floats (None, NaN, infinities, bools and text left out)."""
    out = []
    for value in values:
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            out.append(float(value))
    return out


def steady_epochs(epochs: Sequence[Epoch]) -> list[Epoch]:
    """Epochs that do not include tracing (every epoch but those flagged ``includes_tracing``)."""
    return [e for e in epochs if not e.includes_tracing]


def steady_epoch_times(epochs: Sequence[Epoch]) -> list[float]:
    return finite_values(e.epoch_seconds for e in steady_epochs(epochs))


def steady_epoch_seconds(epochs: Sequence[Epoch]) -> float | None:
    """Median steady-state epoch time in seconds, or None when no steady epoch exists yet (needs >= 2 epochs)."""
    times = steady_epoch_times(epochs)
    return statistics.median(times) if times else None


def mean_or_none(values: Iterable[Any]) -> float | None:
    vals = finite_values(values)
    return sum(vals) / len(vals) if vals else None


def mean_gpu_util_percent(samples: Sequence[Sample]) -> float | None:
    """Mean NVML utilization over every GPU reading of every sample; None when there was no GPU reading."""
    return mean_or_none(g.util_percent for s in samples for g in s.gpus or ())


def steady_samples_per_s(epochs: Sequence[Epoch]) -> float | None:
    """Samples per epoch / median steady epoch time: the rate that matches the steady epoch time shown beside it.

    A median of per-epoch rates would not: rates weight short epochs more than times do, so it reads faster than
    the median epoch time it is shown beside.
    """
    steady = steady_epochs(epochs)
    seconds = steady_epoch_seconds(epochs)
    counts = finite_values((e.samples_per_s or 0) * (e.epoch_seconds or 0) for e in steady)
    counts = [c for c in counts if c > 0]
    if not seconds or not counts:
        return None
    return statistics.median(counts) / seconds


def training_windows(epochs: Sequence[Epoch], samples: Sequence[Sample]) -> list[list[Sample]]:
    """Sample sets to average utilization over, narrowest first: the samples taken during steady epochs, during any
    epoch, then all samples (imports and data loading included). A mean takes the first set that has a reading,
    so epochs shorter than the sampling interval, or a GPU lost mid-run, still give a figure."""
    def within(chosen: Sequence[Epoch]) -> list[Sample]:
        spans = merged_spans((e.t_start_s, e.t_end_s) for e in chosen
                             if e.t_start_s is not None and e.t_end_s is not None)
        return [s for s in samples if in_spans(s.t_s, spans)]

    return [within(steady_epochs(epochs)), within(epochs), list(samples)]


def merged_spans(spans: Iterable[tuple[float, float]]) -> tuple[list[float], list[float]]:
    """Closed time spans merged where they overlap or touch, as (starts, ends) sorted by start: ``in_spans`` then
    finds a time in them by bisection (a live panel asks this of every sample of a long run at every refresh)."""
    starts: list[float] = []
    ends: list[float] = []
    for a, b in sorted((a, b) for a, b in spans if a <= b):
        if ends and a <= ends[-1]:
            ends[-1] = max(ends[-1], b)
        else:
            starts.append(a)
            ends.append(b)
    return starts, ends


def in_spans(t: float, spans: tuple[list[float], list[float]]) -> bool:
    """Whether ``t`` lies in one of ``merged_spans``' closed spans."""
    starts, ends = spans
    i = bisect.bisect_right(starts, t) - 1
    return i >= 0 and t <= ends[i]


# What each of training_windows' sets is called in a summary's ``*_window`` fields.
WINDOW_NAMES: tuple[str, ...] = ("steady epochs", "all epochs", "whole run")
# A mean over the steady epochs needs this many samples inside them; with fewer it is not called theirs and the next,
# wider window is taken (it holds the same samples and more, and is named as such). One sample can fall between two
# short epochs, and a process CPU reading covers the interval before it, so one sample misreads short epochs
# (docs/GPU.md, 'The diagnosis thresholds and the figures that set them', MIN_STEADY_SAMPLES).
MIN_WINDOW_SAMPLES = 3


def first_mean(windows: Sequence[Sequence[Sample]], mean: Callable[[Sequence[Sample]], float | None]) -> float | None:
    return first_mean_where(windows, mean)[0]


def first_mean_where(windows: Sequence[Sequence[Sample]],
                     mean: Callable[[Sequence[Sample]], float | None]) -> tuple[float | None, str | None]:
    """(mean over the first window that has a reading, that window's name from WINDOW_NAMES); (None, None) if none.
    The steady epochs count only with MIN_WINDOW_SAMPLES samples inside them."""
    for i, (name, window) in enumerate(zip(WINDOW_NAMES, windows)):
        if i == 0 and len(window) < MIN_WINDOW_SAMPLES and len(windows) > 1:
            continue
        value = mean(window)
        if value is not None:
            return value, name
    return None, None


@dataclass(frozen=True)
class Speedup:
    """How many times faster B trains than A, from their epochs (:func:`speedup`)."""

    speedup_median: float  # median steady epoch time of A / of B
    speedup_min: float  # slowest B against fastest A (min A / max B)
    speedup_max: float  # max A / min B
    total_time_ratio: float | None  # all epochs of A (tracing included) / all epochs of B
    first_epoch_seconds_a: float | None
    first_epoch_seconds_b: float | None
    steady_epochs_a: int
    steady_epochs_b: int


def speedup(epochs_a: Sequence[Epoch], epochs_b: Sequence[Epoch]) -> Speedup | None:
    """How many times faster B trains than A (see :class:`Speedup`); None when either side has no steady-state
    epoch."""
    times_a, times_b = steady_epoch_times(epochs_a), steady_epoch_times(epochs_b)
    if not times_a or not times_b or min(times_b) <= 0 or min(times_a) <= 0:
        return None
    total_a = sum(finite_values(e.epoch_seconds for e in epochs_a))
    total_b = sum(finite_values(e.epoch_seconds for e in epochs_b))
    return Speedup(
        speedup_median=statistics.median(times_a) / statistics.median(times_b),
        speedup_min=min(times_a) / max(times_b),
        speedup_max=max(times_a) / min(times_b),
        total_time_ratio=total_a / total_b if total_b > 0 else None,
        first_epoch_seconds_a=next((e.epoch_seconds for e in epochs_a if e.includes_tracing), None),
        first_epoch_seconds_b=next((e.epoch_seconds for e in epochs_b if e.includes_tracing), None),
        steady_epochs_a=len(times_a),
        steady_epochs_b=len(times_b),
    )


def achieved_gflops(flops_per_sample: float, samples_per_s: float | None) -> float | None:
    """Training GFLOP/s actually achieved: FLOPs per sample x samples per second / 1e9."""
    if samples_per_s is None or flops_per_sample <= 0:
        return None
    return flops_per_sample * samples_per_s / 1e9


def format_seconds(seconds: float | None) -> str:
    """Human-readable duration: 0.84 s, 12.3 s, 4 min 05 s."""
    if seconds is None or not math.isfinite(seconds):
        return "—"
    if seconds < 10:
        return f"{seconds:.2f} s"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(int(round(seconds)), 60)
    return f"{minutes} min {rest:02d} s"
