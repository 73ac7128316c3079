"""Pages under a failing store, a hostile record and a crafted link: each keeps working for every viewer, says
what went wrong and what to do, and shows outside text as text (never as a link or an image the browser loads)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from bench.config import RunConfig
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
    assert not UNESCAPED_LINK.search(_outside_code(notes)), notes
    assert "https://" not in _outside_code(notes), notes


def _outside_code(markdown: str) -> str:
    """The parts of ``markdown`` outside its code spans (any fence length), where markup would act."""
    out, i = [], 0
    while i < len(markdown):
        if markdown[i] == "`":
            fence = re.match(r"`+", markdown[i:]).group(0)
            end = markdown.find(fence, i + len(fence))
            if end < 0:
                out.append(markdown[i:])
                break
            i = end + len(fence)
        else:
            out.append(markdown[i])
            i += 1
    return "".join(out)


def test_outside_code_helper_keeps_only_running_text() -> None:
    assert _outside_code("a `b` c ``d`e`` f") == "a  c  f"


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
    assert not UNESCAPED_LINK.search(_outside_code(shown)), shown
    assert "https://" not in _outside_code(shown), shown


def _show_imported(data: bytes) -> None:
    from ui import results

    results.show_imported(data, key="t")
