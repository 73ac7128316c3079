"""The records this project writes and reads, defined once as pydantic models (bench.vocab.record_base.Record): run
status, run record, comparison, sweep and machine bundle. The readings a run holds (epoch, sample, GPU reading) live
in bench.vocab.readings, shared with the monitor that takes them, and are re-exported here; the typed parts a document
carries (a run's summary and diagnosis, a comparison's pairs, a sweep's rows, a machine's fingerprint) live in
bench.vocab.record_types. Records hold what they are given and compute nothing: a run's summary, a comparison's block and a
sweep's rows are computed by bench.analysis (``run_summary.summary_of``, ``compare.comparison_record``,
``sweeps.sweep_record``), which builds the documents here.

| schema                 | model            | what it holds                                                     |
|------------------------|------------------|-------------------------------------------------------------------|
| ``bench.run/1``        | :class:`RunRecord`  | one run: status, config, hardware, info, epochs, samples, summary |
| ``bench.comparison/1`` | :class:`Comparison` | runs plus the speed-up (and headline) of each against the first |
| ``bench.sweep/1``      | :class:`Sweep`      | one row per (size, batch size, target) point, peaks, the runs   |
| ``bench.bundle/1``     | :class:`MachineBundle` | one machine measured by the fixed suite                      |

Inside the engine and the pages a run is a :class:`RunRecord` (the store reads its rows into one, a live run's snapshot
gives one); its JSON form, written to files and downloads, is its ``to_dict()``. :func:`load_json` (JSON text, read
by pydantic's own parser) and :func:`load` (decoded JSON) are the way in for a document from outside (an import, a
shipped result): every problem raises :class:`RecordError` naming the field, what it holds and what to do. Unknown
keys are kept (``extra``), so files from newer versions still import. An imported GPU run must import on a CPU-only
machine, so a config is checked for shape, not validated against this machine's hardware.
"""

from __future__ import annotations

import enum
import json
import math
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import Field, PrivateAttr, TypeAdapter, ValidationError, ValidationInfo, field_validator, model_validator

from bench.vocab.config import RunConfig
from bench.vocab.errors import RecordError
from bench.vocab.limits import Gflops, Id, Line, Price, Text, Timestamp
from bench.vocab.record_base import PathError, Record, json_error, record_error
from bench.vocab.record_types import Fingerprint, Pair, RecordedHardware, RunSummary, SweepRow
from bench.vocab.run_info import RunError, RunInfo
from bench.vocab.target import DeviceText
from bench.vocab.readings import (  # noqa: F401 - Epoch, Sample, GpuReading are part of this module's API
    EXPORT_HINT,
    Epoch,
    GpuReading,
    Sample,
    fail,
    is_int,
    is_number,
    show_value,
    epochs_of,
    samples_of,
)

RUN_SCHEMA: Literal["bench.run/1"] = "bench.run/1"
COMPARISON_SCHEMA: Literal["bench.comparison/1"] = "bench.comparison/1"
SWEEP_SCHEMA: Literal["bench.sweep/1"] = "bench.sweep/1"
BUNDLE_SCHEMA: Literal["bench.bundle/1"] = "bench.bundle/1"
SCHEMAS = (RUN_SCHEMA, COMPARISON_SCHEMA)  # what an import into the store reads; a sweep is shown, not imported


def schema_of(data: Any) -> Any:
    """The schema a decoded JSON document says it is (its ``schema`` key, unchecked), before it is read; None for
    a document that is not an object or names none. The one place a document's kind is told from its dict."""
    return data.get("schema") if isinstance(data, dict) else None


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


