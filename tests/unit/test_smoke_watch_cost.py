"""The smoke run of benchmarks/watch_cost.py (pages watching a replayed live run), on its current command line at
its smallest size: one page, 1 s windows, the late one right after the early one (a real pass: a minute after)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.smoke import needs_browser, read, run


@pytest.mark.slow
def test_watch_cost_smoke_reads_the_server_and_the_pages(tmp_path: Path) -> None:
    needs_browser()
    out = tmp_path / "watch.json"
    run(["-m", "benchmarks.watch_cost", "--pages", "1", "--window", "1", "--late-after", "1", "--json", str(out)], tmp_path, timeout_s=300)
    result = read(out)
    assert result, "no pass written"
    text = json.dumps(result)
    assert "server_cores" in text and "chromium_cores" in text
