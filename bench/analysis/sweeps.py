"""Sweeps: short runs over model sizes (and batch sizes, steps per execution, device counts) on one or more targets,
each finished run turned into a row (parameters, steady epoch time, samples/s, achieved GFLOP/s against the measured
peak, mean utilization, scaling over one device), and the speed-ups and targets the Sweep page and `bench sweep` show
from those rows."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from bench.analysis import compare, metrics, run_summary
from bench.analysis.run_summary import Run
from bench.vocab.records import RunRecord, Sweep
from bench.vocab.config import ConfigError, DeviceInventory, RunConfig
from bench.hardware.peak_cache import PeakEntry
from bench.vocab.record_types import SweepRow as SweepRow, SweepSpeedup as SweepSpeedup  # the types this module fills
from bench.vocab.target import Target, canonical, of_config, text_of_config
from bench.vocab.target import on_gpu as on_gpu_rule
from bench.plans import models


def sweep_configs(base: RunConfig, sizes: Sequence[str], targets: Sequence[Target | str],
                  batch_sizes: Sequence[int] | None, hardware: DeviceInventory, *,
                  steps_per_execution: Sequence[int] | None = None,
                  devices: Sequence[int] | None = None) -> list[RunConfig]:
    """Every (size, batch size, steps per execution, device count, target) point as a validated config, in run order
    (size-major; the targets and device counts of one point run back to back, so noise hits both sides of a speed-up
    alike). ``devices``: data-parallel device counts (1 = one device), a scaling axis."""
    if base.model_file is not None:  # a model file has one size, its own: the sweep varies the rest
        sizes = [base.size or ""]
    if not sizes:
        raise ConfigError([f"give at least one model size, e.g. --sizes xs,s,m (from {', '.join(models.SIZES)})"])
    if batch_sizes is not None and not batch_sizes:
        raise ConfigError(["give at least one batch size, e.g. --batch-sizes 64,256, or leave the option out"])
    if steps_per_execution is not None and not steps_per_execution:
        raise ConfigError(["give at least one steps-per-execution value, e.g. --steps-per-execution 1,8,32, or leave "
                           "the option out"])
    if devices is not None and not devices:
        raise ConfigError(["give at least one device count, e.g. --devices 1,2, or leave the option out"])
    bad = [s for s in sizes if s not in models.SIZES and base.model_file is None]
    if bad:
        raise ConfigError([f"unknown size(s) {', '.join(bad)}; pick from {', '.join(models.SIZES)}"])
    if base.model in models.PRESETS:
        raise ConfigError([f"a sweep varies the model size; pick a family ({', '.join(models.FAMILIES)}), "
                           f"not the fixed preset {base.model!r}"])
    configs = []
    counts: Sequence[int | None] = devices or [base.devices]
    for size, batch, steps, name, count in itertools.product(sizes, batch_sizes or [base.batch_size],
                                                             steps_per_execution or [base.steps_per_execution], targets,
                                                             counts):
        configs.append(base.replace(size=size, batch_size=int(batch), steps_per_execution=steps,
                                    devices=count).with_target(name))
    errors: list[str] = []
    for config in configs:
        try:
            config.validate(hardware)
        except ConfigError as exc:
            on = f" x {config.devices}" if config.devices else ""
            errors.extend(f"{config.size}/{config.batch_size}/{config.steps_per_execution}/{config.target()}{on}: {e}"
                          for e in exc.errors)
    if errors:
        raise ConfigError(sorted(set(errors)))
    return configs


def sweep_row(record: Run, peak: PeakEntry | float | None) -> SweepRow:
    """One sweep point from a finished run record. ``peak`` is the target's matmul peak in GFLOP/s, or its cache
    entry (bench.hardware.peak_cache) with ``stale``. The share of the peak is never above 1: a run that achieved more than the
    peak, or a peak flagged for a new probe, gives ``peak_fraction`` None and ``peak_stale`` True."""
    config, info = record.config, record.info
    summary = run_summary.summary_of(record)
    achieved = compare.achieved_gflops(record)
    flagged, peak_gflops = (peak.stale, peak.peak_gflops) if isinstance(peak, PeakEntry) else (False, peak)
    stale = flagged or bool(achieved and peak_gflops and achieved > peak_gflops)
    verdict = run_summary.diagnosis_of(record, None if stale else peak_gflops)
    return SweepRow(
        run_id=record.id,
        status=str(record.status),
        size=config.size,
        batch_size=config.batch_size,
        steps_per_execution=config.steps_per_execution,
        target=text_of_config(config),
        devices=device_count(record),
        per_device_batch_size=info.per_device_batch_size,
        params=info.params,
        flops_per_sample=info.flops_per_sample,
        steady_epoch_seconds=summary.steady_epoch_seconds,
        samples_per_s=summary.steady_samples_per_s,
        achieved_gflops=achieved,
        peak_gflops=peak_gflops,
        peak_fraction=achieved / peak_gflops if achieved and peak_gflops and not stale else None,
        peak_stale=stale,
        mean_gpu_util_percent=summary.mean_gpu_util_percent,
        sm_active_percent=summary.sm_active_percent,
        tensor_active_percent=summary.tensor_active_percent,
        mean_cpu_percent=summary.mean_cpu_percent,
        mean_process_cpu_percent=summary.mean_process_cpu_percent,
        sample_interval_s=config.sample_interval_s,
        utilization_window=(summary.gpu_util_window if _on_gpu_record(record)
                            else summary.cpu_util_window),
        diagnosis=verdict.verdict,
        diagnosis_kind=verdict.kind,
    )


def device_count(record: Run) -> int:
    """The devices a run trained on: the replicas its worker reported, else the count its config asked for, else 1."""
    replicas = record.info.replicas
    if replicas is not None and replicas >= 1:
        return replicas
    asked = record.config.devices
    return asked if asked is not None and asked >= 1 else 1


# Below this share of N x the one-device throughput, the exchange between devices sets the pace, not the arithmetic.
EXCHANGE_BOUND_EFFICIENCY = 0.75


def sweep_record(rows: Sequence[SweepRow], peaks_gflops: Mapping[str, float | None],
                 runs: Sequence[RunRecord]) -> dict[str, Any]:
    """The one builder of a ``bench.sweep/1`` document (runs are kept without their samples, each with its
    summary)."""
    kept = tuple(run_summary.with_summary(r).model_copy(update={"samples": ()}) for r in runs)
    return Sweep(rows=tuple(rows), peaks_gflops=dict(peaks_gflops), runs=kept).to_dict()


def with_scaling(rows: Sequence[SweepRow]) -> list[SweepRow]:
    """``rows`` with, for each point that has a one-device row (same size, batch size, steps and target),
    ``speedup_over_one_device`` (samples/s with N over samples/s with 1) and ``scaling_efficiency`` (samples/s with N
    over N x samples/s with 1); None where there is no such row or no throughput. ``scaling_diagnosis`` says when the
    exchange between devices sets the pace (efficiency below EXCHANGE_BOUND_EFFICIENCY), with the knob that tests it."""
    def point(row: SweepRow) -> tuple[Any, ...]:
        return row.size, row.batch_size, row.steps_per_execution, canonical(row.target)

    one = {point(r): r.samples_per_s for r in rows if r.devices == 1}
    out = []
    for row in rows:
        rate, base = row.samples_per_s, one.get(point(row))
        speedup = rate / base if rate and base else None
        efficiency = speedup / row.devices if speedup is not None else None
        out.append(row.model_copy(update={"speedup_over_one_device": speedup, "scaling_efficiency": efficiency,
                                          "scaling_diagnosis": _exchange_bound(row, efficiency)}))
    return out


def _per_device(row: SweepRow) -> int:
    return row.per_device_batch_size or (row.batch_size or 0) // row.devices


def _exchange_bound(row: SweepRow, efficiency: float | None) -> str | None:
    count = row.devices
    if count < 2 or efficiency is None or efficiency >= EXCHANGE_BOUND_EFFICIENCY:
        return None
    return (f"{count} devices give {efficiency:.0%} of {count}x the one-device throughput: the exchange between "
            f"devices (gradients summed every step) and the per-step host work, not the arithmetic, set the pace. "
            f"Each device trains {_per_device(row)} samples a step; a larger per-device batch (batch size "
            f"{(row.batch_size or 0) * 4}) gives each exchange more arithmetic, and tests this.")


def exchange_bound_summary(rows: Sequence[SweepRow]) -> str | None:
    """One paragraph for every point where the exchange between devices sets the pace (``scaling_diagnosis``): which
    points, their share of N x one device, why, and the knob that tests it; None when there is none."""
    bound = [r for r in rows if r.scaling_diagnosis]
    if not bound:
        return None
    points = "; ".join(f"{r.size} on {r.target} x {r.devices}: {r.scaling_efficiency or 0:.0%}" for r in bound)
    per_device = sorted({_per_device(r) for r in bound})
    return (f"Below {EXCHANGE_BOUND_EFFICIENCY:.0%} of N x the one-device throughput ({points}): the exchange between "
            "devices (gradients summed every step) and the per-step host work, not the arithmetic, set the pace. "
            f"Each device trained {', '.join(map(str, per_device))} samples a step; a larger per-device batch gives "
            "each exchange more arithmetic, and tests this.")


def peak_share_text(row: SweepRow) -> str:
    """A sweep row's share of the peak for a table: '61 %', 'peak being re-measured', or '—'."""
    if row.peak_stale:
        return "peak being re-measured"
    return f"{row.peak_fraction:.0%}" if row.peak_fraction is not None else "—"


