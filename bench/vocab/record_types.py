"""The typed records a run's analysis fills: a run's summary (:class:`RunSummary`) with its diagnosis
(:class:`Diagnosis`), a comparison's pair (:class:`Pair`), a sweep's point (:class:`SweepRow`, :class:`SweepSpeedup`)
and the machine a record names (:class:`RecordedHardware`, :class:`Fingerprint`).

Types only, pydantic models on bench.vocab.record_base.Record with bench.vocab.limits' constrained types. The arithmetic that
fills them lives in bench.analysis (metrics, diagnosis, run_summary, compare, sweeps) and imports them from here;
bench.vocab.records holds the documents that carry them. Like bench.vocab.readings, this module sits in the vocabulary at the
bottom of the engine.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from bench.vocab.limits import (Count, Flag, Gflops, GpuIndex, Id, Joules, Line, MiB, Number, Percent, Price, Whole,
                          ProcessPercent, SamplesPerSecond, Seconds, Text)
from bench.vocab.record_base import Record
from bench.vocab.target import DeviceText


# -- a run's diagnosis (filled by bench.analysis.diagnosis.diagnose) ---------------------------------------------------
Kind = Literal["host-bound", "compute-bound", "input-bound", "undetermined"]
KINDS: tuple[str, ...] = typing.get_args(Kind)


class Diagnosis(Record):
    """One run's verdict: ``kind`` (one of KINDS), the sentence that says why (``verdict``, which ends with the knob),
    the knob alone, the figures it weighed (``evidence``: name -> number, text or None) and what it lacked."""

    PATH: ClassVar[str] = "diagnosis"

    kind: Kind
    verdict: Text
    knob: Line | None = None
    evidence: dict[str, Number | Line | None] = {}
    missing: tuple[Line, ...] = ()


# -- a run's summary (filled by bench.analysis.run_summary.summarize) ---------------------------------------------------
class RunSummary(Record):
    """A run's ``summary`` block, typed. Every figure is None where it was not measured; a map's value is None for a
    device whose figure was not measured, with the reason in the matching ``*_reasons``. Read from a stored record,
    it keeps the keys it was written with (an older summary lacks the later figures, which read as None)."""

    PATH: ClassVar[str] = "summary"

    steady_epoch_seconds: Seconds | None = None  # median of epochs 2..N
    steady_samples_per_s: SamplesPerSecond | None = None
    first_epoch_seconds: Seconds | None = None  # includes tracing
    total_seconds: Seconds | None = None
    epochs_done: Count = 0
    mean_cpu_percent: Percent | None = None  # whole machine
    mean_process_cpu_percent: ProcessPercent | None = None  # 100 % a core
    mean_gpu_util_percent: Percent | None = None  # NVML, the GPUs the run used
    # which samples those means cover: "steady epochs" unless they held too few samples (shorter than the sampling
    # interval), when a wider window that includes tracing or start-up stands in and reads low
    cpu_util_window: Line | None = None
    gpu_util_window: Line | None = None
    steady_samples: Count = 0
    peak_process_rss_mib: MiB | None = None
    diagnosis: Diagnosis | None = None  # None: written before diagnoses were kept
    # device -> median J a steady epoch; None: not kept
    energy_j_per_epoch: dict[str, Joules | None] | None = None
    energy_j_per_1000_samples: dict[str, Joules | None] | None = None
    energy_estimated: tuple[Line, ...] = ()  # devices whose joules were integrated from power draw
    energy_reasons: dict[str, Text] = {}
    sm_active_percent: Percent | None = None  # GPM, the GPUs the run trained on
    tensor_active_percent: Percent | None = None
    gpm_reasons: dict[str, Text] = {}
    throttle_reasons: tuple[Line, ...] | None = None  # seen while training; () none; None unknown
    achieved_gflops: Gflops | None = None  # steady median


# -- a comparison's pair (filled by bench.analysis.compare.pairs) ------------------------------------------------------
class Pair(Record):
    """One run against the baseline (the first run of a comparison): the speed-up (``bench.analysis.metrics.Speedup``'s
    figures, None without a steady epoch on both sides), the energy per steady epoch of each side (``_a`` the
    baseline, ``_b`` the other; None where not measured, with each unmeasured device and why in
    ``energy_missing``), ``energy_ratio`` (the baseline's energy per steady epoch / the other's), the hourly prices
    the user gave, the cost per steady epoch and per run at them, and ``cost_ratio``; ``headline``, the sentence a
    comparison record keeps beside its figures."""

    PATH: ClassVar[str] = "pair"

    baseline_id: Id | None = None
    baseline_target: DeviceText
    target_id: Id | None = None
    target: DeviceText
    speedup_median: Number | None = None
    speedup_min: Number | None = None
    speedup_max: Number | None = None
    total_time_ratio: Number | None = None
    first_epoch_seconds_a: Number | None = None
    first_epoch_seconds_b: Number | None = None
    steady_epochs_a: Count = 0
    steady_epochs_b: Count = 0
    energy_j_per_epoch_a: Number | None = None
    energy_j_per_epoch_b: Number | None = None
    energy_ratio: Number | None = None
    price_per_hour_a: Price | None = None
    price_per_hour_b: Price | None = None
    cost_per_epoch_a: Number | None = None
    cost_per_epoch_b: Number | None = None
    cost_per_run_a: Number | None = None
    cost_per_run_b: Number | None = None
    cost_ratio: Number | None = None
    energy_missing: dict[str, Text] = {}
    headline: Line | None = None

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        if out.get("headline", "") is None:  # no sentence: no key
            del out["headline"]
        return out


# -- a sweep's point (filled by bench.analysis.sweeps.sweep_row) -------------------------------------------------------
class SweepRow(Record):
    """One sweep point: a finished run's settings, speed, arithmetic against the measured peak, utilization and
    verdict (``bench.analysis.sweeps.sweep_row``), with its scaling over one device once ``sweeps.with_scaling`` has seen every point. A
    dict only in a ``bench.sweep/1`` file and in a page's table (``to_dict``)."""

    PATH: ClassVar[str] = "row"

    size: Line | None
    batch_size: Whole | None
    target: DeviceText
    run_id: Whole | None = None
    status: Line | None = None
    steps_per_execution: Whole = 1  # 1 in records made before the setting
    devices: Whole = 1
    per_device_batch_size: Whole | None = None
    params: Whole | None = None
    flops_per_sample: Number | None = None
    steady_epoch_seconds: Number | None = None
    samples_per_s: Number | None = None
    achieved_gflops: Number | None = None
    peak_gflops: Number | None = None
    peak_fraction: Number | None = None
    peak_stale: Flag = False
    mean_gpu_util_percent: Number | None = None
    sm_active_percent: Number | None = None
    tensor_active_percent: Number | None = None
    mean_cpu_percent: Number | None = None
    mean_process_cpu_percent: Number | None = None
    # the samples the utilization means cover (bench.analysis.metrics.WINDOW_NAMES); not "steady epochs" = read with care
    sample_interval_s: Number | None = None
    utilization_window: Line | None = None
    diagnosis: Text | None = None
    diagnosis_kind: Line | None = None
    speedup_over_one_device: Number | None = None
    scaling_efficiency: Number | None = None
    scaling_diagnosis: Text | None = None

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


