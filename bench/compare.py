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

from bench import diagnosis, metrics, models
from bench.config import ConfigError, RunConfig
from bench.target import Target


def parse_targets(text: str | Sequence[str | Target]) -> list[Target]:
    """``"cpu/1,cpu"`` (or a list of such words) -> ``[Target cpu/1, Target cpu]``; at least one, each in an allowed
    form (ConfigError otherwise)."""
    items = text.split(",") if isinstance(text, str) else text
    targets = [t if isinstance(t, Target) else Target.parse(t) for t in items if isinstance(t, Target) or t.strip()]
    if not targets:
        raise ConfigError(["give at least one target, e.g. --targets cpu/1,cpu"])
    return targets


def target_configs(base: RunConfig, targets: Sequence[Target | str], hardware: Any | None = None) -> list[RunConfig]:
    """One validated config per target; everything but device and threads is identical across them."""
    configs = [base.with_target(t) for t in targets]
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
    """A record's target as text (cpu, cpu/N, gpu:N, gpus), for tables and files; its device as stored when that is
    malformed. :meth:`Target.of` gives the value itself."""
    found = target_of(record)
    return str(found) if found is not None else str((record.get("config") or {}).get("device", "?"))


def target_of(record: Mapping[str, Any]) -> Target | None:
    """A record's Target; None when the device or thread count stored there is malformed (an old or foreign file)."""
    try:
        return Target.of(record.get("config") or {})
    except (ValueError, TypeError, AttributeError):
        return None


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
def sweep_configs(base: RunConfig, sizes: Sequence[str], targets: Sequence[Target | str],
                  batch_sizes: Sequence[int] | None = None, hardware: Any | None = None, *,
                  steps_per_execution: Sequence[int] | None = None) -> list[RunConfig]:
    """Every (size, batch size, steps per execution, target) point as a validated config, in run order (size-major;
    the targets of one point run back to back, so noise hits both sides of a speed-up alike)."""
    if not sizes:
        raise ConfigError([f"give at least one model size, e.g. --sizes xs,s,m (from {', '.join(models.SIZES)})"])
    if batch_sizes is not None and not batch_sizes:
        raise ConfigError(["give at least one batch size, e.g. --batch-sizes 64,256, or leave the option out"])
    if steps_per_execution is not None and not steps_per_execution:
        raise ConfigError(["give at least one steps-per-execution value, e.g. --steps-per-execution 1,8,32, or leave "
                           "the option out"])
    bad = [s for s in sizes if s not in models.SIZES]
    if bad:
        raise ConfigError([f"unknown size(s) {', '.join(bad)}; pick from {', '.join(models.SIZES)}"])
    if base.model in models.PRESETS:
        raise ConfigError([f"a sweep varies the model size; pick a family ({', '.join(models.FAMILIES)}), "
                           f"not the fixed preset {base.model!r}"])
    configs = []
    for size, batch, steps, name in itertools.product(sizes, batch_sizes or [base.batch_size],
                                                      steps_per_execution or [base.steps_per_execution], targets):
        configs.append(base.replace(size=size, batch_size=int(batch), steps_per_execution=steps).with_target(name))
    errors: list[str] = []
    for config in configs:
        try:
            config.validate(hardware)
        except ConfigError as exc:
            errors.extend(f"{config.size}/{config.batch_size}/{config.steps_per_execution}/{config.target()}: {e}"
                          for e in exc.errors)
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
    verdict = diagnosis.of_record(record, peak_gflops)
    return {
        "run_id": record.get("id"),
        "status": record.get("status"),
        "size": config.get("size"),
        "batch_size": config.get("batch_size"),
        "steps_per_execution": config.get("steps_per_execution") or 1,  # 1 in records made before the setting
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
        "utilization_window": (summary.get("gpu_util_window") if _on_gpu(record)
                               else summary.get("cpu_util_window")),
        "diagnosis": verdict["verdict"],
        "diagnosis_kind": verdict.get("kind"),
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


def sweep_speedups(rows: Sequence[Mapping[str, Any]], baseline_target: Target | str,
                   other_target: Target | str) -> list[dict[str, Any]]:
    """Speed-up of other_target over baseline_target per (size, batch, steps per execution) point, from steady epoch
    times."""
    by_point: dict[tuple[Any, Any, Any], dict[str, Mapping[str, Any]]] = {}
    for row in rows:
        point = (row["size"], row["batch_size"], row.get("steps_per_execution") or 1)
        by_point.setdefault(point, {})[_text(row["target"])] = row
    out = []
    for (size, batch, steps), group in by_point.items():
        a, b = group.get(_text(baseline_target)), group.get(_text(other_target))
        if a and b and a.get("steady_epoch_seconds") and b.get("steady_epoch_seconds"):
            out.append({"size": size, "batch_size": batch, "steps_per_execution": steps, "params": a.get("params"),
                        "speedup": a["steady_epoch_seconds"] / b["steady_epoch_seconds"]})
    return out


def sweep_targets(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The targets of sweep rows, CPU ones first (a CPU is the baseline a GPU's speed-up is measured against)."""
    def cpu_first(name: str) -> tuple[bool, str]:
        try:
            return not Target.parse(name).is_cpu, name
        except ConfigError:
            return True, name

    return sorted({str(r["target"]) for r in rows}, key=cpu_first)


def _text(target_text: Target | str) -> str:
    """A target's canonical text; text that is no target as it is."""
    if isinstance(target_text, Target):
        return str(target_text)
    try:
        return str(Target.parse(target_text))
    except ConfigError:
        return str(target_text)


def _on_gpu(record: Mapping[str, Any]) -> bool:
    found = target_of(record)
    return found is not None and found.is_gpu


# -- this tool's runs beside the seed articles' figures ----------------------------------------------------------------
def reference_pairs(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """This tool's runs as rows for the table of the articles' published figures, which timed whole ``fit`` calls: so
    total times (tracing included), with the steady epoch time beside.

    A CPU run and a GPU run (exactly two records) make one row with both times and their ratio (CPU total / GPU
    total); any other group makes one row per run, its time on its own side and no ratio. Each row: ``runs`` (the
    records, CPU first), ``targets`` (their text), ``cpu_seconds``, ``gpu_seconds``, ``ratio``,
    ``cpu_steady_seconds``, ``gpu_steady_seconds`` (None where a side has no run or no figure).
    """
    found = [target_of(r) for r in records]
    cpus = [r for r, t in zip(records, found) if t is not None and t.is_cpu]
    gpus = [r for r, t in zip(records, found) if t is not None and t.is_gpu]
    if len(records) == 2 and len(cpus) == 1 and len(gpus) == 1:
        return [_reference_row([cpus[0], gpus[0]], cpus[0], gpus[0])]
    return [_reference_row([rec], rec, None) if t is not None and t.is_cpu else _reference_row([rec], None, rec)
            for rec, t in zip(records, found)]


def _reference_row(runs: list[Mapping[str, Any]], cpu: Mapping[str, Any] | None,
                   gpu: Mapping[str, Any] | None) -> dict[str, Any]:
    def figure(rec: Mapping[str, Any] | None, key: str) -> float | None:
        return (rec.get("summary") or {}).get(key) if rec is not None else None

    cpu_s, gpu_s = figure(cpu, "total_seconds"), figure(gpu, "total_seconds")
    return {"runs": runs, "targets": [target(r) for r in runs], "cpu_seconds": cpu_s, "gpu_seconds": gpu_s,
            "ratio": cpu_s / gpu_s if cpu_s and gpu_s else None,
            "cpu_steady_seconds": figure(cpu, "steady_epoch_seconds"),
            "gpu_steady_seconds": figure(gpu, "steady_epoch_seconds")}
