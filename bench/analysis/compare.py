"""Comparisons and sweeps: many runs of one base config, queued through the same JobManager, then summarised.

A comparison trains one config on two or more targets (``cpu``, ``cpu/N``, ``gpu:N``, ``gpus``) on identical data,
seed, precision and batch size; the headline is speed-up = median steady epoch time of the first target / of each
other. A sweep trains short runs over model sizes (and optionally batch sizes) on one or more targets and turns each
finished run into a row: parameters, steady epoch time, samples/s, achieved GFLOP/s against the measured peak, mean
utilization.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

from bench.analysis import diagnosis, metrics, run_summary
from bench.training import models
from bench.config import ConfigError, RunConfig
from bench.target import Target


def parse_targets(text: str | Sequence[str | Target]) -> list[Target]:
    """``"cpu/1,cpu"`` (or a list of such words) -> ``[Target cpu/1, Target cpu]``; at least one, each in an allowed
    form (ConfigError otherwise)."""
    items = text.split(",") if isinstance(text, str) else text
    targets = [t if isinstance(t, Target) else Target.parse(t) for t in items if isinstance(t, Target) or t.strip()]
    if not targets:
        raise ConfigError(["give at least one target, e.g. --targets cpu/1,cpu"])
    twice = sorted({str(t) for t in targets if targets.count(t) > 1})
    if twice:  # a target against itself is no comparison, and a sweep would run each point twice
        raise ConfigError([f"target {', '.join(twice)} is named more than once; name each target once, e.g. "
                           f"--targets cpu/1,cpu"])
    return targets


PRICE_EXAMPLE = "cpu=0.40,gpu:0=2.50"


def price_value(text: str, where: str) -> float | None:
    """One hourly price as entered: blank = no price (None); else a number above 0 (ConfigError otherwise)."""
    text = str(text).strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        raise ConfigError([f"{where}: {text!r} is not a number; give an hourly price such as 0.40, or leave it "
                           "blank for no price"]) from None
    if not math.isfinite(value) or value <= 0:
        raise ConfigError([f"{where}: an hourly price must be above 0 (got {text!r}); leave a target out to give it "
                           "no price"])
    return value


def parse_prices(text: str | None, targets: Sequence[Target | str] | None = None) -> dict[str, float]:
    """``"cpu=0.40,gpu:0=2.50"`` -> ``{"cpu": 0.4, "gpu:0": 2.5}``: an hourly price per target, entered by the user
    (no price is assumed for a target left out). Every problem is listed in one ConfigError, each saying what to
    write; with ``targets``, a price for a target not among them is one."""
    prices: dict[str, float] = {}
    errors: list[str] = []
    known = {_text(t) for t in targets} if targets is not None else None
    for part in (text or "").split(","):
        if not part.strip():
            continue
        name, sep, price = part.partition("=")
        try:
            if not sep:
                raise ConfigError([""])
            canonical = str(Target.parse(name.strip()))
        except ConfigError:
            errors.append(f"--price: {part.strip()!r} is not TARGET=PRICE; write e.g. {PRICE_EXAMPLE}")
            continue
        try:
            value = price_value(price, f"--price {canonical}")
        except ConfigError as exc:
            errors.extend(exc.errors)
            continue
        if value is None:
            errors.append(f"--price: {part.strip()!r} has no price; write e.g. {PRICE_EXAMPLE}")
        elif known is not None and canonical not in known:
            errors.append(f"--price: {canonical} is not among the targets ({', '.join(sorted(known))}); price only "
                          "those you compare")
        elif canonical in prices:
            errors.append(f"--price: {canonical} is priced twice; give each target one price")
        else:
            prices[canonical] = value
    if errors:
        raise ConfigError(errors)
    return prices


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


def comparison(records: Sequence[Mapping[str, Any]],
               prices: Mapping[str, float] | None = None) -> dict[str, Any]:
    """Speed-up of every run against the first (the baseline), from their epochs; with energy and cost per pair.

    ``prices`` maps a target's text (``cpu``, ``gpu:0``) to an hourly price entered by the user; none is assumed.
    Each pair also has ``energy_j_per_epoch_a``/``_b`` (None where that side was not measured), ``energy_ratio`` (the
    baseline's energy per steady epoch / the other's; None unless both were measured), ``energy_missing`` (each
    unmeasured device and why), ``cost_per_epoch_a``/``_b`` and ``cost_per_run_a``/``_b`` (None without a price) and
    ``cost_ratio`` (the baseline's cost per steady epoch / the other's; None unless both sides have a price).
    For exactly two runs the first pair's figures are also given at the top level (speedup_median, ...).
    """
    if len(records) < 2:
        return {"pairs": [], "baseline": records[0].get("id") if records else None}
    prices = {_text(k): float(v) for k, v in (prices or {}).items()}
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
            **_energy_and_cost(base, other, prices),
        })
    out: dict[str, Any] = {"baseline": base.get("id"), "pairs": pairs}
    if prices:
        out["prices"] = prices
    if len(pairs) == 1:
        for key in ("speedup_median", "speedup_min", "speedup_max", "total_time_ratio", "first_epoch_seconds_a",
                    "first_epoch_seconds_b", "energy_ratio", "cost_ratio", "cost_per_epoch_a", "cost_per_epoch_b",
                    "cost_per_run_a", "cost_per_run_b", "energy_j_per_epoch_a", "energy_j_per_epoch_b"):
            out[key] = pairs[0].get(key)
    return out


def _summary(record: Mapping[str, Any]) -> Mapping[str, Any]:
    return record.get("summary") or run_summary.summarize(record.get("epochs") or [], record.get("samples") or [])


def energy_per_epoch(record: Mapping[str, Any]) -> tuple[float | None, dict[str, str]]:
    """(joules per steady epoch summed over the run's devices, {} ) when every device was measured; else
    (None, {device: why not}) naming each unmeasured device (the run's target when the summary says nothing)."""
    summary = _summary(record)
    per_device = summary.get("energy_j_per_epoch")
    reasons = summary.get("energy_reasons") or {}
    if not isinstance(per_device, Mapping) or not per_device:
        device = target(record).split("/")[0]
        return None, {device: str(reasons.get(device) or "no energy reading in this run")}
    missing = {str(d): str(reasons.get(d) or "no energy reading") for d, j in per_device.items()
               if not (isinstance(j, (int, float)) and not isinstance(j, bool) and j >= 0)}
    if missing:
        return None, missing
    return float(sum(per_device.values())), {}


def run_cost(record: Mapping[str, Any], price_per_hour: float | None) -> tuple[float | None, float | None]:
    """(cost per steady epoch, cost per run) at an hourly price; the run is its wall time from start to end (start-up
    included), else the sum of its epochs. None where the price or the time is missing."""
    if price_per_hour is None:
        return None, None
    summary = _summary(record)
    steady = summary.get("steady_epoch_seconds")
    started, ended = record.get("started_at"), record.get("ended_at")
    run_s = ended - started if isinstance(started, (int, float)) and isinstance(ended, (int, float)) \
        and ended >= started else summary.get("total_seconds")
    return (steady * price_per_hour / 3600 if steady is not None else None,
            run_s * price_per_hour / 3600 if run_s is not None else None)


def _energy_and_cost(base: Mapping[str, Any], other: Mapping[str, Any],
                     prices: Mapping[str, float]) -> dict[str, Any]:
    energy_a, missing_a = energy_per_epoch(base)
    energy_b, missing_b = energy_per_epoch(other)
    epoch_a, run_a = run_cost(base, prices.get(_text(target(base))))
    epoch_b, run_b = run_cost(other, prices.get(_text(target(other))))
    return {
        "energy_j_per_epoch_a": energy_a, "energy_j_per_epoch_b": energy_b,
        "energy_ratio": energy_a / energy_b if energy_a is not None and energy_b else None,
        "energy_missing": {**missing_a, **missing_b},
        "price_per_hour_a": prices.get(_text(target(base))), "price_per_hour_b": prices.get(_text(target(other))),
        "cost_per_epoch_a": epoch_a, "cost_per_epoch_b": epoch_b, "cost_per_run_a": run_a, "cost_per_run_b": run_b,
        "cost_ratio": epoch_a / epoch_b if epoch_a is not None and epoch_b else None,
    }


def achieved_gflops(record: Mapping[str, Any]) -> float | None:
    """A run's steady achieved GFLOP/s: its summary's figure, else FLOPs per sample x steady samples/s."""
    summary = _summary(record)
    kept = summary.get("achieved_gflops")
    if isinstance(kept, (int, float)) and not isinstance(kept, bool):
        return float(kept)
    flops = (record.get("info") or {}).get("flops_per_sample")
    return metrics.achieved_gflops(flops, summary.get("steady_samples_per_s")) if flops else None


def epoch_gflops(epoch: Mapping[str, Any], info: Mapping[str, Any]) -> float | None:
    """One epoch's achieved GFLOP/s: its own ``achieved_gflops``, else FLOPs per sample x its samples/s."""
    kept = epoch.get("achieved_gflops")
    if isinstance(kept, (int, float)) and not isinstance(kept, bool):
        return float(kept)
    flops = info.get("flops_per_sample")
    return metrics.achieved_gflops(flops, epoch.get("samples_per_s")) if flops else None


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
    """One honest sentence: 'cpu trains 3.1x faster than cpu/1 (median steady epoch; spread 2.8-3.4x; ...)', or
    'cpu/1 and cpu are about as fast (...)' when the spread crosses 1x; then the energy and cost per steady epoch
    where measured and priced, or which side's energy was not measured and why."""
    median = pair.get("speedup_median")
    if median is None:
        return "Not enough epochs for a speed-up yet: it needs at least two epochs on each side (epoch 1 includes tracing)."
    faster, slower, factor = pair["target"], pair["baseline_target"], median
    spread_lo, spread_hi = pair["speedup_min"], pair["speedup_max"]
    total = pair.get("total_time_ratio")
    flipped = median < 1
    if flipped:
        faster, slower, factor = slower, faster, 1 / median
        spread_lo, spread_hi = 1 / pair["speedup_max"], 1 / pair["speedup_min"]
        total = 1 / total if total else total
    total_text = f"; total time ratio {total:.2f}x" if total else ""
    details = f"(median steady epoch ratio {factor:.2f}x; " if spread_lo < 1 < spread_hi else "(median steady epoch; "
    details += f"spread {spread_lo:.1f}x–{spread_hi:.1f}x{total_text})"
    if spread_lo < 1 < spread_hi:
        speed = f"{pair['baseline_target']} and {pair['target']} are about as fast {details}"
    else:
        speed = f"{faster} trains {factor:.1f}x faster than {slower} {details}"
    # the energy and cost clauses speak of the side named first: the faster one (or the other one when about equal)
    subject_is_baseline = flipped and not spread_lo < 1 < spread_hi
    subject = pair["baseline_target"] if subject_is_baseline else pair["target"]
    parts = [_ratio_clause(pair, "energy", subject_is_baseline, subject),
             _ratio_clause(pair, "cost", subject_is_baseline, subject)]
    missing = pair.get("energy_missing") or {}
    if pair.get("energy_ratio") is None and missing:
        parts.append("energy not measured on " + "; on ".join(f"{d}: {why}" for d, why in missing.items()))
    extra = [p for p in parts if p]
    return speed + ("; " + "; ".join(extra) if extra else "")


def _ratio_clause(pair: Mapping[str, Any], what: str, subject_is_baseline: bool, subject: str) -> str | None:
    """'gpu:0 uses 4.2x less energy per epoch (310 J vs 1.3 kJ ...)' for the subject side, or None without both
    figures. The clause names its side, so that it cannot be read as the other's."""
    key = "energy_j_per_epoch" if what == "energy" else "cost_per_epoch"
    a, b = pair.get(f"{key}_a"), pair.get(f"{key}_b")
    if a is None or b is None or not a or not b:
        return None
    mine, theirs = (a, b) if subject_is_baseline else (b, a)
    show = _joules if what == "energy" else _money
    figures = f"({show(mine)} vs {show(theirs)} per steady epoch)"
    ratio = theirs / mine
    if 0.95 <= ratio <= 1.05:
        return f"{subject}: about the same {what} per epoch {figures}"
    if what == "energy":
        return (f"{subject} uses {ratio:.1f}x less energy per epoch {figures}" if ratio > 1
                else f"{subject} uses {1 / ratio:.1f}x more energy per epoch {figures}")
    return (f"{subject} costs {ratio:.1f}x less per epoch {figures}" if ratio > 1
            else f"{subject} costs {1 / ratio:.1f}x more per epoch {figures}")


def _joules(value: float) -> str:
    return f"{value / 1000:.3g} kJ" if value >= 1000 else f"{value:.3g} J"


def _money(value: float) -> str:
    """A cost in the unit of the prices given (no currency is assumed), with three significant digits."""
    return f"{value:.3g}" if value >= 0.001 else f"{value:.2e}"


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


def sweep_row(record: Mapping[str, Any], peak: float | Mapping[str, Any] | None) -> dict[str, Any]:
    """One sweep point from a finished run record. ``peak`` is the target's matmul peak in GFLOP/s, or its cache
    entry (bench.hardware.probe) with ``stale``. The share of the peak is never above 1: a run that achieved more than the
    peak, or a peak flagged for a new probe, gives ``peak_fraction`` None and ``peak_stale`` True."""
    config = record.get("config") or {}
    info = record.get("info") or {}
    summary = _summary(record)
    rate = summary.get("steady_samples_per_s")
    flops = info.get("flops_per_sample")
    achieved = achieved_gflops(record)
    entry = peak if isinstance(peak, Mapping) else {}
    peak_gflops = entry.get("peak_gflops") if isinstance(peak, Mapping) else peak
    stale = bool(entry.get("stale")) or bool(achieved and peak_gflops and achieved > peak_gflops)
    verdict = diagnosis.of_record(record, None if stale else peak_gflops)
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
        "peak_fraction": achieved / peak_gflops if achieved and peak_gflops and not stale else None,
        "peak_stale": stale,
        "mean_gpu_util_percent": summary.get("mean_gpu_util_percent"),
        "sm_active_percent": summary.get("sm_active_percent"),
        "tensor_active_percent": summary.get("tensor_active_percent"),
        "mean_cpu_percent": summary.get("mean_cpu_percent"),
        "mean_process_cpu_percent": summary.get("mean_process_cpu_percent"),
        # the samples the utilization means cover (metrics.WINDOW_NAMES); not "steady epochs" = read with care
        "sample_interval_s": config.get("sample_interval_s"),
        "utilization_window": (summary.get("gpu_util_window") if _on_gpu(record)
                               else summary.get("cpu_util_window")),
        "diagnosis": verdict["verdict"],
        "diagnosis_kind": verdict.get("kind"),
    }


def peak_share_text(row: Mapping[str, Any]) -> str:
    """A sweep row's share of the peak for a table: '61 %', 'peak being re-measured', or '—'."""
    if row.get("peak_stale"):
        return "peak being re-measured"
    fraction = row.get("peak_fraction")
    return f"{fraction:.0%}" if fraction is not None else "—"


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
