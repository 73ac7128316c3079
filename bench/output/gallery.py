"""The machine gallery's inputs and its export: the bundles shipped in docs/results, those kept in the store and
those uploaded, each as a :class:`bench.analysis.machines.GalleryEntry`; and a self-contained HTML report of the gallery
(the ranking for one model and every workload's table), as the comparison export is."""

from __future__ import annotations

import html
import json
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.vocab import records
from bench.analysis import machines as M
from bench.vocab.errors import RecordError
from bench.output import charts
from bench.output import ranking as ranking_chart
from bench.output.report import MAX_RECORD_BYTES

SHIPPED_DIR = Path(__file__).resolve().parents[2] / "docs" / "results"
BUNDLE_HINT = "make one with `python -m bench suite --out FILE` on the machine to add"


def read_bundle(source: str | os.PathLike[str] | bytes, *, name: str = "the upload") -> records.MachineBundle:
    """A machine bundle from a path or raw bytes (an upload), checked by records.load_bundle.

    Raises:
        RecordError: unreadable, larger than 50 MiB, not UTF-8 JSON, or not a valid bundle (naming the field).
    """
    if isinstance(source, (bytes, bytearray)):
        raw = bytes(source)
    else:
        path = Path(source)
        name = str(path)
        try:
            if path.stat().st_size > MAX_RECORD_BYTES:
                raise RecordError(f"{path} is larger than the {MAX_RECORD_BYTES // 2**20} MiB a bundle may be")
            raw = path.read_bytes()
        except FileNotFoundError:
            raise RecordError(f"{path} does not exist; {BUNDLE_HINT}") from None
        except OSError as exc:
            raise RecordError(f"{path} could not be read ({exc.strerror or exc})") from None
    if len(raw) > MAX_RECORD_BYTES:
        raise RecordError(f"{name} is larger than the {MAX_RECORD_BYTES // 2**20} MiB a bundle may be")
    try:
        json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise RecordError(f"{name} is not JSON text ({exc}); {BUNDLE_HINT}") from None
    try:
        return records.load_bundle_json(raw.decode("utf-8-sig"))  # read by pydantic's own parser
    except RecordError as exc:
        raise RecordError(f"{name}: {exc}") from None


def is_bundle(data: Any) -> bool:
    """Whether a parsed document says it is a machine bundle (its schema), before it is checked."""
    return records.schema_of(data) == records.BUNDLE_SCHEMA


def shipped_machines(folder: Path = SHIPPED_DIR) -> tuple[list[M.GalleryEntry], list[str]]:
    """The bundles shipped in docs/results (bundle-*.json), and a message for each that could not be read."""
    found, problems = [], []
    for path in sorted(folder.glob("bundle-*.json")):
        try:
            found.append(M.GalleryEntry(f"shipped:{path.stem}", "shipped", read_bundle(path)))
        except RecordError as exc:
            problems.append(str(exc))
    return found, problems


def stored_machines(store: Any) -> tuple[list[M.GalleryEntry], list[str]]:
    """The bundles kept in the store (``bench import``, an upload, ``bench suite``), and what could not be read."""
    found, problems = [], []
    for bundle_id, doc in store.bundles.list():
        try:
            found.append(M.GalleryEntry(f"store:{bundle_id}", "store", records.load_bundle(doc)))
        except RecordError as exc:
            problems.append(f"stored bundle {bundle_id}: {exc}")
    return found, problems


def gallery(store: Any | None) -> tuple[list[M.GalleryEntry], list[str]]:
    """Every machine to show: the shipped bundles, then the stored ones (a stored copy of a shipped bundle once)."""
    machines, problems = shipped_machines()
    if store is not None:
        stored, more = stored_machines(store)
        shipped = {records.json_text(m.bundle.to_dict()) for m in machines}
        machines += [m for m in stored if records.json_text(m.bundle.to_dict()) not in shipped]
        problems += more
    return machines, problems


# -- the HTML report ----------------------------------------------------------------------------------------------------
def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _num(value: float | None, fmt: str, marks: str = "") -> str:
    """A figure's cell: the number with its notes' marks, or "—" (its reason is said once under the table)."""
    if value is None:
        return f"<span class='na'>{ranking_chart.MISSING}</span>"
    return _e(format(value, fmt)) + (f" <sup>{_e(marks)}</sup>" if marks else "")


def _row_cells(row: M.Row, notes: ranking_chart.TableNotes) -> str:
    return (f"<td>{_e(row.machine_name)}</td><td>{_e(row.target)}</td><td class='how-{_e(row.how.replace(' ', '-'))}'>"
            f"{_e(row.how_text)}<br><small>{_e(row.note)}</small></td>"
            f"<td>{_num(row.seconds_per_1k, '.4g')}</td><td>{_num(row.samples_per_s, ',.0f')}</td>"
            f"<td>{_num(row.energy_j_per_1k, '.3g', notes.energy_mark(row))}</td>"
            f"<td>{_num(row.cost_per_1k, '.3g')}</td><td>{_num(row.speedup, '.2f')}</td>"
            f"<td>{_e(notes.caveats(row))}</td>")


