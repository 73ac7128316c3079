"""The pages as ways out (AppTest): headlines that never name two sides alike (History's overlay of two CPU runs, a
loaded comparison of two same-named targets), prices out of bounds that cost nothing (a loaded comparison's negative
prices, a subnormal price entered on Machines), the System page over a GPU source answering sentinels, negatives,
infinities and a driver string with a newline, and (slow, hypothesis) hostile text and numbers anywhere a shipped run,
comparison or bundle holds them, through History, Compare and Machines (tests/app/test_record_mutations_pages.py's
checks). The budget: ``BENCH_FUZZ_WAYS_OUT_PAGE_EXAMPLES`` examples a kind (default below)."""

from __future__ import annotations

import copy
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from bench.vocab import records
from bench.analysis import compare
from bench.vocab.config import RunConfig
from bench.store import Store
from tests import strategies as S
from tests.app import test_record_mutations_pages as P
from tests.unit import scripted_gpus as sg
from tests.unit import test_ways_out as W

ROOT = Path(__file__).resolve().parents[2]
PAGE_EXAMPLES = int(os.environ.get("BENCH_FUZZ_WAYS_OUT_PAGE_EXAMPLES", "2"))


def app(path: str) -> AppTest:
    return AppTest.from_file(str(ROOT / path), default_timeout=60)


def shown(at: AppTest) -> str:
    """What the page says, its escapes undone (ui.safe_text.escape writes "\\(" for "(")."""
    return re.sub(r"\\(.)", r"\1", "\n".join(P.rendered_texts(at)))


def _epochs(steady: list[float]) -> list[dict[str, Any]]:
    return [{"epoch": 1, "epoch_seconds": 3.0, "includes_tracing": True}] + [
        {"epoch": i + 2, "epoch_seconds": t, "includes_tracing": False} for i, t in enumerate(steady)]


def _run(run_id: int, device: str, steady: list[float], host: str) -> dict[str, Any]:
    config = {**RunConfig().to_dict(), "device": device, "epochs": len(steady) + 1}
    return {"schema": "bench.run/1", "id": run_id, "status": "finished", "config": config,
            "hardware": {"hostname": host, "cpu": {"model": "Xeon", "logical_cores": 2}, "gpus": []},
            "info": {}, "epochs": _epochs(steady), "samples": [{"t_s": 0.0, "cpu_percent": 50.0, "gpus": []}],
            "started_at": 1000.0, "ended_at": 1000.0 + 3 + sum(steady)}


# -- headlines -------------------------------------------------------------------------------------------------------
def test_historys_overlay_of_two_cpu_runs_names_each_by_its_number(isolated_store: Path) -> None:
    store = Store(isolated_store)
    ids = []
    for steady in ([1.0, 1.1, 0.95], [0.5, 0.5, 0.5]):
        run_id = store.create_run(RunConfig().to_dict(), status="finished")
        store.add_epochs(run_id, _epochs(steady))
        ids.append(run_id)
    at = app("pages/history.py").run()
    assert not at.exception, at.exception
    at.session_state["hist_table"] = {"selection": {"rows": [0, 1], "columns": []}}
    at.run()
    assert not at.exception, at.exception
    text = shown(at)
    assert "cpu and cpu" not in text, text
    assert re.search(rf"cpu \(#{ids[1]}\) trains 2\.\dx faster than cpu \(#{ids[0]}\)", text) \
        or re.search(rf"cpu \(#{ids[0]}\) trains 2\.\dx faster than cpu \(#{ids[1]}\)", text), text


def _show_imported(data: bytes) -> None:
    from ui import results

    results.show_imported(data, key="t")


def test_a_loaded_comparison_of_two_same_named_targets_names_their_machines() -> None:
    """Both runs were #1 on their own machines' stores, both on cpu."""
    doc = {"schema": "bench.comparison/1", "comparison": None,
           "runs": [_run(1, "cpu", [1.0, 1.0, 1.0], "laptop"), _run(1, "cpu", [0.5, 0.5, 0.5], "server")]}
    at = AppTest.from_function(_show_imported, args=(json.dumps(doc).encode(),), default_timeout=30).run()
    assert not at.exception, at.exception
    text = shown(at)
    assert "cpu and cpu" not in text and "cpu on server trains 2.0x faster than cpu on laptop" in text, text


@pytest.mark.parametrize("prices", [{"cpu": -1.0, "cpu/1": -1.0}, {"cpu": 5e-324, "cpu/1": 1.0}])
def test_a_loaded_comparisons_prices_out_of_bounds_cost_nothing(prices: dict[str, float]) -> None:
    """A comparison file whose prices are negative or subnormal: refused at the way in, or shown without a cost;
    never "costs -1.0x more" nor a cost of 0.00."""
    from bench.vocab.errors import RecordError
    from bench.output import report

    runs = [records.RunRecord.model_validate(_run(1, "cpu", [1.0, 1.0, 1.0], "a")),
            records.RunRecord.model_validate(_run(2, "cpu/1", [0.5, 0.5, 0.5], "a"))]
    doc = compare.comparison_record(runs, {"cpu": 1.0, "cpu/1": 2.0}).to_dict()
    doc = copy.deepcopy(doc)
    doc["comparison"]["prices"] = prices
    data = json.dumps(doc).encode()
    try:
        report.load_record_file(data)
    except RecordError:
        return  # refused where it comes in: it cannot reach a page
    at = AppTest.from_function(_show_imported, args=(data,), default_timeout=30).run()
    assert not at.exception, at.exception
    text = shown(at)
    assert "trains" in text and "costs" not in text and "-1.0x" not in text, text


