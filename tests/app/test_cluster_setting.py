"""The System page's cluster setting: without BENCH_RAY_ADDRESS it says how to use one; with an address nothing
answers at, it says why the cluster is not used, and the dashboard's runs stay on this machine."""

from __future__ import annotations

import pytest

from tests.app.test_pages import app


def _page_text(at) -> str:
    return " ".join(str(e.value) for kind in ("markdown", "caption", "error", "success") for e in getattr(at, kind))


def test_without_a_cluster_the_system_page_says_how_to_use_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BENCH_RAY_ADDRESS", raising=False)
    at = app("pages/system.py").run()
    assert not at.exception
    assert "BENCH_RAY_ADDRESS=HOST:PORT" in _page_text(at)


def test_an_unreachable_cluster_is_said_and_runs_stay_here(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("ray", reason="Ray is not installed: pip install -r requirements-ray.txt")
    monkeypatch.setenv("BENCH_RAY_ADDRESS", "127.0.0.1:9")
    at = app("pages/system.py").run()
    assert not at.exception
    errors = " ".join(str(e.value) for e in at.error)
    assert "The Ray cluster is not used" in errors and "cannot be reached" in errors, errors
    from ui import common

    assert common.get_manager().launcher is None  # the dashboard's own queue: runs train on this machine
