"""The machine gallery: machine bundles (``bench.bundle/1``) side by side, workload by workload and target by target,
and the ranking of machines for one model (family, size, batch size) by time and by cost.

Every figure says how it was found: ``measured`` at that size, ``interpolated`` between the two nearest measured
sizes of the same family, batch size and target (log time per sample against log training FLOPs per sample), or
``not measured`` with the reason. A size outside the measured range is never extrapolated. Differences that make two
bundles unequal (backend, Keras version, suite version, precision, XLA) are flagged beside the figures they affect.
No Streamlit here: the Machines page, `bench machines` and the HTML gallery all read these functions.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from bench.analysis import pricing, run_summary
from bench.vocab.run_info import RunInfo
from bench.vocab.record_types import RunSummary
from bench.vocab.records import MachineBundle, RunRecord, Status
from bench.vocab.target import canonical, text_of_config
from bench.plans import models
from bench.plans.datasets import registry

MEASURED = "measured"
INTERPOLATED = "interpolated"
NOT_MEASURED = "not measured"
HOW_TEXT = {MEASURED: "measured", INTERPOLATED: "read between sizes"}


def workload_key(model: str, size: str | None, batch_size: int) -> str:
    """The key of a workload, the same on every machine: a preset's name, else ``family/size/bBATCH``."""
    return model if model in models.PRESETS else f"{model}/{size}/b{batch_size}"


def machine_name(bundle: MachineBundle) -> str:
    """The user's label, else the machine from its fingerprint: GPUs by model and count, or the CPU and cores."""
    if bundle.label:
        return bundle.label
    gpus, cpu = bundle.machine.gpus, bundle.machine.cpu
    cpu_text = f"{cpu.model or 'unknown CPU'} ({cpu.logical_cores or '?'} cores)"
    if gpus:
        counts = Counter(gpu.name or "GPU" for gpu in gpus)
        return " + ".join(f"{n} x{c}" for n, c in counts.items()) + f", {cpu_text}"
    return f"{cpu_text}, no GPU"


@dataclass(frozen=True)
class GalleryEntry:
    """One bundle in the gallery: where it came from (``shipped``, ``store``, ``upload``) and its key there."""

    key: str  # "shipped:bundle-h100", "store:3", "upload:laptop.json": unique in a gallery, kept in links
    source: str
    bundle: MachineBundle

    @property
    def name(self) -> str:
        return machine_name(self.bundle)

    @property
    def suite(self) -> str:
        return f"{self.bundle.suite_version}/{self.bundle.suite_variant}"


@dataclass(frozen=True)
class Measured:
    """One finished run of a bundle, reduced to what the gallery shows."""

    machine: str  # GalleryEntry.key
    target: str
    workload: str
    model: str
    size: str | None
    batch_size: int
    dataset: str
    flops_per_sample: float | None
    steady_epoch_seconds: float
    samples_per_s: float
    epoch_samples: int | None  # samples in one epoch (the steady epoch time is for this many)
    energy_j_per_1k: float | None
    energy_note: str | None  # why there is no energy figure
    precision: str
    backend: str
    jit_compile: bool
    run_id: int | None
    optimizer: str = "?"

    @property
    def seconds_per_1k(self) -> float:
        return 1000.0 / self.samples_per_s


def _measured(machine: GalleryEntry, run: RunRecord) -> Measured | None:
    if run.status != Status.FINISHED:
        return None
    summary = run_summary.summary_of(run)
    rate, steady = _positive(summary.steady_samples_per_s), _positive(summary.steady_epoch_seconds)
    if rate is None or steady is None:
        return None
    config, info = run.config, run.info
    model, size, batch = config.model, config.size, config.batch_size
    target = canonical(text_of_config(run.config))
    energy, note = target_energy(summary, info, target)
    return Measured(
        machine=machine.key, target=target, workload=workload_key(model, size, batch),
        model=model, size=None if model in models.PRESETS else size, batch_size=batch,
        dataset=config.dataset, flops_per_sample=info.flops_per_sample,
        steady_epoch_seconds=steady, samples_per_s=rate, epoch_samples=info.n_train,
        energy_j_per_1k=energy, energy_note=note,
        precision=config.precision, backend=_backend(run), jit_compile=config.jit_compile, run_id=run.id,
        optimizer=config.optimizer)


def _backend(run: RunRecord) -> str:
    """The Keras backend a run trained on: its config's, else (a record older than that setting) what the run itself
    reported, never this machine's default."""
    if run.config.recorded("backend"):
        return run.config.backend
    return run.info.backend or "?"


