"""Real browser: History lists stored runs, overlays two selected ones with the headline, and exports them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import expect

from bench.output import report
from bench.store import Store
from tests.e2e.conftest import Server
from tests.e2e.steps import ROOT, rerun_ends, screenshot

pytestmark = pytest.mark.e2e
MEASURED = ROOT / "docs" / "measurements" / "cmp-text.json"  # a real comparison measured with this tool


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    folder = tmp_path_factory.mktemp("history")
    store = Store(folder / "runs.sqlite3")
    ids = report.import_into_store(store, report.load_record_file(MEASURED))
    assert len(ids) == 2
    srv = Server(folder)  # never trains
    yield srv
    srv.stop()


def click_row(page, row: int) -> None:
    """Tick a row's selection box: the grid is drawn on a canvas, so click where the box is drawn; return once the
    rerun the selection starts has ended."""
    grid = page.locator('[data-testid="stDataFrame"]').first
    box = grid.bounding_box()
    header, height = 35, 35
    with rerun_ends(page, f"the rerun after selecting row {row}"):
        page.mouse.click(box["x"] + 16, box["y"] + header + height * row + height / 2)


def test_overlay_two_runs_and_export_them(page, server, tmp_path: Path):
    page.goto(server.url + "/history")
    page.get_by_role("heading", name="History").wait_for()
    page.locator('[data-testid="stDataFrame"]').first.wait_for()
    click_row(page, 0)
    click_row(page, 1)
    expect(page.get_by_text("2 run(s) selected").first, "the two selected runs").to_be_visible(timeout=30_000)
    headline = page.get_by_text("trains").filter(has_text="faster than").first
    headline.wait_for(timeout=30_000)
    assert "cpu/1" in headline.inner_text()
    page.locator(".js-plotly-plot").nth(1).wait_for(timeout=30_000)
    expect(page.locator(".js-plotly-plot").first.locator(".barlayer .point")).to_have_count(8)  # 4 epochs x 2 runs
    screenshot(page, "history-overlay")

    with page.expect_download() as info:
        page.get_by_role("button", name="JSON").click()
    saved = tmp_path / "comparison.json"
    info.value.save_as(saved)
    doc = json.loads(saved.read_text())
    assert doc["schema"] == "bench.comparison/1"
    assert len(doc["runs"]) == 2 and doc["comparison"]["speedup_median"] == pytest.approx(
        json.loads(MEASURED.read_text())["comparison"]["speedup_median"])
