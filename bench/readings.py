"""One reading type per reading: a GPU at one instant, the machine at one instant (a sample), one finished epoch.

The monitor builds these (bench.hardware.monitor), the worker's epochs become them, and records.py holds them in a
run record. Each is declared once (bench.typed): ``from_dict`` reads one from outside (an import, a shipped result,
a store row), every number bounded by bench.limits.BOUNDS and every problem a RecordError naming the field path;
``of`` reads what this project wrote, unchecked; ``to_dict`` writes it back with the keys it was read with. In the
vocabulary at the bottom of the engine: it imports bench.typed, bench.checks and bench.limits only, so the monitor
and the records share it without an import circle.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from bench import typed
from bench.limits import EPOCH_MAX
from bench.typed import JsonValue

# the shared checks live in bench.checks; re-exported here, where the readers of records have long found them
from bench.checks import (EXPORT_HINT, check_number, fail, is_int, is_number,  # noqa: E402,F401
                          json_object, show_value)


def int_within(value: Any, low: int, high: int, path: str, what: str) -> int:
    if not is_int(value) or not low <= value <= high:
        raise fail(path, f"must be {what} from {low} to {high:,}, got {show_value(value)}")
    return value


def _renamed(gpu: Mapping[str, Any]) -> Mapping[str, Any]:
    """``power_watts``, written before ``power_w``, read as ``power_w`` (and written back as ``power_w``)."""
    if "power_watts" not in gpu:
        return gpu
    kept = {k: v for k, v in gpu.items() if k != "power_watts"}
    return {**kept, "power_w": gpu["power_watts"] if gpu.get("power_w") is None else gpu["power_w"]}


@typed.record
@dataclass(frozen=True)
class GpuReading:
    """One GPU at one instant (``bench.hardware.monitor.GpuReading`` in JSON form). A reading its source did not give
    is None, never 0."""

    NOUN: ClassVar[str] = "GPU reading"

    index: int = typed.bound("gpu_index")
    name: str | None = None
    util_percent: float | None = None
    mem_util_percent: float | None = None
    mem_used_mib: float | None = None
    mem_total_mib: float | None = None
    power_w: float | None = None  # ``power_watts`` in records written before it was named so
    temp_c: float | None = None
    sm_clock_mhz: float | None = None
    power_limit_w: float | None = None
    energy_j: float | None = None  # NVML's cumulative energy counter
    sm_active_percent: float | None = None  # GPM (Hopper+), like the five below
    sm_occupancy_percent: float | None = None
    tensor_active_percent: float | None = None
    fp32_active_percent: float | None = None
    fp16_active_percent: float | None = None
    dram_active_percent: float | None = None
    throttle_reasons: tuple[str, ...] | None = None  # clock-event reasons in words; () none; None unknown
    # where the reading came from ("NVML", "AMD SMI", "amdgpu sysfs", "IOAccelerator (ioreg)", "macmon (IOReport)"):
    # what its utilization means (bench.hardware.monitor.sources.info_of); None in records written before sources
    source: str | None = None
    extra: dict[str, JsonValue] = field(default_factory=dict)  # readings added by later versions, kept as they are
    keys: tuple[str, ...] | None = field(default=None, compare=False, repr=False)  # as read: written back the same

    @classmethod
    def from_dict(cls, data: Any, path: str = "gpu") -> GpuReading:
        raw = json_object(data, path)
        old = raw.get("power_watts")  # the old name is checked under its own name, before it is read as power_w
        if old is not None and not is_number(old):
            raise fail(f"{path}.power_watts", f"must be a number or null, got {show_value(old)}")
        if old is not None:
            check_number(old, "power_w", f"{path}.power_watts")
        return typed.checked(cls, _renamed(raw), path)

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> GpuReading:
        """A reading this project wrote (its sampler, its store), taken as it is: no checks (``from_dict`` is for
        readings from outside)."""
        return typed.trusted(cls, _renamed(data))

    def to_dict(self) -> dict[str, Any]:
        return typed.dump(self)


@typed.record
@dataclass(frozen=True)
class Sample(typed.Record):
    """The machine at one instant of a run: ``t_s`` seconds after the worker started."""

    PATH: ClassVar[str] = "sample"

    NOUN: ClassVar[str] = "sample"

    t_s: float
    cpu_percent: float | None = None
    process_cpu_percent: float | None = None
    process_rss_mib: float | None = None
    ram_used_mib: float | None = None
    cpu_energy_j: float | None = None  # cumulative RAPL package joules
    cpu_per_core: tuple[float | None, ...] | None = typed.bound("cpu_percent", default=None)
    gpus: tuple[GpuReading, ...] | None = None
    extra: dict[str, JsonValue] = field(default_factory=dict)
    keys: tuple[str, ...] | None = field(default=None, compare=False, repr=False)

    def carries(self, key: str) -> bool:
        """Whether this sample holds the reading ``key`` at all, even as None (psutil's first process reading is None;
        a record from a sampler that never took it has no such key)."""
        return self.keys is None or key in self.keys

    def gpu(self, index: int) -> GpuReading | None:
        """This sample's reading of GPU ``index``, if it has one."""
        return next((g for g in self.gpus or () if g.index == index), None)