def target_energy(summary: RunSummary, info: RunInfo, target: str) -> tuple[float | None, str | None]:
    """Joules per 1,000 samples of the devices a target trained on (``cpu`` for a CPU target, that GPU for
    ``gpu:N``, every GPU the run measured for ``gpus``, summed) from a run summary's per-device figures, and a note:
    why there is none (that device's own reason), or that a figure was integrated from power samples."""
    per_device = summary.energy_j_per_1000_samples or {}
    if target.startswith("cpu"):
        devices = ["cpu"]
    elif target == "gpus":
        devices = sorted(d for d in per_device if str(d).startswith("gpu")) or ["gpu"]
    else:
        devices = [target]
    values = [_positive(per_device.get(d)) for d in devices]
    if values and all(v is not None for v in values):
        estimated = [d for d in devices if d in summary.energy_estimated]
        return (sum(v for v in values if v is not None),
                f"integrated from power samples ({', '.join(estimated)})" if estimated else None)
    reasons = summary.energy_reasons or info.energy_reasons or {}
    why = [f"{d}: {reason}" for d in devices if (reason := run_summary.energy_reason(reasons, d))]
    return None, "; ".join(why) or "no energy reading in this run"


def _positive(value: Any) -> float | None:
    """A finite number above 0 as a float, else None (a missing reading is never a zero)."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0
    return float(value) if ok else None


def measurements(machine: GalleryEntry) -> list[Measured]:
    """Each workload and target of a machine once: its finished runs, the median by samples/s where a workload ran
    more than once on a target (the shipped H100 records hold MLP s at batch 128 twice)."""
    groups: dict[tuple[str, str], list[Measured]] = {}
    for run in machine.bundle.runs:
        found = _measured(machine, run)
        if found is not None:
            groups.setdefault((found.workload, found.target), []).append(found)
    out = []
    for runs in groups.values():
        ordered = sorted(runs, key=lambda m: m.samples_per_s)
        out.append(ordered[(len(ordered) - 1) // 2])
    return out


def targets_of(machine: GalleryEntry) -> list[str]:
    """The targets a machine was measured on, CPUs first."""
    found = {m.target for m in measurements(machine)}
    return sorted(found, key=lambda t: (not t.startswith("cpu"), t))


def workloads_of(machines: Sequence[GalleryEntry]) -> list[str]:
    """Every workload measured on any of the machines: presets first, then families by size order and batch."""
    def order(key: str) -> tuple[int, str, int, int]:
        if key in models.PRESETS:
            return (0, key, 0, 0)
        family, size, batch = key.split("/")
        return (1, family, models.SIZES.index(size) if size in models.SIZES else 99, int(batch[1:]))

    return sorted({m.workload for machine in machines for m in measurements(machine)}, key=order)


# -- unequal bundles --------------------------------------------------------------------------------------------------
def run_traits(m: Measured, machine: GalleryEntry) -> dict[str, str]:
    """What makes a figure comparable with another: backend, Keras version, suite, precision, XLA, optimizer."""
    return {"backend": m.backend, "keras": machine.bundle.machine.framework_version or "?",
            "suite": machine.suite, "precision": m.precision, "XLA": "on" if m.jit_compile else "off",
            "optimizer": m.optimizer}


def differences(traits: Mapping[str, str], baseline: Mapping[str, str] | None) -> list[str]:
    """The traits in which a figure differs from the baseline's, e.g. ``backend jax (baseline tensorflow)``."""
    if baseline is None:
        return []
    return [f"{name} {value} (baseline {baseline[name]})" for name, value in traits.items()
            if name in baseline and baseline[name] != value]


# -- prices -----------------------------------------------------------------------------------------------------------
def prices_of(machines: Sequence[GalleryEntry], entered: Mapping[tuple[str, str], float] | None = None
              ) -> dict[tuple[str, str], float]:
    """Hourly price per (machine key, target): the bundle's own, replaced by those entered here; a price
    pricing.usable_price refuses (a subnormal, a negative, one past the bound) is no price."""
    out = {(m.key, canonical(t)): p for m in machines for t, p in m.bundle.prices.items()}
    out.update({(k, canonical(t)): p for (k, t), p in (entered or {}).items()})
    return {k: p for k, p in out.items() if pricing.usable_price(p) is not None}


