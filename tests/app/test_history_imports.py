"""An imported run on the pages: History's table says where each run was measured ("here", or where an import came
from), and the Train page, showing the last stored run, says an imported one was not measured here."""

from __future__ import annotations

from pathlib import Path

import streamlit as st
from streamlit.testing.v1 import AppTest

from bench.output import report
from bench.store import Store
from tests.app.test_history_unreadable import _run
from tests.app.test_pages import element_data, shown
from tests.unit.test_report import make_record

ROOT = Path(__file__).resolve().parents[2]


def app(page: str) -> AppTest:
    return AppTest.from_file(str(ROOT / page), default_timeout=30)


def test_history_marks_each_imported_run(isolated_store: Path) -> None:
    store = Store(isolated_store)
    here = _run(store)
    [imported] = report.import_into_store(store, make_record(run_id=here), source="file lab.json")
    at = app("pages/history.py").run()
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    measured = dict(zip(table["id"], table["measured"]))
    assert measured == {here: "here", imported: f"imported from file lab.json, run #{here} there"}


def test_train_says_the_last_stored_run_was_imported(isolated_store: Path) -> None:
    store = Store(isolated_store)
    [imported] = report.import_into_store(store, make_record(), source="file lab.json")
    st.cache_resource.clear()  # a server started on this store
    try:
        at = app("pages/train.py").run()
        assert not at.exception, at.exception
        # the ended run's header is the live view's own (one renderer in every state): its words are in its data
        [view] = element_data(at, "bench_live_view")
        parts = view["header"]["status"]["parts"]
        status = "".join(text for text, _bold in parts)
        assert status.startswith(f"Run #{imported} finished"), status
        assert ("imported from file lab.json, run #7 there: not measured here", True) in [tuple(p) for p in parts], parts
    finally:
        st.cache_resource.clear()


def test_history_upload_of_the_same_file_twice_says_already_imported(isolated_store: Path) -> None:
    from ui.common import get_manager

    data = report.to_json(report.validate_record(make_record(run_id=3))).encode()
    st.cache_resource.clear()
    try:
        at = app("pages/history.py").run()
        at.file_uploader(key="hist_import").set_value(("lab.json", data, "application/json")).run()
        at.button(key="hist_import_go").click().run()
        assert not at.exception and [s.value for s in at.success] == ["Imported as #1"]
        at.button(key="hist_import_go").click().run()
        assert not at.exception and [i.value for i in at.info] == ["Already imported as #1: nothing changed"]
        [run] = get_manager().store.list_runs()
        assert run.info.extra["imported_from"] == "upload lab.json"
        table = at.dataframe[0].value
        assert list(table["measured"]) == ["imported from upload lab.json, run #3 there"]
    finally:
        st.cache_resource.clear()


def test_a_comparison_of_selected_runs_names_the_imported_one(isolated_store: Path) -> None:
    store = Store(isolated_store)
    here = _run(store)
    [imported] = report.import_into_store(store, make_record(run_id=here), source="file lab.json")

    def page(path: str, ids: list[int]) -> None:
        from bench.store import Store
        from ui import results

        chosen = Store(path)
        results.show_comparison([chosen.get_run(i) for i in ids], key="t")

    at = AppTest.from_function(page, args=(str(isolated_store), [here, imported]), default_timeout=30).run()
    assert not at.exception, at.exception
    captions = " ".join(shown(c.value) for c in at.caption)
    assert f"Not measured here: #{imported} cpu (imported): imported from file lab.json, run #{here} there" \
        in captions, captions
    assert f"#{here} cpu:" not in captions, "the run measured here is not named as imported"
