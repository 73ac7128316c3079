"""The records this project writes and reads, defined once: run status, epoch, sample and GPU reading, run record,
comparison and sweep, each a frozen dataclass with one constructor and one validator.

| schema              | built by                  | what it holds                                                     |
|---------------------|---------------------------|-------------------------------------------------------------------|
| ``bench.run/1``     | :func:`run_record`        | one run: status, config, hardware, info, epochs, samples, summary |
| ``bench.comparison/1`` | :func:`comparison_record` | runs plus the speed-up (and headline) of each against the first |
| ``bench.sweep/1``   | :func:`sweep_record`      | one row per (size, batch size, target) point, peaks, the runs     |

The JSON form of every record is its ``to_dict()``; the engine passes those dicts around (charts and pages read them).
:func:`load` is the one place that checks a document read from outside (an import, a shipped result): it builds the
typed record field by field, and every problem raises :class:`RecordError` naming the field, what it holds and what
to do. Unknown keys are kept (``extra``), so files from newer versions still import. An imported GPU run must import
on a CPU-only machine, so a config is checked for shape, not validated against this machine's hardware.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.analysis import compare, run_summary
from bench.config import ConfigError, RunConfig
from bench import limits
from bench.limits import EPOCH_MAX, GPU_INDEX_MAX, ID_MAX

RUN_SCHEMA = "bench.run/1"
COMPARISON_SCHEMA = "bench.comparison/1"
SWEEP_SCHEMA = "bench.sweep/1"
SCHEMAS = (RUN_SCHEMA, COMPARISON_SCHEMA)  # what an import into the store reads; a sweep is shown, not imported
EXPORT_HINT = "export a run with `python -m bench export ID --format json`"


class Status(str, enum.Enum):
    """Where a run is. Stored and written as its plain value (``"finished"``); compares equal to it."""

    QUEUED = "queued"
    STARTING = "starting"
    RUNNING = "running"
    FINISHED = "finished"
    STOPPED = "stopped"
    FAILED = "failed"
    INTERRUPTED = "interrupted"  # the process running it ended first; the epochs finished before then are kept

    def __str__(self) -> str:
        return self.value

    @property
    def active(self) -> bool:
        return self.value in ACTIVE


STATUSES = tuple(s.value for s in Status)
ACTIVE = (Status.QUEUED.value, Status.STARTING.value, Status.RUNNING.value)
TERMINAL = (Status.FINISHED.value, Status.STOPPED.value, Status.FAILED.value, Status.INTERRUPTED.value)


class RecordError(ValueError):
    """A record (or file) cannot be read or imported; the message says what is wrong and what to do."""


# -- checks -----------------------------------------------------------------------------------------------------------
def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _show(value: Any, limit: int = 60) -> str:
    """A short repr of an offending value for an error message."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _fail(path: str, problem: str) -> RecordError:
    where = f"{path} " if path else ""
    return RecordError(f"{where}{problem}; fix the file or {EXPORT_HINT}")


