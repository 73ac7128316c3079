"""The records this project writes and reads, defined once: run status, run record, comparison and sweep, each a
frozen dataclass with one constructor and one validator. The readings a run holds (epoch, sample, GPU reading) live in
bench.readings, shared with the monitor that takes them, and are re-exported here; the typed parts a document carries
(a run's summary and diagnosis, a comparison's pairs, a sweep's rows) live in bench.record_types, below the analysis
that fills them. This module sits above that analysis: a document without its summary gets one computed
(``run_summary.summarize``), and a comparison's block is ``compare.comparison``.

| schema              | built by                  | what it holds                                                     |
|---------------------|---------------------------|-------------------------------------------------------------------|
| ``bench.run/1``     | :func:`run_record`        | one run: status, config, hardware, info, epochs, samples, summary |
| ``bench.comparison/1`` | :func:`comparison_record` | runs plus the speed-up (and headline) of each against the first |
| ``bench.sweep/1``   | :func:`sweep_record`      | one row per (size, batch size, target) point, peaks, the runs     |

Inside the engine and the pages a run is a :class:`RunRecord` (the store reads its rows into one, a live run's snapshot
gives one); its JSON form, written to files and downloads, is its ``to_dict()``. :func:`load` is the one place that checks a document read from outside (an import, a shipped result): it builds the
typed record field by field, and every problem raises :class:`RecordError` naming the field, what it holds and what
to do. Unknown keys are kept (``extra``), so files from newer versions still import. An imported GPU run must import
on a CPU-only machine, so a config is checked for shape, not validated against this machine's hardware.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import functools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.analysis import compare, run_summary  # the arithmetic that fills a document (summaries, comparisons)
from bench.record_types import Pair, RunSummary, SweepRow
from bench.config import ConfigError, RunConfig
from bench.errors import RecordError
from bench.limits import ID_MAX
from bench.readings import (  # noqa: F401 - Epoch, Sample, GpuReading and check_number are part of this module's API
    EXPORT_HINT,
    Epoch,
    GpuReading,
    Sample,
    extra_keys,
    fail,
    int_within,
    is_int,
    is_number,
    json_object,
    optional_text,
    show_value,
    check_number,
    epochs_of,
    samples_of,
)

RUN_SCHEMA = "bench.run/1"
COMPARISON_SCHEMA = "bench.comparison/1"
SWEEP_SCHEMA = "bench.sweep/1"
SCHEMAS = (RUN_SCHEMA, COMPARISON_SCHEMA)  # what an import into the store reads; a sweep is shown, not imported


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


def check_config(config: Any, path: str) -> None:
    """A run config's shape: known settings with values of the right type (not checked against this machine)."""
    if not isinstance(config, dict):
        raise fail(path, f"must be a JSON object of run settings, got {show_value(config)}")
    try:
        RunConfig.from_dict(dict(config))
    except ConfigError as exc:
        raise fail(path, f"is not a run config this version reads: {exc}") from None
    except TypeError as exc:
        raise fail(path, f"is not a run config this version reads: {exc}") from None
    kinds = {"int": int, "str": str, "float": float, "bool": bool, "None": type(None)}
    words = {"int": "a whole number", "str": "text", "float": "a number", "bool": "true or false", "None": "null"}
    for f in dataclasses.fields(RunConfig):
        if f.name not in config:
            continue
        value = config[f.name]
        names = [t.strip() for t in str(f.type).split("|") if t.strip() in kinds]
        allowed = [kinds[t] for t in names]
        ok = any(
            (t is int and is_int(value)) or (t is float and is_number(value)) or (t is bool and isinstance(value, bool))
            or (t not in (int, float, bool) and isinstance(value, t))
            for t in allowed
        )
        if allowed and not ok:
            raise fail(f"{path}.{f.name}", f"must be {' or '.join(words[t] for t in names)}, got {show_value(value)}")
        if is_number(value) and (not math.isfinite(value) or abs(value) > ID_MAX):
            raise fail(f"{path}.{f.name}", f"must be a finite number SQLite can hold, got {show_value(value)}")




