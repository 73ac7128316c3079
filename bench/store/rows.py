"""A stored run's rows read into a record, in one place: a ``runs`` row with its epoch rows (and its sample rows when
asked) becomes a ``records.RunRecord`` through the checked reader ``RunRecord.model_validate``, as an imported file does,
or an :class:`UnreadableRun` that names the column or field it cannot read and what that held. Nothing a row holds
(text that is not JSON, a list where an object belongs, an Infinity, a table from another version) raises out of
:func:`read_run`, so one odd row never takes a listing down: the store lists it apart (``Store.listing``) and its
raw rows (:class:`RawRun`) can still be exported or the run deleted.

An imported run's row says so in columns of its own (bench.store.imports): its record's ``info`` reads
``imported``, ``imported_at``, ``source_id`` and ``imported_from`` from them, whatever its info held, so no imported run
reads as a local measurement.

Two readings are kept from before the rows were checked: a status this version does not know reads as
``interrupted`` (``info.stored_status`` keeps it), and a time column outside its bounds (a row written before imports
were range-checked) reads as unknown; both runs stay readable.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Union

from bench.vocab import limits, records
from bench.vocab.errors import RecordError, RunUnreadable
from bench.vocab.readings import EXPORT_HINT, is_int, is_number, show_value

# the runs columns a record is read from (the owner's columns are the store's bookkeeping: Owners.owner_of)
RECORD_COLUMNS = ("id", "created_at", "started_at", "ended_at", "status", "config", "hardware", "info", "error",
                  "summary", "label")
JSON_COLUMNS = ("config", "hardware", "info", "error", "summary")  # held as JSON text
IMPORT_COLUMNS = ("imported_at", "import_source", "source_id")  # where an imported run came from
_BY_NAME = (*RECORD_COLUMNS[1:], *IMPORT_COLUMNS, "import_digest")  # the columns RunRow names (its id aside)
_NEEDED = ("status", "config")  # no run is read without them; another missing column reads as NULL
_TIMES = ("created_at", "started_at", "ended_at")
_ODD_SHAPES = (TypeError, ValueError, KeyError, AttributeError, RecursionError, OverflowError)
RAW_SCHEMA = "bench.raw-run/1"  # a run's rows as stored, for a person or a later version; never imported

RawValue = Union[str, int, float, None]


class _Unreadable(Exception):
    """What a row holds that no record is read from (the reason, as UnreadableRun gives it)."""


@dataclass(frozen=True)
class UnreadableRun:
    """A stored run this version cannot read: its id, why (the column or field and what it held), and its creation
    time and label where those columns could be read."""

    id: int
    reason: str
    created_at: float | None = None
    label: str | None = None

    @property
    def message(self) -> str:
        """The one line a listing shows of it."""
        return f"run #{self.id} cannot be read here: {self.reason}"

    def error(self) -> RunUnreadable:
        """What asking for the run itself raises: the line and what to do."""
        return RunUnreadable(f"{self.message}; export it raw with `python -m bench export {self.id} --raw` or "
                             f"delete it")


@dataclass(frozen=True)
class RawRun:
    """A run's rows as the store holds them, every value untouched (text that may not be JSON): its runs row (all of
    its columns, the owner's and unknown ones too), its epoch rows and its sample rows. A BLOB is written as its SQL
    literal ``x'..'``."""

    id: int
    columns: dict[str, RawValue]
    epochs: tuple[dict[str, RawValue], ...]
    samples: tuple[dict[str, RawValue], ...]

    def to_dict(self) -> dict[str, Any]:
        return {"schema": RAW_SCHEMA, "id": self.id, "columns": dict(self.columns),
                "epochs": [dict(e) for e in self.epochs], "samples": [dict(s) for s in self.samples]}


def to_column(key: str, value: Any) -> Any:
    """A run column's value as SQLite holds it: the JSON columns as JSON text (a typed block as its record form)."""
    if key not in JSON_COLUMNS or value is None:
        return value
    return json.dumps(value.to_dict() if hasattr(value, "to_dict") else value)