def _object(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(path, f"must be a JSON object, got {_show(value)}")
    return value


def check_number(value: Any, key: str, path: str) -> float:
    """``value`` as the number field ``key`` may hold (bench.limits.BOUNDS); RecordError naming ``path`` if not."""
    wrong = limits.problem(value, key)
    if wrong is not None:
        raise _fail(path, wrong)
    return value


def strict(value: Any) -> Any:
    """``value`` with every NaN and infinity (a diverged loss, say) made null, as strict JSON readers need."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {k: strict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict(v) for v in value]
    return value


def json_text(value: Any, *, indent: int | None = 2) -> str:
    """The one way the project writes JSON for people and other programs: strict (no NaN or Infinity: null),
    anything that is not JSON (a path, an enum) as its text."""
    return json.dumps(strict(value), indent=indent, allow_nan=False, default=str)


def _optional_number(data: Mapping[str, Any], key: str, path: str) -> float | None:
    value = data.get(key)
    if value is None:
        return None
    if not _is_number(value):
        raise _fail(f"{path}.{key}", f"must be a number or null, got {_show(value)}")
    return check_number(value, key, f"{path}.{key}")


def _int_within(value: Any, low: int, high: int, path: str, what: str) -> int:
    if not _is_int(value) or not low <= value <= high:
        raise _fail(path, f"must be {what} from {low} to {high:,}, got {_show(value)}")
    return value


def _extra(data: Mapping[str, Any], known: Sequence[str]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k not in known}


def _as_read(out: dict[str, Any], keys: tuple[str, ...] | None) -> dict[str, Any]:
    """A record read from a file is written back with the keys it had (an absent reading stays absent)."""
    return out if keys is None else {k: out[k] for k in keys}


def check_config(config: Any, path: str) -> None:
    """A run config's shape: known settings with values of the right type (not checked against this machine)."""
    if not isinstance(config, dict):
        raise _fail(path, f"must be a JSON object of run settings, got {_show(config)}")
    try:
        RunConfig.from_dict(dict(config))
    except ConfigError as exc:
        raise _fail(path, f"is not a run config this version reads: {exc}") from None
    except TypeError as exc:
        raise _fail(path, f"is not a run config this version reads: {exc}") from None
    kinds = {"int": int, "str": str, "float": float, "bool": bool, "None": type(None)}
    words = {"int": "a whole number", "str": "text", "float": "a number", "bool": "true or false", "None": "null"}
    for f in dataclasses.fields(RunConfig):
        if f.name not in config:
            continue
        value = config[f.name]
        names = [t.strip() for t in str(f.type).split("|") if t.strip() in kinds]
        allowed = [kinds[t] for t in names]
        ok = any(
            (t is int and _is_int(value)) or (t is float and _is_number(value)) or (t is bool and isinstance(value, bool))
            or (t not in (int, float, bool) and isinstance(value, t))
            for t in allowed
        )
        if allowed and not ok:
            raise _fail(f"{path}.{f.name}", f"must be {' or '.join(words[t] for t in names)}, got {_show(value)}")
        if _is_number(value) and (not math.isfinite(value) or abs(value) > ID_MAX):
            raise _fail(f"{path}.{f.name}", f"must be a finite number SQLite can hold, got {_show(value)}")



# -- the records ------------------------------------------------------------------------------------------------------
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
    def from_dict(cls, data: Any, path: str) -> GpuReading:
        gpu = _object(data, path)
        _int_within(gpu.get("index"), 0, GPU_INDEX_MAX, f"{path}.index", "a GPU index")
        if gpu.get("name") is not None and not isinstance(gpu["name"], str):
            raise _fail(f"{path}.name", f"must be text or null, got {_show(gpu['name'])}")
        if "power_watts" in gpu:  # the old name of power_w: read as power_w, written back as power_w
            old = {k: v for k, v in gpu.items() if k != "power_watts"}
            gpu = {**old, "power_w": gpu["power_watts"] if gpu.get("power_w") is None else gpu["power_w"]}
        for key, value in gpu.items():
            if key not in ("index", "name", "throttle_reasons") and value is not None:
                if not _is_number(value):
                    raise _fail(f"{path}.{key}", f"must be a number or null, got {_show(value)}")
                check_number(value, key, f"{path}.{key}")
        reasons = _optional_words(gpu, "throttle_reasons", path)
        return cls(index=gpu["index"], name=gpu.get("name"), **{k: gpu.get(k) for k in _GPU_NUMBERS},
                   throttle_reasons=reasons, extra=_extra(gpu, ("index", "name", *_GPU_NUMBERS, "throttle_reasons")),
                   keys=tuple(gpu))

    def to_dict(self) -> dict[str, Any]:
        reasons = list(self.throttle_reasons) if self.throttle_reasons is not None else None
        out = {"index": self.index, "name": self.name, **{k: getattr(self, k) for k in _GPU_NUMBERS},
               "throttle_reasons": reasons, **self.extra}
        return _as_read(out, self.keys)


_GPU_NUMBERS = ("util_percent", "mem_util_percent", "mem_used_mib", "mem_total_mib", "power_w", "temp_c",
                "sm_clock_mhz", "power_limit_w", "energy_j", "sm_active_percent", "sm_occupancy_percent",
                "tensor_active_percent", "fp32_active_percent", "fp16_active_percent", "dram_active_percent")


def _optional_words(data: Mapping[str, Any], key: str, path: str) -> tuple[str, ...] | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(word, str) for word in value):
        raise _fail(f"{path}.{key}", f"must be a list of text or null, got {_show(value)}")
    return tuple(value)