def _table(rows: Sequence[M.Row]) -> str:
    """A table of rows, then once each: why figures are missing (and where) and the notes its marks point at."""
    notes = ranking_chart.table_notes(rows)
    lines = [f"<b>{_e(m.figure)}</b>{_e(m.text.removeprefix(m.figure))}" for m in notes.missing]
    lines += [f"{_e(mark)} {_e(text)}" for mark, text in notes.notes]
    said = f"<p class='note'>{'<br>'.join(lines)}</p>" if lines else ""
    return f"<table>{_HEAD}" + "".join(f"<tr>{_row_cells(r, notes)}</tr>" for r in rows) + "</table>" + said


_HEAD = ("<tr><th>machine</th><th>target</th><th>how</th><th>s per 1,000 samples</th><th>samples/s</th>"
         "<th>energy J per 1,000 samples</th><th>cost per 1,000 samples</th><th>speed-up vs baseline</th>"
         "<th>unequal to the baseline</th></tr>")
_CSS = ("<style>table{border-collapse:collapse;margin:1em 0;font-size:14px}td,th{border:1px solid #d0d5dd;"
        "padding:4px 8px;vertical-align:top}th{background:#f2f4f7}.na{color:#6b7280}.how-interpolated{color:#b45309}"
        ".note{color:#475467;font-size:13px}</style>")


def to_html(machines: Sequence[M.GalleryEntry], ranking: M.Ranking, workload_tables: Mapping[str, Sequence[M.Row]], *,
            baseline: tuple[str, str] | None) -> str:
    """A self-contained HTML page of the gallery: the machines and their fingerprints, the ranking for the chosen
    model by time and by cost (each figure measured, read between sizes, or not measured and why), and every
    workload's table. Every string from a bundle is escaped."""
    names = {m.key: m.name for m in machines}
    base_text = f"{names.get(baseline[0], baseline[0])} · {baseline[1]}" if baseline else "none picked"
    point = ranking.model if ranking.size is None else f"{ranking.model} {ranking.size}"
    parts = [f"<p>Baseline: <b>{_e(base_text)}</b>. Model: <b>{_e(point)}</b>, batch {ranking.batch_size}.</p>",
             ("<h2>Machines</h2><table><tr><th>machine</th><th>CPU</th><th>GPUs</th><th>backend</th><th>suite</th>"
              "<th>notes</th></tr>")]
    for m in machines:
        fp = m.bundle.machine
        cpu = fp.cpu
        gpus = ", ".join(f"{g.name} ({(g.mem_total_mib or 0) / 1024:.0f} GiB, driver {g.driver})"
                         for g in fp.gpus) or "none"
        parts.append(f"<tr><td>{_e(m.name)}</td><td>{_e(cpu.model)}, {_e(cpu.logical_cores)} cores, "
                     f"{(cpu.ram_total_mib or 0) / 1024:.0f} GiB RAM</td><td>{_e(gpus)}</td>"
                     f"<td>{_e(fp.backend)} {_e(fp.backend_version)}, Keras "
                     f"{_e(fp.framework_version)}, Python {_e(fp.python)}</td><td>{_e(m.suite)}</td>"
                     f"<td class='note'>{_e(m.bundle.notes)}</td></tr>")
    parts.append("</table>")
    parts.append(f"<h2>For {_e(point)} at batch {ranking.batch_size}</h2>")
    if ranking.by_time:  # plotly.js inlined once, as the comparison export does: the page fetches nothing
        figure = ranking_chart.ranking_figure(ranking, baseline=baseline)
        parts.append("<div class='fig'>" + figure.to_html(full_html=False, include_plotlyjs=True,
                                                          config={"displaylogo": False}) + "</div>")
    parts.append("<h3>By time</h3>" + _table(ranking.by_time))
    parts.append("<h3>By cost</h3>" + (_table(ranking.by_cost) if ranking.by_cost
                                       else "<p class='note'>No machine has an hourly price.</p>"))
    if ranking.unranked:
        parts.append("<h3>No figure</h3><ul>")
        parts += [f"<li>{_e(r.machine_name)} · {_e(r.target)}: {_e(r.note)}</li>" for r in ranking.unranked]
        parts.append("</ul>")
    parts.append("<h2>Every workload</h2>")
    for workload, rows in workload_tables.items():
        parts.append(f"<h3>{_e(workload)}</h3>" + _table(rows))
    parts.append("<p class='note'>Times are steady-state (the first epoch, with tracing, left out), per 1,000 training "
                 "samples. A figure read between sizes is interpolated between the two nearest measured sizes of "
                 "the same family, batch size and target; nothing is extrapolated past the measured range. "
                 f"Generated {_e(time.strftime('%Y-%m-%d %H:%M:%S'))} by bench.</p>" + _CSS)
    return charts.to_html([], title="Which machine for this model?", intro_html="".join(parts))
