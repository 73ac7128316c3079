"""Comparisons and sweeps: many runs of one base config, queued through the same JobManager, then summarised.

A comparison trains one config on two or more targets (``cpu``, ``cpu/N``, ``gpu:N``, ``gpus``) on identical data,
seed, precision and batch size; the headline is speed-up = median steady epoch time of the first target / of each
other. A sweep trains short runs over model sizes (and optionally batch sizes) on one or more targets and turns each
finished run into a row: parameters, steady epoch time, samples/s, achieved GFLOP/s against the measured peak, mean
utilization.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from bench import metrics, models
from bench.config import ConfigError, RunConfig, parse_target


def parse_targets(text: str | Sequence[str]) -> list[str]:
    """``"cpu/1,cpu"`` -> ``["cpu/1", "cpu"]``; at least one target, each in an allowed form."""
    items = [t.strip() for t in (text.split(",") if isinstance(text, str) else text) if t.strip()]
    if not items:
        raise ConfigError(["give at least one target, e.g. --targets cpu/1,cpu"])
    for item in items:
        parse_target(item)
    return items


def target_configs(base: RunConfig, targets: Sequence[str], hardware: Any | None = None) -> list[RunConfig]:
    """One validated config per target; everything but device and threads is identical across them."""
    configs = [base.replace(**parse_target(t)) for t in targets]
    errors: list[str] = []
    for name, config in zip(targets, configs):
        try:
            config.validate(hardware)
        except ConfigError as exc:
            errors.extend(f"{name}: {e}" for e in exc.errors)
    if errors:
        raise ConfigError(errors)
    return configs


def comparison(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Speed-up of every run against the first (the baseline), from their epochs.

    For exactly two runs the first pair's figures are also given at the top level (speedup_median, ...).
    """
    if len(records) < 2:
        return {"pairs": [], "baseline": records[0].get("id") if records else None}
    base = records[0]
    pairs = []
    for other in records[1:]:
        result = metrics.speedup(base.get("epochs") or [], other.get("epochs") or [])
        pairs.append({
            "baseline_id": base.get("id"),
            "baseline_target": target(base),
            "target_id": other.get("id"),
            "target": target(other),
            **(result or {"speedup_median": None, "speedup_min": None, "speedup_max": None,
                          "total_time_ratio": None}),
        })
    out: dict[str, Any] = {"baseline": base.get("id"), "pairs": pairs}
    if len(pairs) == 1:
        for key in ("speedup_median", "speedup_min", "speedup_max", "total_time_ratio", "first_epoch_seconds_a",
                    "first_epoch_seconds_b"):
            out[key] = pairs[0].get(key)
    return out


def target(record: Mapping[str, Any]) -> str:
    """A record's target in Compare's form: cpu, cpu/N, gpu:N, gpus."""
    config = record.get("config") or {}
    try:
        return RunConfig.from_dict(dict(config)).target()
    except (ConfigError, TypeError):
        return str(config.get("device", "?"))


def headline(pair: Mapping[str, Any]) -> str:
    """One honest sentence: 'cpu trains 3.1x faster than cpu/1 (median steady epoch; spread 2.8-3.4x; ...)'."""
    median = pair.get("speedup_median")
    if median is None:
        return "Not enough epochs for a speed-up yet: it needs at least two epochs on each side (epoch 1 includes tracing)."
    faster, slower, factor = pair["target"], pair["baseline_target"], median
    if median < 1:
        faster, slower, factor = slower, faster, 1 / median
    spread_lo, spread_hi = pair["speedup_min"], pair["speedup_max"]
    if median < 1:
        spread_lo, spread_hi = 1 / pair["speedup_max"], 1 / pair["speedup_min"]
    total = pair.get("total_time_ratio")
    if total and median < 1:
        total = 1 / total
    total_text = f"; total time ratio {total:.2f}x" if total else ""
    return (f"{faster} trains {factor:.1f}x faster than {slower} (median steady epoch; "
            f"spread {spread_lo:.1f}x–{spread_hi:.1f}x{total_text})")


def caution(pair: Mapping[str, Any]) -> str | None:
    """A plain warning when the headline rests on too little: one steady epoch, or a spread that crosses 1x.

    A spread that includes 1x means some steady epochs of the "faster" side were slower than some of the other's:
    the ranking itself is not settled, so an audience should not be shown the factor without this caveat.
    """
    if pair.get("speedup_median") is None:
        return None
    steady = min(pair.get("steady_epochs_a") or 0, pair.get("steady_epochs_b") or 0)
    lo, hi = pair.get("speedup_min"), pair.get("speedup_max")
    if steady < 2:
        return ("Only one steady epoch on a side: this factor is a single measurement. "
                "Run more epochs (3 or more) for a median and a spread.")
    if lo is not None and hi is not None and lo < 1 < hi:
        return ("The spread crosses 1x: some steady epochs of the slower side beat some of the faster one, so the "
                "ranking is not settled. Train on more samples or for more epochs, and keep the machine otherwise idle.")
    return None


