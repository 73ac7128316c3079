"""Run records in and out: JSON, CSV and self-contained HTML exports, and validated JSON imports into the store.

A run is a ``records.RunRecord`` (``RunSnapshot.record()``, ``Store.get_run``), written as JSON of schema
``bench.run/1``; a comparison (``records.Comparison``, ``bench.comparison/1``) holds several runs plus the speed-ups
of each against the first. Exports never touch the
framework; imports are checked field by field (:func:`validate_record`) and every problem raises
:class:`RecordError` whose message names the field, what it holds and what to do, never a KeyError traceback.
An imported GPU run must import on a CPU-only machine, so an imported config is checked for shape, not validated
against this machine's hardware.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import html
import io
import json
import math
import os
import time
import zipfile
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.vocab import limits, records, safe_text
from bench.output import charts, display
from bench.analysis import compare, metrics, run_summary
from bench.vocab.readings import Epoch, Sample, is_int, is_number
from bench.vocab.records import ACTIVE as ACTIVE_STATUSES
from bench.vocab.records import EXPORT_HINT, RecordError, RunRecord
from bench.vocab.record_types import RecordedHardware
from bench.vocab.run_info import RunError
from bench.store.imports import ImportedRun, Source

Importable = records.RunRecord | records.Comparison  # what a file or an export holds: one run, or a comparison

MAX_RECORD_BYTES = 50 * 2**20
IMPORTED_PREFIX = "imported: "

EPOCH_COLUMNS = ("epoch", "epoch_seconds", "includes_tracing", "samples_per_s", "loss", "accuracy", "val_loss",
                 "val_accuracy", "t_start_s", "t_end_s")
SAMPLE_COLUMNS = ("t_s", "cpu_percent", "process_cpu_percent", "process_rss_mib", "ram_used_mib")
GPU_FIELDS = ("name", "util_percent", "mem_util_percent", "mem_used_mib", "mem_total_mib", "power_w", "temp_c",
              "sm_clock_mhz")  # bench.hardware.monitor.gpu.GpuReading, less its index


# -- small helpers ----------------------------------------------------------------------------------------------------
def _e(value: Any) -> str:
    """HTML-escape anything shown in a report (every user-provided string goes through here)."""
    return html.escape("" if value is None else str(value), quote=True)


def hardware_label(hw: RecordedHardware | None) -> str:
    """A short machine description from a record's ``hardware``: its label, else its GPUs, else its CPU."""
    if hw is None:
        return "unknown hardware"
    if hw.label:
        return hw.label
    if hw.gpus and not hw.gpu_reason:
        counts = Counter(gpu.name or "GPU" for gpu in hw.gpus)
        return " + ".join(f"{name} x{count}" for name, count in counts.items())
    if hw.cpu is None:
        return "unknown hardware"
    cores = hw.cpu.logical_cores
    core_text = f" ({cores} core{'s' if cores != 1 else ''})" if cores else ""
    return f"{hw.cpu.model or 'unknown CPU'}{core_text}, no GPU"


def run_label(record: RunRecord) -> str:
    """The run's stored label, else its config's label, else ``run ID``."""
    if record.label:
        return record.label
    return record.config.label()


def _display_names(runs: Sequence[RunRecord]) -> list[str]:
    """Short names for runs side by side: the target (cpu, cpu/1, gpu:0), with ``#id`` where targets repeat."""
    targets = [compare.target(r) for r in runs]
    return [t if targets.count(t) == 1 else f"{t} #{r.id if r.id is not None else i + 1}"
            for i, (t, r) in enumerate(zip(targets, runs))]


# -- building records -------------------------------------------------------------------------------------------------
comparison_record = compare.comparison_record


# -- exports ----------------------------------------------------------------------------------------------------------
def to_json(record: Importable) -> str:
    """A run's or comparison's record as pretty, strict JSON text (a NaN loss is written as null; anything exotic
    becomes a string)."""
    return records.json_text(run_summary.with_summaries(record).to_dict())


def _safe_cell(value: Any) -> Any:
    """A cell no spreadsheet runs as a formula (bench.vocab.safe_text.spreadsheet_cell: the one rule)."""
    return safe_text.spreadsheet_cell(value)


