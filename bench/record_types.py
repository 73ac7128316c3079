"""The typed records a run's analysis fills: a run's summary (:class:`RunSummary`) with its diagnosis
(:class:`Diagnosis`), a comparison's pair (:class:`Pair`) and a sweep's point (:class:`SweepRow`, :class:`SweepSpeedup`).

Types only, each with its JSON form (``to_dict``), the trusted reading of what this project wrote (``of``) and the
checked reading of a file (``from_dict``). The arithmetic that fills them lives in bench.analysis (metrics,
diagnosis, run_summary, compare, sweeps) and imports them from here; bench.records builds the documents that carry
them. Like bench.readings, this module sits in the vocabulary at the bottom of the engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import typing
from typing import Any, ClassVar, Literal

from bench import typed
from bench.typed import JsonValue


# -- a run's diagnosis (filled by bench.analysis.diagnosis.diagnose) ---------------------------------------------------
Kind = Literal["host-bound", "compute-bound", "input-bound", "undetermined"]
KINDS: tuple[str, ...] = typing.get_args(Kind)


@typed.record
@dataclass(frozen=True)
class Diagnosis(typed.Record):
    """One run's verdict: ``kind`` (one of KINDS), the sentence that says why (``verdict``, which ends with the knob),
    the knob alone, the figures it weighed (``evidence``: name -> number, text or None) and what it lacked."""

    PATH: ClassVar[str] = "diagnosis"

    kind: Kind
    verdict: str
    knob: str | None = None
    evidence: dict[str, float | str | None] = field(default_factory=dict)
    missing: tuple[str, ...] = ()
    extra: dict[str, JsonValue] = field(default_factory=dict)  # keys added by later versions, kept as they are
    keys: tuple[str, ...] | None = field(default=None, compare=False, repr=False)  # as read: written back the same


# -- a run's summary (filled by bench.analysis.run_summary.summarize) ---------------------------------------------------
@typed.record
@dataclass(frozen=True)
class RunSummary(typed.Record):
    """A run's ``summary`` block, typed. Every figure is None where it was not measured; a map's value is None for a
    device whose figure was not measured, with the reason in the matching ``*_reasons``. Read from a stored record,
    it keeps the keys it was written with (an older summary lacks the later figures, which read as None)."""

    PATH: ClassVar[str] = "summary"

    steady_epoch_seconds: float | None = typed.bound("epoch_seconds", default=None)  # median of epochs 2..N
    steady_samples_per_s: float | None = typed.bound("samples_per_s", default=None)
    first_epoch_seconds: float | None = typed.bound("epoch_seconds", default=None)  # includes tracing
    total_seconds: float | None = typed.bound("epoch_seconds", default=None)
    epochs_done: int = typed.bound("count", default=0)
    mean_cpu_percent: float | None = typed.bound("cpu_percent", default=None)  # whole machine
    mean_process_cpu_percent: float | None = typed.bound("process_cpu_percent", default=None)  # 100 % a core
    mean_gpu_util_percent: float | None = typed.bound("util_percent", default=None)  # NVML, the GPUs the run used
    # which samples those means cover: "steady epochs" unless they held too few samples (shorter than the sampling
    # interval), when a wider window that includes tracing or start-up stands in and reads low
    cpu_util_window: str | None = None
    gpu_util_window: str | None = None
    steady_samples: int = typed.bound("count", default=0)
    peak_process_rss_mib: float | None = typed.bound("process_rss_mib", default=None)
    diagnosis: Diagnosis | None = None  # None: written before diagnoses were kept
    # device -> median J a steady epoch; None: not kept
    energy_j_per_epoch: dict[str, float | None] | None = typed.bound("energy_j", default=None)
    energy_j_per_1000_samples: dict[str, float | None] | None = typed.bound("energy_j", default=None)
    energy_estimated: tuple[str, ...] = ()  # devices whose joules were integrated from power draw
    energy_reasons: dict[str, str] = field(default_factory=dict)
    sm_active_percent: float | None = None  # GPM, the GPUs the run trained on
    tensor_active_percent: float | None = None
    gpm_reasons: dict[str, str] = field(default_factory=dict)
    throttle_reasons: tuple[str, ...] | None = None  # seen while training; () none; None unknown
    achieved_gflops: float | None = None  # steady median
    extra: dict[str, JsonValue] = field(default_factory=dict)  # figures added by later versions, kept as they are
    keys: tuple[str, ...] | None = field(default=None, compare=False, repr=False)  # as read: written back the same


# -- a comparison's pair (filled by bench.analysis.compare.pairs) ------------------------------------------------------
@typed.record
@dataclass(frozen=True, kw_only=True)
class Pair(typed.Record):
    """One run against the baseline (the first run of a comparison): the speed-up (``bench.analysis.metrics.Speedup``'s
    figures, None without a steady epoch on both sides), the energy per steady epoch of each side (``_a`` the
    baseline, ``_b`` the other; None where not measured, with each unmeasured device and why in
    ``energy_missing``), ``energy_ratio`` (the baseline's energy per steady epoch / the other's), the hourly prices
    the user gave, the cost per steady epoch and per run at them, and ``cost_ratio``; ``headline``, the sentence a
    comparison record keeps beside its figures."""

    PATH: ClassVar[str] = "pair"

    baseline_id: int | None = typed.bound("id", default=None)
    baseline_target: str
    target_id: int | None = typed.bound("id", default=None)
    target: str
    speedup_median: float | None = None
    speedup_min: float | None = None
    speedup_max: float | None = None
    total_time_ratio: float | None = None
    first_epoch_seconds_a: float | None = None
    first_epoch_seconds_b: float | None = None
    steady_epochs_a: int = typed.bound("count", default=0)
    steady_epochs_b: int = typed.bound("count", default=0)
    energy_j_per_epoch_a: float | None = None
    energy_j_per_epoch_b: float | None = None
    energy_ratio: float | None = None
    price_per_hour_a: float | None = None
    price_per_hour_b: float | None = None
    cost_per_epoch_a: float | None = None
    cost_per_epoch_b: float | None = None
    cost_per_run_a: float | None = None
    cost_per_run_b: float | None = None
    cost_ratio: float | None = None
    energy_missing: dict[str, str] = field(default_factory=dict)
    headline: str | None = None
    extra: dict[str, JsonValue] = field(default_factory=dict)  # keys added by later versions, kept as they are
    keys: tuple[str, ...] | None = field(default=None, compare=False, repr=False)  # as read: written back the same

    def to_dict(self) -> dict[str, Any]:
        out = typed.dump(self)
        if self.headline is None and "headline" in out and self.keys is None:  # no sentence: no key
            del out["headline"]
        return out


# -- a sweep's point (filled by bench.analysis.sweeps.sweep_row) -------------------------------------------------------
@typed.record
@dataclass(frozen=True)
class SweepRow(typed.Record):
    """One sweep point: a finished run's settings, speed, arithmetic against the measured peak, utilization and
    verdict (``bench.analysis.sweeps.sweep_row``), with its scaling over one device once ``sweeps.with_scaling`` has seen every point. A
    dict only in a ``bench.sweep/1`` file and in a page's table (``to_dict``)."""

    PATH: ClassVar[str] = "row"

    size: str | None
    batch_size: int | None
    target: str
    run_id: int | None = None
    status: str | None = None
    steps_per_execution: int = 1  # 1 in records made before the setting
    devices: int = 1
    per_device_batch_size: int | None = None
    params: int | None = None
    flops_per_sample: float | None = None
    steady_epoch_seconds: float | None = None
    samples_per_s: float | None = None
    achieved_gflops: float | None = None
    peak_gflops: float | None = None
    peak_fraction: float | None = None
    peak_stale: bool = False
    mean_gpu_util_percent: float | None = None
    sm_active_percent: float | None = None
    tensor_active_percent: float | None = None
    mean_cpu_percent: float | None = None
    mean_process_cpu_percent: float | None = None
    # the samples the utilization means cover (bench.analysis.metrics.WINDOW_NAMES); not "steady epochs" = read with care
    sample_interval_s: float | None = None
    utilization_window: str | None = None
    diagnosis: str | None = None
    diagnosis_kind: str | None = None
    speedup_over_one_device: float | None = None
    scaling_efficiency: float | None = None
    scaling_diagnosis: str | None = None
    extra: dict[str, JsonValue] = field(default_factory=dict)  # keys of later versions, kept as they are
    keys: tuple[str, ...] | None = field(default=None, compare=False, repr=False)  # as read: written back the same

    def point(self) -> tuple[Any, ...]:
        """(size, batch size, steps per execution, device count): what one point of a sweep varies."""
        return self.size, self.batch_size, self.steps_per_execution, self.devices