def _energy(data: Mapping[str, Any], path: str) -> dict[str, float | None] | None:
    """An epoch's ``energy_j``: device ("cpu", "gpu:0") -> joules or null."""
    value = data.get("energy_j")
    if value is None:
        return None
    if not isinstance(value, dict):
        raise _fail(f"{path}.energy_j", f"must map devices to joules or null, got {_show(value)}")
    for device, joules in value.items():
        if joules is not None:
            check_number(joules, "energy_j", f"{path}.energy_j.{device}")
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
    def from_dict(cls, data: Any, path: str) -> Sample:
        sample = _object(data, path)
        if "t_s" not in sample:
            raise _fail(f"{path}.t_s", "is missing")
        check_number(sample["t_s"], "t_s", f"{path}.t_s")
        numbers = {k: _optional_number(sample, k, path) for k in _SAMPLE_NUMBERS}
        cores = sample.get("cpu_per_core")
        if cores is not None:
            if not isinstance(cores, list):
                raise _fail(f"{path}.cpu_per_core", f"must be a list of numbers, got {_show(cores)}")
            for c, value in enumerate(cores):
                if value is not None:
                    check_number(value, "cpu_percent", f"{path}.cpu_per_core[{c}]")
            cores = tuple(cores)
        gpus = sample.get("gpus")
        if gpus is not None:
            if not isinstance(gpus, list):
                raise _fail(f"{path}.gpus", f"must be a list of GPU readings, got {_show(gpus)}")
            gpus = tuple(GpuReading.from_dict(g, f"{path}.gpus[{i}]") for i, g in enumerate(gpus))
        return cls(t_s=sample["t_s"], **numbers, cpu_per_core=cores, gpus=gpus,
                   extra=_extra(sample, ("t_s", *_SAMPLE_NUMBERS, "cpu_per_core", "gpus")), keys=tuple(sample))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"t_s": self.t_s, **{k: getattr(self, k) for k in _SAMPLE_NUMBERS}}
        out["cpu_per_core"] = list(self.cpu_per_core) if self.cpu_per_core is not None else None
        out["gpus"] = [g.to_dict() for g in self.gpus] if self.gpus is not None else None
        return _as_read({**out, **self.extra}, self.keys)


_SAMPLE_NUMBERS = ("cpu_percent", "process_cpu_percent", "process_rss_mib", "ram_used_mib", "cpu_energy_j")


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
        epoch = _object(data, path)
        if "epoch" not in epoch:
            raise _fail(f"{path}.epoch", "is missing")
        _int_within(epoch["epoch"], 1, EPOCH_MAX, f"{path}.epoch", "an epoch number")
        if "epoch_seconds" not in epoch:
            raise _fail(f"{path}.epoch_seconds", "is missing")
        seconds = epoch["epoch_seconds"]
        if not _is_number(seconds) or not seconds > 0:
            raise _fail(f"{path}.epoch_seconds", f"must be a positive number, got {_show(seconds)}")
        check_number(seconds, "epoch_seconds", f"{path}.epoch_seconds")
        if "includes_tracing" not in epoch:
            raise _fail(f"{path}.includes_tracing", "is missing (true for the first epoch, false for the others)")
        if not isinstance(epoch["includes_tracing"], bool):
            raise _fail(f"{path}.includes_tracing", f"must be true or false, got {_show(epoch['includes_tracing'])}")
        numbers = {k: _optional_number(epoch, k, path) for k in _EPOCH_NUMBERS}
        return cls(epoch=epoch["epoch"], epoch_seconds=seconds, includes_tracing=epoch["includes_tracing"], **numbers,
                   energy_j=_energy(epoch, path),
                   energy_estimated=_optional_words(epoch, "energy_estimated", path),
                   throttle_reasons=_optional_words(epoch, "throttle_reasons", path),
                   extra=_extra(epoch, ("epoch", "epoch_seconds", "includes_tracing", *_EPOCH_NUMBERS, *_EPOCH_OTHERS)),
                   keys=tuple(epoch))

    def to_dict(self) -> dict[str, Any]:
        out = {"epoch": self.epoch, "epoch_seconds": self.epoch_seconds, "includes_tracing": self.includes_tracing,
               **{k: getattr(self, k) for k in _EPOCH_NUMBERS},
               "energy_j": dict(self.energy_j) if self.energy_j is not None else None,
               **{k: list(getattr(self, k)) if getattr(self, k) is not None else None
                  for k in ("energy_estimated", "throttle_reasons")},
               **self.extra}
        return _as_read(out, self.keys)