def cost_per_1k(seconds_per_1k: float | None, price_per_hour: float | None) -> float | None:
    """What 1,000 training samples cost at an hourly price; None without a price or a time."""
    price_per_hour = pricing.usable_price(price_per_hour)
    if seconds_per_1k is None or price_per_hour is None:
        return None
    return seconds_per_1k * price_per_hour / 3600.0


# -- one workload across machines ---------------------------------------------------------------------------------------
class Row(BaseModel):
    """One machine and target for one workload (measured) or one model (measured or interpolated). Its JSON form (a
    ranking's rows in ``bench machines --json``) is pydantic's ``model_dump(mode="json")``: its fields in order, the
    per-1,000 figures and the speed-up under their written names, without the traits (what the flags are made of)."""

    model_config = ConfigDict(frozen=True, serialize_by_alias=True)

    machine: str
    machine_name: str
    target: str
    how: str  # MEASURED, INTERPOLATED or NOT_MEASURED
    note: str  # how it was found, or why there is no figure
    seconds_per_1k: float | None = Field(default=None, serialization_alias="seconds_per_1k_samples")
    samples_per_s: float | None = None
    steady_epoch_seconds: float | None = None
    epoch_samples: int | None = None
    energy_j_per_1k: float | None = Field(default=None, serialization_alias="energy_j_per_1k_samples")
    energy_note: str | None = None
    price_per_hour: float | None = None
    cost_per_1k: float | None = Field(default=None, serialization_alias="cost_per_1k_samples")
    # baseline seconds per 1,000 samples / these
    speedup: float | None = Field(default=None, serialization_alias="speedup_vs_baseline")
    flags: tuple[str, ...] = ()
    traits: dict[str, str] = Field(default_factory=dict, exclude=True)

    # What the page and the HTML report say of a row: one home for the wording both show.
    @property
    def how_text(self) -> str:
        """How the figure was found, in words: "measured" or "read between sizes"."""
        return HOW_TEXT.get(self.how, self.how)

    @property
    def energy_why(self) -> str:
        """Why there is no energy figure (shown in its place)."""
        return self.energy_note or NOT_MEASURED

    @property
    def energy_beside(self) -> str | None:
        """What is said beside an energy figure (that it was integrated from power), or None."""
        return self.energy_note if self.energy_j_per_1k is not None else None

    @property
    def cost_why(self) -> str:
        """Why there is no cost figure."""
        return "no price entered" if self.price_per_hour is None else NOT_MEASURED

    speedup_why: ClassVar[str] = "the baseline has no figure"  # why there is no speed-up


BASELINE_READ_BETWEEN = "baseline read between sizes"
WORKLOAD_TRAITS = ("optimizer",)  # traits that differ between the workloads of one machine (run_traits)


def _with_baseline(rows: list[Row], baseline: tuple[str, str] | None,
                   machines: Sequence[GalleryEntry] = ()) -> list[Row]:
    """Rows with their speed-up over the baseline row (machine key, target) and the traits that differ from it.

    The traits compared come from the baseline's own row, or, where it has no figure for this workload, from any run
    of that machine and target (its backend, Keras, suite, precision and XLA hold for all of its runs; the optimizer,
    which differs by workload, is then left out), so rows that differ from the baseline are flagged even when no
    speed-up can be given. A speed-up over a baseline figure that was read between sizes says so."""
    key = (baseline[0], canonical(baseline[1])) if baseline else None
    base = next((r for r in rows if key and (r.machine, r.target) == key), None)
    base_traits = base.traits if base is not None and base.traits else _machine_traits(machines, key)
    out = []
    for row in rows:
        speedup = (base.seconds_per_1k / row.seconds_per_1k
                   if base is not None and base.seconds_per_1k and row.seconds_per_1k else None)
        flags = list(differences(row.traits, base_traits)) if base_traits and row.traits else []
        if speedup is not None and base is not None and base.how == INTERPOLATED and row is not base:
            flags.append(BASELINE_READ_BETWEEN)
        out.append(_replace(row, speedup=speedup, flags=tuple(flags)))
    return out


def _machine_traits(machines: Sequence[GalleryEntry], key: tuple[str, str] | None) -> dict[str, str]:
    """The machine-wide traits of any finished run of one machine and target (empty when it has none or is not
    given): every trait but the optimizer, which a seed preset sets apart from the other workloads."""
    for machine in machines:
        if key is None or machine.key != key[0]:
            continue
        found = next((m for m in measurements(machine) if m.target == key[1]), None)
        if found is not None:
            return {k: v for k, v in run_traits(found, machine).items() if k not in WORKLOAD_TRAITS}
    return {}