@dataclass(frozen=True)
class SweepSpeedup:
    """The speed-up of one target over another at one sweep point (``bench.analysis.sweeps.sweep_speedups``)."""

    size: str | None
    batch_size: int | None
    steps_per_execution: int
    devices: int
    params: int | None
    speedup: float


# -- a machine bundle's fingerprint (bench.bundle/1 ``machine``, built by bench.runs.suite.fingerprint) ---------------
@typed.record
@dataclass(frozen=True)
class CpuSpec:
    """The machine's CPU as a bundle names it: model, cores, RAM."""

    model: str | None = None
    physical_cores: int | None = None
    logical_cores: int | None = None
    ram_total_mib: float | None = None
    extra: dict[str, JsonValue] = field(default_factory=dict)
    keys: tuple[str, ...] | None = field(default=None, compare=False, repr=False)


@typed.record(sparse=True)
@dataclass(frozen=True)
class GpuSpec:
    """One GPU as a record names it: its index where the run's machine gave one, model, memory, driver, UUID."""

    index: int | None = typed.bound("gpu_index", default=None)
    name: str | None = None
    mem_total_mib: float | None = None
    driver: str | None = None
    cuda_driver_version: str | None = None
    uuid: str | None = None
    extra: dict[str, JsonValue] = field(default_factory=dict)
    keys: tuple[str, ...] | None = field(default=None, compare=False, repr=False)