_EPOCH_NUMBERS = ("samples_per_s", "loss", "accuracy", "val_loss", "val_accuracy", "t_start_s", "t_end_s",
                  "achieved_gflops")
_EPOCH_OTHERS = ("energy_j", "energy_estimated", "throttle_reasons")


@dataclass(frozen=True)
class RunRecord:
    """One run (``bench.run/1``): what was asked (config), where (hardware, info.placement), what happened."""

    status: Status
    config: dict[str, Any]
    hardware: dict[str, Any]
    epochs: tuple[Epoch, ...]
    samples: tuple[Sample, ...]
    id: int | None = None
    info: dict[str, Any] = field(default_factory=dict)
    created_at: float | None = None
    started_at: float | None = None
    ended_at: float | None = None
    error: dict[str, Any] | None = None
    store_error: str | None = None
    summary: dict[str, Any] | None = None
    label: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Any, path: str = "") -> RunRecord:
        prefix = f"{path}." if path else ""
        if not isinstance(data, dict):
            raise _fail(path or "the record", f"must be a JSON object, got {type(data).__name__}")
        run = data
        if path and run.get("schema", RUN_SCHEMA) != RUN_SCHEMA:
            raise _fail(f"{prefix}schema", f"must be {RUN_SCHEMA!r}, got {_show(run.get('schema'))}")
        for key in ("status", "config", "hardware", "epochs", "samples"):
            if key not in run:
                raise _fail(f"{prefix}{key}", "is missing")
        if not isinstance(run["status"], str) or run["status"] not in STATUSES:
            raise _fail(f"{prefix}status", f"must be one of {', '.join(STATUSES)}, got {_show(run['status'])}")
        check_config(run["config"], f"{prefix}config")
        if not isinstance(run["hardware"], dict):
            raise _fail(f"{prefix}hardware", f"must be a JSON object, got {_show(run['hardware'])}")
        if not isinstance(run["epochs"], list):
            raise _fail(f"{prefix}epochs", f"must be a list of epochs, got {_show(run['epochs'])}")
        if not isinstance(run["samples"], list):
            raise _fail(f"{prefix}samples", f"must be a list of samples, got {_show(run['samples'])}")
        for key in ("info", "error", "summary"):
            if run.get(key) is not None and not isinstance(run[key], dict):
                raise _fail(f"{prefix}{key}", f"must be a JSON object or null, got {_show(run[key])}")
        for key in ("created_at", "started_at", "ended_at"):
            if run.get(key) is not None:
                if not _is_number(run[key]):
                    raise _fail(f"{prefix}{key}", f"must be epoch seconds or null, got {_show(run[key])}")
                check_number(run[key], key, f"{prefix}{key}")
        for key in ("label", "store_error"):
            if run.get(key) is not None and not isinstance(run[key], str):
                raise _fail(f"{prefix}{key}", f"must be text or null, got {_show(run[key])}")
        if run.get("id") is not None:
            _int_within(run["id"], -ID_MAX, ID_MAX, f"{prefix}id", "a whole number")
        epochs = []
        seen: dict[int, int] = {}
        for i, raw in enumerate(run["epochs"]):
            epoch = Epoch.from_dict(raw, f"{prefix}epochs[{i}]")
            if epoch.epoch in seen:
                raise _fail(f"{prefix}epochs[{i}].epoch", f"{epoch.epoch} appears twice (also at index {seen[epoch.epoch]})")
            seen[epoch.epoch] = i
            epochs.append(epoch)
        samples = tuple(Sample.from_dict(s, f"{prefix}samples[{i}]") for i, s in enumerate(run["samples"]))
        return cls(status=Status(run["status"]), config=run["config"], hardware=run["hardware"], epochs=tuple(epochs),
                   samples=samples, id=run.get("id"), info=run.get("info") or {}, created_at=run.get("created_at"),
                   started_at=run.get("started_at"), ended_at=run.get("ended_at"), error=run.get("error"),
                   store_error=run.get("store_error"), summary=run.get("summary"), label=run.get("label"),
                   extra=_extra(run, _RUN_KEYS))

    def to_dict(self) -> dict[str, Any]:
        return run_record(id=self.id, status=self.status, config=self.config, hardware=self.hardware, info=self.info,
                          created_at=self.created_at, started_at=self.started_at, ended_at=self.ended_at,
                          error=self.error, store_error=self.store_error, epochs=[e.to_dict() for e in self.epochs],
                          samples=[s.to_dict() for s in self.samples], label=self.label,
                          summary=self.summary) | self.extra


