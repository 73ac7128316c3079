"""The pages under a record with ONE change anywhere (tests/strategies.py; the unit part, with the CLI, is
tests/unit/test_record_mutations.py): the mutated record imported into a store of its own, then History (the table,
then every run selected), Compare (the file uploaded), the Sweep page's view of a sweep file, Machines (the bundle
uploaded). The property: no exception element, and no markdown-rendered text holding a link, an image, a bare address
or a ``<script>`` from the record unescaped.

``BENCH_FUZZ_PAGE_EXAMPLES`` examples per kind (default 5: each example renders a page two or three times).
"""

from __future__ import annotations

import json
import os
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import streamlit as st
from hypothesis import HealthCheck, Phase, given, note, settings
from hypothesis import strategies as hst
from streamlit.testing.v1 import AppTest

from tests.app.markdown_text import outside_code
from bench.vocab import records
from bench.vocab.errors import RecordError
from tests import strategies as S
from tests.unit import test_record_mutations as U

ROOT = Path(__file__).resolve().parents[2]
PAGE_EXAMPLES = int(os.environ.get("BENCH_FUZZ_PAGE_EXAMPLES", "5"))
# no shrinking: each step renders pages (a minute and more); a failing example is one change already, and the unit
# part (tests/unit/test_record_mutations.py) shrinks its own
PAGES = settings(max_examples=PAGE_EXAMPLES, deadline=None, print_blob=True,
                 phases=[Phase.explicit, Phase.reuse, Phase.generate],
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                        HealthCheck.data_too_large, HealthCheck.filter_too_much])
# what markdown would act on, outside a code span (ui.safe_text.escape turns each into plain text: "\]\(https\://")
ACTIVE = ("](https://evil", "https://evil", "<script>")

pytestmark = pytest.mark.slow  # several page renders per example
BUDGET_TIMEOUT = pytest.mark.timeout(max(300, 30 * PAGE_EXAMPLES))  # a bigger budget gets more than the suite's 300 s


def app(path: str) -> AppTest:
    return AppTest.from_file(str(ROOT / path), default_timeout=60)


def rendered_texts(at: AppTest) -> list[str]:
    """Every text the page gives Streamlit's markdown renderer: markdown, captions, alerts, headings, toasts."""
    texts = []
    for name in ("markdown", "caption", "error", "warning", "info", "success", "title", "header", "subheader",
                 "toast"):
        for element in getattr(at, name, []):
            value = getattr(element, "value", None)
            if isinstance(value, str):
                texts.append(value)
    return texts


def page_problems(step: str, at: AppTest) -> list[U.Problem]:
    found = []
    for exc in at.exception:
        trace = "".join(exc.stack_trace or [])
        found.append(U.Problem(step, "the page shows an exception",
                               U.tail(f"{trace}\n{getattr(exc.proto, 'type', 'Exception')}: {exc.message}")))
    for text in rendered_texts(at):
        running = outside_code(text)
        for bad in ACTIVE:
            if bad in running:
                at_ = running.find(bad)
                found.append(U.Problem(step, f"markdown holds {bad!r} from the record unescaped",
                                       repr(running[max(0, at_ - 100):at_ + 60])))
                break
    return found


@contextmanager
def own_server() -> Iterator[Path]:
    """A store of its own and a fresh server (JobManager, live publisher) for one example, as a restart would give."""
    from streamlit import config

    from ui import live_feed

    details = config.get_option("client.showErrorDetails")
    config.set_option("client.showErrorDetails", "full")  # the exception element carries its traceback
    with U.fresh_store() as work:
        st.cache_resource.clear()
        try:
            yield work
        finally:
            publisher = live_feed.installed()
            if publisher is not None:
                publisher.close()
            st.cache_resource.clear()
            config.set_option("client.showErrorDetails", details)


def _run(step: str, at: AppTest, found: list[U.Problem]) -> bool:
    """Render once; False (and the problem kept) when the render itself failed outside the page."""
    try:
        at.run()
    except Exception:  # noqa: BLE001 - AppTest's own failure (a timeout): a problem of its own
        found.append(U.Problem(step, "the page could not be rendered", U.tail(traceback.format_exc())))
        return False
    found += page_problems(step, at)
    return True