def _replace(row: Row, **changes: Any) -> Row:
    return row.model_copy(update=changes)


def workload_rows(machines: Sequence[GalleryEntry], workload: str, *, prices: Mapping[tuple[str, str], float],
                  baseline: tuple[str, str] | None = None) -> list[Row]:
    """Every machine and target measured for one workload: time per steady epoch, samples/s, energy and cost per
    1,000 samples, speed-up over the baseline (machine key, target), and the traits that differ from it."""
    rows = []
    for machine in machines:
        for m in measurements(machine):
            if m.workload != workload:
                continue
            price = prices.get((machine.key, m.target))
            rows.append(Row(machine=machine.key, machine_name=machine.name, target=m.target, how=MEASURED,
                            note=f"measured (run #{m.run_id})" if m.run_id is not None else "measured",
                            seconds_per_1k=m.seconds_per_1k, samples_per_s=m.samples_per_s,
                            steady_epoch_seconds=m.steady_epoch_seconds, epoch_samples=m.epoch_samples,
                            energy_j_per_1k=m.energy_j_per_1k, energy_note=m.energy_note, price_per_hour=price,
                            cost_per_1k=cost_per_1k(m.seconds_per_1k, price), traits=run_traits(m, machine)))
    return _with_baseline(rows, baseline, machines)


# -- your model: measured, interpolated, or not -----------------------------------------------------------------------
def model_flops(model: str, size: str, dataset: str) -> float | None:
    """Training FLOPs per sample of a family at a size on a dataset (from the model plan, no Keras); None when the
    plan cannot be made."""
    info = registry.DATASETS.get(dataset)
    if info is None:
        return None
    try:
        return float(models.plan(model, size, info.input_shape, info.num_classes, info.vocab_size).flops_per_sample)
    except (models.ModelError, ValueError):
        return None


def estimate(machine: GalleryEntry, target: str, model: str, size: str | None, batch_size: int, *,
             price_per_hour: float | None = None) -> Row:
    """The figure of one machine and target for a model: measured at that size, else read between the two nearest
    measured sizes (same family, batch size and target), else not measured and why. Never extrapolated: beyond the
    measured sizes nothing says where a device's time per sample bends (docs/MACHINES.md)."""
    target = canonical(target)
    here = [m for m in measurements(machine) if m.target == target]
    key = workload_key(model, size, batch_size)
    exact = next((m for m in here if m.workload == key), None)
    if exact is not None:
        return Row(machine=machine.key, machine_name=machine.name, target=target, how=MEASURED,
                   note=f"measured at {_point(model, size, batch_size)}", seconds_per_1k=exact.seconds_per_1k,
                   samples_per_s=exact.samples_per_s, steady_epoch_seconds=exact.steady_epoch_seconds,
                   epoch_samples=exact.epoch_samples, energy_j_per_1k=exact.energy_j_per_1k,
                   energy_note=exact.energy_note, price_per_hour=price_per_hour,
                   cost_per_1k=cost_per_1k(exact.seconds_per_1k, price_per_hour), traits=run_traits(exact, machine))
    return _between(machine, target, [m for m in here if m.model == model], model, size, batch_size, price_per_hour)


def _point(model: str, size: str | None, batch: int) -> str:
    return f"{model} batch {batch}" if model in models.PRESETS else f"{model} {size} batch {batch}"


def _not(machine: GalleryEntry, target: str, why: str, price: float | None) -> Row:
    return Row(machine=machine.key, machine_name=machine.name, target=target, how=NOT_MEASURED, note=why,
               price_per_hour=price)