_RUN_KEYS = ("schema", "id", "status", "config", "hardware", "info", "created_at", "started_at", "ended_at", "error",
             "store_error", "epochs", "samples", "summary", "label")


def run_record(*, id: int | None, status: str, config: Mapping[str, Any], hardware: Mapping[str, Any] | None,
               info: Mapping[str, Any] | None, created_at: float | None, started_at: float | None,
               ended_at: float | None, error: Mapping[str, Any] | None, store_error: str | None,
               epochs: Sequence[Mapping[str, Any]], samples: Sequence[Mapping[str, Any]], label: str | None = None,
               summary: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The one builder of a ``bench.run/1`` record, for a live run (``RunSnapshot.record``) and a stored one
    (``report.record_from_store``) alike. The summary is computed from the epochs and samples unless given."""
    epochs, samples = list(epochs), list(samples)
    out = {
        "schema": RUN_SCHEMA,
        "id": id,
        "status": str(status),
        "config": dict(config),
        "hardware": dict(hardware or {}),
        "info": dict(info or {}),
        "created_at": created_at,
        "started_at": started_at,
        "ended_at": ended_at,
        "error": dict(error) if error else None,
        "store_error": store_error,
        "epochs": epochs,
        "samples": samples,
        "summary": (dict(summary) if summary is not None
                    else run_summary.summarize(epochs, samples, info=info, config=config)),
    }
    if label is not None:
        out["label"] = label
    return out


@dataclass(frozen=True)
class Comparison:
    """Several runs of one config on different targets (``bench.comparison/1``): the runs, and ``comparison`` with
    the speed-up of each against the first (``compare.comparison``, each pair with its ``headline``)."""

    runs: tuple[RunRecord, ...]
    comparison: dict[str, Any] | None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Any) -> Comparison:
        runs = data.get("runs")
        if not isinstance(runs, list) or not runs:
            raise _fail("runs", f"must be a non-empty list of run records, got {_show(runs)}")
        parsed = tuple(RunRecord.from_dict(run, f"runs[{i}]") for i, run in enumerate(runs))
        if data.get("comparison") is not None and not isinstance(data["comparison"], dict):
            raise _fail("comparison", f"must be a JSON object or null, got {_show(data['comparison'])}")
        return cls(runs=parsed, comparison=data.get("comparison"), extra=_extra(data, ("schema", "runs", "comparison")))

    def to_dict(self) -> dict[str, Any]:
        return {"schema": COMPARISON_SCHEMA, "runs": [r.to_dict() for r in self.runs], "comparison": self.comparison,
                **self.extra}


def comparison_record(records: Sequence[Mapping[str, Any]],
                      prices: Mapping[str, float] | None = None) -> dict[str, Any]:
    """The one builder of a ``bench.comparison/1`` document: the runs and the speed-up of each against the first.

    ``comparison`` holds ``baseline`` (the first run's id), ``pairs`` (one per other run: baseline_id,
    baseline_target, target_id, target, speedup_median, speedup_min, speedup_max, total_time_ratio, first epoch times
    and a ``headline`` sentence, energy_ratio and cost_ratio: compare.comparison) and, for exactly two runs, the first
    pair's figures at the top level too. ``prices`` (target -> hourly price, entered by the user) gives the costs.

    Raises:
        RecordError: no records, or one that is not a run record.
    """
    if isinstance(records, (str, bytes)) or not isinstance(records, Sequence) or not records:
        raise RecordError("a comparison needs a list of at least one run record; pick two runs to compare")
    for i, record in enumerate(records):
        if not isinstance(record, Mapping) or not isinstance(record.get("epochs", []), list):
            raise RecordError(f"runs[{i}] is not a run record (a JSON object with an 'epochs' list); {EXPORT_HINT}")
    runs = [dict(r) for r in records]
    result = compare.comparison(runs, prices)
    for pair in result.get("pairs", []):
        pair["headline"] = compare.headline(pair)
    return {"schema": COMPARISON_SCHEMA, "runs": runs, "comparison": result}


@dataclass(frozen=True)
class Sweep:
    """Model size (and batch size) against speed and utilization (``bench.sweep/1``): one row per point
    (``sweeps.sweep_row``), the matmul peak per target, and the runs (without their samples)."""

    rows: tuple[dict[str, Any], ...]
    peaks_gflops: dict[str, float | None]
    runs: tuple[dict[str, Any], ...]
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Any) -> Sweep:
        rows = data.get("rows")
        if not isinstance(rows, list) or not rows:
            raise _fail("rows", f"must be a non-empty list of sweep points, got {_show(rows)}")
        runs = data.get("runs") or []
        if not isinstance(runs, list):
            raise _fail("runs", f"must be a list of run records, got {_show(runs)}")
        by_id = {r.get("id"): r for r in runs if isinstance(r, dict)}
        parsed = []
        for i, row in enumerate(rows):
            row = _object(row, f"rows[{i}]")
            for key in ("size", "batch_size", "target"):
                if key not in row:
                    raise _fail(f"rows[{i}].{key}", "is missing")
            for key, value in row.items():
                if key.endswith(("_seconds", "_s", "_gflops", "_percent", "_fraction")) and value is not None \
                        and not _is_number(value):
                    raise _fail(f"rows[{i}].{key}", f"must be a number or null, got {_show(value)}")
            run = by_id.get(row.get("run_id")) or {}
            if "sample_interval_s" not in row:  # written before rows carried it: the run's config has it
                row = {**row, "sample_interval_s": (run.get("config") or {}).get("sample_interval_s")}
            parsed.append(row)
        peaks = data.get("peaks_gflops") or {}
        if not isinstance(peaks, dict) or any(v is not None and not _is_number(v) for v in peaks.values()):
            raise _fail("peaks_gflops", f"must map targets to GFLOP/s or null, got {_show(peaks)}")
        return cls(rows=tuple(parsed), peaks_gflops=dict(peaks), runs=tuple(runs),
                   extra=_extra(data, ("schema", "rows", "peaks_gflops", "runs")))

    def to_dict(self) -> dict[str, Any]:
        return {"schema": SWEEP_SCHEMA, "rows": list(self.rows), "peaks_gflops": self.peaks_gflops,
                "runs": list(self.runs), **self.extra}

    @property
    def hardware(self) -> dict[str, Any]:
        return next(iter(self.runs), {}).get("hardware") or {}


def sweep_record(rows: Sequence[Mapping[str, Any]], peaks_gflops: Mapping[str, float | None],
                 runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The one builder of a ``bench.sweep/1`` document (runs are kept without their samples)."""
    return {"schema": SWEEP_SCHEMA, "rows": [dict(r) for r in rows], "peaks_gflops": dict(peaks_gflops),
            "runs": [{k: v for k, v in r.items() if k != "samples"} for r in runs]}


def load(data: Any) -> RunRecord | Comparison | Sweep:
    """The one validator of a document read from outside: a run, a comparison or a sweep, typed.

    Raises:
        RecordError: the first problem found, naming the field path, e.g.
            ``epochs[2].epoch_seconds must be a positive number, got 'abc'``.
    """
    if not isinstance(data, dict):
        raise RecordError(f"a run record must be a JSON object, got {type(data).__name__}; {EXPORT_HINT}")
    schema = data.get("schema")
    known = (*SCHEMAS, SWEEP_SCHEMA)
    if schema is None:
        raise _fail("schema", f"is missing (expected {' or '.join(SCHEMAS)}); is this a bench run record?")
    if schema not in known:
        raise _fail("schema", f"{_show(schema)} is not supported; this version reads {' and '.join(SCHEMAS)}")
    if schema == RUN_SCHEMA:
        return RunRecord.from_dict(data)
    if schema == COMPARISON_SCHEMA:
        return Comparison.from_dict(data)
    return Sweep.from_dict(data)