# -- the records ------------------------------------------------------------------------------------------------------
class RunRecord(Record):
    """One run (``bench.run/1``): what was asked (config), where (hardware, info.placement), what happened."""

    NOUN: ClassVar[str] = "run record"

    schema_name: Literal["bench.run/1"] = Field(default=RUN_SCHEMA, alias="schema")
    id: Id | None = None
    status: Status
    config: RunConfig
    hardware: RecordedHardware = Field(default_factory=RecordedHardware)
    info: RunInfo = Field(default_factory=RunInfo)
    created_at: Timestamp | None = None
    started_at: Timestamp | None = None
    ended_at: Timestamp | None = None
    error: RunError | None = None
    store_error: Text | None = None
    epochs: tuple[Epoch, ...] = ()
    samples: tuple[Sample, ...] = ()
    summary: RunSummary | None = None
    label: Line | None = None
    members: tuple[RunRecord, ...] = ()  # a multi-worker run: the other members' own records (info.cluster)
    # the summary computed for a run that carries none (bench.analysis.run_summary.summary_of), kept with it
    _computed_summary: Any = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _no_error(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("error") == {}:  # written as an empty object by early versions
            return {**data, "error": None}
        return data

    @model_validator(mode="after")
    def _numbered_once(self) -> RunRecord:
        """A run's epochs are numbered once each; a member of a multi-worker run holds no members of its own."""
        seen: dict[int, int] = {}
        for i, epoch in enumerate(self.epochs):
            if epoch.epoch in seen:
                raise PathError(f"epochs[{i}].epoch", f"{epoch.epoch} appears twice (also at index {seen[epoch.epoch]})")
            seen[epoch.epoch] = i
        for i, member in enumerate(self.members):
            if member.members:
                raise PathError(f"members[{i}].members", "a member of a multi-worker run holds no members of its own")
        return self

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> RunRecord:
        """A copy; one whose readings, info or config change does not keep the summary computed for the original."""
        copy = super().model_copy(update=update, deep=deep)
        if update and set(update) & {"epochs", "samples", "info", "config", "summary"}:
            copy._computed_summary = None
        return copy

    def with_members(self, members: Sequence[RunRecord]) -> RunRecord:
        return self.model_copy(update={"members": tuple(members)})

    def to_dict(self) -> dict[str, Any]:
        """Its ``bench.run/1`` document: every key of a run (null where not known), then the keys it was read with."""
        out = self.model_dump(mode="json", by_alias=True, exclude_unset=True)
        if not out.get("members", True):  # written only for a run that coordinates others
            del out["members"]
        if "label" in out and out["label"] is None:
            del out["label"]
        return {"schema": RUN_SCHEMA, "id": self.id, "status": self.status.value, "config": self.config.to_dict(),
                "hardware": {}, "info": {}, "created_at": self.created_at, "started_at": self.started_at,
                "ended_at": self.ended_at, "error": None, "store_error": self.store_error, "epochs": [],
                "samples": [], "summary": None} | out


def run_record(**fields: Any) -> dict[str, Any]:
    """A ``bench.run/1`` document built from its fields (a part given as None: not known), holding what it is given
    (a summary only where one is given: ``run_summary.summary_of`` computes one)."""
    return RunRecord(**{k: v for k, v in fields.items() if v is not None}).to_dict()


class ComparisonBlock(Record):
    """A comparison's figures (``compare.comparison``): the baseline's run id, one pair per other run, the hourly
    prices entered; with exactly two runs the first pair's figures also stand at the top level (kept as they are)."""

    pairs: tuple[Pair, ...] = ()
    baseline: Id | None = None
    prices: dict[str, Price] | None = None


class Comparison(Record):
    """Several runs of one config on different targets (``bench.comparison/1``): the runs, and ``comparison`` with
    the speed-up of each against the first (``compare.comparison``, each pair with its ``headline``)."""

    schema_name: Literal["bench.comparison/1"] = Field(default=COMPARISON_SCHEMA, alias="schema")
    runs: Annotated[tuple[RunRecord, ...], Field(min_length=1)]
    comparison: ComparisonBlock | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"schema": COMPARISON_SCHEMA, "runs": [r.to_dict() for r in self.runs],
                "comparison": self.comparison.to_dict() if self.comparison is not None else None,
                **self.extra}


