"""A run's ``summary`` block (its type: bench.vocab.record_types.RunSummary): the steady-state figures of bench.analysis.metrics, the diagnosis of bench.analysis.diagnosis and what
the devices really did (energy, GPM activity, throttle reasons), from the run's epochs, samples, info and config.

It sits above both: metrics is arithmetic that knows no verdicts, and the diagnosis reads metrics.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from bench.vocab.config import RunConfig
from bench.vocab.run_info import RunInfo
from bench.analysis import diagnosis
from bench.vocab.readings import Epoch, GpuReading, Sample
from bench.vocab.record_types import Diagnosis, RecordedHardware
from bench.vocab.records import Comparison, RunRecord
from bench.vocab.record_types import RunSummary as RunSummary  # the type this module fills; run_summary.RunSummary at call sites
from bench.hardware import energy
from bench.analysis.metrics import (finite_values, first_mean, first_mean_where, mean_gpu_util_percent, mean_or_none,
                           steady_epoch_seconds, steady_epochs, steady_samples_per_s, training_windows)



def summarize(epochs: Sequence[Epoch], samples: Sequence[Sample], *,
              info: RunInfo | None = None, config: RunConfig | None = None,
              peak_gflops: float | None = None) -> RunSummary:
    """The ``summary`` block of a run record. Utilization means cover the steady epochs (see training_windows).
    ``diagnosis`` (bench.analysis.diagnosis) also reads the run's info and config, and the device's peak when known;
    without them it says what is missing."""
    steady = steady_epoch_seconds(epochs)
    first = next((e for e in epochs if e.includes_tracing), None)
    windows = training_windows(epochs, samples)
    cpu_mean, cpu_window = first_mean_where(windows, lambda w: mean_or_none(s.cpu_percent for s in w))
    gpu_mean, gpu_window = first_mean_where(windows, mean_gpu_util_percent)
    return gpu_truth_summary(epochs, samples, windows, info, config).updated(
        steady_epoch_seconds=steady,
        steady_samples_per_s=steady_samples_per_s(epochs),
        first_epoch_seconds=first.epoch_seconds if first else None,
        total_seconds=sum(finite_values(e.epoch_seconds for e in epochs)) if epochs else None,
        epochs_done=len(epochs),
        mean_cpu_percent=cpu_mean,
        mean_process_cpu_percent=first_mean(windows, lambda w: mean_or_none(s.process_cpu_percent for s in w)),
        mean_gpu_util_percent=gpu_mean,
        cpu_util_window=cpu_window,
        gpu_util_window=gpu_window,
        steady_samples=len(windows[0]),
        peak_process_rss_mib=max(finite_values(s.process_rss_mib for s in samples), default=None),
        diagnosis=diagnosis.diagnose(epochs, samples, info, config, peak_gflops),
    )


def _used_gpus(sample: Sample, indices: set[int]) -> list[GpuReading]:
    return [g for g in sample.gpus or () if g.index in indices]


def energy_reason(reasons: Mapping[str, str], device: str) -> str | None:
    """Why ``device`` ("cpu", "gpu:0") has no energy figure, as a run's ``energy_reasons`` say: its own reason, else
    that of its kind ("cpu", or "gpu" for every GPU), else None."""
    return reasons.get(device) or reasons.get("cpu" if device == "cpu" else "gpu")


def energy_summary(epochs: Sequence[Epoch], samples: Sequence[Sample],
                   info: RunInfo | None, config: RunConfig | None) -> RunSummary:
    """Energy per steady epoch (median) and per 1,000 samples for every device the run used, which of them were
    integrated from power draw, and the reason a device's figure is None. The live header asks for this alone, at
    every refresh: it reads the epochs, and the samples only to name the GPUs of an all-GPUs run. The other figures
    of the summary are left unmeasured (None)."""
    info = info or RunInfo()
    steady = steady_epochs(epochs)
    devices = energy.devices_used(config.device if config is not None else "cpu", samples)
    for epoch in epochs:  # devices an epoch measured (e.g. every GPU of an all-GPUs run) count too
        devices.extend(d for d in (epoch.energy_j or {}) if d not in devices)
    per_epoch: dict[str, float | None] = {}
    per_1000: dict[str, float | None] = {}
    reasons: dict[str, str] = {}
    known = info.energy_reasons or {}
    for device in devices:
        values = finite_values(e.joules(device) for e in steady)
        per_epoch[device] = statistics.median(values) if values else None
        rates = finite_values(_joules_per_1000(e, device) for e in steady)
        per_1000[device] = statistics.median(rates) if rates else None
        if per_epoch[device] is None:
            reasons[device] = (energy_reason(known, device) or
                               ("no steady epoch yet (epoch 1 includes tracing)" if not steady else
                                "the samples hold no energy reading around the steady epochs"
                                + ("" if device == "cpu" else " (neither NVML's energy counter nor power draw)")))
    return RunSummary(energy_j_per_epoch=per_epoch, energy_j_per_1000_samples=per_1000,
                      energy_estimated=tuple(sorted({d for e in steady for d in e.energy_estimated or ()})),
                      energy_reasons=reasons)


def gpu_truth_summary(epochs: Sequence[Epoch], samples: Sequence[Sample],
                      windows: Sequence[Sequence[Sample]], info: RunInfo | None,
                      config: RunConfig | None) -> RunSummary:
    """What the devices really did over the run: its energy (energy_summary), GPM SM/tensor activity (means like the
    utilization means), the throttle reasons seen while training, and the steady median of the epochs' achieved
    GFLOP/s."""
    info = info or RunInfo()
    steady = steady_epochs(epochs)
    spent = energy_summary(epochs, samples, info, config)
    devices = list(spent.energy_j_per_epoch or {})
    indices = {i for i in map(energy.gpu_index, devices) if i is not None}
    throttled: set[str] | None = None
    for sample in windows[1]:
        for gpu in _used_gpus(sample, indices):
            if gpu.throttle_reasons is not None:
                throttled = (throttled or set()) | set(gpu.throttle_reasons)
    gflops = finite_values(e.achieved_gflops for e in steady)
    gpm_reasons = info.gpm_reasons
    return spent.updated(
        # means over the GPUs the run trained on (None on a CPU run and without GPM), windows as for utilization
        sm_active_percent=first_mean(windows, _gpu_mean_of("sm_active_percent", indices)),
        tensor_active_percent=first_mean(windows, _gpu_mean_of("tensor_active_percent", indices)),
        gpm_reasons=dict(gpm_reasons or {}),
        throttle_reasons=tuple(sorted(throttled)) if throttled is not None else None,
        achieved_gflops=statistics.median(gflops) if gflops else None,
    )


def _gpu_mean_of(key: str, indices: set[int]) -> Callable[[Sequence[Sample]], float | None]:
    """The mean of ``key`` over the readings of the GPUs ``indices`` in a window of samples."""
    def mean(window: Sequence[Sample]) -> float | None:
        return mean_or_none(getattr(g, key) for s in window for g in _used_gpus(s, indices))
    return mean


def _joules_per_1000(epoch: Epoch, device: str) -> float | None:
    """An epoch's joules on ``device`` per 1,000 training samples (samples = samples/s x epoch seconds)."""
    values = finite_values([epoch.joules(device), epoch.samples_per_s, epoch.epoch_seconds])
    if len(values) < 3 or values[1] * values[2] <= 0:
        return None
    joules, rate, seconds = values
    return 1000.0 * joules / (rate * seconds)


