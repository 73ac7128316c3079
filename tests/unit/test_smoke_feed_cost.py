"""The smoke run of benchmarks/feed_cost.py (three ways of feeding a live element, a server each), on its current
command line at its smallest size: one page, one round, each window until the element's next update (``--window 0``,
no settling first; docs/TESTING.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.smoke import needs_browser, read, run


@pytest.mark.slow
def test_feed_cost_smoke_reads_each_way_of_feeding(tmp_path: Path) -> None:
    needs_browser()
    out = tmp_path / "feed.json"
    run(["-m", "benchmarks.feed_cost", "--pages", "1", "--rounds", "1", "--window", "0", "--json", str(out)], tmp_path,
        timeout_s=300)
    rows = read(out)
    assert rows and all("chromium_cores" in row for row in rows)
