"""The arithmetic behind every number shown: steady-state epoch time, run summaries, speed-ups and FLOP rates.

Honest-number rules live here, once:
- the first epoch includes graph tracing/compilation, so steady-state figures use epochs 2..N only;
- speed-up = median steady-state epoch time of A / of B, with the spread from min and max of both sides;
- a reading that is missing (None) is left out of a mean, never counted as 0.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any


def _finite(values: Iterable[Any]) -> list[float]:
    out = []
    for value in values:
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            out.append(float(value))
    return out


def steady_epochs(epochs: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Epochs that do not include tracing (every epoch but those flagged ``includes_tracing``)."""
    return [e for e in epochs if not e.get("includes_tracing")]


def steady_epoch_times(epochs: Sequence[Mapping[str, Any]]) -> list[float]:
    return _finite(e.get("epoch_seconds") for e in steady_epochs(epochs))


def steady_epoch_seconds(epochs: Sequence[Mapping[str, Any]]) -> float | None:
    """Median steady-state epoch time in seconds, or None when no steady epoch exists yet (needs >= 2 epochs)."""
    times = steady_epoch_times(epochs)
    return statistics.median(times) if times else None


def mean_or_none(values: Iterable[Any]) -> float | None:
    vals = _finite(values)
    return sum(vals) / len(vals) if vals else None


def mean_gpu_util_percent(samples: Sequence[Mapping[str, Any]]) -> float | None:
    """Mean NVML utilization over every GPU reading of every sample; None when there was no GPU reading."""
    return mean_or_none(g.get("util_percent") for s in samples for g in (s.get("gpus") or []))


def steady_samples_per_s(epochs: Sequence[Mapping[str, Any]]) -> float | None:
    """Samples per epoch / median steady epoch time: the rate that matches the steady epoch time shown beside it.

    (A median of per-epoch rates would not: with two steady epochs of 0.2 s and 0.6 s it gives 33,000 samples/s for
    10,000 samples while the median epoch time, 0.4 s, means 25,000.)
    """
    steady = steady_epochs(epochs)
    seconds = steady_epoch_seconds(epochs)
    counts = _finite((e.get("samples_per_s") or 0) * (e.get("epoch_seconds") or 0) for e in steady)
    counts = [c for c in counts if c > 0]
    if not seconds or not counts:
        return None
    return statistics.median(counts) / seconds