def test_a_subnormal_price_entered_on_machines_is_no_price() -> None:
    at = app("pages/machines.py").run()
    assert not at.exception, at.exception
    inputs = [n for n in at.number_input if str(n.key).startswith("mach_price_")]
    assert inputs, "the page offers a price per machine and target"
    inputs[0].set_value(5e-324).run()
    assert not at.exception, at.exception
    text = shown(at)
    assert "counted as no price" in text and "from 0.000001 to 1,000,000" in text, text
    assert "cheapest" not in text.lower() or "0.00 " not in text, text


@pytest.mark.parametrize("text", ["5e-324", "-1", "1e400"])
def test_the_compare_pages_price_out_of_bounds_starts_nothing(text: str) -> None:
    at = app("pages/compare.py").run()
    assert not at.exception, at.exception
    priced = [t for t in at.text_input if str(t.key).startswith("cmp_price_")]
    assert priced, "the page asks a price per target"
    priced[0].set_value(text).run()
    at.button(key="start_compare").click().run()
    assert not at.exception, at.exception
    said = shown(at)
    assert "cannot start" in said and ("from 0.000001 to 1,000,000" in said or "above 0" in said), said
    assert not any("queued" in t.value for t in at.toast)


# -- a GPU source answering out of bounds -------------------------------------------------------------------------------
def test_the_system_page_over_a_source_answering_out_of_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    gpu = sg.FakeAmdGpu(market_name="MI300X\n\x1b[31mred", vram_used_mb=2**64 - 1, vram_total_mb=2**64 - 1,
                        current_socket_power=-120, gfx_activity=float("inf"), edge_temp_c=float("nan"))
    with sg.use(monkeypatch, sg.amd_smi([gpu])):
        at = app("pages/system.py").run()
    assert not at.exception, at.exception
    text = shown(at) + "\n".join(t.value.to_string() for t in at.table)
    assert "MI300X red" in text or "MI300X [31mred" in text, text
    assert "\x1b" not in text and "\n\x1b" not in text, text
    # a figure is never inf, NaN or negative (a reason may quote what the driver said: "reported -120, outside ...")
    assert not re.search(r"(?i)(inf|nan|-\d[\d,.]*) ?(W|MiB|GiB|%|°C)\b", text), text
    assert "not measured: the driver reported 18446744073709551615 (AMD SMI's 'not supported')" in text, text


# -- hostile values anywhere, through the pages (slow) -------------------------------------------------------------------
OTHER_PAGES = ("pages/train.py", "pages/sweep.py", "pages/lesson.py", "pages/system.py")


def other_pages(m: S.Mutation) -> list[Any]:
    """The pages test_record_mutations_pages does not open, over a store that holds the record where it is valid."""
    from bench.vocab.errors import RecordError
    from bench.output import report

    found: list[Any] = []
    with P.own_server():
        if m.kind in ("run", "comparison"):
            try:
                report.import_into_store(Store(), report.validate_record(json.loads(S.as_file_text(m.apply()))))
            except RecordError:
                pass  # refused at the way in: History and Compare's check says so
        for page in OTHER_PAGES:
            P._run(page, app(page), found)
    return found


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["run", "comparison", "sweep", "bundle"])
@pytest.mark.timeout(max(300, 120 * PAGE_EXAMPLES))
@settings(P.PAGES, max_examples=PAGE_EXAMPLES)
@given(data=st.data())
def test_hostile_text_or_numbers_leave_every_page_up_and_text_text(kind: str, data: Any) -> None:
    m = data.draw(W.hostile_changes(kind), label="change")
    note(f"change: {m}")
    problems = P.check_pages(m) + other_pages(m)
    assert not problems, f"{m}\n\n" + "\n\n".join(map(str, problems))


@pytest.mark.slow
@pytest.mark.timeout(max(300, 60 * PAGE_EXAMPLES))
@settings(P.PAGES, max_examples=PAGE_EXAMPLES)
@given(values=st.fixed_dictionaries({f: S.vendor_raw() for f in W.AMD_FIGURES}), name=S.hostile_text())
def test_any_vendor_answer_leaves_system_and_train_up(values: dict[str, Any], name: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A scripted AMD SMI answering anything (sentinels, hostile numbers and text) for every figure and its name."""
    gpu = sg.FakeAmdGpu(market_name=name, **values)
    found: list[Any] = []
    with sg.use(monkeypatch, sg.amd_smi([gpu])), P.own_server():
        for page in ("pages/system.py", "pages/train.py"):
            P._run(page, app(page), found)
    assert not found, "\n\n".join(map(str, found))
