"""A store that is damaged before the dashboard starts: every page that reads the store says why it cannot be used
and what to do (move the file aside, or point BENCH_STORE elsewhere), never only that it "could not be opened"."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]


def _damaged(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"garbage " * 4096)


def _texts(elements) -> str:
    """The elements' text as a reader sees it (markdown's backslash escapes removed)."""
    return re.sub(r"\\(.)", r"\1", "\n".join(str(e.value) for e in elements))


def test_history_says_the_store_is_damaged_and_how_to_move_it_aside(isolated_store: Path) -> None:
    _damaged(isolated_store)
    at = AppTest.from_file(str(ROOT / "pages/history.py"), default_timeout=30).run()
    assert not at.exception, at.exception
    errors = _texts(at.error)
    assert "damaged" in errors and f"{isolated_store}.damaged" in errors and "BENCH_STORE" in errors, errors
    assert "permissions" not in errors, "a damaged file is not a permissions problem"


@pytest.mark.parametrize("page", ["pages/train.py", "pages/compare.py", "pages/sweep.py", "pages/lesson.py"])
def test_pages_that_store_runs_say_why_the_store_is_missing(isolated_store: Path, page: str) -> None:
    _damaged(isolated_store)
    at = AppTest.from_file(str(ROOT / page), default_timeout=30).run()
    assert not at.exception, at.exception
    warnings = _texts(at.warning)
    assert "memory only" in warnings and "damaged" in warnings and f"{isolated_store}.damaged" in warnings, warnings
    assert "writable" not in warnings, "a damaged file is not a permissions problem"
