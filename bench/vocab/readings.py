"""One reading type per reading: a GPU at one instant, the machine at one instant (a sample), one finished epoch.

The monitor's samplers build these (bench.hardware.monitor), the worker's epochs become them, and bench.vocab.records holds
them in a run record. Each is a pydantic model on bench.vocab.record_base.Record, its numbers typed with bench.vocab.limits'
constrained types, so a reading out of bounds can be neither built nor read: ``GpuReading(...)`` and
``Sample.model_validate(...)`` refuse it alike (a RecordError naming the field's path). A sampler that meets a vendor's
out-of-bounds value makes it "not measured" with :meth:`GpuReading.measured`. In the vocabulary at the bottom of the
engine: it imports bench.vocab.limits and bench.vocab.record_base only, so the monitor and the records share it without a circle.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Annotated, Any, ClassVar

from pydantic import AliasChoices, Field, TypeAdapter, ValidationError

from bench.vocab.limits import (Celsius, EpochNumber, EpochSeconds, Flag, Gflops, GpuIndex, Joules, Line, Metric, MHz, MiB,
                          Percent, ProcessPercent, RunSeconds, SamplesPerSecond, Watts)
from bench.vocab.record_base import Record
# the small checks every reader of outside data shares; re-exported here, where the readers of records find them
from bench.vocab.record_base import EXPORT_HINT, fail, is_int, is_number, show_value  # noqa: F401


class GpuReading(Record):
    """One GPU at one instant. A reading its source did not give is None, never 0."""

    NOUN: ClassVar[str] = "GPU reading"
    PATH: ClassVar[str] = "gpu"

    index: GpuIndex
    name: Line | None = None
    util_percent: Percent | None = None
    mem_util_percent: Percent | None = None
    mem_used_mib: MiB | None = None
    mem_total_mib: MiB | None = None
    # ``power_watts`` in records written before it was named so: read as power_w, written back as power_w
    power_w: Watts | None = Field(default=None, validation_alias=AliasChoices("power_w", "power_watts"))
    temp_c: Celsius | None = None
    sm_clock_mhz: MHz | None = None
    power_limit_w: Watts | None = None
    energy_j: Joules | None = None  # NVML's cumulative energy counter
    sm_active_percent: Percent | None = None  # GPM (Hopper+), like the five below
    sm_occupancy_percent: Percent | None = None
    tensor_active_percent: Percent | None = None
    fp32_active_percent: Percent | None = None
    fp16_active_percent: Percent | None = None
    dram_active_percent: Percent | None = None
    throttle_reasons: tuple[Line, ...] | None = None  # clock-event reasons in words; () none; None unknown
    # where the reading came from ("NVML", "AMD SMI", "amdgpu sysfs", "IOAccelerator (ioreg)", "macmon (IOReport)"):
    # what its utilization means (bench.hardware.monitor.sources.info_of); None in records written before sources
    source: Line | None = None

    @classmethod
    def measured(cls, **fields: Any) -> tuple[GpuReading, dict[str, str]]:
        """A reading from what a vendor's library said, each value out of its field's bounds (a "not supported"
        sentinel such as 2^64-1, a negative, an infinity, text with a control character) made None, "not measured",
        with the reason: (the reading, field -> why). ``index`` must be valid: it is which GPU the reading is of."""
        reasons: dict[str, str] = {}
        kept: dict[str, Any] = {}
        for name, value in fields.items():
            problem = None if value is None else _field_problem(name, value)
            if problem is None:
                kept[name] = value
            elif name == "index":
                raise fail(f"gpu.{name}", problem)
            else:
                kept[name] = None
                reasons[name] = f"not measured: the source gave {show_value(value)}, which {problem}"
        return cls(**kept), reasons


_ADAPTERS: dict[str, TypeAdapter[Any]] = {}


def _field_problem(name: str, value: Any) -> str | None:
    """What is wrong with ``value`` as GpuReading's field ``name`` (None when it may be held)."""
    field = GpuReading.model_fields.get(name)
    if field is None:
        return None  # an extra reading: kept as it is
    if name not in _ADAPTERS:
        annotation: Any = Annotated[(field.annotation, *field.metadata)] if field.metadata else field.annotation
        _ADAPTERS[name] = TypeAdapter(annotation)
    try:
        _ADAPTERS[name].validate_python(value)
    except ValidationError as exc:
        kind = exc.errors()[0]["type"]
        return {"string_unicode": "is not valid Unicode text", "string_pattern_mismatch": "holds a control character",
                "finite_number": "is not finite"}.get(kind, "is outside what the field may hold")
    return None


class Sample(Record):
    """The machine at one instant of a run: ``t_s`` seconds after the worker started."""

    PATH: ClassVar[str] = "sample"
    NOUN: ClassVar[str] = "sample"

    t_s: RunSeconds
    cpu_percent: Percent | None = None
    process_cpu_percent: ProcessPercent | None = None
    process_rss_mib: MiB | None = None
    ram_used_mib: MiB | None = None
    cpu_energy_j: Joules | None = None  # cumulative RAPL package joules
    cpu_per_core: tuple[Percent | None, ...] | None = None
    gpus: tuple[GpuReading, ...] | None = None

    def gpu(self, index: int) -> GpuReading | None:
        """This sample's reading of GPU ``index``, if it has one."""
        return next((g for g in self.gpus or () if g.index == index), None)


class Epoch(Record):
    """One finished epoch: its training time (validation excluded) and what it learned. Epoch 1 includes tracing."""

    PATH: ClassVar[str] = "epoch"
    NOUN: ClassVar[str] = "epoch"

    epoch: EpochNumber
    epoch_seconds: EpochSeconds
    includes_tracing: Flag  # true for the first epoch, false for the others
    samples_per_s: SamplesPerSecond | None = None
    loss: Metric | None = None
    accuracy: Metric | None = None
    val_loss: Metric | None = None
    val_accuracy: Metric | None = None
    t_start_s: RunSeconds | None = None
    t_end_s: RunSeconds | None = None
    achieved_gflops: Gflops | None = None
    energy_j: dict[str, Joules | None] | None = None  # device -> joules in this epoch, or None
    energy_estimated: tuple[Line, ...] | None = None  # devices whose joules were integrated from power samples
    throttle_reasons: tuple[Line, ...] | None = None  # clock-event reasons seen in this epoch; () none; None unknown

    def joules(self, device: str) -> float | None:
        """This epoch's joules on ``device`` ("cpu", "gpu:0"), None where not measured."""
        return (self.energy_j or {}).get(device)


def epochs_of(raw: Iterable[Mapping[str, Any] | Epoch] | None) -> tuple[Epoch, ...]:
    """Epochs this project wrote (a record's ``epochs``, read back from its store or its own file), typed."""
    return tuple(e if isinstance(e, Epoch) else Epoch.model_validate(e) for e in raw or ())


def samples_of(raw: Iterable[Mapping[str, Any] | Sample] | None) -> tuple[Sample, ...]:
    """Samples this project wrote (a record's ``samples``), typed."""
    return tuple(s if isinstance(s, Sample) else Sample.model_validate(s) for s in raw or ())
