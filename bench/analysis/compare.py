"""Comparisons: one config trained on two or more targets (``cpu``, ``cpu/N``, ``gpu:N``, ``gpus``) on identical
data, seed, precision and batch size, queued through the same JobManager. Each run against the first is a
:class:`Pair`: speed-up = median steady epoch time of the first target / of the other, with its spread, the energy
and cost of each side (bench.analysis.pricing) and one honest headline. Also this tool's runs beside the seed
articles' figures (:func:`reference_pairs`). Sweeps are bench.analysis.sweeps.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bench.analysis import run_summary
from bench.vocab.run_info import RunInfo
from bench.analysis import metrics
from bench.analysis.run_summary import Run
from bench.vocab.errors import RecordError
from bench.vocab.records import Comparison, ComparisonBlock, RunRecord
from bench.vocab.config import ConfigError, DeviceInventory, RunConfig
from bench.analysis import pricing
from bench.vocab.target import Target, canonical, of_config, text_of_config
from bench.vocab.readings import Epoch
from bench.vocab.record_types import RunSummary
from bench.vocab.record_types import Pair as Pair  # the type this module fills; compare.Pair at call sites


def target(run: Run) -> str:
    """A run's target as text (cpu, cpu/N, gpu:N, gpus); the rule lives in bench.vocab.target."""
    return text_of_config(run.config)


def target_of(run: Run) -> Target | None:
    """A run's target as a Target, None when its config's is malformed; the rule lives in bench.vocab.target."""
    return of_config(run.config)


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


def target_configs(base: RunConfig, targets: Sequence[Target | str], hardware: DeviceInventory) -> list[RunConfig]:
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


# for exactly two runs, the first pair's figures are also given at the top level of a comparison
_TOP_LEVEL = ("speedup_median", "speedup_min", "speedup_max", "total_time_ratio", "first_epoch_seconds_a",
              "first_epoch_seconds_b", "energy_ratio", "cost_ratio", "cost_per_epoch_a", "cost_per_epoch_b",
              "cost_per_run_a", "cost_per_run_b", "energy_j_per_epoch_a", "energy_j_per_epoch_b")


def pairs(records: Sequence[Run], prices: Mapping[str, float] | None = None) -> list[Pair]:
    """Every run against the first (the baseline), from their epochs; with energy and cost per pair, and its
    headline. ``prices`` maps a target's text (``cpu``, ``gpu:0``) to an hourly price entered by the user; none is
    assumed."""
    if len(records) < 2:
        return []
    prices = pricing.usable_prices(prices)
    base = records[0]
    out = []
    for other in records[1:]:
        result = metrics.speedup(base.epochs, other.epochs)
        pair = Pair(baseline_id=base.id, baseline_target=target(base), target_id=other.id,
                    target=target(other), **(dataclasses.asdict(result) if result else {}),
                    **_energy_and_cost(base, other, prices))
        out.append(pair.model_copy(update={"headline": headline(pair, (machine_name(base), machine_name(other)))}))
    return out


def machine_name(run: Run) -> str | None:
    """A short name of the machine a run ran on (its label, its host, its CPU), to tell two sides apart; None where
    its record says none."""
    hw = run.hardware
    cpu = hw.cpu.model if hw.cpu is not None else None
    name = next((n for n in (hw.label, hw.hostname, cpu) if isinstance(n, str) and n.strip()), None)
    return " ".join(name.split())[:60] if name else None


def side_names(pair: Pair, machines: tuple[str | None, str | None] = (None, None)) -> tuple[str, str]:
    """The two sides of a pair as a headline names them: their targets; where the targets read the same ("cpu" and
    "cpu": two runs of History, a loaded comparison), each with its run number (``cpu (#12)``), else its machine
    (``cpu on laptop``), else its place (``cpu (the first run)``), so that no sentence names two sides alike."""
    a, b = pair.baseline_target, pair.target
    if a != b:
        return a, b
    if pair.baseline_id is not None and pair.target_id is not None and pair.baseline_id != pair.target_id:
        return f"{a} (#{pair.baseline_id})", f"{b} (#{pair.target_id})"
    first, second = machines
    if first and second and first != second:
        return f"{a} on {first}", f"{b} on {second}"
    return f"{a} (the first run)", f"{b} (the second run)"


def comparison_record(runs: Sequence[RunRecord], prices: Mapping[str, float] | None = None) -> Comparison:
    """The one builder of a ``bench.comparison/1`` record: the runs and the speed-up of each against the first.

    ``comparison`` holds ``baseline`` (the first run's id), ``pairs`` (one per other run: :func:`comparison`) and,
    for exactly two runs, the first pair's figures at the top level too. ``prices`` (target -> hourly price, entered
    by the user) gives the costs. The block is built under its model's types, so a price out of bounds is refused.

    Raises:
        RecordError: no runs, or a figure its type refuses.
    """
    if not runs:
        raise RecordError("a comparison needs a list of at least one run record; pick two runs to compare")
    return Comparison(runs=tuple(runs),
                      comparison=ComparisonBlock.model_validate(comparison(runs, prices), path="comparison"))