# -- the records ------------------------------------------------------------------------------------------------------
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
    summary: RunSummary | None = None
    label: str | None = None
    members: tuple[RunRecord, ...] = ()  # a multi-worker run: the other members' own records (info.cluster)
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Any, path: str = "") -> RunRecord:
        prefix = f"{path}." if path else ""
        if not isinstance(data, dict):
            raise fail(path or "the record", f"must be a JSON object, got {type(data).__name__}")
        run = data
        if path and run.get("schema", RUN_SCHEMA) != RUN_SCHEMA:
            raise fail(f"{prefix}schema", f"must be {RUN_SCHEMA!r}, got {show_value(run.get('schema'))}")
        for key in ("status", "config", "hardware", "epochs", "samples"):
            if key not in run:
                raise fail(f"{prefix}{key}", "is missing")
        if not isinstance(run["status"], str) or run["status"] not in STATUSES:
            raise fail(f"{prefix}status", f"must be one of {', '.join(STATUSES)}, got {show_value(run['status'])}")
        check_config(run["config"], f"{prefix}config")
        if not isinstance(run["hardware"], dict):
            raise fail(f"{prefix}hardware", f"must be a JSON object, got {show_value(run['hardware'])}")
        if not isinstance(run["epochs"], list):
            raise fail(f"{prefix}epochs", f"must be a list of epochs, got {show_value(run['epochs'])}")
        if not isinstance(run["samples"], list):
            raise fail(f"{prefix}samples", f"must be a list of samples, got {show_value(run['samples'])}")
        for key in ("info", "error"):
            if run.get(key) is not None and not isinstance(run[key], dict):
                raise fail(f"{prefix}{key}", f"must be a JSON object or null, got {show_value(run[key])}")
        for key in ("created_at", "started_at", "ended_at"):
            if run.get(key) is not None:
                if not is_number(run[key]):
                    raise fail(f"{prefix}{key}", f"must be epoch seconds or null, got {show_value(run[key])}")
                check_number(run[key], key, f"{prefix}{key}")
        for key in ("label", "store_error"):
            optional_text(run, key, path)
        if run.get("id") is not None:
            int_within(run["id"], -ID_MAX, ID_MAX, f"{prefix}id", "a whole number")
        epochs = []
        seen: dict[int, int] = {}
        for i, raw in enumerate(run["epochs"]):
            epoch = Epoch.from_dict(raw, f"{prefix}epochs[{i}]")
            if epoch.epoch in seen:
                raise fail(f"{prefix}epochs[{i}].epoch", f"{epoch.epoch} appears twice (also at index {seen[epoch.epoch]})")
            seen[epoch.epoch] = i
            epochs.append(epoch)
        samples = tuple(Sample.from_dict(s, f"{prefix}samples[{i}]") for i, s in enumerate(run["samples"]))
        members = run.get("members") or []
        if not isinstance(members, list):
            raise fail(f"{prefix}members", f"must be a list of run records, got {show_value(members)}")
        if members and path.count("members["):
            raise fail(f"{prefix}members", "a member of a multi-worker run holds no members of its own")
        return cls(status=Status(run["status"]), config=dict(run["config"]), hardware=dict(run["hardware"]),
                   epochs=tuple(epochs), samples=samples, id=run.get("id"), info=dict(run.get("info") or {}),
                   created_at=run.get("created_at"), started_at=run.get("started_at"), ended_at=run.get("ended_at"),
                   error=dict(run["error"]) if run.get("error") else None,
                   store_error=run.get("store_error"), label=run.get("label"),
                   summary=(RunSummary.from_dict(run["summary"], f"{prefix}summary")
                            if run.get("summary") is not None else None),
                   members=tuple(RunRecord.from_dict(m, f"{prefix}members[{i}]") for i, m in enumerate(members)),
                   extra=extra_keys(run, _RUN_KEYS))

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> RunRecord:
        """A run this project wrote (a store row with its epochs and samples, or a live run's record), typed without
        the checks of :meth:`from_dict`: what is read from outside goes through ``from_dict``."""
        summary = data.get("summary")
        return cls(status=Status(data["status"]), config=dict(data.get("config") or {}),
                   hardware=dict(data.get("hardware") or {}), epochs=epochs_of(data.get("epochs")),
                   samples=samples_of(data.get("samples")), id=data.get("id"), info=dict(data.get("info") or {}),
                   created_at=data.get("created_at"), started_at=data.get("started_at"), ended_at=data.get("ended_at"),
                   error=data.get("error"), store_error=data.get("store_error"), label=data.get("label"),
                   summary=RunSummary.of(summary) if summary else None,
                   members=tuple(RunRecord.of(m) for m in data.get("members") or ()),
                   extra=extra_keys(data, _RUN_KEYS))

    @functools.cached_property
    def summarized(self) -> RunSummary:
        """The summary this run carries, else one computed from its epochs, samples, info and config (a run still
        going, or one stored before summaries were kept): what every figure shown of a run is read from."""
        if self.summary is not None:
            return self.summary
        return run_summary.summarize(self.epochs, self.samples, info=self.info, config=self.config)

    def with_members(self, members: Sequence[RunRecord]) -> RunRecord:
        return dataclasses.replace(self, members=tuple(members))

    def to_dict(self) -> dict[str, Any]:
        return run_record(id=self.id, status=self.status, config=self.config, hardware=self.hardware, info=self.info,
                          created_at=self.created_at, started_at=self.started_at, ended_at=self.ended_at,
                          error=self.error, store_error=self.store_error, epochs=[e.to_dict() for e in self.epochs],
                          samples=[s.to_dict() for s in self.samples], label=self.label,
                          summary=self.summary, members=[m.to_dict() for m in self.members]) | self.extra


