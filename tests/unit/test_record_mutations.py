"""Property-based tests that look for the next variant of "a record from outside takes something down": a valid
record of each kind (run, comparison, sweep, machine bundle, each shipped in docs/results) with ONE value changed at
any place (another JSON type, a huge or non-finite number, text with terminal control sequences or markdown/HTML,
empty or very long text, a key deleted or added; tests/strategies.py), and a stored run with one column of its row
changed in SQLite.

The property: the change is either refused with a RecordError naming its field (or a field above it), and
``bench import`` exits 2 with that message; or the record is read, and then every command downstream works with the
text shown as text: ``bench import`` exits 0, ``bench runs``, ``bench export ID`` as json/csv/html exit 0 (no raw ESC,
BEL or CR on the terminal, no spreadsheet formula in a CSV cell, no ``<script>`` from the record in the HTML); a
bundle is imported, listed by ``bench machines`` and drawn in the gallery's HTML report. No other exception escapes:
a TypeError behind ``error: TypeError: ...`` (exit 1) is a defect, shown here with its traceback.

Each failure prints the seed, the path and the change (hypothesis ``note``) and ``@reproduce_failure``. The budget is
``BENCH_FUZZ_EXAMPLES`` examples per kind (default below); ``BENCH_FUZZ_EXAMPLES=300`` runs longer.
"""

from __future__ import annotations

import contextlib
import copy
import csv
import io
import json
import os
import re
import sqlite3
import tempfile
import traceback
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from bench.cli import main as cli
from bench.vocab import records, safe_text
from bench.vocab.errors import RecordError
from tests import strategies as S

EXAMPLES = int(os.environ.get("BENCH_FUZZ_EXAMPLES", "40"))
MUTATE = settings(max_examples=EXAMPLES, deadline=None, print_blob=True,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                         HealthCheck.data_too_large, HealthCheck.filter_too_much])

pytestmark = pytest.mark.slow  # seconds per kind: each example imports, lists and exports through the CLI
# the suite's 300 s per test holds the default budget; a bigger one (BENCH_FUZZ_EXAMPLES=300) gets more, so that a
# busy machine's timeout is not read as a finding
BUDGET_TIMEOUT = pytest.mark.timeout(max(300, 6 * EXAMPLES))


# -- the command line, in this process ----------------------------------------------------------------------------------
@dataclass
class Answer:
    argv: list[str]
    code: Any
    out: str
    err: str
    tracebacks: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return self.out + self.err


EXPECTED = ("UsageError", "ConfigError", "StoreError")  # the CLI's own refusals (exit 2, said in words)


def bench(*argv: str) -> Answer:
    """``python -m bench ARGV`` as bench.cli.main.main runs it, with what it printed and the traceback of any exception a
    command let out (the CLI prints ``error: TypeError: ...`` for those and exits 1; the traceback says where)."""
    caught: list[str] = []

    def traced(command: Any) -> Any:
        def run(args: Any) -> Any:
            try:
                return command(args)
            except Exception as exc:
                if not {c.__name__ for c in type(exc).__mro__} & set(EXPECTED):  # RunUnreadable is a StoreError
                    caught.append(traceback.format_exc())
                raise
        return run

    out, err = io.StringIO(), io.StringIO()
    with mock.patch.dict(cli.COMMANDS, {k: traced(v) for k, v in cli.COMMANDS.items()}), \
            contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(list(argv))
        except SystemExit as exc:
            code = exc.code
        except Exception:  # noqa: BLE001 - past main's own handler: a defect, kept with its traceback
            code = "raised"
            caught.append(traceback.format_exc())
    return Answer(list(argv), code, out.getvalue(), err.getvalue(), caught)


@contextlib.contextmanager
def fresh_store() -> Iterator[Path]:
    """A folder of its own with BENCH_STORE pointing into it, for one example (restored after)."""
    with tempfile.TemporaryDirectory(prefix="mut-") as folder:
        work = Path(folder)
        before = os.environ.get("BENCH_STORE")
        os.environ["BENCH_STORE"] = str(work / "store" / "runs.sqlite3")
        try:
            yield work
        finally:
            if before is None:
                os.environ.pop("BENCH_STORE", None)
            else:
                os.environ["BENCH_STORE"] = before