def training_windows(epochs: Sequence[Mapping[str, Any]], samples: Sequence[Mapping[str, Any]]
                     ) -> list[list[Mapping[str, Any]]]:
    """Sample sets to average utilization over, narrowest first: the samples taken during steady epochs, during any
    epoch, then all samples (imports and data loading included). A mean takes the first set that has a reading,
    so epochs shorter than the sampling interval, or a GPU lost mid-run, still give a figure."""
    def within(chosen: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        spans = [(e["t_start_s"], e["t_end_s"]) for e in chosen
                 if e.get("t_start_s") is not None and e.get("t_end_s") is not None]
        return [s for s in samples if s.get("t_s") is not None and any(a <= s["t_s"] <= b for a, b in spans)]

    return [within(steady_epochs(epochs)), within(epochs), list(samples)]


# What each of training_windows' sets is called in a summary's ``*_window`` fields.
WINDOW_NAMES: tuple[str, ...] = ("steady epochs", "all epochs", "whole run")


def _first_mean(windows: Sequence[Sequence[Mapping[str, Any]]],
                mean: Callable[[Sequence[Mapping[str, Any]]], float | None]) -> float | None:
    return _first_mean_where(windows, mean)[0]


def _first_mean_where(windows: Sequence[Sequence[Mapping[str, Any]]],
                      mean: Callable[[Sequence[Mapping[str, Any]]], float | None]) -> tuple[float | None, str | None]:
    """(mean over the first window that has a reading, that window's name from WINDOW_NAMES); (None, None) if none."""
    for name, window in zip(WINDOW_NAMES, windows):
        value = mean(window)
        if value is not None:
            return value, name
    return None, None


def summarize(epochs: Sequence[Mapping[str, Any]], samples: Sequence[Mapping[str, Any]], *,
              info: Mapping[str, Any] | None = None, config: Any = None,
              peak_gflops: float | None = None) -> dict[str, Any]:
    """The ``summary`` block of a run record. Utilization means cover the steady epochs (see training_windows).
    ``diagnosis`` (bench.diagnosis) also reads the run's info and config, and the device's peak when known; without
    them it says what is missing."""
    from bench import diagnosis
    steady = steady_epoch_seconds(epochs)
    first = next((e for e in epochs if e.get("includes_tracing")), None)
    windows = training_windows(epochs, samples)
    cpu_mean, cpu_window = _first_mean_where(windows, lambda w: mean_or_none(s.get("cpu_percent") for s in w))
    gpu_mean, gpu_window = _first_mean_where(windows, mean_gpu_util_percent)
    return {
        "steady_epoch_seconds": steady,
        "steady_samples_per_s": steady_samples_per_s(epochs),
        "first_epoch_seconds": first.get("epoch_seconds") if first else None,
        "total_seconds": sum(_finite(e.get("epoch_seconds") for e in epochs)) if epochs else None,
        "epochs_done": len(epochs),
        "mean_cpu_percent": cpu_mean,
        "mean_process_cpu_percent": _first_mean(
            windows, lambda w: mean_or_none(s.get("process_cpu_percent") for s in w)),
        "mean_gpu_util_percent": gpu_mean,
        # which samples those means cover: "steady epochs" unless the steady epochs held no sample (shorter than the
        # sampling interval), when a wider window that includes tracing or start-up stands in and reads low
        "cpu_util_window": cpu_window,
        "gpu_util_window": gpu_window,
        "steady_samples": len(windows[0]),
        "peak_process_rss_mib": max(_finite(s.get("process_rss_mib") for s in samples), default=None),
        "diagnosis": diagnosis.diagnose(epochs, samples, info, config, peak_gflops),
        **gpu_truth_summary(epochs, samples, windows, info, config),
    }


def _used_gpus(sample: Mapping[str, Any], indices: set[int]) -> list[Mapping[str, Any]]:
    return [g for g in (sample.get("gpus") or []) if g.get("index") in indices]


def gpu_truth_summary(epochs: Sequence[Mapping[str, Any]], samples: Sequence[Mapping[str, Any]],
                      windows: Sequence[Sequence[Mapping[str, Any]]], info: Mapping[str, Any] | None,
                      config: Any) -> dict[str, Any]:
    """What the devices really did over the run: energy per steady epoch (median) and per 1,000 samples, the reason
    a device's energy is None, GPM SM/tensor activity (means like the utilization means), the throttle reasons seen
    while training, and the steady median of the epochs' achieved GFLOP/s."""
    from bench import energy
    info = info or {}
    steady = steady_epochs(epochs)
    devices = energy.devices_used(config or {}, samples)
    for epoch in epochs:  # devices an epoch measured (e.g. every GPU of an all-GPUs run) count too
        devices.extend(d for d in (epoch.get("energy_j") or {}) if d not in devices)
    per_epoch: dict[str, float | None] = {}
    per_1000: dict[str, float | None] = {}
    reasons: dict[str, str] = {}
    known = info.get("energy_reasons") if isinstance(info.get("energy_reasons"), Mapping) else {}
    for device in devices:
        values = _finite((e.get("energy_j") or {}).get(device) for e in steady)
        per_epoch[device] = statistics.median(values) if values else None
        rates = _finite(_joules_per_1000(e, device) for e in steady)
        per_1000[device] = statistics.median(rates) if rates else None
        if per_epoch[device] is None:
            kind = "cpu" if device == "cpu" else "gpu"
            reasons[device] = (known.get(device) or known.get(kind) or
                               ("no steady epoch yet (epoch 1 includes tracing)" if not steady else
                                "the samples hold no energy reading around the steady epochs"
                                + ("" if kind == "cpu" else " (neither NVML's energy counter nor power draw)")))
    estimated = sorted({d for e in steady for d in (e.get("energy_estimated") or [])})
    indices = {i for i in map(energy.gpu_index, devices) if i is not None}
    throttled: set[str] | None = None
    for sample in windows[1]:
        for gpu in _used_gpus(sample, indices):
            if isinstance(gpu.get("throttle_reasons"), list):
                throttled = (throttled or set()) | set(gpu["throttle_reasons"])
    gflops = _finite(e.get("achieved_gflops") for e in steady)
    return {
        "energy_j_per_epoch": per_epoch,
        "energy_j_per_1000_samples": per_1000,
        "energy_estimated": estimated,
        "energy_reasons": reasons,
        # means over the GPUs the run trained on (None on a CPU run and without GPM), windows as for utilization
        **{key: _first_mean(windows, lambda w, key=key: mean_or_none(
            g.get(key) for s in w for g in _used_gpus(s, indices)))
           for key in ("sm_active_percent", "tensor_active_percent")},
        "gpm_reasons": dict(info.get("gpm_reasons") or {}) if isinstance(info.get("gpm_reasons"), Mapping) else {},
        "throttle_reasons": sorted(throttled) if throttled is not None else None,
        "achieved_gflops": statistics.median(gflops) if gflops else None,
    }


def _joules_per_1000(epoch: Mapping[str, Any], device: str) -> float | None:
    """An epoch's joules on ``device`` per 1,000 training samples (samples = samples/s x epoch seconds)."""
    values = _finite([(epoch.get("energy_j") or {}).get(device), epoch.get("samples_per_s"),
                      epoch.get("epoch_seconds")])
    if len(values) < 3 or values[1] * values[2] <= 0:
        return None
    joules, rate, seconds = values
    return 1000.0 * joules / (rate * seconds)


def speedup(epochs_a: Sequence[Mapping[str, Any]], epochs_b: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """How many times faster B trains than A.

    ``speedup_median`` = median steady epoch time of A / of B; ``speedup_min`` = slowest B against fastest A
    (min A / max B); ``speedup_max`` = max A / min B; ``total_time_ratio`` = all epochs of A (tracing included) /
    all epochs of B. None when either side has no steady-state epoch.
    """
    times_a, times_b = steady_epoch_times(epochs_a), steady_epoch_times(epochs_b)
    if not times_a or not times_b or min(times_b) <= 0 or min(times_a) <= 0:
        return None
    total_a = sum(_finite(e.get("epoch_seconds") for e in epochs_a))
    total_b = sum(_finite(e.get("epoch_seconds") for e in epochs_b))
    first_a = next((e.get("epoch_seconds") for e in epochs_a if e.get("includes_tracing")), None)
    first_b = next((e.get("epoch_seconds") for e in epochs_b if e.get("includes_tracing")), None)
    return {
        "speedup_median": statistics.median(times_a) / statistics.median(times_b),
        "speedup_min": min(times_a) / max(times_b),
        "speedup_max": max(times_a) / min(times_b),
        "total_time_ratio": total_a / total_b if total_b > 0 else None,
        "first_epoch_seconds_a": first_a,
        "first_epoch_seconds_b": first_b,
        "steady_epochs_a": len(times_a),
        "steady_epochs_b": len(times_b),
    }


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