@dataclasses.dataclass(frozen=True)
class SpreadsheetTable:
    """A table ready for a spreadsheet: no text cell or column name is a formula, and its CSV (RFC 4180: lines end
    in CRLF, so a cell holding a quote, comma, CR or LF is quoted) splits no cell into rows. Only its ``to_csv``
    writes it."""

    frame: Any  # a pandas DataFrame whose cells went through _safe_cell

    def to_csv(self, *, index: bool = False) -> str:
        return str(self.frame.to_csv(index=index, lineterminator="\r\n", quoting=csv.QUOTE_MINIMAL))


def spreadsheet_safe(frame: Any) -> SpreadsheetTable:
    """``frame`` as a :class:`SpreadsheetTable`: its text cells and column names no spreadsheet runs as formulas, its
    CSV quoted where a cell holds a line break (every CSV the project writes goes through here: records may come
    from anywhere)."""
    from pandas.api.types import is_numeric_dtype

    safe = frame.copy()
    for column in safe.columns:
        if not is_numeric_dtype(safe[column]):  # text, mixed, or pandas' own string dtype
            safe[column] = safe[column].map(_safe_cell)
    safe.columns = [_safe_cell(str(c)) for c in safe.columns]
    return SpreadsheetTable(safe)


def write_file(path: str | os.PathLike[str], content: str | bytes) -> Path:
    """Write ``content`` (text as UTF-8, whatever the locale) to ``path`` whole or not at all: into a temporary file
    beside it, then renamed over it, so a failure leaves no empty or half-written file."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    data = content.encode("utf-8") if isinstance(content, str) else content
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return out


def check_writable(path: str | os.PathLike[str]) -> None:
    """Raise OSError (saying why) unless a file can be written at ``path``: checked before a run, not after it."""
    out = Path(path)
    if out.is_dir():
        raise IsADirectoryError(f"{out} is a folder; give a file name, e.g. {out / 'result.json'}")
    folder = out.parent
    folder.mkdir(parents=True, exist_ok=True)
    probe = folder / f".{out.name}.{os.getpid()}.check"
    probe.write_bytes(b"")
    probe.unlink()


def _epochs_frame(epochs: Sequence[Epoch]) -> Any:
    import pandas as pd

    rows = [_flat(e.to_dict()) for e in epochs]
    extras: list[str] = []
    for row in rows:
        extras.extend(k for k in row if k not in EPOCH_COLUMNS and k not in extras)
    return pd.DataFrame(rows, columns=[*EPOCH_COLUMNS, *extras])


def _flat(row: Mapping[str, Any]) -> dict[str, Any]:
    """One CSV row: a mapping becomes one column per key (``energy_j`` -> ``energy_j_cpu``, ``energy_j_gpu:0``), a list
    one text cell joined by "; " (an empty list stays empty text, None stays empty)."""
    out: dict[str, Any] = {}
    for key, value in row.items():
        if isinstance(value, Mapping):
            out.update({f"{key}_{sub}": inner for sub, inner in value.items()})
        elif isinstance(value, (list, tuple)):
            out[key] = "; ".join(str(v) for v in value)
        else:
            out[key] = value
    return out


def _samples_frame(samples: Sequence[Sample]) -> Any:
    """One row per sample: its readings, then one column per core and per GPU reading (``gpuI_field``); the keys a
    later version added (a sample's or a reading's ``extra``) as columns of their own after the known ones."""
    import pandas as pd

    nested = {"cpu_per_core", "gpus"}
    written = [(s.to_dict(), [(g.index, g.to_dict()) for g in s.gpus or ()]) for s in samples]  # each written once
    extras: list[str] = []
    for data, _ in written:
        extras.extend(k for k in data if k not in SAMPLE_COLUMNS and k not in nested and k not in extras)
    cores = max((len(s.cpu_per_core or ()) for s in samples), default=0)
    gpu_indices = sorted({index for _, gpus in written for index, _ in gpus})
    gpu_fields = list(GPU_FIELDS)
    for _, gpus in written:
        for _, reading in gpus:
            gpu_fields.extend(k for k in reading if k != "index" and k not in gpu_fields)
    columns = [*SAMPLE_COLUMNS, *extras, *(f"cpu_core_{c}" for c in range(cores)),
               *(f"gpu{i}_{f}" for i in gpu_indices for f in gpu_fields)]
    rows = []
    for s, (data, gpus) in zip(samples, written):
        row = {c: data.get(c) for c in (*SAMPLE_COLUMNS, *extras)}  # an empty cell where a sample holds none
        row.update({f"cpu_core_{c}": value for c, value in enumerate(s.cpu_per_core or ())})
        for index, reading in gpus:
            row.update({f"gpu{index}_{f}": reading.get(f) for f in gpu_fields})
        rows.append(row)
    return pd.DataFrame(rows, columns=columns)



def _run_row(record: RunRecord) -> dict[str, Any]:
    """The run's one row of ``run.csv``: what it is and where it was measured (an imported run says so)."""
    info = record.info
    return {"id": record.id, "label": run_label(record), "status": str(record.status),
            "hardware": hardware_label(record.hardware), "measured": "imported" if info.imported else "here",
            "imported_from": display.imported(info) or "", "source_id": info.source_id,
            "imported_at": info.imported_at}