# -- what counts as a problem ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Problem:
    """One broken promise: ``step`` (the command or call), ``what`` went wrong, and ``detail`` (a traceback's last
    lines, or the text that broke the rule). ``signature`` groups problems with one root cause."""

    step: str
    what: str
    detail: str = ""

    @property
    def signature(self) -> str:
        given = re.match(r"\(project frame: (.*)\)\n", self.detail)
        frame = given.group(1) if given else last_frame(self.detail)
        return f"{self.what} @ {frame}" if frame else f"{self.what} ({self.step})"

    def __str__(self) -> str:
        return f"[{self.step}] {self.what}\n{self.detail}".rstrip()


def _project_frames(tb: str) -> list[tuple[str, str]]:
    frames = re.findall(r'File "([^"]+)", line (\d+)', tb)
    root = str(S.ROOT) + "/"
    return [(f, n) for f, n in frames if f.startswith(root) and "/tests/" not in f and "/.venv/" not in f]


def last_frame(tb: str) -> str:
    """``file:line`` of a traceback's innermost frame in this project's code, and the exception's line."""
    ours = _project_frames(tb) or re.findall(r'File "([^"]+)", line (\d+)', tb)
    if not ours:
        return ""
    path, line = ours[-1]
    last = tb.strip().splitlines()[-1] if tb.strip() else ""
    return f"{path.removeprefix(str(S.ROOT) + '/')}:{line} {last}"


def tail(tb: str, lines: int = 6) -> str:
    """A traceback's innermost frame in the project (where to fix it) and its last lines."""
    frame = last_frame(tb)
    return (f"(project frame: {frame})\n" if frame else "") + "\n".join(tb.strip().splitlines()[-lines:])


def answer_problems(answer: Answer, *, want: tuple[Any, ...]) -> list[Problem]:
    """A command's own answer: the exit codes allowed, no traceback, no raw control character on the terminal."""
    step = "bench " + " ".join(_shown_arg(a) for a in answer.argv)
    found = [Problem(step, "an exception escaped a command", tail(tb)) for tb in answer.tracebacks]
    if answer.code not in want:
        found.append(Problem(step, f"exit {answer.code}, not {' or '.join(map(str, want))}",
                             safe_text.terminal(answer.text[-600:], keep="\n")))
    bad = [c for c in S.CONTROL_CHARS if c in answer.text]
    if bad:
        found.append(Problem(step, f"raw control character(s) {bad!r} on the terminal",
                             repr(answer.text[max(0, answer.text.find(bad[0]) - 80):][:200])))
    if "Traceback (most recent call last)" in answer.text:
        found.append(Problem(step, "a traceback was printed", answer.text[-600:]))
    return found


def _shown_arg(arg: str) -> str:
    """An argument as a step names it: a file as FILE, a run id as ID (so one cause is one signature)."""
    if "/" in arg:
        return "FILE"
    return "ID" if arg.isdigit() else arg


def say(text: str) -> None:
    """hypothesis.note inside a test; nothing outside one (a check run by hand)."""
    with contextlib.suppress(Exception):  # hypothesis refuses notes outside a test
        note(text)


def strict_json(text: str) -> Any:
    def refuse(token: str) -> None:
        raise ValueError(f"not strict JSON: {token}")

    return json.loads(text, parse_constant=refuse)


def csv_problems(step: str, blob: bytes) -> list[Problem]:
    """Every CSV in an export zip: no cell a spreadsheet would run (a number, negative ones too, is a number)."""
    found = []
    with zipfile.ZipFile(io.BytesIO(blob)) as archive:
        for name in archive.namelist():
            if not name.endswith(".csv"):
                continue
            for row in csv.reader(io.StringIO(archive.read(name).decode("utf-8"))):
                for cell in row:
                    if safe_text.is_formula(cell) and not _is_number(cell):
                        found.append(Problem(step, f"a CSV cell of {name} is a formula", repr(cell[:120])))
    return found


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def html_problems(step: str, text: str) -> list[Problem]:
    return [Problem(step, "the HTML holds the record's <script> unescaped",
                    repr(text[max(0, text.find(S.SCRIPT) - 120):][:240]))] if S.SCRIPT in text else []


# -- one mutated document through the loader and the CLI ----------------------------------------------------------------
def route_of(doc: Any) -> str:
    """What ``bench import`` reads a document as (bench.cli.main.cmd_import): a bundle or a record."""
    return "bundle" if isinstance(doc, dict) and doc.get("schema") == records.BUNDLE_SCHEMA else "record"


def load_for(kind: str, data: Any) -> Any:
    return records.load_bundle(data) if kind == "bundle" else records.load(data)


def import_loader(route: str, data: Any) -> Any:
    from bench.output import report

    return records.load_bundle(data) if route == "bundle" else report.validate_record(data)


