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

import dataclasses
import enum
import functools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from bench.analysis import compare, run_summary  # the arithmetic that fills a document (summaries, comparisons)
from bench.record_types import Fingerprint, Pair, RecordedHardware, RunSummary, SweepRow
from bench import typed
from bench.typed import JsonValue
from bench.run_info import RunError, RunInfo
from bench.config import RunConfig
from bench.errors import RecordError
from bench.readings import (  # noqa: F401 - Epoch, Sample, GpuReading and check_number are part of this module's API
    EXPORT_HINT,
    Epoch,
    GpuReading,
    Sample,
    fail,
    int_within,
    is_int,
    is_number,
    json_object,
    show_value,
    check_number,
    epochs_of,
    samples_of,
)

RUN_SCHEMA: Literal["bench.run/1"] = "bench.run/1"
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


def _non_empty_list(data: Any, key: str, what: str) -> None:
    """A document's list that must hold at least one item (a comparison's runs, a sweep's rows, a bundle's runs)."""
    value = data.get(key) if isinstance(data, Mapping) else None
    if not isinstance(value, list) or not value:
        raise fail(key, f"must be a non-empty list of {what}, got {show_value(value)}")


# -- the records ------------------------------------------------------------------------------------------------------
@typed.record
@dataclass(frozen=True)
class RunRecord:
    """One run (``bench.run/1``): what was asked (config), where (hardware, info.placement), what happened."""

    NOUN: ClassVar[str] = "run record"

    status: Status
    config: RunConfig
    hardware: RecordedHardware = field(default_factory=RecordedHardware)
    epochs: tuple[Epoch, ...] = ()
    samples: tuple[Sample, ...] = ()
    id: int | None = typed.bound("id", default=None)
    info: RunInfo = field(default_factory=RunInfo)
    created_at: float | None = None
    started_at: float | None = None
    ended_at: float | None = None
    error: RunError | None = None
    store_error: str | None = None
    summary: RunSummary | None = None
    label: str | None = None
    members: tuple[RunRecord, ...] = ()  # a multi-worker run: the other members' own records (info.cluster)
    schema: Literal["bench.run/1"] = RUN_SCHEMA
    extra: dict[str, JsonValue] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Any, path: str = "") -> RunRecord:
        """A run read from outside (a file, a store row): every field checked, RecordError naming the first problem.
        A run's epochs are numbered once each; a member of a multi-worker run holds no members of its own."""
        raw = json_object(data, path or "the record")
        for key in ("hardware", "epochs", "samples"):  # a record file holds each, if only empty
            if key not in raw:
                raise fail(f"{path}.{key}" if path else key, "is missing")
        if raw.get("error") == {}:  # written as an empty object by early versions: no error
            raw = {**raw, "error": None}
        run = typed.checked(cls, raw, path)
        seen: dict[int, int] = {}
        for i, epoch in enumerate(run.epochs):
            if epoch.epoch in seen:
                where = f"{path}.epochs[{i}].epoch" if path else f"epochs[{i}].epoch"
                raise fail(where, f"{epoch.epoch} appears twice (also at index {seen[epoch.epoch]})")
            seen[epoch.epoch] = i
        if run.members and path.count("members["):
            raise fail(f"{path}.members", "a member of a multi-worker run holds no members of its own")
        return run

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> RunRecord:
        """A run this project wrote (a live run's record, its own file), typed without the checks of
        :meth:`from_dict`."""
        return typed.trusted(cls, data)

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