def to_csv(record: Importable) -> dict[str, str]:
    """CSV text per table: ``run.csv`` (the run in one row: where it was measured, an import's source),
    ``epochs.csv`` and ``samples.csv`` (samples flattened: ``cpu_core_N``, ``gpuI_field``).

    A comparison gives ``comparison.csv`` plus ``N-run-ID-epochs.csv`` / ``N-run-ID-samples.csv`` per run.
    Missing readings are empty cells.
    """
    import pandas as pd

    if isinstance(record, records.Comparison):
        files: dict[str, str] = {}
        pairs = record.comparison.pairs if record.comparison is not None else ()
        files["comparison.csv"] = spreadsheet_safe(pd.DataFrame([p.to_dict() for p in pairs])).to_csv(index=False)
        for i, run in enumerate(record.runs):
            for name, text in to_csv(run).items():
                files[f"{i + 1}-run-{run.id}-{name}"] = text
        return files
    return {
        "run.csv": spreadsheet_safe(pd.DataFrame([_run_row(record)])).to_csv(index=False),
        "epochs.csv": spreadsheet_safe(_epochs_frame(record.epochs)).to_csv(index=False),
        "samples.csv": spreadsheet_safe(_samples_frame(record.samples)).to_csv(index=False),
    }


def to_csv_zip(record: Importable) -> bytes:
    """A zip holding the CSVs of :func:`to_csv` and the full JSON record (``record.json``)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, text in to_csv(record).items():
            archive.writestr(name, text)
        archive.writestr("record.json", to_json(record))
    return buffer.getvalue()


def _fmt_number(value: Any, fmt: str, unit: str = "") -> str:
    if not is_number(value) or not math.isfinite(value):
        return "—"
    return f"{format(value, fmt)}{unit}"


def _run_headline(record: RunRecord) -> str:
    epochs = record.epochs
    summary = run_summary.summarize(epochs, record.samples)
    steady, first = summary.steady_epoch_seconds, summary.first_epoch_seconds
    where = record.info.placement
    where_text = f" on {where}" if where else ""
    if steady is None:
        return (f"No steady-state epoch yet{where_text}: it needs at least two epochs (epoch 1 includes tracing); "
                f"first epoch {metrics.format_seconds(first)}.")
    count = len(metrics.steady_epoch_times(epochs))
    return (f"Steady epoch {metrics.format_seconds(steady)}{where_text} (median of {count} epoch"
            f"{'s' if count != 1 else ''} after the first); first epoch, with tracing: {metrics.format_seconds(first)}.")


def _run_section(record: RunRecord, name: str) -> str:
    summary = run_summary.summarize(record.epochs, record.samples)
    info, error = record.info, record.error
    facts: list[tuple[str, str]] = [
        ("run", f"#{record.id} · {run_label(record)}"),
        ("status", str(record.status)),
        ("hardware", hardware_label(record.hardware)),
        ("trained on", info.placement or "—"),
        ("framework", info.framework or "—"),
        ("model", info.model_description or "—"),
        ("dataset", info.dataset_description or "—"),
        ("parameters", _fmt_number(info.params, ",d") if info.params is not None else "—"),
        ("steady epoch (median, epochs 2..N)", metrics.format_seconds(summary.steady_epoch_seconds)),
        ("first epoch (includes tracing)", metrics.format_seconds(summary.first_epoch_seconds)),
        ("all epochs", metrics.format_seconds(summary.total_seconds)),
        ("steady samples/s", _fmt_number(summary.steady_samples_per_s, ",.0f")),
        ("mean CPU (whole machine)", _fmt_number(summary.mean_cpu_percent, ".0f", " %")),
        ("mean GPU utilization", _fmt_number(summary.mean_gpu_util_percent, ".0f", " %")),
        ("peak worker memory", _fmt_number(summary.peak_process_rss_mib, ",.0f", " MiB")),
    ]
    origin = display.imported(info)
    facts.insert(1, ("measured", f"{origin}; on {info.source_hardware or 'another machine'}, not here" if origin
                     else "here, by this store's own run"))
    if error:
        facts.append(("error", f"{error.headline} — {error.hint or ''}"))
    rows = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in facts)
    config_rows = "".join(f"<tr><th>{_e(k)}</th><td>{_e('—' if v is None else v)}</td></tr>"
                          for k, v in record.config.to_dict().items())
    mark = " (imported)" if origin else ""
    return (f"<section class='run'><h2>{_e(name)}{mark}</h2><p>{_e(_run_headline(record))}</p>"
            f"<table>{rows}</table><h3>Configuration</h3><table class='config'>{config_rows}</table></section>")


_CSS = ("<style>table{border-collapse:collapse;margin:.5em 0}th,td{border-bottom:1px solid #dde1e8;padding:.25em .8em;"
        "text-align:left;vertical-align:top}th{font-weight:600;color:#3a4254}.headline{font-size:1.35em;"
        "font-weight:600}.note{color:#5c6370;font-size:.9em}section.run{margin:1.5em 0}</style>")


def to_html(record: Importable) -> str:
    """A self-contained HTML report (plotly.js inlined once; opens offline) for a run record or a comparison.

    Holds the headline (for a comparison: "B trains X.Xx faster than A (median steady epoch; spread ...; total
    time ratio ...)"), the first (tracing) epoch reported apart, hardware and configuration per run, and the charts
    of :mod:`bench.output.charts`. Every string from the record is HTML-escaped.
    """
    runs = runs_of(record)
    names = _display_names(runs)
    if isinstance(record, records.Comparison):
        pairs = list(record.comparison.pairs if record.comparison is not None else ()) or compare.pairs(runs)
        headlines = []
        for i, pair in enumerate(pairs, start=1):
            named = pair.model_copy(update={"baseline_target": names[0],
                                            "target": names[i] if i < len(names) else pair.target})
            headlines.append(compare.headline(named))
            caution = compare.caution(pair)
            if caution:
                headlines.append("Caution: " + caution)
        title = "Training speed: " + " vs ".join(names)
    else:
        headlines = [_run_headline(record)]
        title = f"Training run #{record.id}: {run_label(record)}"
    firsts = "; ".join(
        f"{name} {metrics.format_seconds(run_summary.summarize(r.epochs, []).first_epoch_seconds)}"
        for name, r in zip(names, runs))
    intro = "".join(f"<p class='headline'>{_e(h)}</p>" for h in headlines)
    intro += (f"<p>First epoch, which includes graph tracing and is left out of every steady-state figure: "
              f"{_e(firsts)}.</p>")
    intro += ("<p class='note'>Speed-up = median steady-state epoch time of one run / of the other; the spread compares "
              "the fastest and slowest steady epochs. NVML's \"GPU utilization\" is the share of time any kernel ran, "
              "not how much of the chip worked; other GPUs' sources say what theirs means (docs/GPU.md).</p>")
    intro += "".join(_run_section(r, n) for r, n in zip(runs, names))
    intro += f"<p class='note'>Generated {_e(time.strftime('%Y-%m-%d %H:%M:%S'))} by bench.</p>" + _CSS

    series = [charts.Series.of_record(r, n) for r, n in zip(runs, names)]
    figures = [charts.epoch_time_figure(series)]
    if any(s.samples for s in series):
        figures.append(charts.utilization_figure(series))
    for s in series:
        if s.epochs:
            suffix = f" — {s.label}" if len(series) > 1 else ""
            figures.append(charts.loss_accuracy_figure(s.epochs, title=f"Loss and accuracy{suffix}"))
    return charts.to_html(figures, title=_e(title), intro_html=intro)


# -- validation and import --------------------------------------------------------------------------------------------


def validate_record(data: Any) -> Importable:
    """An imported ``bench.run/1`` or ``bench.comparison/1`` document, checked field by field (``records.load``) and
    typed: what is written to the store and shown is this record, not the document it was read from.

    Raises:
        RecordError: the first problem found, naming the field path, e.g.
            ``epochs[2].epoch_seconds must be a positive number, got 'abc'``.
    """
    if isinstance(data, (records.RunRecord, records.Comparison)):
        return data
    if records.schema_of(data) == records.SWEEP_SCHEMA:
        raise RecordError(f"schema {records.SWEEP_SCHEMA!r} is not supported for import: a sweep is shown on the "
                          f"Sweep page; import a run or comparison ({EXPORT_HINT})")
    typed = records.load(data)
    if not isinstance(typed, (records.RunRecord, records.Comparison)):  # load reads sweeps too; refused above
        raise RecordError(f"a sweep is shown on the Sweep page; import a run or comparison ({EXPORT_HINT})")
    return typed


def runs_of(record: Importable) -> list[records.RunRecord]:
    """The runs a record holds: a comparison's runs, or a run and the members of its multi-worker run (each stored
    as a run of its own, which the store reads back as one run by their shared cluster id)."""
    if isinstance(record, records.Comparison):
        return list(record.runs)
    return [record, *record.members]


def load_record_file(path_or_bytes: str | os.PathLike[str] | bytes | bytearray | Any,
                     *, max_bytes: int = MAX_RECORD_BYTES) -> Importable:
    """Read a record from a path, raw bytes or a binary file object (e.g. an upload), then validate and type it.

    Raises:
        RecordError: unreadable, larger than ``max_bytes`` (50 MiB), not UTF-8, not valid JSON, or not a valid record.
    """
    cap_text = f"{max_bytes / 2**20:g} MiB"
    too_big = ("is {size}, larger than the {cap} an import accepts; export fewer samples (a longer sampling interval) "
               "or import the runs one at a time")
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        raw = bytes(path_or_bytes)
        if len(raw) > max_bytes:
            raise RecordError("the upload " + too_big.format(size=f"{len(raw) / 2**20:.1f} MiB", cap=cap_text))
    elif isinstance(path_or_bytes, (str, os.PathLike)):
        path = Path(path_or_bytes)
        try:
            size = path.stat().st_size
            if size > max_bytes:
                raise RecordError(f"{path} " + too_big.format(size=f"{size / 2**20:.1f} MiB", cap=cap_text))
            raw = path.read_bytes()
        except FileNotFoundError:
            raise RecordError(f"{path} does not exist; give the path of a JSON record ({EXPORT_HINT})") from None
        except IsADirectoryError:
            raise RecordError(f"{path} is a folder; give the path of a JSON record file") from None
        except OSError as exc:
            raise RecordError(f"{path} could not be read ({exc.strerror or exc}); check its permissions") from None
    elif hasattr(path_or_bytes, "read"):
        raw = path_or_bytes.read(max_bytes + 1)
        if isinstance(raw, str):
            raw = raw.encode("utf-8")
        if len(raw) > max_bytes:
            raise RecordError("the upload " + too_big.format(size=f"more than {cap_text}", cap=cap_text))
    else:
        raise RecordError(f"cannot read a record from {type(path_or_bytes).__name__}; give a path, bytes or a file")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise RecordError(f"not UTF-8 text (bad byte at offset {exc.start}): is this a JSON run record? "
                          f"{EXPORT_HINT}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RecordError(f"not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}; {EXPORT_HINT}") from None
    except RecursionError:
        raise RecordError(f"not a usable JSON record (nested too deeply); {EXPORT_HINT}") from None
    if records.schema_of(data) in records.SCHEMAS:  # read again by pydantic's own parser
        return validate_record(records.load_json(text))
    return validate_record(data)


@dataclasses.dataclass(frozen=True)
class Imported:
    """What an import did: the ids of the runs it stored (``new``), or of the runs the same record was imported as
    before (not ``new``: nothing was written)."""

    ids: list[int]
    new: bool

    def said(self) -> str:
        """The line the CLI and the History page show."""
        ids = ", ".join(f"#{i:d}" for i in self.ids)
        return f"imported {len(self.ids)} run(s) as {ids}" if self.new else f"already imported as {ids}: nothing changed"


def record_digest(record: Importable) -> str:
    """The content of a checked record as a digest: the same record, from the same file or another copy, gives the
    same digest (key order and layout aside)."""
    text = json.dumps(record.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def _source_text(source: str) -> str:
    """Where an import came from, as the store keeps it: valid UTF-8 (a file name's undecodable bytes escaped), one
    line without controls or bidi marks (each shown as "?"), at most 300 characters."""
    text = " ".join(source.encode("utf-8", "backslashreplace").decode("utf-8").split())
    return "".join(ch if ch.isprintable() else "?" for ch in text)[:300] or "a file"


def _imported_run(run: records.RunRecord, source: str, now: float) -> ImportedRun:
    """One run of an imported record as the store keeps it: a run of its own, marked as imported. Status is kept,
    except that a run still active when exported (queued/starting/running) is stored as ``interrupted``
    (``info.imported_status`` keeps the original), since nothing here will finish it. ``info`` gains ``imported``,
    ``source_hardware``, ``source_id``, ``imported_at`` and ``imported_from``; the label is prefixed ``imported: ``;
    the summary is recomputed from the epochs and samples."""
    label = run_label(run)
    if not label.startswith(IMPORTED_PREFIX):
        label = IMPORTED_PREFIX + label
    source_id = run.id if is_int(run.id) and limits.problem(run.id, "source_id") is None else None
    info = run.info.updated(imported=True, source_hardware=hardware_label(run.hardware), source_id=source_id,
                            imported_at=now, imported_from=source)
    status, error = str(run.status), run.error
    if status in ACTIVE_STATUSES:
        info = info.updated(imported_status=status)
        status = records.Status.INTERRUPTED.value
        error = error or RunError(error_type="Interrupted", message="The run was still active when it was exported.",
                                  hint="Its finished epochs are kept; start it again for a complete run.")
    columns = {"created_at": run.created_at if is_number(run.created_at) else now, "started_at": run.started_at,
               "ended_at": run.ended_at, "status": status, "config": run.config.to_dict(), "hardware": run.hardware,
               "info": info, "error": error, "label": label,
               "summary": run_summary.summarize(run.epochs, run.samples, info=info, config=run.config)}
    return ImportedRun(columns=columns, epochs=[e.to_dict() for e in run.epochs],
                       samples=[s.to_dict() for s in run.samples], source_id=source_id)


def import_record(store: Any, record: Importable | Mapping[str, Any], *, source: str = "a file") -> Imported:
    """Store the run(s) of a record or comparison as new runs of their own, all or none (``store.imports``): an import
    never writes into a run it did not make, a run of this machine's or a live one; the runs keep where they came
    from (``source``, in words: a file's name, an upload, an MLflow run) and their id there, and read as imported
    everywhere. The same record imported again stores nothing and says which runs it already is.

    Raises:
        RecordError: the record is not valid (see :func:`validate_record`).
        StoreError: the store could not be written (nothing of the record was).
    """
    typed = validate_record(record)
    where, now = _source_text(source), time.time()
    runs = [_imported_run(run, where, now) for run in runs_of(typed)]
    ids, new = store.imports.add(Source(where=where, digest=record_digest(typed), at=now), runs)
    return Imported(ids=ids, new=new)


def import_into_store(store: Any, record: Importable | Mapping[str, Any], *, source: str = "a file") -> list[int]:
    """The ids :func:`import_record` gives: the new runs, or those the same record was imported as before."""
    return import_record(store, record, source=source).ids
