"""Real Chromium: a live run's panel is mounted once and updated in place: its header (status, progress, tiles) is one
element built once whose text changes, and its charts grow by appending (one full figure render per viewer, the data
growing after); a viewer who opens the page mid-run gets the whole history at once. The charts, in page order: time per epoch,
utilization, and from the first epoch on loss and accuracy."""

from __future__ import annotations

import pytest

from tests.e2e.steps import open_train, open_watching, set_number
from tests.polling import wait_for

pytestmark = pytest.mark.e2e

CHART = '[data-testid="stBidiComponentRegular"] .bench-live-chart'
STATE = """() => [...document.querySelectorAll('.bench-live-chart')].map((gd) => ({
    full: Number(gd.dataset.fullRenders || 0), extends: Number(gd.dataset.extends || 0),
    points: Number(gd.dataset.points || 0), x: (gd.data || []).map((t) => (t.x || []).slice()),
    bars: gd.querySelectorAll('.barlayer .point').length, resyncs: gd.dataset.resyncs || ''}))"""


HEADER = """() => { const h = document.querySelector('.bench-live-header');
    if (!h) return null;
    window.__benchHeaderNodes = window.__benchHeaderNodes || new Set();
    window.__benchHeaderNodes.add(h);
    const tiles = [...h.querySelectorAll('[data-testid="stMetric"]')];
    window.__benchTileNodes = window.__benchTileNodes || new Set();
    tiles.forEach((t) => window.__benchTileNodes.add(t));
    return {builds: Number(h.dataset.builds), updates: Number(h.dataset.updates), changes: Number(h.dataset.changes),
            nodes: window.__benchHeaderNodes.size, tileNodes: window.__benchTileNodes.size,
            progress: h.querySelector('[data-testid="stProgress"] p').textContent}; }"""


def header(page) -> dict | None:
    """The live header's counters, and how many distinct header and tile nodes this page has held so far."""
    return page.evaluate(HEADER)


def charts(page) -> list[dict]:
    """[time per epoch, utilization, loss and accuracy (from the first epoch)]: each live chart's render counters and
    its traces' x values."""
    return page.evaluate(STATE)


def test_live_charts_append_and_a_late_viewer_gets_the_whole_history(browser, page, server):
    open_train(page, server.url)
    set_number(page, "Epochs", 4)
    set_number(page, "Training samples (0 = all)", 30000)
    # batch 4: 7,500 steps, replayed at 7.5 s an epoch (the server's PacedWorker); the run is held before its last
    # epoch, so it is live when the late viewer joins. The pace is not only for staying live, and shorter epochs
    # fail: the page draws its first two charts before the first epoch ends (4 to 6 s after Start here; at 2 s epochs
    # the loss chart was there too, and "both live charts drawn" timed out). The 3 epochs before the hold (22.5 s)
    # are for two checks that need the run to move on: the loss chart, drawn after the first epoch, gets a later one
    # appended while live, and the header's first reading comes before the hold (held, its text stands still).
    set_number(page, "Batch size", 4)
    with server.holding_last_epoch():  # live until the checks below are done
        page.get_by_role("button", name="Start").click()
        wait_for(lambda: page.locator(CHART).count() == 2 and all(c["full"] for c in charts(page)), 90,
                 "both live charts drawn")
        wait_for(lambda: charts(page)[1]["points"] >= 4, 60, "utilization points")
        first_header = wait_for(lambda: header(page), 30, "the live header")
        before = charts(page)
        wait_for(lambda: charts(page)[1]["points"] >= before[1]["points"] + 6, 60, "the utilization chart to grow")
        wait_for(lambda: (live := charts(page)) and live[0]["bars"] >= 1, 120, "the first epoch bar on the live chart")
        wait_for(lambda: page.locator(CHART).count() == 3 and charts(page)[2]["full"], 30, "the live loss chart")
        # the utilization chart is appended at every 2 s chart refresh, epoch or not: wait for three appends (the first
        # epoch, however long, can end two refreshes after the page's first draw, and then the check below failed)
        wait_for(lambda: charts(page)[1]["extends"] >= 3, 30, "three appends to the utilization chart")
        grown = charts(page)
        assert [c["full"] for c in grown] == [1, 1, 1], grown  # drawn whole once each; everything after was appended
        assert grown[1]["extends"] >= 3 and grown[1]["points"] > before[1]["points"]
        assert len(grown[1]["x"][0]) > len(before[1]["x"][0])
        # the header: built once, the same DOM nodes throughout, its text changed in place at each refresh
        later = wait_for(lambda: (h := header(page)) and h["updates"] >= first_header["updates"] + 5 and h, 60,
                         "the header to refresh")
        assert later["builds"] == 1 and later["nodes"] == 1 and later["tileNodes"] == 4, later
        assert later["changes"] > first_header["changes"] and later["progress"] != first_header["progress"], later
        assert grown[1]["x"][0][: len(before[1]["x"][0])] == before[1]["x"][0], "appending keeps the earlier points"

        # a second viewer, mid-run: the whole history in its first render
        late = browser.new_context(viewport={"width": 1400, "height": 1300}).new_page()
        try:
            open_watching(late, server.url)  # the run is live: its panel first, the settings folded
            assert not late.get_by_label("Epochs", exact=True).is_visible()
            wait_for(lambda: late.locator(CHART).count() == 3 and all(c["full"] for c in charts(late)), 90,
                     "the late viewer's live charts")
            first = charts(late)
            seen = charts(page)
            assert first[1]["x"][0][0] == seen[1]["x"][0][0], "the late viewer's line starts where the run started"
            assert len(first[1]["x"][0]) >= len(grown[1]["x"][0]), (first[1]["points"], grown[1]["points"])
            assert first[0]["bars"] >= grown[0]["bars"] >= 1
            wait_for(lambda: charts(late)[1]["points"] > first[1]["points"], 60, "the late viewer's chart to grow")
            assert [c["full"] for c in charts(late)] == [1, 1, 1]
        finally:
            late.context.close()
        # the next epoch reaches the loss chart as an append as well
        wait_for(lambda: len(charts(page)[2]["x"][0]) >= 2, 120, "the second epoch on the live loss chart")
        assert charts(page)[2]["full"] == 1 and charts(page)[2]["extends"] >= 1, charts(page)[2]
    wait_for(lambda: page.get_by_text("Finished: steady epoch").count() > 0, 180, "the run to finish")
    # the finished run's charts are ordinary Plotly charts with every epoch
    wait_for(lambda: page.locator(".js-plotly-plot").first.locator(".barlayer .point").count() == 4, 30,
             "the final epoch chart")