@typed.record
@dataclass(frozen=True)
class Epoch:
    """One finished epoch: its training time (validation excluded) and what it learned. Epoch 1 includes tracing."""

    NOUN: ClassVar[str] = "epoch"

    epoch: int
    epoch_seconds: float
    includes_tracing: bool  # true for the first epoch, false for the others
    samples_per_s: float | None = None
    loss: float | None = None
    accuracy: float | None = None
    val_loss: float | None = None
    val_accuracy: float | None = None
    t_start_s: float | None = None
    t_end_s: float | None = None
    achieved_gflops: float | None = None
    energy_j: dict[str, float | None] | None = None  # device -> joules in this epoch, or None
    energy_estimated: tuple[str, ...] | None = None  # devices whose joules were integrated from power samples
    throttle_reasons: tuple[str, ...] | None = None  # clock-event reasons seen in this epoch; () none; None unknown
    extra: dict[str, JsonValue] = field(default_factory=dict)
    keys: tuple[str, ...] | None = field(default=None, compare=False, repr=False)

    @classmethod
    def from_dict(cls, data: Any, path: str = "epoch") -> Epoch:
        raw = json_object(data, path)
        if "epoch" in raw:  # said in an epoch's own words, before the general checks
            int_within(raw["epoch"], 1, EPOCH_MAX, f"{path}.epoch", "an epoch number")
        if "epoch_seconds" in raw and not (is_number(raw["epoch_seconds"]) and raw["epoch_seconds"] > 0):
            raise fail(f"{path}.epoch_seconds", f"must be a positive number, got {show_value(raw['epoch_seconds'])}")
        return typed.checked(cls, raw, path)

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> Epoch:
        """An epoch this project wrote (its worker's event, its store's row), taken as it is: no checks (an epoch
        written without ``includes_tracing`` reads as a steady one, as it always did)."""
        return typed.trusted(cls, data if "includes_tracing" in data else {**data, "includes_tracing": False})

    def joules(self, device: str) -> float | None:
        """This epoch's joules on ``device`` ("cpu", "gpu:0"), None where not measured."""
        return (self.energy_j or {}).get(device)

    def to_dict(self) -> dict[str, Any]:
        return typed.dump(self)


def epochs_of(raw: Iterable[Mapping[str, Any]] | None) -> tuple[Epoch, ...]:
    """Epochs this project wrote (a record's ``epochs``, read back from its store or its own file), typed."""
    return tuple(Epoch.of(e) for e in raw or ())


def samples_of(raw: Iterable[Mapping[str, Any]] | None) -> tuple[Sample, ...]:
    """Samples this project wrote (a record's ``samples``), typed."""
    return tuple(Sample.of(s) for s in raw or ())
