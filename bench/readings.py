"""One reading type per reading: a GPU at one instant, the machine at one instant (a sample), one finished epoch.

The monitor builds these (bench.hardware.monitor), the worker's epochs become them, and records.py holds them in a
run record; their JSON form is ``to_dict()``, and ``from_dict`` is the one check of a reading read from outside
(an import, a shipped result): every number bounded by bench.limits.BOUNDS, every problem a RecordError naming the
field path. A leaf: it imports only bench.limits and bench.errors, so the monitor and the records share it without
an import circle.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench import limits
from bench.errors import RecordError
from bench.limits import EPOCH_MAX, GPU_INDEX_MAX

EXPORT_HINT = "export a run with `python -m bench export ID --format json`"


# -- checks -----------------------------------------------------------------------------------------------------------
def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def show_value(value: Any, limit: int = 60) -> str:
    """A short repr of an offending value for an error message."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def fail(path: str, problem: str) -> RecordError:
    where = f"{path} " if path else ""
    return RecordError(f"{where}{problem}; fix the file or {EXPORT_HINT}")


def json_object(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise fail(path, f"must be a JSON object, got {show_value(value)}")
    return value


def check_number(value: Any, key: str, path: str) -> float:
    """``value`` as the number field ``key`` may hold (bench.limits.BOUNDS); RecordError naming ``path`` if not."""
    wrong = limits.problem(value, key)
    if wrong is not None:
        raise fail(path, wrong)
    return value


def _optional_number(data: Mapping[str, Any], key: str, path: str) -> float | None:
    value = data.get(key)
    if value is None:
        return None
    if not is_number(value):
        raise fail(f"{path}.{key}", f"must be a number or null, got {show_value(value)}")
    return check_number(value, key, f"{path}.{key}")


def int_within(value: Any, low: int, high: int, path: str, what: str) -> int:
    if not is_int(value) or not low <= value <= high:
        raise fail(path, f"must be {what} from {low} to {high:,}, got {show_value(value)}")
    return value


def extra_keys(data: Mapping[str, Any], known: Sequence[str]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k not in known}


def as_read(out: dict[str, Any], keys: tuple[str, ...] | None) -> dict[str, Any]:
    """A record read from a file is written back with the keys it had (an absent reading stays absent)."""
    return out if keys is None else {k: out[k] for k in keys}


@dataclass(frozen=True)
class GpuReading:
    """One GPU at one instant (``bench.hardware.monitor.GpuReading`` in JSON form). A reading NVML did not give is None."""

    index: int
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
    extra: dict[str, Any] = field(default_factory=dict)  # readings added by later versions, kept as they are
    keys: tuple[str, ...] | None = field(default=None, compare=False, repr=False)  # as read: written back the same

    @classmethod
    def from_dict(cls, data: Any, path: str = "gpu") -> GpuReading:
        gpu = json_object(data, path)
        int_within(gpu.get("index"), 0, GPU_INDEX_MAX, f"{path}.index", "a GPU index")
        optional_text(gpu, "name", path)
        if "power_watts" in gpu:  # the old name of power_w: read as power_w, written back as power_w
            old = {k: v for k, v in gpu.items() if k != "power_watts"}
            gpu = {**old, "power_w": gpu["power_watts"] if gpu.get("power_w") is None else gpu["power_w"]}
        for key, value in gpu.items():
            if key not in ("index", "name", "throttle_reasons") and value is not None:
                if not is_number(value):
                    raise fail(f"{path}.{key}", f"must be a number or null, got {show_value(value)}")
                check_number(value, key, f"{path}.{key}")
        reasons = optional_words(gpu, "throttle_reasons", path)
        return cls(index=gpu["index"], name=gpu.get("name"), **{k: gpu.get(k) for k in _GPU_NUMBERS},
                   throttle_reasons=reasons, extra=extra_keys(gpu, ("index", "name", *_GPU_NUMBERS, "throttle_reasons")),
                   keys=tuple(gpu))

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> GpuReading:
        """A reading this project wrote (its sampler, its store), taken as it is: no checks (``from_dict`` is for
        readings from outside). ``power_watts``, written before ``power_w``, still reads as ``power_w``."""
        if "power_watts" in data:
            data = {**{k: v for k, v in data.items() if k != "power_watts"},
                    "power_w": data["power_watts"] if data.get("power_w") is None else data["power_w"]}
        reasons = data.get("throttle_reasons")
        return cls(index=data["index"], name=data.get("name"), **{k: data.get(k) for k in _GPU_NUMBERS},
                   throttle_reasons=tuple(reasons) if reasons is not None else None,
                   extra=extra_keys(data, _GPU_KEYS), keys=tuple(data))

    def to_dict(self) -> dict[str, Any]:
        reasons = list(self.throttle_reasons) if self.throttle_reasons is not None else None
        out = {"index": self.index, "name": self.name, **{k: getattr(self, k) for k in _GPU_NUMBERS},
               "throttle_reasons": reasons, **self.extra}
        return as_read(out, self.keys)


_GPU_NUMBERS = ("util_percent", "mem_util_percent", "mem_used_mib", "mem_total_mib", "power_w", "temp_c",
                "sm_clock_mhz", "power_limit_w", "energy_j", "sm_active_percent", "sm_occupancy_percent",
                "tensor_active_percent", "fp32_active_percent", "fp16_active_percent", "dram_active_percent")
_GPU_KEYS = ("index", "name", *_GPU_NUMBERS, "throttle_reasons")


def _field(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def optional_text(data: Mapping[str, Any], key: str, path: str) -> str | None:
    """``data[key]`` as text or None; RecordError naming ``path.key`` if it is anything else."""
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise fail(_field(path, key), f"must be text or null, got {show_value(value)}")
    return value


def text_map(data: Mapping[str, Any], key: str, path: str) -> dict[str, str]:
    """``data[key]`` as a map of devices (or names) to text, {} when absent or null."""
    value = json_object(data.get(key) or {}, _field(path, key))
    if not all(isinstance(v, str) for v in value.values()):
        raise fail(_field(path, key), f"must map devices to text, got {show_value(value)}")
    return dict(value)


def optional_words(data: Mapping[str, Any], key: str, path: str) -> tuple[str, ...] | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(word, str) for word in value):
        raise fail(_field(path, key), f"must be a list of text or null, got {show_value(value)}")
    return tuple(value)


def energy_map(data: Mapping[str, Any], key: str, path: str) -> dict[str, float | None] | None:
    """A map of device ("cpu", "gpu:0") -> joules or null (an epoch's ``energy_j``, a summary's energy figures),
    each within the bounds of ``energy_j``; None when absent or null."""
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise fail(_field(path, key), f"must map devices to joules or null, got {show_value(value)}")
    for device, joules in value.items():
        if joules is not None:
            check_number(joules, "energy_j", f"{_field(path, key)}.{device}")
    return dict(value)


@dataclass(frozen=True)
class Sample:
    """The machine at one instant of a run: ``t_s`` seconds after the worker started."""

    t_s: float
    cpu_percent: float | None = None
    process_cpu_percent: float | None = None
    process_rss_mib: float | None = None
    ram_used_mib: float | None = None
    cpu_energy_j: float | None = None  # cumulative RAPL package joules
    cpu_per_core: tuple[float | None, ...] | None = None
    gpus: tuple[GpuReading, ...] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    keys: tuple[str, ...] | None = field(default=None, compare=False, repr=False)

    @classmethod
    def from_dict(cls, data: Any, path: str = "sample") -> Sample:
        sample = json_object(data, path)
        if "t_s" not in sample:
            raise fail(f"{path}.t_s", "is missing")
        check_number(sample["t_s"], "t_s", f"{path}.t_s")
        numbers = {k: _optional_number(sample, k, path) for k in _SAMPLE_NUMBERS}
        cores = sample.get("cpu_per_core")
        if cores is not None:
            if not isinstance(cores, list):
                raise fail(f"{path}.cpu_per_core", f"must be a list of numbers, got {show_value(cores)}")
            for c, value in enumerate(cores):
                if value is not None:
                    check_number(value, "cpu_percent", f"{path}.cpu_per_core[{c}]")
            cores = tuple(cores)
        gpus = sample.get("gpus")
        if gpus is not None:
            if not isinstance(gpus, list):
                raise fail(f"{path}.gpus", f"must be a list of GPU readings, got {show_value(gpus)}")
            gpus = tuple(GpuReading.from_dict(g, f"{path}.gpus[{i}]") for i, g in enumerate(gpus))
        return cls(t_s=sample["t_s"], **numbers, cpu_per_core=cores, gpus=gpus,
                   extra=extra_keys(sample, ("t_s", *_SAMPLE_NUMBERS, "cpu_per_core", "gpus")), keys=tuple(sample))

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> Sample:
        """A sample this project wrote (its store's row), taken as it is: no checks (``from_dict`` is for samples
        from outside; a long run's history holds thousands)."""
        cores, gpus = data.get("cpu_per_core"), data.get("gpus")
        return cls(t_s=data["t_s"], **{k: data.get(k) for k in _SAMPLE_NUMBERS},
                   cpu_per_core=tuple(cores) if cores is not None else None,
                   gpus=tuple(GpuReading.of(g) for g in gpus) if gpus is not None else None,
                   extra=extra_keys(data, _SAMPLE_KEYS), keys=tuple(data))

    def carries(self, key: str) -> bool:
        """Whether this sample holds the reading ``key`` at all, even as None (psutil's first process reading is None;
        a record from a sampler that never took it has no such key)."""
        return self.keys is None or key in self.keys

    def gpu(self, index: int) -> GpuReading | None:
        """This sample's reading of GPU ``index``, if it has one."""
        return next((g for g in self.gpus or () if g.index == index), None)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"t_s": self.t_s, **{k: getattr(self, k) for k in _SAMPLE_NUMBERS}}
        out["cpu_per_core"] = list(self.cpu_per_core) if self.cpu_per_core is not None else None
        out["gpus"] = [g.to_dict() for g in self.gpus] if self.gpus is not None else None
        return as_read({**out, **self.extra}, self.keys)