def check_document(m: S.Mutation) -> list[Problem]:
    """Every problem the mutated document meets, from the loader to the exports (empty: the property holds)."""
    doc = m.apply()
    text = S.as_file_text(doc)
    found: list[Problem] = []

    # 1. the loader of its kind: a record, or a RecordError naming the change
    loaded = None
    try:
        loaded = load_for(m.kind, json.loads(text))
    except RecordError as exc:
        if not m.names_it(str(exc)):
            found.append(Problem(f"records.{'load_bundle' if m.kind == 'bundle' else 'load'}",
                                 "the RecordError does not name the changed field or one above it",
                                 f"changed: {m.where!r}\nmessage: {str(exc)[:400]!r}"))
    except Exception:  # noqa: BLE001
        found.append(Problem("records.load", "the loader raised something else than RecordError",
                             tail(traceback.format_exc())))
    if isinstance(loaded, records.Sweep):
        found += sweep_problems(doc)
    if isinstance(loaded, (records.RunRecord, records.Comparison)):
        found += shown_problems(loaded)

    # 2. the CLI: import, then everything downstream of what it accepted
    route = route_of(doc)
    try:
        import_loader(route, json.loads(text))
        refused = None
    except RecordError as exc:
        refused = str(exc)
    except Exception:  # noqa: BLE001 - reported above with its traceback; the CLI must still answer
        refused = "(not a RecordError)"
    with fresh_store() as work:
        path = work / "mutated.json"
        path.write_text(text, encoding="utf-8")
        imported = bench("import", str(path))
        if refused is not None:
            found += answer_problems(imported, want=(2,))
            same_route = route == ("bundle" if m.kind == "bundle" else "record") and m.kind != "sweep"
            if imported.code == 2 and same_route and not refused.startswith("(") \
                    and safe_text.terminal(refused) not in imported.err:
                found.append(Problem("bench import", "exit 2 without the loader's message",
                                     f"loader: {refused[:300]!r}\ncli: {imported.err[:300]!r}"))
            return found
        found += answer_problems(imported, want=(0,))
        if imported.code != 0:
            return found
        if route == "bundle":
            found += bundle_problems(work)
        else:
            found += run_problems(work, imported)
    return found


def listing_problems(command: str) -> list[Problem]:
    """``bench COMMAND --json``: exit 0, and strict JSON on stdout."""
    listed = bench(command, "--json")
    found = answer_problems(listed, want=(0,))
    if listed.code == 0:
        try:
            strict_json(listed.out)
        except ValueError as exc:
            found.append(Problem(f"bench {command} --json", "not strict JSON", str(exc)))
    return found


def run_problems(work: Path, imported: Answer) -> list[Problem]:
    """After an import of runs: the listing, and each run's exports (and the JSON export imports again)."""
    found = answer_problems(bench("runs"), want=(0,)) + listing_problems("runs")
    ids = re.findall(r"#(\d+)", imported.out)
    if not ids:
        found.append(Problem("bench import", "no run id in its answer", imported.out[:300]))
    for run_id in ids:
        for fmt, ext in (("json", "json"), ("csv", "zip"), ("html", "html")):
            out = work / f"run-{run_id}.{ext}"
            answer = bench("export", run_id, "--format", fmt, "--out", str(out))
            step = f"bench export ID --format {fmt}"
            found += answer_problems(answer, want=(0,))
            if answer.code != 0 or not out.exists():
                continue
            if fmt == "json":
                try:
                    strict_json(out.read_text(encoding="utf-8"))
                except ValueError as exc:
                    found.append(Problem(step, "the JSON export is not strict JSON", str(exc)))
                    continue
                again = bench("import", str(out))
                found += answer_problems(again, want=(0,))
            elif fmt == "csv":
                found += csv_problems(step, out.read_bytes())
            else:
                found += html_problems(step, out.read_text(encoding="utf-8"))
    return found