def comparison(records: Sequence[Run],
               prices: Mapping[str, float] | None = None) -> dict[str, Any]:
    """The ``comparison`` block of a comparison record (JSON): ``baseline`` (the first run's id), ``pairs``
    (:func:`pairs`, each as its dict), the ``prices`` given and, for exactly two runs, the first pair's figures at
    the top level too."""
    found = pairs(records, prices)
    out: dict[str, Any] = {"baseline": records[0].id if records else None,
                           "pairs": [p.to_dict() for p in found]}
    usable = pricing.usable_prices(prices)
    if usable and found:
        out["prices"] = usable
    if len(found) == 1:
        out.update({key: getattr(found[0], key) for key in _TOP_LEVEL})
    return out


def _energy_and_cost(base: Run, other: Run,
                     prices: Mapping[str, float]) -> dict[str, Any]:
    energy_a, missing_a = pricing.energy_per_epoch(base)
    energy_b, missing_b = pricing.energy_per_epoch(other)
    price_a, price_b = (prices.get(canonical(target(run))) for run in (base, other))
    epoch_a, run_a = pricing.run_cost(base, price_a)
    epoch_b, run_b = pricing.run_cost(other, price_b)
    return {
        "energy_j_per_epoch_a": energy_a, "energy_j_per_epoch_b": energy_b,
        "energy_ratio": energy_a / energy_b if energy_a is not None and energy_b else None,
        "energy_missing": {**missing_a, **missing_b},
        "price_per_hour_a": price_a, "price_per_hour_b": price_b,
        "cost_per_epoch_a": epoch_a, "cost_per_epoch_b": epoch_b, "cost_per_run_a": run_a, "cost_per_run_b": run_b,
        "cost_ratio": epoch_a / epoch_b if epoch_a is not None and epoch_b else None,
    }


def achieved_gflops(run: Run) -> float | None:
    """A run's steady achieved GFLOP/s: its summary's figure, else FLOPs per sample x steady samples/s."""
    return achieved_of(run_summary.summary_of(run), run.info)


def achieved_of(summary: RunSummary, info: RunInfo | None) -> float | None:
    """:func:`achieved_gflops` from a run's summary and info."""
    if summary.achieved_gflops is not None:
        return float(summary.achieved_gflops)
    flops = info.flops_per_sample if info is not None else None
    return metrics.achieved_gflops(flops, summary.steady_samples_per_s) if flops else None


def epoch_gflops(epoch: Epoch, info: RunInfo) -> float | None:
    """One epoch's achieved GFLOP/s: its own ``achieved_gflops``, else FLOPs per sample x its samples/s."""
    if epoch.achieved_gflops is not None:
        return float(epoch.achieved_gflops)
    flops = info.flops_per_sample
    return metrics.achieved_gflops(flops, epoch.samples_per_s) if flops else None


def headline(pair: Pair, machines: tuple[str | None, str | None] = (None, None)) -> str:
    """The comparison's sentence: '<faster> trains Nx faster than <slower> (median steady epoch; spread ...)', or
    '<baseline> and <other> are about as fast (...)' when the spread crosses 1x, since then the ranking itself is not
    settled; then the energy and cost per steady epoch where measured and priced, or which side's energy is missing
    and why. Each side is named by :func:`side_names` (``machines``: each side's machine, where known)."""
    median, spread_lo, spread_hi = pair.speedup_median, pair.speedup_min, pair.speedup_max
    if median is None or spread_lo is None or spread_hi is None:
        return "Not enough epochs for a speed-up yet: it needs at least two epochs on each side (epoch 1 includes tracing)."
    base_name, other_name = side_names(pair, machines)
    faster, slower, factor = other_name, base_name, median
    total = pair.total_time_ratio
    flipped = median < 1
    if flipped:
        faster, slower, factor = slower, faster, 1 / median
        spread_lo, spread_hi = 1 / spread_hi, 1 / spread_lo
        total = 1 / total if total else total
    total_text = f"; total time ratio {total:.2f}x" if total else ""
    details = f"(median steady epoch ratio {factor:.2f}x; " if spread_lo < 1 < spread_hi else "(median steady epoch; "
    details += f"spread {spread_lo:.1f}x–{spread_hi:.1f}x{total_text})"
    if spread_lo < 1 < spread_hi:
        speed = f"{base_name} and {other_name} are about as fast {details}"
    else:
        speed = f"{faster} trains {factor:.1f}x faster than {slower} {details}"
    # the energy and cost clauses speak of the side named first: the faster one (or the other one when about equal)
    subject_is_baseline = flipped and not spread_lo < 1 < spread_hi
    subject = base_name if subject_is_baseline else other_name
    parts = [_ratio_clause(pair, "energy", subject_is_baseline, subject),
             _ratio_clause(pair, "cost", subject_is_baseline, subject)]
    missing = pair.energy_missing
    if pair.energy_ratio is None and missing:
        parts.append("energy not measured on " + "; on ".join(f"{d}: {why}" for d, why in missing.items()))
    extra = [p for p in parts if p]
    return speed + ("; " + "; ".join(extra) if extra else "")