_RUN_KEYS = ("schema", "id", "status", "config", "hardware", "info", "created_at", "started_at", "ended_at", "error",
             "store_error", "epochs", "samples", "summary", "label", "members")


def run_record(*, id: int | None, status: str, config: Mapping[str, Any], hardware: Mapping[str, Any] | None,
               info: Mapping[str, Any] | None, created_at: float | None, started_at: float | None,
               ended_at: float | None, error: Mapping[str, Any] | None, store_error: str | None,
               epochs: Sequence[Mapping[str, Any]], samples: Sequence[Mapping[str, Any]], label: str | None = None,
               summary: RunSummary | None = None,
               members: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """The one writer of a ``bench.run/1`` document (the JSON form of :meth:`RunRecord.to_dict`, for a live run and a
    stored one alike). The summary is computed from the epochs and samples unless given.
    ``members``: the other members' records of a multi-worker run this one coordinates (written only when some)."""
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
        "summary": (summary if summary is not None
                    else run_summary.summarize(epochs_of(epochs), samples_of(samples), info=info, config=config)
                    ).to_dict(),
    }
    if label is not None:
        out["label"] = label
    if members:
        out["members"] = [dict(m) for m in members]
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
            raise fail("runs", f"must be a non-empty list of run records, got {show_value(runs)}")
        parsed = tuple(RunRecord.from_dict(run, f"runs[{i}]") for i, run in enumerate(runs))
        if data.get("comparison") is not None:
            pairs = json_object(data["comparison"], "comparison").get("pairs", [])
            if not isinstance(pairs, list):
                raise fail("comparison.pairs", f"must be a list of pairs, got {show_value(pairs)}")
            for i, pair in enumerate(pairs):
                Pair.from_dict(pair, f"comparison.pairs[{i}]")
        return cls(runs=parsed, comparison=data.get("comparison"), extra=extra_keys(data, ("schema", "runs", "comparison")))

    def to_dict(self) -> dict[str, Any]:
        return {"schema": COMPARISON_SCHEMA, "runs": [r.to_dict() for r in self.runs],
                "comparison": copy.deepcopy(self.comparison),
                **self.extra}


def comparison_record(runs: Sequence[RunRecord], prices: Mapping[str, float] | None = None) -> Comparison:
    """The one builder of a ``bench.comparison/1`` record: the runs and the speed-up of each against the first.

    ``comparison`` holds ``baseline`` (the first run's id), ``pairs`` (one per other run: baseline_id,
    baseline_target, target_id, target, speedup_median, speedup_min, speedup_max, total_time_ratio, first epoch times
    and a ``headline`` sentence, energy_ratio and cost_ratio: compare.comparison) and, for exactly two runs, the first
    pair's figures at the top level too. ``prices`` (target -> hourly price, entered by the user) gives the costs.

    Raises:
        RecordError: no runs.
    """
    if not runs:
        raise RecordError("a comparison needs a list of at least one run record; pick two runs to compare")
    return Comparison(runs=tuple(runs), comparison=compare.comparison(runs, prices))