def bundle_problems(work: Path) -> list[Problem]:
    """After a bundle's import: ``bench machines`` (the list, JSON, the bundle's own model) and the gallery report."""
    from bench.analysis import machines as M
    from bench.output import gallery
    from bench.store import Store

    found = answer_problems(bench("machines"), want=(0,)) + listing_problems("machines")
    found += answer_problems(bench("machines", "--model", "seed-cifar10-mlp", "--batch-size", "32"), want=(0,))
    step = "gallery.to_html (the Machines page's report)"
    try:
        machines, _ = gallery.gallery(Store())
        choices = M.model_choices(machines)
        rankings = []
        for model in ["mlp", *choices]:
            preset = model not in ("mlp", "cnn", "text")
            rankings.append(M.ranking(machines, model, None if preset else "s",
                                      int(M.usual_batch(machines, model) or 128), prices=M.prices_of(machines),
                                      baseline=None))
        workloads = M.workloads_of(machines)
        tables = {w: M.workload_rows(machines, w, prices=M.prices_of(machines), baseline=None) for w in workloads}
        found += html_problems(step, gallery.to_html(machines, rankings[-1], tables, baseline=None))
    except Exception:  # noqa: BLE001
        found.append(Problem(step, "an exception escaped the gallery", tail(traceback.format_exc())))
    return found


def shown_problems(loaded: Any) -> list[Problem]:
    """A loaded run or comparison as the pages offer it before any import (Compare's upload): its HTML report and
    JSON download."""
    from bench.output import report

    step = f"report.to_html / to_json of the loaded {type(loaded).__name__} (Compare's downloads)"
    try:
        found = html_problems(step, report.to_html(loaded))
        strict_json(report.to_json(loaded))
    except Exception:  # noqa: BLE001
        return [Problem(step, "an exception escaped", tail(traceback.format_exc()))]
    return found


def sweep_problems(doc: Any) -> list[Problem]:
    """A sweep is shown, not imported: what the Sweep page draws of a loaded one, without Streamlit (its table's
    frame, the charts, the notes) and its JSON written again."""
    import pandas as pd

    from bench.analysis import sweeps
    from bench.output import charts, report

    step = "a loaded sweep's table, charts and JSON (ui.results.show_shipped_sweep's parts)"
    try:
        sweep = records.load(copy.deepcopy(doc))
        rows = list(sweep.rows)
        report.hardware_label(sweep.hardware)
        pd.DataFrame([r.to_dict() for r in rows])
        targets = sweeps.sweep_targets(rows)
        sweeps.wide_window_rows(rows)
        figures = [charts.sweep_utilization_figure(rows), charts.sweep_throughput_figure(rows),
                   charts.sweep_gflops_figure(rows)]
        if len(targets) >= 2:
            figures.append(charts.sweep_speedup_figure(sweeps.sweep_speedups(rows, targets[0], targets[1]), "x"))
        if len({r.devices for r in rows}) > 1:
            figures.append(charts.scaling_figure(rows))
            sweeps.exchange_bound_summary(rows)
        for figure in figures:  # as st.plotly_chart sends it to the browser
            figure.to_json()
        strict_json(records.json_text(sweep.to_dict()))
    except Exception:  # noqa: BLE001
        return [Problem(step, "an exception escaped", tail(traceback.format_exc()))]
    return []


def assert_holds(m: S.Mutation, problems: list[Problem]) -> None:
    assert not problems, f"{m}\n\n" + "\n\n".join(map(str, problems))


# -- the tests -------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", S.KINDS)
def test_every_seed_is_valid_and_goes_through_every_command(kind: str) -> None:
    """The unchanged seeds pass the property (so a failure below is the change's doing)."""
    for name in S.SEEDS[kind]:
        seed = S.Mutation(kind, name, "none", ())
        assert_holds(seed, check_document(seed))


@pytest.mark.parametrize("kind", S.KINDS)
@BUDGET_TIMEOUT
@MUTATE
@given(data=st.data())
def test_one_change_anywhere_is_refused_by_name_or_shown_as_text(kind: str, data: st.DataObject) -> None:
    m = data.draw(S.mutations(kind), label="mutation")
    note(f"change: {m}")
    assert_holds(m, check_document(m))


# -- a stored run with one column changed in SQLite ----------------------------------------------------------------------
RUN_COLUMNS = ("status", "config", "hardware", "info", "error", "summary", "label", "created_at", "started_at",
               "ended_at")
ODD_CELLS: tuple[Any, ...] = (None, "", "not json {", "[1, 2]", '"text"', "5", "null", "true", "{}", "Infinity",
                              "-Infinity", "NaN", "1e999", str(2**63), 2**63 - 1, -(2**63), 1e308, 10**18,
                              S.TERMINAL_ATTACK, S.MARKUP_ATTACK, S.LONG_TEXT, b"\x00\xff")