def _ratio_clause(pair: Pair, what: str, subject_is_baseline: bool, subject: str) -> str | None:
    """'<subject> uses Nx less energy per epoch (<its joules> vs <the other's> per steady epoch)', or the same for
    cost; None without both figures. The clause names its side, so that it cannot be read as the other's."""
    a, b = ((pair.energy_j_per_epoch_a, pair.energy_j_per_epoch_b) if what == "energy"
            else (pair.cost_per_epoch_a, pair.cost_per_epoch_b))
    if a is None or b is None or not a > 0 or not b > 0 or not math.isfinite(a) or not math.isfinite(b):
        return None  # a negative or zero figure (a price out of bounds from a file) is no ratio
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


def caution(pair: Pair | metrics.Speedup) -> str | None:
    """A plain warning when the headline rests on too little: one steady epoch, or a spread that crosses 1x.

    A spread that includes 1x means some steady epochs of the "faster" side were slower than some of the other's:
    the ranking itself is not settled, so an audience should not be shown the factor without this caveat.
    """
    if pair.speedup_median is None:
        return None
    steady = min(pair.steady_epochs_a, pair.steady_epochs_b)
    lo, hi = pair.speedup_min, pair.speedup_max
    if steady < 2:
        return ("Only one steady epoch on a side: this factor is a single measurement. "
                "Run more epochs (3 or more) for a median and a spread.")
    if lo is not None and hi is not None and lo < 1 < hi:
        return ("The spread crosses 1x: some steady epochs of the slower side beat some of the faster one, so the "
                "ranking is not settled. Train on more samples or for more epochs, and keep the machine otherwise idle.")
    return None


# -- this tool's runs beside the seed articles' figures ----------------------------------------------------------------
@dataclass(frozen=True)
class ReferenceRow:
    """This tool's runs as one row of the table of the articles' published figures (whole ``fit`` calls timed):
    total times, tracing included, with the steady epoch time beside. A side without a run or a figure is None."""

    runs: tuple[Run, ...]  # CPU first
    targets: tuple[str, ...]
    cpu_seconds: float | None
    gpu_seconds: float | None
    cpu_steady_seconds: float | None
    gpu_steady_seconds: float | None

    @property
    def ratio(self) -> float | None:
        """CPU total / GPU total, where both sides have one."""
        return self.cpu_seconds / self.gpu_seconds if self.cpu_seconds and self.gpu_seconds else None


def reference_pairs(records: Sequence[Run]) -> list[ReferenceRow]:
    """This tool's runs as rows for the table of the articles' published figures: a CPU run and a GPU run (exactly
    two records) make one row with both times and their ratio; any other group makes one row per run, its time on its
    own side and no ratio."""
    found = [target_of(r) for r in records]
    cpus = [r for r, t in zip(records, found) if t is not None and t.is_cpu]
    gpus = [r for r, t in zip(records, found) if t is not None and t.is_gpu]
    if len(records) == 2 and len(cpus) == 1 and len(gpus) == 1:
        return [_reference_row((cpus[0], gpus[0]), cpus[0], gpus[0])]
    return [_reference_row((rec,), rec, None) if t is not None and t.is_cpu else _reference_row((rec,), None, rec)
            for rec, t in zip(records, found)]


def _reference_row(runs: tuple[Run, ...], cpu: Run | None, gpu: Run | None) -> ReferenceRow:
    cpu_summary = run_summary.summary_of(cpu) if cpu is not None else None
    gpu_summary = run_summary.summary_of(gpu) if gpu is not None else None
    return ReferenceRow(runs=runs, targets=tuple(target(r) for r in runs),
                        cpu_seconds=cpu_summary.total_seconds if cpu_summary else None,
                        gpu_seconds=gpu_summary.total_seconds if gpu_summary else None,
                        cpu_steady_seconds=cpu_summary.steady_epoch_seconds if cpu_summary else None,
                        gpu_steady_seconds=gpu_summary.steady_epoch_seconds if gpu_summary else None)