@dataclass(frozen=True)
class Sweep:
    """Model size (and batch size) against speed and utilization (``bench.sweep/1``): one row per point
    (``sweeps.sweep_row``), the matmul peak per target, and the runs (without their samples)."""

    rows: tuple[SweepRow, ...]
    peaks_gflops: dict[str, float | None]
    runs: tuple[RunRecord, ...]
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Any) -> Sweep:
        rows = data.get("rows")
        if not isinstance(rows, list) or not rows:
            raise fail("rows", f"must be a non-empty list of sweep points, got {show_value(rows)}")
        runs = data.get("runs") or []
        if not isinstance(runs, list):
            raise fail("runs", f"must be a list of run records, got {show_value(runs)}")
        # a sweep keeps its runs without their samples (written before the key was kept empty: none at all)
        typed = tuple(RunRecord.from_dict({"samples": [], **run} if isinstance(run, dict) else run, f"runs[{i}]")
                      for i, run in enumerate(runs))
        by_id = {r.id: r for r in typed}
        parsed = []
        for i, row in enumerate(rows):
            row = json_object(row, f"rows[{i}]")
            for key in ("size", "batch_size", "target"):
                if key not in row:
                    raise fail(f"rows[{i}].{key}", "is missing")
            for key, value in row.items():
                if key.endswith(("_seconds", "_s", "_gflops", "_percent", "_fraction")) and value is not None \
                        and not is_number(value):
                    raise fail(f"rows[{i}].{key}", f"must be a number or null, got {show_value(value)}")
            run = by_id.get(row.get("run_id"))
            if "sample_interval_s" not in row:  # written before rows carried it: the run's config has it
                row = {**row, "sample_interval_s": run.config.get("sample_interval_s") if run is not None else None}
            parsed.append(SweepRow.of(row))
        peaks = data.get("peaks_gflops") or {}
        if not isinstance(peaks, dict) or any(v is not None and not is_number(v) for v in peaks.values()):
            raise fail("peaks_gflops", f"must map targets to GFLOP/s or null, got {show_value(peaks)}")
        return cls(rows=tuple(parsed), peaks_gflops=dict(peaks), runs=typed,
                   extra=extra_keys(data, ("schema", "rows", "peaks_gflops", "runs")))

    def to_dict(self) -> dict[str, Any]:
        return {"schema": SWEEP_SCHEMA, "rows": [r.to_dict() for r in self.rows], "peaks_gflops": self.peaks_gflops,
                "runs": [r.to_dict() for r in self.runs], **self.extra}

    @property
    def hardware(self) -> dict[str, Any]:
        return self.runs[0].hardware if self.runs else {}


def sweep_record(rows: Sequence[SweepRow], peaks_gflops: Mapping[str, float | None],
                 runs: Sequence[RunRecord]) -> dict[str, Any]:
    """The one builder of a ``bench.sweep/1`` document (runs are kept without their samples)."""
    return {"schema": SWEEP_SCHEMA, "rows": [r.to_dict() for r in rows], "peaks_gflops": dict(peaks_gflops),
            "runs": [dataclasses.replace(r, samples=(), summary=r.summarized).to_dict() for r in runs]}


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
        raise fail("schema", f"is missing (expected {' or '.join(SCHEMAS)}); is this a bench run record?")
    if schema not in known:
        raise fail("schema", f"{show_value(schema)} is not supported; this version reads {' and '.join(SCHEMAS)}")
    if schema == RUN_SCHEMA:
        return RunRecord.from_dict(data)
    if schema == COMPARISON_SCHEMA:
        return Comparison.from_dict(data)
    return Sweep.from_dict(data)


BUNDLE_SCHEMA = "bench.bundle/1"
_FINGERPRINT_TEXT = ("os", "python", "framework", "framework_version", "backend")