@dataclass(frozen=True)
class RowChange:
    """One cell of a stored run changed: ``table`` runs (``column``) or epochs/samples (``column`` of the row
    ``row``); ``value`` is written as it is, or ``inner`` changes one value inside the cell's JSON."""

    table: str
    column: str
    row: int
    value: Any = None
    inner: S.Path_ | None = None

    def __str__(self) -> str:
        place = f"{self.table}[{self.row}].{self.column}"
        if self.inner is not None:
            return f"{place} JSON at {S.path_text(self.inner) or '(root)'} -> {S.describe(self.value)}"
        return f"{place} = {S.describe(self.value)}"


def _stored_seed() -> Any:
    return records.load(copy.deepcopy(S.SEEDS["run"]["gpu run (h100-seed-cifar10-mlp runs[1])"]))


@st.composite
def row_changes(draw: st.DrawFn) -> RowChange:
    table = draw(st.sampled_from(["runs", "epochs", "samples"]))
    if table == "runs":
        column = draw(st.sampled_from(RUN_COLUMNS))
        row = 0
    else:
        column = draw(st.sampled_from(["data", "epoch" if table == "epochs" else "t_s"]))
        row = draw(st.integers(0, 2))
    if draw(st.booleans()) and column in ("config", "hardware", "info", "summary", "data"):
        inner = draw(st.sampled_from(_cell_paths(table, column, row)))
        return RowChange(table, column, row, value=draw(st.sampled_from(S.REPLACEMENTS)), inner=inner)
    return RowChange(table, column, row, value=draw(st.sampled_from(ODD_CELLS)))


def _cell_doc(table: str, column: str, row: int) -> Any:
    seed = _stored_seed().to_dict()
    if table == "runs":
        return seed.get(column)
    return seed["epochs" if table == "epochs" else "samples"][row]


def _cell_paths(table: str, column: str, row: int) -> list[S.Path_]:
    return [p for p in S.paths(_cell_doc(table, column, row)) if p]


def change_row(db: Path, run_id: int, change: RowChange) -> None:
    with contextlib.closing(sqlite3.connect(db)) as con, con:
        if change.table == "runs":
            where, args = "id = ?", (run_id,)
        else:
            rowid = con.execute(f"SELECT rowid FROM {change.table} WHERE run_id = ? ORDER BY rowid LIMIT 1 OFFSET ?",
                                (run_id, change.row)).fetchone()[0]
            where, args = "rowid = ?", (rowid,)
        value = change.value
        if change.inner is not None:
            (cell,) = con.execute(f"SELECT {change.column} FROM {change.table} WHERE {where}", args).fetchone()
            doc = json.loads(cell)
            S.at(doc, change.inner[:-1])[change.inner[-1]] = copy.deepcopy(value)
            value = json.dumps(doc, allow_nan=True)
        con.execute(f"UPDATE {change.table} SET {change.column} = ? WHERE {where}", (value, *args))


def check_stored(change: RowChange) -> list[Problem]:
    from bench.output import report
    from bench.store import Store, StoreError

    found: list[Problem] = []
    with fresh_store() as work:
        db = Path(os.environ["BENCH_STORE"])
        store = Store(db)
        (run_id,) = report.import_into_store(store, _stored_seed())
        try:
            change_row(db, run_id, change)
        except (sqlite3.IntegrityError, OverflowError) as exc:  # the cell cannot hold it (NOT NULL, 64-bit integers)
            say(f"SQLite refused the change: {exc}")
            return []
        try:
            listed = Store(db).list_runs()
            told = Store(db).listing().unreadable
            shown = {r.id for r in listed}
            say(f"unreadable runs: {told!r}")
            if run_id not in shown and not any(getattr(u, "id", None) == run_id for u in told):
                found.append(Problem("Store.list_runs / listing().unreadable",
                                     f"run #{run_id} is neither listed nor said to be unreadable"))
        except StoreError as exc:
            found.append(Problem("Store.list_runs", "StoreError for one odd row", str(exc)[:300]))
        except Exception:  # noqa: BLE001
            found.append(Problem("Store.list_runs", "an exception escaped", tail(traceback.format_exc())))
        found += answer_problems(bench("runs"), want=(0,))
        found += answer_problems(bench("runs", "--json"), want=(0,))
        for fmt in ("json", "html"):
            found += answer_problems(bench("export", str(run_id), "--format", fmt, "--out",
                                           str(work / f"r.{fmt}")), want=(0, 2))
    return found


@BUDGET_TIMEOUT
@MUTATE
@given(change=row_changes())
def test_one_odd_cell_in_the_store_leaves_the_listing_working(change: RowChange) -> None:
    note(f"cell: {change}")
    problems = check_stored(change)
    assert not problems, f"{change}\n\n" + "\n\n".join(map(str, problems))