@typed.record
@dataclass(frozen=True)
class RecordedHardware(typed.Record):
    """The machine a run ran on, as its record keeps it (``bench.hardware.devices.Hardware`` in JSON form): CPU, the
    GPUs it could target, why none where none, the Keras backend and its version, host and platform. A run imported
    from elsewhere keeps its own machine's; every field may be missing from an older record."""

    PATH: ClassVar[str] = "hardware"

    cpu: CpuSpec | None = None
    gpus: tuple[GpuSpec, ...] = ()
    gpu_reason: str | None = None
    framework: str | None = None
    framework_version: str | None = None
    framework_cuda: bool | None = None
    hostname: str | None = None
    platform: str | None = None
    label: str | None = None  # a name given in place of the description
    extra: dict[str, JsonValue] = field(default_factory=dict)
    keys: tuple[str, ...] | None = field(default=None, compare=False, repr=False)


@typed.record
@dataclass(frozen=True)
class Fingerprint(typed.Record):
    """What makes a machine this machine, for a bundle: CPU, GPUs, OS, Python, Keras and its backend. No hostname:
    a bundle is made to be shared."""

    PATH: ClassVar[str] = "machine"

    cpu: CpuSpec
    gpus: tuple[GpuSpec, ...] = ()
    gpu_reason: str | None = None
    os: str | None = None
    python: str | None = None
    framework: str | None = None
    framework_version: str | None = None
    backend: str | None = None
    backend_version: str | None = None
    backend_cuda: bool | None = None
    extra: dict[str, JsonValue] = field(default_factory=dict)
    keys: tuple[str, ...] | None = field(default=None, compare=False, repr=False)