class Sweep(Record):
    """Model size (and batch size) against speed and utilization (``bench.sweep/1``): one row per point
    (``sweeps.sweep_row``), the matmul peak per target, and the runs (without their samples)."""

    schema_name: Literal["bench.sweep/1"] = Field(default=SWEEP_SCHEMA, alias="schema")
    runs: tuple[RunRecord, ...] = ()  # read before the rows, which take their sampling interval from them
    rows: Annotated[tuple[SweepRow, ...], Field(min_length=1)]
    peaks_gflops: dict[str, Gflops | None] = {}

    @field_validator("rows")
    @classmethod
    def _intervals(cls, rows: tuple[SweepRow, ...], info: ValidationInfo) -> tuple[SweepRow, ...]:
        """A row written before rows carried their sampling interval takes its run's."""
        by_id = {r.id: r for r in info.data["runs"]} if "runs" in info.data else {}
        return tuple(r if r.carries("sample_interval_s") or r.run_id not in by_id else
                     r.model_copy(update={"sample_interval_s": by_id[r.run_id].config.sample_interval_s})
                     for r in rows)

    def to_dict(self) -> dict[str, Any]:
        return {"schema": SWEEP_SCHEMA, "rows": [r.to_dict() for r in self.rows], "peaks_gflops": self.peaks_gflops,
                "runs": [r.to_dict() for r in self.runs], **self.extra}

    @property
    def hardware(self) -> RecordedHardware | None:
        return self.runs[0].hardware if self.runs else None


class SuiteSpec(Record):
    """Which suite measured a machine: its version (bumped whenever a workload changes) and variant."""

    version: Line
    variant: Line


class MachineBundle(Record):
    """One machine measured by the fixed suite (``bench.bundle/1``, built by ``bench suite``): the machine's
    fingerprint (CPU, RAM, GPUs, OS, Python, framework and backend), the suite's version and variant, the user's label,
    hourly prices per target as entered, each target's matmul peak, and every run of the suite (without samples)."""

    schema_name: Literal["bench.bundle/1"] = Field(default=BUNDLE_SCHEMA, alias="schema")
    label: Line | None = None
    notes: Text | None = None
    created_at: Timestamp | None = None
    machine: Fingerprint
    suite: SuiteSpec
    prices: dict[DeviceText, Price] = {}
    peaks_gflops: dict[DeviceText, Gflops | None] = {}
    runs: Annotated[tuple[RunRecord, ...], Field(min_length=1)]

    @property
    def suite_version(self) -> str:
        return self.suite.version

    @property
    def suite_variant(self) -> str:
        return self.suite.variant

    def to_dict(self) -> dict[str, Any]:
        return {"schema": BUNDLE_SCHEMA, "label": self.label, "notes": self.notes, "created_at": self.created_at,
                "machine": self.machine.to_dict(), "suite": self.suite.to_dict(), "prices": dict(self.prices),
                "peaks_gflops": dict(self.peaks_gflops), "runs": [r.to_dict() for r in self.runs]} | self.extra


def bundle_record(*, machine: Fingerprint, suite_version: str, suite_variant: str, runs: Sequence[RunRecord],
                  **fields: Any) -> dict[str, Any]:
    """A ``bench.bundle/1`` document built from its parts (runs as given: ``bench.runs.suite.bundle`` drops their
    samples and fills their summaries)."""
    return MachineBundle(machine=machine, suite=SuiteSpec(version=suite_version, variant=suite_variant),
                         runs=tuple(runs), **{k: v for k, v in fields.items() if v is not None}).to_dict()


# -- the ways in ------------------------------------------------------------------------------------------------------
Document = Annotated[Union[RunRecord, Comparison, Sweep], Field(discriminator="schema_name")]
_DOCUMENT: TypeAdapter[RunRecord | Comparison | Sweep] = TypeAdapter(Document)
_NEEDS = {RUN_SCHEMA: ("hardware", "epochs", "samples")}  # a run's file holds each, if only empty


def load(data: Any) -> RunRecord | Comparison | Sweep:
    """The one reader of a decoded document from outside: a run, a comparison or a sweep, typed.

    Raises:
        RecordError: the first problem found, naming the field path, e.g.
            ``epochs[2].epoch_seconds must be a positive number, got 'abc'``.
    """
    _check_schema(data)
    try:
        return _complete(_DOCUMENT.validate_python(data))
    except ValidationError as exc:
        raise _document_error(exc, data) from None