def text_of(raw: bytes) -> str | bytes:
    """A TEXT value as the store reads it: its text, or its bytes where they are not UTF-8 (a file written by another
    tool), so the row that holds it reads as one this version cannot read, and every other row still lists."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


@dataclass(frozen=True)
class RunRow:
    """A runs row read once, where it leaves SQLite: by name each column the store reads (None where the row has
    no such column: a store written by another version), and all of its columns untouched (``columns``: the
    owner's and unknown ones too, for a raw export and for telling a changed row). Values are as stored, unchecked:
    :func:`read_run` checks them."""

    id: int
    created_at: Any
    started_at: Any
    ended_at: Any
    status: Any
    config: Any
    hardware: Any
    info: Any
    error: Any
    summary: Any
    label: Any
    imported_at: Any  # an imported run's columns (bench.store.imports); None for a run measured here
    import_source: Any
    source_id: Any
    import_digest: Any
    columns: Mapping[str, Any]

    @classmethod
    def of(cls, columns: Mapping[str, Any]) -> RunRow:
        """The row whose ``columns`` (column -> value) a query gave."""
        return cls(id=int(columns["id"]), **{name: columns.get(name) for name in _BY_NAME}, columns=columns)

    def record_columns(self) -> dict[str, Any]:
        """The columns a record is read from (RECORD_COLUMNS), column -> value."""
        return {column: getattr(self, column) for column in RECORD_COLUMNS}


class RunListing(NamedTuple):
    """The stored runs: those read (``runs``) and those this version cannot read (``unreadable``), oldest first."""

    runs: list[records.RunRecord]
    unreadable: list[UnreadableRun]


def read_run(row: RunRow, epochs: Sequence[Any], samples: Sequence[Any] = ()) -> records.RunRecord | UnreadableRun:
    """The record a runs ``row`` holds with its ``epochs`` and ``samples`` (their rows' data texts, in order),
    checked as an import is; else an UnreadableRun naming what cannot be read. Never raises."""
    try:
        return records.RunRecord.model_validate(_record_fields(row, epochs, samples))
    except _Unreadable as exc:
        reason = str(exc)
    except RecordError as exc:  # the checked reader names the field and what it held
        reason = str(exc).removesuffix(f"; fix the file or {EXPORT_HINT}")
    except _ODD_SHAPES as exc:
        reason = f"{type(exc).__name__}: {show_value(str(exc), 200)}"
    created_at, label = row.created_at, row.label
    return UnreadableRun(id=row.id, reason=reason,
                         created_at=created_at if is_number(created_at) and _time_ok(created_at, "created_at") else None,
                         label=label if isinstance(label, str) else None)


class ListingReader:
    """:func:`read_run` over a listing's rows, keeping the last listing's reading of a row whose texts (its columns
    and its epochs') are all as they were: a checked reading costs about 0.2 ms a run, and every rerun of History,
    for every viewer, lists every run. Any change to a row reads it again."""

    def __init__(self) -> None:
        self._last: dict[int, tuple[Any, records.RunRecord | UnreadableRun]] = {}

    def read(self, rows: Sequence[RunRow],
             epochs: Mapping[int, Sequence[Any]]) -> list[records.RunRecord | UnreadableRun]:
        """Each of ``rows`` (in order) read with its epochs' data texts (``epochs``, by run id)."""
        last, kept = self._last, {}
        for row in rows:
            key = (tuple(row.columns.values()), tuple(epochs.get(row.id, ())))
            hit = last.get(row.id)
            kept[row.id] = hit if hit is not None and hit[0] == key else (key, read_run(row, key[1]))
        self._last = kept  # one assignment: a listing in another thread reads the old or the new whole
        return [read for _, read in kept.values()]


def raw_run(row: RunRow, epochs: Sequence[Mapping[str, Any]], samples: Sequence[Mapping[str, Any]]) -> RawRun:
    """A run's rows (its epochs' and samples' column -> value each) as :class:`RawRun`."""
    return RawRun(id=row.id, columns=_raw_row(row.columns), epochs=tuple(map(_raw_row, epochs)),
                  samples=tuple(map(_raw_row, samples)))


def _record_fields(row: RunRow, epochs: Sequence[Any], samples: Sequence[Any]) -> dict[str, Any]:
    """The fields ``RunRecord.model_validate`` reads, from the rows: the JSON columns and readings decoded, the readings
    lenient for (times out of bounds, a status not known) applied; a NULL column is a field not given."""
    missing = [column for column in _NEEDED if column not in row.columns]
    if missing:
        raise _Unreadable(f"the runs table has no {missing[0]} column (a store written by another version)")
    fields = row.record_columns()
    for column in JSON_COLUMNS:
        fields[column] = _json(fields[column], column)
    if row.imported_at is not None:
        fields["info"] = _imported_info(row, fields["info"])
    if fields["hardware"] is None:  # not known yet (a queued run)
        fields["hardware"] = {}
    for column in _TIMES:
        if is_number(fields[column]) and not _time_ok(fields[column], column):
            fields[column] = None
    fields["epochs"] = [_json(text, f"epochs[{i}]") for i, text in enumerate(epochs)]
    fields["samples"] = [_json(text, f"samples[{i}]") for i, text in enumerate(samples)]
    if not isinstance(fields["status"], str) or fields["status"] not in records.STATUSES:
        fields = _unknown_status(fields)
    return {key: value for key, value in fields.items() if value is not None}  # NULL: a field not given


def _imported_info(row: RunRow, info: Any) -> Any:
    """An imported run's info with the store's own word on where it came from (its import columns) over whatever
    its info held. An info that is not an object is left for the checked reader to name."""
    if info is not None and not isinstance(info, dict):
        return info
    source_id, where = row.source_id, row.import_source
    return {**(info or {}), "imported": True, "imported_at": row.imported_at,
            "source_id": source_id if is_int(source_id) else None,
            "imported_from": where if isinstance(where, str) else "another store"}


def _json(text: Any, path: str) -> Any:
    """A stored JSON text decoded (None stays None); _Unreadable naming ``path`` when it is not JSON."""
    if text is None:
        return None
    if not isinstance(text, (str, bytes)):
        raise _Unreadable(f"{path} holds {show_value(text)}, not JSON text")
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        raise _Unreadable(f"{path} is not JSON: {show_value(text)}") from None


def _time_ok(value: Any, column: str) -> bool:
    return limits.problem(value, column) is None


def _unknown_status(fields: dict[str, Any]) -> dict[str, Any]:
    """A row whose status this version does not know (written by a newer one sharing the store, or by hand): read as
    interrupted, as an imported active run is, since nothing here will finish it; ``info.stored_status`` keeps what
    the row says and the error says why, so that one such row neither takes a page down nor reads as something else.
    An info that is not an object is left for the checked reader to name."""
    stored = show_value(fields["status"]) if not isinstance(fields["status"], str) else fields["status"]
    info = fields["info"]
    if info is not None and not isinstance(info, dict):
        return fields | {"status": records.Status.INTERRUPTED.value}
    return fields | {
        "status": records.Status.INTERRUPTED.value,
        "info": {**(info or {}), "stored_status": stored},
        "error": {"error_type": "UnknownStatus",
                  "message": f"The store gives this run the status {stored!r}, which this version does not know.",
                  "hint": "It is shown as interrupted; open the store with the version that wrote it to see it as "
                          "it is."},
    }


def _raw_row(row: Mapping[str, Any]) -> dict[str, RawValue]:
    return {str(k): f"x'{v.hex()}'" if isinstance(v, bytes) else v for k, v in row.items()}
