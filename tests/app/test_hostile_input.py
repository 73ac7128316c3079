"""Pages under a failing store, a hostile record and a crafted link: each keeps working for every viewer, says
what went wrong and what to do, and shows outside text as text (never as a link or an image the browser loads)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.app.markdown_text import outside_code
from bench.vocab.config import RunConfig
from bench.store import Store

ROOT = Path(__file__).resolve().parents[2]
UNESCAPED_LINK = re.compile(r"(?<!\\)!?(?<!\\)\[[^\]]*(?<!\\)\]\((?!\s)")  # [x](... or ![x](... not escaped


def app(path: str) -> AppTest:
    return AppTest.from_file(str(ROOT / path), default_timeout=30)


def bodies(elements) -> str:
    return "\n".join(e.value if isinstance(e.value, str) else str(e.value) for e in elements)


def test_history_survives_a_store_damaged_while_the_server_runs(isolated_store: Path) -> None:
    at = app("pages/history.py").run()
    assert not at.exception, at.exception
    isolated_store.write_bytes(b"garbage " * 4096)  # the file is damaged after the server opened it
    for extra in isolated_store.parent.glob(isolated_store.name + "-*"):
        extra.unlink()
    at.run()
    assert not at.exception, at.exception
    errors = bodies(at.error)
    assert "cannot be used right now" in errors and "damaged" in errors and ".damaged" in errors, errors


@pytest.mark.parametrize("created_at", [1e308, -1e18])
def test_one_run_with_an_impossible_time_does_not_take_history_down(isolated_store: Path, created_at: float) -> None:
    """A row written before imports were range-checked (or by another tool): the page shows it with "—"."""
    store = Store(isolated_store)
    good = store.create_run(RunConfig().to_dict(), status="finished")
    bad = store.create_run(RunConfig().to_dict(), status="finished", created_at=created_at)
    at = app("pages/history.py").run()
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    assert {good, bad} <= set(table["id"]), "both runs are listed"
    assert "—" in set(table["when"])


def test_one_run_with_a_status_this_version_does_not_know_does_not_take_history_down(isolated_store: Path) -> None:
    """A newer version sharing the store wrote a status this one lacks: the page lists the run as interrupted."""
    import sqlite3

    store = Store(isolated_store)
    good = store.create_run(RunConfig().to_dict(), status="finished")
    odd = store.create_run(RunConfig().to_dict(), status="finished")
    with sqlite3.connect(isolated_store) as con:
        con.execute("UPDATE runs SET status = 'paused' WHERE id = ?", (odd,))
    at = app("pages/history.py").run()
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    assert dict(zip(table["id"], table["status"])) == {good: "finished", odd: "interrupted"}


def test_a_crafted_link_is_echoed_as_text_not_markdown() -> None:
    at = app("pages/train.py")
    evil = "[click](https://evil.example/x)![img](https://evil.example/p.png)"
    at.query_params["epochs"] = evil
    at.query_params["device"] = f"cpu{evil}"
    at.query_params[f"x{evil}"] = "1"
    at.query_params["colour`](https://evil.example)"] = "1"
    at.run()
    assert not at.exception, at.exception
    notes = bodies(at.warning)
    assert "left out" in notes, notes
    assert "evil.example" in notes, "the bad values are named"
    assert not UNESCAPED_LINK.search(outside_code(notes)), notes
    assert "https://" not in outside_code(notes), notes


def test_outside_code_helper_keeps_only_running_text() -> None:
    assert outside_code("a `b` c ``d`e`` f") == "a  c  f"


def test_an_imported_record_with_markup_in_its_hardware_and_error_is_shown_as_text(isolated_store: Path) -> None:
    record = {"schema": "bench.run/1", "id": 1, "status": "failed", "config": RunConfig().to_dict(),
              "hardware": {"cpu": {"model": "Xeon ![p](https://evil.example/p.png)", "logical_cores": 2}, "gpus": []},
              "info": {}, "epochs": [{"epoch": 1, "epoch_seconds": 1.0, "includes_tracing": True},
                                     {"epoch": 2, "epoch_seconds": 0.5, "includes_tracing": False}],
              "samples": [{"t_s": 0.0, "cpu_percent": 50.0, "gpus": []}],
              "error": {"error_type": "Boom", "message": "see [here](https://evil.example)", "hint": ":red[x]"}}
    at = AppTest.from_function(_show_imported, args=(json.dumps(record).encode(),), default_timeout=30).run()
    assert not at.exception, at.exception
    shown = bodies(at.markdown) + "\n" + bodies(at.error)
    assert "evil.example" in shown, shown
    assert not UNESCAPED_LINK.search(outside_code(shown)), shown
    assert "https://" not in outside_code(shown), shown


def _show_imported(data: bytes) -> None:
    from ui import results

    results.show_imported(data, key="t")


EVIL = "[x](https://evil.example/x) ![i](https://evil.example/i.png) <img src=x> :red[r] $x$"
BARE = "www.evil.example me@evil.example"  # addresses GFM makes links of without any markup
# what markdown would act on in the source, outside a code span (ui.safe_text.escape shows "\]\(https\:", "\<img")
ACTIVE_MARKUP = re.compile(r"(?<!\\)\]\(https://evil|(?<!\\)<img|(?<!\\):red(?<!\\)\[|(?<!\\)\$x(?<!\\)\$")
# a bare address, which the renderer finds in the text as it reads after the escapes ("https\://x" is still one)
BARE_ADDRESS = re.compile(r"(?i)https?://evil|www\.evil|\w@evil")


def _hostile_run(run_id: int, device: str) -> dict:
    config = {**RunConfig().to_dict(), "device": device, "epochs": 3}
    return {"schema": "bench.run/1", "id": run_id, "status": "finished", "config": config, "label": f"{EVIL} {BARE}",
            "hardware": {"cpu": {"model": f"Xeon {BARE} {EVIL}", "logical_cores": 2}, "gpus": []},
            "info": {"placement": f"/device:{EVIL}", "framework": EVIL},
            "epochs": [{"epoch": 1, "epoch_seconds": 1.0, "includes_tracing": True},
                       {"epoch": 2, "epoch_seconds": 0.5, "includes_tracing": False},
                       {"epoch": 3, "epoch_seconds": 0.5 + 0.1 * run_id, "includes_tracing": False}],
            "samples": [{"t_s": 0.0, "cpu_percent": 50.0, "gpus": []}]}


def _hostile_comparison() -> bytes:
    """A comparison whose targets (its runs' devices), labels, CPU model, placement and framework are markup."""
    return json.dumps({"schema": "bench.comparison/1", "comparison": None,
                       "runs": [_hostile_run(1, "cpu"), _hostile_run(2, f"cpu {EVIL} {BARE}")]}).encode()


# elements whose text Streamlit does not render as markdown: a chart's spec, a dataframe, a component's data, code
NOT_MARKDOWN = {"PlotlyChart", "Arrow", "ArrowTable", "DataFrame", "BidiComponent", "IFrame", "Html", "Code", "Text",
                "Json"}


def _markdown_texts(at: AppTest) -> list[str]:
    """Every text the page hands Streamlit as markdown: each element's string fields (bodies, labels, help, a
    progress bar's text, a radio's options) and a table's cells; not a chart's spec nor a dataframe (drawn as text)."""
    out: list[str] = []

    def walk(node) -> None:
        proto = getattr(node, "proto", None)
        if type(node).__name__ == "Table":
            frame = node.value
            out.extend(str(v) for v in [*frame.columns, *frame.to_numpy().ravel()])
        elif proto is not None and hasattr(proto, "ListFields") and type(proto).__name__ not in NOT_MARKDOWN:
            for field, value in proto.ListFields():
                values = value if isinstance(value, (list, tuple)) or hasattr(value, "extend") else [value]
                out.extend(v for v in values if isinstance(v, str) and field.name not in ("id", "form_id"))
        children = getattr(node, "children", None)
        for child in (children.values() if isinstance(children, dict) else []):
            walk(child)

    walk(at._tree)
    return out


def _acts(markdown: str) -> bool:
    """Whether ``markdown`` holds, outside its code spans, markup that acts or a bare address made a link."""
    source = outside_code(markdown)
    return bool(ACTIVE_MARKUP.search(source) or BARE_ADDRESS.search(re.sub(r"\\(.)", r"\1", source)))


def _active_markup(at: AppTest) -> list[str]:
    return [text for text in _markdown_texts(at) if _acts(text)]


def test_a_hostile_comparison_is_drawn_as_text_on_compare_and_history(isolated_store: Path) -> None:
    """An imported comparison whose target, device, label, CPU and framework texts are links, an image, HTML, a
    directive and maths: the Compare page (the file uploaded) and History (imported, both runs selected) show them,
    escaped or in code spans, and never as markup that acts."""
    from bench.output import report

    data = _hostile_comparison()
    at = app("pages/compare.py").run()
    at.file_uploader(key="cmp_import").set_value(("evil.json", data, "application/json")).run()
    assert not at.exception, at.exception
    shown = "\n".join(_markdown_texts(at))
    assert "evil.example" in shown and "about as fast" in shown, "the headline names the targets"
    assert "me@" in shown and "www" in shown, "the bare addresses are shown"
    assert not _active_markup(at), _active_markup(at)

    ids = report.import_into_store(Store(isolated_store), report.load_record_file(data))
    at = app("pages/history.py").run()
    assert not at.exception, at.exception
    at.session_state["hist_table"] = {"selection": {"rows": list(range(len(ids))), "columns": []}}
    at.run()
    assert not at.exception, at.exception
    shown = "\n".join(_markdown_texts(at))
    assert "evil.example" in shown and "Why this speed" in shown, "the runs are shown"
    assert not _active_markup(at), _active_markup(at)


def test_the_markup_pattern_finds_each_active_form_and_none_escaped() -> None:
    from ui.safe_text import code, escape

    for raw in ("[x](https://evil.example/x)", "![i](https://evil.example/i.png)", "see https://evil.example",
                "<img src=x>", ":red[r]", "$x$", "www.evil.example", "_www.evil.example", "me@evil.example"):
        assert _acts(raw), raw
        assert not _acts(escape(raw)), escape(raw)
        assert not _acts(code(raw)), code(raw)
    assert _acts("https\\://evil.example"), "a backslash does not stop a bare address"