# -- sweeps -----------------------------------------------------------------------------------------------------------
def sweep_configs(base: RunConfig, sizes: Sequence[str], targets: Sequence[str],
                  batch_sizes: Sequence[int] | None = None, hardware: Any | None = None) -> list[RunConfig]:
    """Every (size, batch size, target) point as a validated config, in run order (size-major)."""
    if not sizes:
        raise ConfigError([f"give at least one model size, e.g. --sizes xs,s,m (from {', '.join(models.SIZES)})"])
    if batch_sizes is not None and not batch_sizes:
        raise ConfigError(["give at least one batch size, e.g. --batch-sizes 64,256, or leave the option out"])
    bad = [s for s in sizes if s not in models.SIZES]
    if bad:
        raise ConfigError([f"unknown size(s) {', '.join(bad)}; pick from {', '.join(models.SIZES)}"])
    if base.model in models.PRESETS:
        raise ConfigError([f"a sweep varies the model size; pick a family ({', '.join(models.FAMILIES)}), "
                           f"not the fixed preset {base.model!r}"])
    configs = []
    for size, batch, name in itertools.product(sizes, batch_sizes or [base.batch_size], targets):
        configs.append(base.replace(size=size, batch_size=int(batch), **parse_target(name)))
    errors: list[str] = []
    for config in configs:
        try:
            config.validate(hardware)
        except ConfigError as exc:
            errors.extend(f"{config.size}/{config.batch_size}/{config.target()}: {e}" for e in exc.errors)
    if errors:
        raise ConfigError(sorted(set(errors)))
    return configs


def sweep_row(record: Mapping[str, Any], peak_gflops: float | None) -> dict[str, Any]:
    """One sweep point from a finished run record."""
    config = record.get("config") or {}
    info = record.get("info") or {}
    summary = record.get("summary") or metrics.summarize(record.get("epochs") or [], record.get("samples") or [])
    rate = summary.get("steady_samples_per_s")
    flops = info.get("flops_per_sample")
    achieved = metrics.achieved_gflops(flops, rate) if flops else None
    return {
        "run_id": record.get("id"),
        "status": record.get("status"),
        "size": config.get("size"),
        "batch_size": config.get("batch_size"),
        "target": target(record),
        "params": info.get("params"),
        "flops_per_sample": flops,
        "steady_epoch_seconds": summary.get("steady_epoch_seconds"),
        "samples_per_s": rate,
        "achieved_gflops": achieved,
        "peak_gflops": peak_gflops,
        "peak_fraction": achieved / peak_gflops if achieved and peak_gflops else None,
        "mean_gpu_util_percent": summary.get("mean_gpu_util_percent"),
        "mean_cpu_percent": summary.get("mean_cpu_percent"),
        "mean_process_cpu_percent": summary.get("mean_process_cpu_percent"),
        # the samples the utilization means cover (metrics.WINDOW_NAMES); not "steady epochs" = read with care
        "sample_interval_s": config.get("sample_interval_s"),
        "utilization_window": (summary.get("gpu_util_window") if str(target(record)).startswith("gpu")
                               else summary.get("cpu_util_window")),
    }


WIDE_WINDOW_NOTE = (
    "utilization averaged over more than the steady epochs: they were shorter than the sampling interval, so no "
    "sample fell inside them and the mean includes tracing or start-up, when the device waits. It understates how "
    "busy the device was: raise the sample limit (longer epochs) or lower the sampling interval.")


def wide_window_rows(rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Sweep points whose utilization mean is not over steady epochs alone (their epochs were shorter than the
    sampling interval), so it includes tracing or start-up and understates how busy the device was."""
    def wide(row: Mapping[str, Any]) -> bool:
        window = row.get("utilization_window")
        if window is not None:
            return window != metrics.WINDOW_NAMES[0]
        # rows from before the window was recorded: a steady epoch shorter than the sampling interval can hold no sample
        interval, seconds = row.get("sample_interval_s"), row.get("steady_epoch_seconds")
        return bool(interval and seconds and seconds < interval)

    return [r for r in rows if wide(r)]


def sweep_speedups(rows: Sequence[Mapping[str, Any]], baseline_target: str, other_target: str) -> list[dict[str, Any]]:
    """Speed-up of other_target over baseline_target per (size, batch) point, from steady epoch times."""
    by_point: dict[tuple[Any, Any], dict[str, Mapping[str, Any]]] = {}
    for row in rows:
        by_point.setdefault((row["size"], row["batch_size"]), {})[row["target"]] = row
    out = []
    for (size, batch), group in by_point.items():
        a, b = group.get(baseline_target), group.get(other_target)
        if a and b and a.get("steady_epoch_seconds") and b.get("steady_epoch_seconds"):
            out.append({"size": size, "batch_size": batch, "params": a.get("params"),
                        "speedup": a["steady_epoch_seconds"] / b["steady_epoch_seconds"]})
    return out