def load_json(text: str | bytes | bytearray) -> RunRecord | Comparison | Sweep:
    """A document from outside as JSON text, read by pydantic's own parser (a lone surrogate, nesting deeper than
    200 levels: refused, naming where); see :func:`load`.

    Raises:
        RecordError: as :func:`load`, or the text is not JSON.
    """
    try:
        document = _DOCUMENT.validate_json(text)
    except ValidationError as exc:
        if exc.errors()[0]["type"] == "json_invalid":
            raise json_error(text, "", exc.errors()[0]["msg"]) from None
        data = json.loads(text)  # JSON, since pydantic's parser read it: for the schema's own words
        _check_schema(data)
        raise _document_error(exc, data) from None
    return _complete(document)


_NEEDED = ("hardware", "epochs", "samples")


def _complete(document: Any) -> Any:
    """``document`` when each run in it holds its hardware, epochs and samples (a file holds each, if only empty; a
    sweep's and a bundle's runs may lack their samples); else RecordError naming the first missing one."""
    if isinstance(document, RunRecord):
        _holds(document, "", _NEEDED)
    elif isinstance(document, (Comparison, Sweep, MachineBundle)):
        needed = _NEEDED if isinstance(document, Comparison) else _NEEDED[:2]
        for i, run in enumerate(document.runs):
            _holds(run, f"runs[{i}]", needed)
    return document


def _holds(run: RunRecord, path: str, needed: tuple[str, ...]) -> None:
    for key in needed:
        if key not in run.model_fields_set:
            raise fail(f"{path}.{key}" if path else key, "is missing")
    for i, member in enumerate(run.members):
        _holds(member, f"{path}.members[{i}]" if path else f"members[{i}]", needed)


def _check_schema(data: Any) -> None:
    if not isinstance(data, dict):
        raise RecordError(f"a run record must be a JSON object, got {type(data).__name__}; {EXPORT_HINT}")
    schema = schema_of(data)
    if schema is None:
        raise fail("schema", f"is missing (expected {' or '.join(SCHEMAS)}); is this a bench run record?")
    if schema not in (*SCHEMAS, SWEEP_SCHEMA):
        raise fail("schema", f"{show_value(schema)} is not supported; this version reads {' and '.join(SCHEMAS)}")
    for key in _NEEDS.get(schema, ()):
        if key not in data:
            raise fail(key, "is missing")


def _document_error(exc: ValidationError, data: dict[str, Any]) -> RecordError:
    cls = {RUN_SCHEMA: RunRecord, COMPARISON_SCHEMA: Comparison, SWEEP_SCHEMA: Sweep}[data["schema"]]
    return record_error(exc, cls, "", skip=1)  # the union's tag (the schema) is no place in the document


def load_bundle(data: Any) -> MachineBundle:
    """A machine bundle read from outside (decoded JSON), typed (see :func:`load` for the other records).

    Raises:
        RecordError: not a JSON object, not ``bench.bundle/1``, or the first problem found, naming its field.
    """
    _bundle_schema(data)
    return _complete(MachineBundle.model_validate(data))


def load_bundle_json(text: str | bytes | bytearray) -> MachineBundle:
    """A machine bundle as JSON text, read by pydantic's own parser; see :func:`load_bundle`."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        data = None
    if data is not None:
        _bundle_schema(data)
    return _complete(MachineBundle.model_validate_json(text))


def _bundle_schema(data: Any) -> None:
    if not isinstance(data, dict):
        raise RecordError(f"a machine bundle must be a JSON object, got {type(data).__name__}; make one with "
                          "`python -m bench suite --out FILE`")
    schema = schema_of(data)
    if schema != BUNDLE_SCHEMA:
        raise fail("schema", f"must be {BUNDLE_SCHEMA!r} for a machine bundle, got {show_value(schema)}")
