"""AppTest of the Machines page: the shipped bundles side by side, the ranking for a picked model with a figure read
between two sizes marked as such, a bundle kept in the store shown beside them, and the page's state in its link."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
from streamlit.testing.v1 import AppTest

from bench.store import Store

ROOT = Path(__file__).resolve().parents[2]
H100 = "shipped:bundle-h100"
CPU = "shipped:bundle-cpu-2core"


def app() -> AppTest:
    return AppTest.from_file(str(ROOT / "pages/machines.py"), default_timeout=60)


def _table(at: AppTest, index: int) -> pd.DataFrame:
    """A table's cells as they read: a table's cells are markdown, and the page escapes the bundles' words in them
    (ui.safe_text.escape: "gpu\\:0" reads "gpu:0")."""
    return at.table[index].value.map(lambda cell: re.sub(r"\\(.)", r"\1", cell) if isinstance(cell, str) else cell)


def _ranking_rows(at: AppTest) -> list[dict]:
    return _table(at, 1).to_dict("records")  # the machines, then the ranking by time


def test_the_shipped_machines_and_a_figure_read_between_sizes() -> None:
    at = app().run()
    assert not at.exception, at.exception
    machines = _table(at, 0)
    assert any("H100" in name for name in machines["machine"]) and len(machines) >= 2
    at.selectbox(key="mach_model").set_value("mlp").run()
    at.selectbox(key="mach_size").set_value("s").run()
    at.selectbox(key="mach_batch").set_value(2048).run()
    rows = _ranking_rows(at)
    h100 = next(r for r in rows if "H100" in r["machine"] and r["target"] == "gpu:0")
    assert h100["figure"] == "read between sizes" and "between xs and m" in h100["how"]
    assert any(r["figure"] == "measured" and r["target"] == "cpu" and "H100" not in r["machine"] for r in rows)
    # the H100 machine's CPU was not measured at batch 2048: said why, never a zero
    assert any("not measured at batch 2048" in c.value for c in at.caption)
    assert at.get("download_button")


def test_the_ranking_is_drawn_and_each_reason_is_said_once_under_its_table() -> None:
    at = app()
    at.query_params.update({"mach_base": f"{CPU}|cpu", "mach_model": "mlp", "mach_size": "s", "mach_batch": "2048"})
    at.run()
    assert not at.exception, at.exception
    chart = at.get("plotly_chart")
    assert len(chart) == 1
    figure = json.loads(chart[0].proto.spec)
    assert "Which machine for mlp s at batch 2048?" in figure["layout"]["title"]["text"]
    rows = _ranking_rows(at)
    cpu = next(r for r in rows if r["target"] == "cpu" and "AMD" in r["machine"])
    h100 = next(r for r in rows if r["target"] == "gpu:0")
    assert cpu["energy J per 1,000"] == "—" and cpu["unequal to the baseline"] == ""
    assert h100["unequal to the baseline"] == "¹ ² ³"  # backend, suite and XLA: marks, their words once below
    assert not any("RAPL" in str(v) or "baseline tensorflow" in str(v) for r in rows for v in r.values())
    notes = next(c.value for c in at.caption if "RAPL not readable" in c.value)
    assert notes.count("RAPL not readable") == 1 and "cpu, cpu/1" in notes  # one reason, the targets it holds for
    assert "¹ backend jax" in notes and "² suite" in notes


def test_a_size_past_the_measured_range_has_no_figure() -> None:
    at = app().run()
    at.selectbox(key="mach_model").set_value("mlp").run()
    at.selectbox(key="mach_size").set_value("xl").run()
    at.selectbox(key="mach_batch").set_value(2048).run()
    assert any("never extrapolated" in c.value for c in at.caption)
    assert all("AMD" not in r["machine"] for r in _ranking_rows(at))


def test_a_stored_bundle_is_shown_beside_the_shipped_ones() -> None:
    doc = json.loads((ROOT / "docs/results/bundle-cpu-2core.json").read_text()) | {"label": "team workstation"}
    Store().bundles.add(doc)
    at = app().run()
    assert not at.exception, at.exception
    assert "team workstation" in list(_table(at, 0)["machine"])


def test_the_state_comes_from_the_link_and_goes_back_into_it() -> None:
    at = app()
    at.query_params.update({"mach_base": f"{CPU}|cpu", "mach_model": "mlp", "mach_size": "m", "mach_batch": "128",
                            "mach_prices": f"{H100}|gpu:0=2.5;{CPU}|cpu=0.1", "mach_workload": "bogus"})
    at.run()
    assert not at.exception, at.exception
    assert at.selectbox(key="mach_base").value == f"{CPU}|cpu"
    assert at.selectbox(key="mach_size").value == "m"
    assert any("mach_workload" in c.value and "left out" in c.value for c in at.caption)
    by_cost = _table(at, 2).to_dict("records")
    assert {r["target"] for r in by_cost} == {"gpu:0", "cpu"} and all(r["cost per 1,000"][0].isdigit()
                                                                       for r in by_cost)
    rows = _ranking_rows(at)
    baseline = next(r for r in rows if r["target"] == "cpu" and "AMD" in r["machine"])
    assert baseline["speed-up vs baseline"] == "1.00"
    assert at.query_params["mach_size"] == ["m"] or at.query_params["mach_size"] == "m"


def test_a_link_opens_the_page_without_streamlits_duplicated_state_warning(caplog, monkeypatch) -> None:
    """A widget given both a start index and a value from the link makes Streamlit log a warning (once a process);
    the page starts each widget from one of them."""
    from streamlit.elements.lib import policies

    monkeypatch.setattr(policies, "_shown_default_value_warning", False)
    at = app()
    at.query_params.update({"mach_model": "cnn", "mach_size": "l", "mach_batch": "128"})
    with caplog.at_level("WARNING"):
        at.run()
    assert not at.exception, at.exception
    assert at.selectbox(key="mach_model").value == "cnn" and at.selectbox(key="mach_size").value == "l"
    assert at.selectbox(key="mach_batch").value == 128
    warned = [r.getMessage() for r in caplog.records if "default value" in r.getMessage()]
    assert not warned, warned


def test_a_price_zeroed_leaves_the_link() -> None:
    """The link never brings back a price the presenter removed; each price stays with its own machine."""
    at = app()
    at.query_params.update({"mach_prices": f"{H100}|gpu:0=2.5"})
    at.run()
    assert not at.exception, at.exception
    price = at.number_input(key=f"mach_price_{H100}|gpu:0")
    assert price.value == 2.5 and "mach_prices" in at.query_params
    price.set_value(0.0).run()
    assert not at.exception, at.exception
    assert "mach_prices" not in at.query_params