class Run(Protocol):
    """What the analysis reads of one run: ``bench.vocab.records.RunRecord`` (stored, imported, or a live run's snapshot)
    satisfies it. A protocol, so that the analysis, which the records module builds on, need not import it."""

    @property
    def id(self) -> int | None: ...
    @property
    def status(self) -> str: ...
    @property
    def config(self) -> RunConfig: ...
    @property
    def info(self) -> RunInfo: ...
    @property
    def hardware(self) -> RecordedHardware: ...
    @property
    def started_at(self) -> float | None: ...
    @property
    def ended_at(self) -> float | None: ...
    @property
    def epochs(self) -> Sequence[Epoch]: ...
    @property
    def samples(self) -> Sequence[Sample]: ...
    @property
    def summary(self) -> RunSummary | None: ...


def summary_of(run: Run) -> RunSummary:
    """The summary ``run`` carries, else one computed from its epochs, samples, info and config (a run still going,
    or one stored before summaries were kept): what every figure shown of a run is read from. Computed once a run:
    kept beside it (a record's ``_computed_summary``), since a record holds what it is given and computes nothing."""
    if run.summary is not None:
        return run.summary
    kept = getattr(run, "_computed_summary", None)
    if isinstance(kept, RunSummary):
        return kept
    summary = summarize(run.epochs, run.samples, info=run.info, config=run.config)
    try:
        setattr(run, "_computed_summary", summary)
    except (AttributeError, TypeError, ValueError):  # a run that keeps nothing beside it: computed each time
        pass
    return summary


def with_summary(run: RunRecord) -> RunRecord:
    """``run`` (and each member of a multi-worker run) carrying its summary, computed where it has none: what an
    export, a sweep or a bundle writes."""
    if run.summary is not None and all(m.summary is not None for m in run.members):
        return run
    return run.model_copy(update={"summary": summary_of(run), "members": tuple(map(with_summary, run.members))})


def with_summaries(document: RunRecord | Comparison) -> RunRecord | Comparison:
    """A run or comparison whose every run carries its summary (see :func:`with_summary`)."""
    if isinstance(document, Comparison):
        return document.model_copy(update={"runs": tuple(map(with_summary, document.runs))})
    return with_summary(document)


def diagnosis_of(run: Run, peak_gflops: float | None = None) -> Diagnosis:
    """A run's diagnosis: the one its summary keeps, else (a record from before diagnoses were kept, or a peak to
    weigh) computed from its epochs, samples, info and config."""
    kept = summary_of(run).diagnosis
    if kept is not None and kept.verdict and peak_gflops is None:
        return kept
    return diagnosis.diagnose(run.epochs, run.samples, run.info, run.config, peak_gflops)