_SAMPLE_NUMBERS = ("cpu_percent", "process_cpu_percent", "process_rss_mib", "ram_used_mib", "cpu_energy_j")
_SAMPLE_KEYS = ("t_s", *_SAMPLE_NUMBERS, "cpu_per_core", "gpus")


@dataclass(frozen=True)
class Epoch:
    """One finished epoch: its training time (validation excluded) and what it learned. Epoch 1 includes tracing."""

    epoch: int
    epoch_seconds: float
    includes_tracing: bool
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
    extra: dict[str, Any] = field(default_factory=dict)
    keys: tuple[str, ...] | None = field(default=None, compare=False, repr=False)

    @classmethod
    def from_dict(cls, data: Any, path: str) -> Epoch:
        epoch = json_object(data, path)
        if "epoch" not in epoch:
            raise fail(f"{path}.epoch", "is missing")
        int_within(epoch["epoch"], 1, EPOCH_MAX, f"{path}.epoch", "an epoch number")
        if "epoch_seconds" not in epoch:
            raise fail(f"{path}.epoch_seconds", "is missing")
        seconds = epoch["epoch_seconds"]
        if not is_number(seconds) or not seconds > 0:
            raise fail(f"{path}.epoch_seconds", f"must be a positive number, got {show_value(seconds)}")
        check_number(seconds, "epoch_seconds", f"{path}.epoch_seconds")
        if "includes_tracing" not in epoch:
            raise fail(f"{path}.includes_tracing", "is missing (true for the first epoch, false for the others)")
        if not isinstance(epoch["includes_tracing"], bool):
            raise fail(f"{path}.includes_tracing", f"must be true or false, got {show_value(epoch['includes_tracing'])}")
        numbers = {k: _optional_number(epoch, k, path) for k in _EPOCH_NUMBERS}
        return cls(epoch=epoch["epoch"], epoch_seconds=seconds, includes_tracing=epoch["includes_tracing"], **numbers,
                   energy_j=energy_map(epoch, "energy_j", path),
                   energy_estimated=optional_words(epoch, "energy_estimated", path),
                   throttle_reasons=optional_words(epoch, "throttle_reasons", path),
                   extra=extra_keys(epoch, ("epoch", "epoch_seconds", "includes_tracing", *_EPOCH_NUMBERS, *_EPOCH_OTHERS)),
                   keys=tuple(epoch))

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> Epoch:
        """An epoch this project wrote (its worker's event, its store's row), taken as it is: no checks."""
        energy_j = data.get("energy_j")
        return cls(epoch=data["epoch"], epoch_seconds=data["epoch_seconds"],
                   includes_tracing=bool(data.get("includes_tracing")), **{k: data.get(k) for k in _EPOCH_NUMBERS},
                   energy_j=dict(energy_j) if energy_j is not None else None,
                   energy_estimated=_words_of(data, "energy_estimated"),
                   throttle_reasons=_words_of(data, "throttle_reasons"),
                   extra=extra_keys(data, _EPOCH_KEYS), keys=tuple(data))

    def joules(self, device: str) -> float | None:
        """This epoch's joules on ``device`` ("cpu", "gpu:0"), None where not measured."""
        return (self.energy_j or {}).get(device)

    def to_dict(self) -> dict[str, Any]:
        out = {"epoch": self.epoch, "epoch_seconds": self.epoch_seconds, "includes_tracing": self.includes_tracing,
               **{k: getattr(self, k) for k in _EPOCH_NUMBERS},
               "energy_j": dict(self.energy_j) if self.energy_j is not None else None,
               **{k: list(getattr(self, k)) if getattr(self, k) is not None else None
                  for k in ("energy_estimated", "throttle_reasons")},
               **self.extra}
        return as_read(out, self.keys)


_EPOCH_NUMBERS = ("samples_per_s", "loss", "accuracy", "val_loss", "val_accuracy", "t_start_s", "t_end_s",
                  "achieved_gflops")
_EPOCH_WORDS = ("energy_estimated", "throttle_reasons")
_EPOCH_OTHERS = ("energy_j", *_EPOCH_WORDS)
_EPOCH_KEYS = ("epoch", "epoch_seconds", "includes_tracing", *_EPOCH_NUMBERS, *_EPOCH_OTHERS)


def _words_of(data: Mapping[str, Any], key: str) -> tuple[str, ...] | None:
    value = data.get(key)
    return tuple(value) if value is not None else None


def epochs_of(raw: Iterable[Mapping[str, Any]] | None) -> tuple[Epoch, ...]:
    """Epochs this project wrote (a record's ``epochs``, read back from its store or its own file), typed."""
    return tuple(Epoch.of(e) for e in raw or ())


def samples_of(raw: Iterable[Mapping[str, Any]] | None) -> tuple[Sample, ...]:
    """Samples this project wrote (a record's ``samples``), typed."""
    return tuple(Sample.of(s) for s in raw or ())