WIDE_WINDOW_NOTE = (
    "utilization averaged over more than the steady epochs: they were shorter than the sampling interval, so no "
    "sample fell inside them and the mean includes tracing or start-up, when the device waits. It understates how "
    "busy the device was: raise the sample limit (longer epochs) or lower the sampling interval.")


def wide_window_rows(rows: Sequence[SweepRow]) -> list[SweepRow]:
    """Sweep points whose utilization mean is not over steady epochs alone (their epochs were shorter than the
    sampling interval), so it includes tracing or start-up and understates how busy the device was."""
    def wide(row: SweepRow) -> bool:
        if row.utilization_window is not None:
            return row.utilization_window != metrics.WINDOW_NAMES[0]
        # rows from before the window was recorded: a steady epoch shorter than the sampling interval can hold no sample
        interval, seconds = row.sample_interval_s, row.steady_epoch_seconds
        return bool(interval and seconds and seconds < interval)

    return [r for r in rows if wide(r)]


def sweep_speedups(rows: Sequence[SweepRow], baseline_target: Target | str,
                   other_target: Target | str) -> list[SweepSpeedup]:
    """Speed-up of other_target over baseline_target per (size, batch, steps per execution, device count) point, from
    steady epoch times."""
    by_point: dict[tuple[Any, ...], dict[str, SweepRow]] = {}
    for row in rows:
        by_point.setdefault(row.point(), {})[canonical(row.target)] = row
    out = []
    for (size, batch, steps, devices), group in by_point.items():
        a, b = group.get(canonical(baseline_target)), group.get(canonical(other_target))
        if a and b and a.steady_epoch_seconds and b.steady_epoch_seconds:
            out.append(SweepSpeedup(size=size, batch_size=batch, steps_per_execution=steps, devices=devices,
                                    params=a.params, speedup=a.steady_epoch_seconds / b.steady_epoch_seconds))
    return out


def sweep_targets(rows: Sequence[SweepRow]) -> list[str]:
    """The targets of sweep rows, CPU ones first (a CPU is the baseline a GPU's speed-up is measured against)."""
    def cpu_first(name: str) -> tuple[bool, str]:
        try:
            return not Target.parse(name).is_cpu, name
        except ConfigError:
            return True, name

    return sorted({r.target for r in rows}, key=cpu_first)


def on_gpu(row: SweepRow) -> bool:
    """Whether a sweep row's target is a GPU (or all of them), by bench.vocab.target.on_gpu; a row whose target is no target
    counts as CPU."""
    try:
        target: Target | None = Target.parse(row.target)
    except ValueError:
        target = None
    return on_gpu_rule(target) is True


def _on_gpu_record(record: Run) -> bool:
    """Whether a finished run trained on a GPU, by bench.vocab.target.on_gpu of its config and placement."""
    return on_gpu_rule(of_config(record.config), record.info.placement) is True