@dataclass(frozen=True)
class MachineBundle:
    """One machine measured by the fixed suite (``bench.bundle/1``, built by ``bench suite``): the machine's
    fingerprint (CPU, RAM, GPUs, OS, Python, framework and backend), the suite's version and variant, the user's label,
    hourly prices per target as entered, each target's matmul peak, and every run of the suite (without samples)."""

    machine: dict[str, Any]
    suite_version: str
    suite_variant: str
    runs: tuple[RunRecord, ...]
    label: str | None = None
    notes: str | None = None
    created_at: float | None = None
    prices: dict[str, float] = field(default_factory=dict)
    peaks_gflops: dict[str, float | None] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Any) -> MachineBundle:
        machine = data.get("machine")
        if not isinstance(machine, dict):
            raise fail("machine", f"must be a JSON object (the machine's fingerprint), got {show_value(machine)}")
        if not isinstance(machine.get("cpu"), dict):
            raise fail("machine.cpu", f"must be a JSON object (model, cores, RAM), got {show_value(machine.get('cpu'))}")
        if not isinstance(machine.get("gpus", []), list):
            raise fail("machine.gpus", f"must be a list of GPUs, got {show_value(machine.get('gpus'))}")
        for key in _FINGERPRINT_TEXT:
            if machine.get(key) is not None and not isinstance(machine[key], str):
                raise fail(f"machine.{key}", f"must be text or null, got {show_value(machine[key])}")
        suite = data.get("suite")
        if not isinstance(suite, dict) or not isinstance(suite.get("version"), str) \
                or not isinstance(suite.get("variant"), str):
            raise fail("suite", f"must be {{'version': text, 'variant': text}}, got {show_value(suite)}")
        runs = data.get("runs")
        if not isinstance(runs, list) or not runs:
            raise fail("runs", f"must be a non-empty list of run records, got {show_value(runs)}")
        parsed = tuple(RunRecord.from_dict(run, f"runs[{i}]") for i, run in enumerate(runs))
        for key in ("label", "notes"):
            if data.get(key) is not None and not isinstance(data[key], str):
                raise fail(key, f"must be text or null, got {show_value(data[key])}")
        if data.get("created_at") is not None:
            check_number(data["created_at"], "created_at", "created_at")
        prices = data.get("prices") or {}
        if not isinstance(prices, dict) or any(not is_number(v) or not math.isfinite(v) or v <= 0
                                               for v in prices.values()):
            raise fail("prices", f"must map targets to hourly prices above 0, got {show_value(prices)}")
        peaks = data.get("peaks_gflops") or {}
        if not isinstance(peaks, dict) or any(v is not None and not is_number(v) for v in peaks.values()):
            raise fail("peaks_gflops", f"must map targets to GFLOP/s or null, got {show_value(peaks)}")
        return cls(machine=machine, suite_version=suite["version"], suite_variant=suite["variant"], runs=parsed,
                   label=data.get("label"), notes=data.get("notes"), created_at=data.get("created_at"),
                   prices={str(k): float(v) for k, v in prices.items()}, peaks_gflops=dict(peaks),
                   extra=extra_keys(data, _BUNDLE_KEYS))

    def to_dict(self) -> dict[str, Any]:
        return bundle_record(machine=self.machine, suite_version=self.suite_version, suite_variant=self.suite_variant,
                             runs=self.runs, label=self.label, notes=self.notes,
                             created_at=self.created_at, prices=self.prices,
                             peaks_gflops=self.peaks_gflops) | self.extra


_BUNDLE_KEYS = ("schema", "machine", "suite", "runs", "label", "notes", "created_at", "prices", "peaks_gflops")


def bundle_record(*, machine: Mapping[str, Any], suite_version: str, suite_variant: str,
                  runs: Sequence[RunRecord], label: str | None = None, notes: str | None = None,
                  created_at: float | None = None, prices: Mapping[str, float] | None = None,
                  peaks_gflops: Mapping[str, float | None] | None = None) -> dict[str, Any]:
    """The one builder of a ``bench.bundle/1`` document (runs are kept without their samples: the summary each
    carries holds what the gallery reads)."""
    return {"schema": BUNDLE_SCHEMA, "label": label, "notes": notes, "created_at": created_at,
            "machine": dict(machine), "suite": {"version": suite_version, "variant": suite_variant},
            "prices": dict(prices or {}), "peaks_gflops": dict(peaks_gflops or {}),
            "runs": [dataclasses.replace(r, samples=(), summary=r.summarized).to_dict() for r in runs]}


def load_bundle(data: Any) -> MachineBundle:
    """A machine bundle read from outside, typed (see :func:`load` for the other records).

    Raises:
        RecordError: not a JSON object, not ``bench.bundle/1``, or the first problem found, naming its field.
    """
    if not isinstance(data, dict):
        raise RecordError(f"a machine bundle must be a JSON object, got {type(data).__name__}; make one with "
                          "`python -m bench suite --out FILE`")
    if data.get("schema") != BUNDLE_SCHEMA:
        raise fail("schema", f"must be {BUNDLE_SCHEMA!r} for a machine bundle, got {show_value(data.get('schema'))}")
    return MachineBundle.from_dict(data)