def run_record(*, id: int | None, status: str, config: RunConfig, hardware: RecordedHardware | None,
               info: RunInfo | None, created_at: float | None, started_at: float | None, ended_at: float | None,
               error: RunError | None, store_error: str | None,
               epochs: Sequence[Mapping[str, Any]], samples: Sequence[Mapping[str, Any]], label: str | None = None,
               summary: RunSummary | None = None,
               members: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """The one writer of a ``bench.run/1`` document (the JSON form of :meth:`RunRecord.to_dict`, for a live run and a
    stored one alike). The summary is computed from the epochs and samples unless given.
    ``members``: the other members' records of a multi-worker run this one coordinates (written only when some)."""
    epochs, samples = list(epochs), list(samples)
    info = info or RunInfo()
    out = {
        "schema": RUN_SCHEMA,
        "id": id,
        "status": str(status),
        "config": config.to_dict(),
        "hardware": hardware.to_dict() if hardware is not None else {},
        "info": info.to_dict(),
        "created_at": created_at,
        "started_at": started_at,
        "ended_at": ended_at,
        "error": error.to_dict() if error is not None else None,
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


@typed.record
@dataclass(frozen=True)
class ComparisonBlock(typed.Record):
    """A comparison's figures (``compare.comparison``): the baseline's run id, one pair per other run, the hourly
    prices entered; with exactly two runs the first pair's figures also stand at the top level (kept as they are)."""

    pairs: tuple[Pair, ...] = ()
    baseline: int | None = typed.bound("id", default=None)
    prices: dict[str, float] | None = typed.bound("price_per_hour", default=None)
    extra: dict[str, JsonValue] = field(default_factory=dict)
    keys: tuple[str, ...] | None = field(default=None, compare=False, repr=False)


@typed.record
@dataclass(frozen=True)
class Comparison:
    """Several runs of one config on different targets (``bench.comparison/1``): the runs, and ``comparison`` with
    the speed-up of each against the first (``compare.comparison``, each pair with its ``headline``)."""

    runs: tuple[RunRecord, ...]
    comparison: ComparisonBlock | None = None
    schema: Literal["bench.comparison/1"] = "bench.comparison/1"
    extra: dict[str, JsonValue] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Any) -> Comparison:
        _non_empty_list(data, "runs", "run records")
        return typed.checked(cls, data, "")

    def to_dict(self) -> dict[str, Any]:
        return {"schema": COMPARISON_SCHEMA, "runs": [r.to_dict() for r in self.runs],
                "comparison": self.comparison.to_dict() if self.comparison is not None else None, **self.extra}


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
    return Comparison(runs=tuple(runs), comparison=typed.trusted(ComparisonBlock, compare.comparison(runs, prices)))


@typed.record
@dataclass(frozen=True)
class Sweep:
    """Model size (and batch size) against speed and utilization (``bench.sweep/1``): one row per point
    (``sweeps.sweep_row``), the matmul peak per target, and the runs (without their samples)."""

    rows: tuple[SweepRow, ...]
    peaks_gflops: dict[str, float | None] = typed.bound("achieved_gflops", default_factory=dict)
    runs: tuple[RunRecord, ...] = ()
    schema: Literal["bench.sweep/1"] = "bench.sweep/1"
    extra: dict[str, JsonValue] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Any) -> Sweep:
        _non_empty_list(data, "rows", "sweep points")
        # a sweep keeps its runs without their samples (written before the key was kept empty: none at all)
        runs = data.get("runs")
        if isinstance(runs, list):
            data = {**data, "runs": [{"samples": [], **run} if isinstance(run, dict) else run for run in runs]}
        sweep = typed.checked(cls, data, "")
        by_id = {r.id: r for r in sweep.runs}
        rows = []
        for raw, row in zip(data["rows"], sweep.rows):
            run = by_id.get(row.run_id)
            if "sample_interval_s" not in raw and run is not None:  # written before rows carried it: its run's
                row = dataclasses.replace(row, sample_interval_s=run.config.sample_interval_s,
                                          keys=(*(row.keys or ()), "sample_interval_s"))
            rows.append(row)
        return dataclasses.replace(sweep, rows=tuple(rows))

    def to_dict(self) -> dict[str, Any]:
        return {"schema": SWEEP_SCHEMA, "rows": [r.to_dict() for r in self.rows], "peaks_gflops": self.peaks_gflops,
                "runs": [r.to_dict() for r in self.runs], **self.extra}

    @property
    def hardware(self) -> RecordedHardware | None:
        return self.runs[0].hardware if self.runs else None


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


@typed.record
@dataclass(frozen=True)
class SuiteSpec(typed.Record):
    """Which suite measured a machine: its version (bumped whenever a workload changes) and variant."""

    version: str
    variant: str
    extra: dict[str, JsonValue] = field(default_factory=dict)


@typed.record
@dataclass(frozen=True)
class MachineBundle:
    """One machine measured by the fixed suite (``bench.bundle/1``, built by ``bench suite``): the machine's
    fingerprint (CPU, RAM, GPUs, OS, Python, framework and backend), the suite's version and variant, the user's label,
    hourly prices per target as entered, each target's matmul peak, and every run of the suite (without samples)."""

    machine: Fingerprint
    suite: SuiteSpec
    runs: tuple[RunRecord, ...]
    label: str | None = None
    notes: str | None = None
    created_at: float | None = None
    prices: dict[str, float] = typed.bound("price_per_hour", default_factory=dict)
    peaks_gflops: dict[str, float | None] = typed.bound("achieved_gflops", default_factory=dict)
    schema: Literal["bench.bundle/1"] = "bench.bundle/1"
    extra: dict[str, JsonValue] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Any) -> MachineBundle:
        _non_empty_list(data, "runs", "run records")
        bundle = typed.checked(cls, data, "")
        if any(not v > 0 for v in bundle.prices.values()):
            raise fail("prices", f"must map targets to hourly prices above 0, got {show_value(bundle.prices)}")
        return bundle

    @property
    def suite_version(self) -> str:
        return self.suite.version

    @property
    def suite_variant(self) -> str:
        return self.suite.variant

    def to_dict(self) -> dict[str, Any]:
        return bundle_record(machine=self.machine, suite_version=self.suite_version, suite_variant=self.suite_variant,
                             runs=self.runs, label=self.label, notes=self.notes,
                             created_at=self.created_at, prices=self.prices,
                             peaks_gflops=self.peaks_gflops) | self.extra



def bundle_record(*, machine: Fingerprint, suite_version: str, suite_variant: str,
                  runs: Sequence[RunRecord], label: str | None = None, notes: str | None = None,
                  created_at: float | None = None, prices: Mapping[str, float] | None = None,
                  peaks_gflops: Mapping[str, float | None] | None = None) -> dict[str, Any]:
    """The one builder of a ``bench.bundle/1`` document (runs are kept without their samples: the summary each
    carries holds what the gallery reads)."""
    return {"schema": BUNDLE_SCHEMA, "label": label, "notes": notes, "created_at": created_at,
            "machine": machine.to_dict(), "suite": {"version": suite_version, "variant": suite_variant},
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