# -- the machine a record names: a run's (built by bench.hardware.devices), a bundle's (bench.runs.suite.fingerprint) --
class CpuSpec(Record):
    """The machine's CPU as a record names it (a run's machine, a bundle's): model, cores, RAM. Detection
    (bench.hardware.devices) builds it."""

    model: Line | None = None
    physical_cores: Whole | None = None
    logical_cores: Whole | None = None
    ram_total_mib: Number | None = None


class GpuSpec(Record):
    """One GPU as a record names it: its index where the run's machine gave one, model, memory, driver, UUID, and
    for a run's machine its vendor and the source its readings come from. Detection (bench.hardware.devices) builds
    it; a bundle's fingerprint names fewer of its facts."""

    SPARSE: ClassVar[bool] = True

    index: GpuIndex | None = None
    name: Line | None = None
    mem_total_mib: Number | None = None
    driver: Line | None = None
    cuda_driver_version: Line | None = None
    uuid: Line | None = None
    vendor: Line | None = None  # "nvidia", "amd", "apple", "intel", "tpu"
    source: Line | None = None  # the source its readings come from (bench.hardware.monitor.sources): "NVML", ...


class RecordedHardware(Record):
    """The machine a run ran on, as its record keeps it (``bench.hardware.devices.Hardware.record``): CPU, the GPUs
    it could target, why none where none, the Keras backend and its version, host and platform. A run imported from
    elsewhere keeps its own machine's; every field may be missing from an older record."""

    PATH: ClassVar[str] = "hardware"

    cpu: CpuSpec | None = None
    gpus: tuple[GpuSpec, ...] = ()
    gpu_reason: Text | None = None
    framework: Line | None = None
    framework_version: Line | None = None
    framework_cuda: Flag | None = None
    hostname: Line | None = None
    platform: Line | None = None
    label: Line | None = None  # a name given in place of the description


class Fingerprint(Record):
    """What makes a machine this machine, for a bundle: CPU, GPUs, OS, Python, Keras and its backend. No hostname:
    a bundle is made to be shared."""

    PATH: ClassVar[str] = "machine"

    cpu: CpuSpec
    gpus: tuple[GpuSpec, ...] = ()
    gpu_reason: Text | None = None
    os: Line | None = None
    python: Line | None = None
    framework: Line | None = None
    framework_version: Line | None = None
    backend: Line | None = None
    backend_version: Line | None = None
    backend_cuda: Flag | None = None