def history_and_compare(m: S.Mutation, data: bytes) -> list[U.Problem]:
    """A run or comparison: imported into the store when it is valid, then History (table, every row selected) and
    Compare (the file uploaded, valid or not)."""
    from bench.output import report
    from bench.store import Store

    found: list[U.Problem] = []
    with own_server():
        ids: list[int] = []
        try:
            ids = report.import_into_store(Store(), report.validate_record(json.loads(data)))
        except RecordError as exc:
            U.say(f"not imported: {exc}")
        except Exception:  # noqa: BLE001
            found.append(U.Problem("report.import_into_store", "an exception escaped the import",
                                   U.tail(traceback.format_exc())))
        at = app("pages/history.py")
        if _run("History", at, found) and ids and not at.exception:
            at.session_state["hist_table"] = {"selection": {"rows": list(range(len(ids))), "columns": []}}
            _run("History, every run selected", at, found)
        at = app("pages/compare.py")
        if _run("Compare", at, found):
            at.file_uploader(key="cmp_import").set_value(("mutated.json", data, "application/json"))
            _run("Compare, the file uploaded", at, found)
    return found


def show_sweep(path: str) -> None:
    from pathlib import Path

    from ui import results

    results.show_shipped_sweep(Path(path), key="mutated")


def sweep_page(m: S.Mutation, data: bytes) -> list[U.Problem]:
    """A sweep file the loader reads, as the Sweep page shows a shipped one (ui.results.show_shipped_sweep)."""
    found: list[U.Problem] = []
    try:
        loaded = records.load(json.loads(data))
    except RecordError as exc:
        U.say(f"refused: {exc}")
        return found
    if not isinstance(loaded, records.Sweep):
        return found
    with own_server() as work:
        path = work / "sweep.json"
        path.write_bytes(data)
        _run("Sweep (show_shipped_sweep)", AppTest.from_function(show_sweep, args=(str(path),), default_timeout=60),
             found)
    return found


def machines_page(m: S.Mutation, data: bytes) -> list[U.Problem]:
    """A bundle uploaded on the Machines page (kept in the store when valid), then the page as the next viewer sees
    it."""
    found: list[U.Problem] = []
    with own_server():
        at = app("pages/machines.py")
        if _run("Machines", at, found):
            at.file_uploader(key="mach_upload").set_value(("bundle.json", data, "application/json"))
            if _run("Machines, the bundle uploaded", at, found):
                _run("Machines, opened afresh", app("pages/machines.py"), found)
    return found


PAGE_CHECKS = {"run": history_and_compare, "comparison": history_and_compare, "sweep": sweep_page,
               "bundle": machines_page}


def check_pages(m: S.Mutation) -> list[U.Problem]:
    data = S.as_file_text(m.apply()).encode("utf-8")
    return PAGE_CHECKS[m.kind](m, data)


@pytest.mark.parametrize("kind", S.KINDS)
def test_every_seed_shows_on_its_pages(kind: str) -> None:
    for name in S.SEEDS[kind]:
        seed = S.Mutation(kind, name, "none", ())
        problems = check_pages(seed)
        assert not problems, f"{seed}\n\n" + "\n\n".join(map(str, problems))


@pytest.mark.parametrize("kind", S.KINDS)
@BUDGET_TIMEOUT
@PAGES
@given(data=hst.data())
def test_one_change_anywhere_leaves_the_pages_up_and_the_text_text(kind: str, data: Any) -> None:
    m = data.draw(S.mutations(kind), label="mutation")
    note(f"change: {m}")
    problems = check_pages(m)
    assert not problems, f"{m}\n\n" + "\n\n".join(map(str, problems))


def check_history_over(change: U.RowChange) -> list[U.Problem]:
    """History over a store one of whose cells was changed in SQLite (tests/unit/test_record_mutations.py has the
    CLI's side): the table, then its first row selected."""
    import sqlite3

    from bench.output import report
    from bench.store import Store

    found: list[U.Problem] = []
    with own_server():
        db = Path(os.environ["BENCH_STORE"])
        (run_id,) = report.import_into_store(Store(db), U._stored_seed())
        try:
            U.change_row(db, run_id, change)
        except (sqlite3.IntegrityError, OverflowError) as exc:  # the cell cannot hold it
            U.say(f"SQLite refused the change: {exc}")
            return found
        at = app("pages/history.py")
        if _run("History over the odd row", at, found) and not at.exception and at.dataframe \
                and len(at.dataframe[0].value):
            at.session_state["hist_table"] = {"selection": {"rows": [0], "columns": []}}
            _run("History over the odd row, the run selected", at, found)
    return found


@BUDGET_TIMEOUT
@PAGES
@given(change=U.row_changes())
def test_one_odd_cell_in_the_store_leaves_history_up(change: U.RowChange) -> None:
    note(f"cell: {change}")
    problems = check_history_over(change)
    assert not problems, f"{change}\n\n" + "\n\n".join(map(str, problems))