def _between(machine: GalleryEntry, target: str, family: list[Measured], model: str, size: str | None, batch: int,
             price: float | None) -> Row:
    if model in models.PRESETS or not family:
        return _not(machine, target, f"{_point(model, size, batch)} was not measured on {target} of this machine",
                    price)
    same_batch = [m for m in family if m.batch_size == batch]
    if not same_batch:
        batches = ", ".join(str(b) for b in sorted({m.batch_size for m in family}))
        return _not(machine, target, f"{model} was not measured at batch {batch} on {target} (measured at batch "
                                     f"{batches}); sizes are read between, batch sizes are not", price)
    flops = model_flops(model, str(size), same_batch[0].dataset)
    sized = sorted((m for m in same_batch if m.flops_per_sample), key=lambda m: float(m.flops_per_sample or 0))
    measured_sizes = ", ".join(str(m.size) for m in sized)
    if flops is None or not sized:
        return _not(machine, target, f"{model} {size} was not measured on {target} and cannot be read between "
                                     f"sizes (measured: {measured_sizes or 'none with FLOPs'})", price)
    below = [m for m in sized if float(m.flops_per_sample or 0) < flops]
    above = [m for m in sized if float(m.flops_per_sample or 0) > flops]
    if not below or not above:
        side = "below the smallest" if not below else "above the largest"
        return _not(machine, target, f"{model} {size} is {side} size measured on {target} at batch {batch} "
                                     f"({measured_sizes}); figures are never extrapolated past the measured range",
                    price)
    lo, hi = below[-1], above[0]
    share = (math.log(flops) - math.log(float(lo.flops_per_sample or 1))) / (
        math.log(float(hi.flops_per_sample or 1)) - math.log(float(lo.flops_per_sample or 1)))
    seconds = math.exp(math.log(lo.seconds_per_1k) + share * (math.log(hi.seconds_per_1k) - math.log(lo.seconds_per_1k)))
    energy = (math.exp(math.log(lo.energy_j_per_1k) + share * (math.log(hi.energy_j_per_1k)
                                                               - math.log(lo.energy_j_per_1k)))
              if lo.energy_j_per_1k and hi.energy_j_per_1k else None)
    return Row(machine=machine.key, machine_name=machine.name, target=target, how=INTERPOLATED,
               note=f"read between {lo.size} and {hi.size} measured at batch {batch} (by training FLOPs per sample)",
               seconds_per_1k=seconds, samples_per_s=1000.0 / seconds, energy_j_per_1k=energy,
               energy_note=None if energy is not None else (lo.energy_note or hi.energy_note),
               price_per_hour=price, cost_per_1k=cost_per_1k(seconds, price), traits=run_traits(lo, machine))


class Ranking(BaseModel):
    """The machines for one model: by time (fastest first) and by cost (cheapest first; priced rows only), and
    the rows that have no figure, each with its reason. Its JSON form (``bench machines --json``'s ``ranking``) is
    pydantic's ``model_dump(mode="json")``, the rows without a figure under ``not_measured``."""

    model_config = ConfigDict(frozen=True, serialize_by_alias=True)

    model: str
    size: str | None
    batch_size: int
    by_time: tuple[Row, ...]
    by_cost: tuple[Row, ...]
    unranked: tuple[Row, ...] = Field(serialization_alias="not_measured")


def ranking(machines: Sequence[GalleryEntry], model: str, size: str | None, batch_size: int, *,
            prices: Mapping[tuple[str, str], float], baseline: tuple[str, str] | None = None) -> Ranking:
    """Every machine and target estimated for the model (:func:`estimate`), ranked by seconds per 1,000 samples and
    by cost per 1,000 samples, with the speed-up over the baseline (machine key, target) and flags."""
    if model in models.PRESETS:
        size = None
    rows = [estimate(machine, target, model, size, batch_size, price_per_hour=prices.get((machine.key, target)))
            for machine in machines for target in targets_of(machine)]
    rows = _with_baseline(rows, baseline, machines)
    timed = sorted((r for r in rows if r.seconds_per_1k is not None), key=lambda r: r.seconds_per_1k or 0)
    costed = sorted((r for r in timed if r.cost_per_1k is not None), key=lambda r: r.cost_per_1k or 0)
    return Ranking(model=model, size=size, batch_size=batch_size, by_time=tuple(timed), by_cost=tuple(costed),
                   unranked=tuple(r for r in rows if r.seconds_per_1k is None))


def model_choices(machines: Sequence[GalleryEntry]) -> dict[str, list[int]]:
    """The models a user may pick (families and presets measured somewhere) with the batch sizes measured for each."""
    out: dict[str, set[int]] = {}
    for machine in machines:
        for m in measurements(machine):
            out.setdefault(m.model, set()).add(m.batch_size)
    return {k: sorted(v) for k, v in sorted(out.items(), key=lambda kv: (kv[0] in models.PRESETS, kv[0]))}


def usual_batch(machines: Sequence[GalleryEntry], model: str) -> int | None:
    """The batch size at which the most machine targets (a machine's CPU, its GPU) measured ``model``, the larger on a
    tie: the first one offered, so the ranking a user meets first compares as many as can be compared."""
    counts: dict[int, set[tuple[str, str]]] = {}
    for machine in machines:
        for m in measurements(machine):
            if m.model == model:
                counts.setdefault(m.batch_size, set()).add((machine.key, m.target))
    return max(counts, key=lambda b: (len(counts[b]), b)) if counts else None

