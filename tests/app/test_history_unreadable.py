"""History with stored rows this version cannot read: the page renders for every viewer, lists the good runs in its
table and, below it, each unreadable run as "run #N cannot be read here: REASON" (the row's text shown as text) with
a raw download and a delete. The store's side is tests/unit/test_store_unreadable.py."""

from __future__ import annotations

import json
import re
import sqlite3
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from bench.vocab.config import RunConfig
from bench.store import Store
from ui.safe_text import escape

ROOT = Path(__file__).resolve().parents[2]
CONFIG = RunConfig(model="mlp", size="xs", dataset="synthetic-mnist", epochs=2, batch_size=64).to_dict()
UNESCAPED_LINK = re.compile(r"(?<!\\)!?(?<!\\)\[[^\]]*(?<!\\)\]\((?!\s)")  # [x](... or ![x](... not escaped


def app() -> AppTest:
    return AppTest.from_file(str(ROOT / "pages/history.py"), default_timeout=30)


def _run(store: Store) -> int:
    run_id = store.create_run(CONFIG, status="running")
    for n in (1, 2):
        store.add_epoch(run_id, {"epoch": n, "epoch_seconds": 1.0, "includes_tracing": n == 1})
    store.add_samples(run_id, [{"t_s": 0.5 * i, "cpu_percent": 50.0, "gpus": []} for i in range(3)])
    store.update_run(run_id, status="finished", ended_at=time.time())
    return run_id


def _sql(path: Path, statement: str, *params: object) -> None:
    with sqlite3.connect(path) as con:
        con.execute(statement, params)


def _lines(at: AppTest) -> str:
    return "\n".join(str(m.value) for m in at.markdown)


DAMAGE = [
    ("UPDATE runs SET config = ? WHERE id = ?", "not json [click](https://evil.example/x)", "config is not JSON"),
    ("UPDATE runs SET info = ? WHERE id = ?", '{"cluster": "x"}', "info.cluster"),
    ("UPDATE runs SET summary = ? WHERE id = ?", '{"steady_epoch_seconds": Infinity}', "summary.steady_epoch_seconds"),
    ("UPDATE epochs SET data = ? WHERE run_id = ?", "{}", "epochs[0].epoch is missing"),
    ("UPDATE runs SET error = ? WHERE id = ?", "[]", "error"),
]


@pytest.mark.parametrize(("statement", "text", "names"), DAMAGE, ids=[d[2] for d in DAMAGE])
def test_history_lists_an_unreadable_run_below_the_table_and_deletes_it(isolated_store: Path, statement: str,
                                                                         text: str, names: str) -> None:
    store = Store(isolated_store)
    good, odd = _run(store), _run(store)
    _sql(isolated_store, statement, text, odd)
    at = app().run()
    assert not at.exception, at.exception
    assert list(at.dataframe[0].value["id"]) == [good], "the good run is in the table"
    lines = _lines(at)
    assert escape(f"run #{odd} cannot be read here:") in lines and escape(names) in lines, lines
    assert not UNESCAPED_LINK.search(lines), "the row's text is shown as text, not a link"
    download = [b for b in at.get("download_button") if b.proto.label == "Download raw"]
    assert len(download) == 1
    at.button(key=f"hist_unreadable_delete_{odd}").click().run()
    assert not at.exception, at.exception
    assert store.raw_run(odd) is None and store.listing().unreadable == []
    assert "cannot be read here" not in _lines(at)
    assert list(at.dataframe[0].value["id"]) == [good]


def test_history_of_only_unreadable_runs_does_not_say_the_store_is_empty(isolated_store: Path) -> None:
    store = Store(isolated_store)
    odd = _run(store)
    _sql(isolated_store, "UPDATE runs SET hardware = '5' WHERE id = ?", odd)
    at = app().run()
    assert not at.exception, at.exception
    assert not any("No runs stored yet" in str(i.value) for i in at.info)
    assert escape(f"run #{odd} cannot be read here: hardware must be a JSON object") in _lines(at)


def test_a_selected_run_whose_samples_cannot_be_read_is_named_not_raised(isolated_store: Path) -> None:
    """A listing reads no samples: the run is in the table; selecting it reads them, and the page says why not."""
    store = Store(isolated_store)
    good, odd = _run(store), _run(store)
    _sql(isolated_store, "UPDATE samples SET data = 'garbage' WHERE run_id = ?", odd)
    at = app().run()
    assert list(at.dataframe[0].value["id"]) == [good, odd]
    at.session_state["hist_table"] = {"selection": {"rows": [0, 1], "columns": []}}
    at.run()
    assert not at.exception, at.exception
    errors = "\n".join(str(e.value) for e in at.error)
    assert escape(f"run #{odd} cannot be read here: samples[0] is not JSON") in errors, errors
    assert any("1 run(s) selected" in str(s.value) for s in at.subheader)


def test_the_raw_download_is_the_rows_as_stored(isolated_store: Path) -> None:
    from ui import unreadable_runs

    store = Store(isolated_store)
    odd = _run(store)
    _sql(isolated_store, "UPDATE runs SET config = 'not json' WHERE id = ?", odd)
    doc = json.loads(unreadable_runs._raw_json(store, odd)())
    assert doc["columns"]["config"] == "not json" and len(doc["epochs"]) == 2 and len(doc["samples"]) == 3
