"""Real Chromium: a live run's panel is mounted once and updated in place: its header (status, progress, tiles) is one
element built once whose text changes, and its charts grow by appending (one full figure render per viewer, the data
growing after); a viewer who opens the page mid-run gets the whole history at once. The charts, in page order: time per epoch,
utilization, and from the first epoch on loss and accuracy."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.steps import NO_WHOLE_QUEUED, bars, open_train, open_watching, set_number, wait_for_js

pytestmark = pytest.mark.e2e

CHART = '[data-testid="stBidiComponentRegular"] .bench-live-chart'
STATE = """() => [...document.querySelectorAll('.bench-live-chart')].map((gd) => ({
    full: Number(gd.dataset.fullRenders || 0), extends: Number(gd.dataset.extends || 0),
    points: Number(gd.dataset.points || 0), x: (gd.data || []).map((t) => (t.x || []).slice()),
    bars: gd.querySelectorAll('.barlayer .point').length, resyncs: gd.dataset.resyncs || ''}))"""


# the live header's counters, and how many distinct header and tile nodes this page has held so far
HEADER = """() => { const h = document.querySelector('.bench-live-header');
    if (!h) return null;
    window.__benchHeaderNodes = window.__benchHeaderNodes || new Set();
    window.__benchHeaderNodes.add(h);
    const tiles = [...h.querySelectorAll('.blh-tile')];
    window.__benchTileNodes = window.__benchTileNodes || new Set();
    tiles.forEach((t) => window.__benchTileNodes.add(t));
    return {builds: Number(h.dataset.builds), updates: Number(h.dataset.updates), changes: Number(h.dataset.changes),
            nodes: window.__benchHeaderNodes.size, tileNodes: window.__benchTileNodes.size,
            progress: h.querySelector('.blh-progress-text').textContent}; }"""


# Conditions for wait_for_js, over the counters above: every live chart drawn (and how many there are), a chart's
# counter at least a value, a chart's first trace at least so many points long, the header refreshed so many times.
ALL_DRAWN = f"(n) => document.querySelectorAll('{CHART}').length === n && ({STATE})().every((c) => c.full)"
AT_LEAST = f"([i, key, n]) => {{ const c = ({STATE})()[i]; return !!c && c[key] >= n; }}"
TRACE_AT_LEAST = f"([i, n]) => {{ const c = ({STATE})()[i]; return !!c && c.x.length > 0 && c.x[0].length >= n; }}"
HEADER_UPDATES = f"(n) => {{ const h = ({HEADER})(); return !!h && h.updates >= n && h; }}"
# the utilization chart (the second) holds an epoch's dotted line (the first epoch's end, which builds it whole, is
# drawn) and no chart's whole draw waits its turn: the charts' counters, then
SETTLED = f"""() => {{ const gd = document.querySelectorAll('{CHART}')[1];
    return !!gd && !!gd.layout && (gd.layout.shapes || []).some((s) => s.type === 'line') && {NO_WHOLE_QUEUED}
        && ({STATE})(); }}"""


def charts(page) -> list[dict]:
    """[time per epoch, utilization, loss and accuracy (from the first epoch)]: each live chart's render counters and
    its traces' x values."""
    return page.evaluate(STATE)


def drawn(page) -> str:
    """For a failure message: how many live charts the page holds and their counters."""
    keys = ("full", "extends", "points", "bars", "resyncs")
    return f"{page.locator(CHART).count()} live chart(s): {[{k: c[k] for k in keys} for c in charts(page)]}"


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
        wait_for_js(page, ALL_DRAWN, lambda: f"both live charts drawn; {drawn(page)}", arg=2, timeout_ms=90_000)
        wait_for_js(page, AT_LEAST, "utilization points", arg=[1, "points", 4], timeout_ms=60_000)
        first_header = wait_for_js(page, HEADER, "the live header", timeout_ms=30_000)
        before = charts(page)
        wait_for_js(page, AT_LEAST, "the utilization chart to grow", arg=[1, "points", before[1]["points"] + 6],
                    timeout_ms=60_000)
        wait_for_js(page, AT_LEAST, "the first epoch bar on the live chart", arg=[0, "bars", 1], timeout_ms=120_000)
        wait_for_js(page, ALL_DRAWN, lambda: f"the live loss chart; {drawn(page)}", arg=3, timeout_ms=30_000)
        # before the first epoch's end a chart may go whole (the start-up's last phase reaches the newest sample, the
        # first bar changes the title); after it, every sample and epoch is appended. The page draws a chart at a
        # time at its own pace, so the bars may show the first epoch while the utilization chart's whole figure of
        # the same message still waits its turn: settled once that one is drawn too.
        settled = wait_for_js(page, SETTLED, lambda: f"the first epoch's line on the utilization chart; {drawn(page)}",
                              timeout_ms=30_000)
        wait_for_js(page, AT_LEAST, "three appends to the utilization chart",
                    arg=[1, "extends", settled[1]["extends"] + 3], timeout_ms=30_000)
        grown = charts(page)
        assert [c["full"] for c in grown] == [c["full"] for c in settled], grown  # appended, not drawn again
        assert grown[1]["extends"] >= 3 and grown[1]["points"] > before[1]["points"]
        assert len(grown[1]["x"][0]) > len(before[1]["x"][0])
        # the header: built once, the same DOM nodes throughout, its text changed in place at each refresh
        later = wait_for_js(page, HEADER_UPDATES, "the header to refresh", arg=first_header["updates"] + 5,
                            timeout_ms=60_000)
        assert later["builds"] == 1 and later["nodes"] == 1 and later["tileNodes"] == 4, later
        assert later["changes"] > first_header["changes"] and later["progress"] != first_header["progress"], later
        assert grown[1]["x"][0][: len(before[1]["x"][0])] == before[1]["x"][0], "appending keeps the earlier points"

        # a second viewer, mid-run: the whole history in its first render
        before_join = charts(page)  # what the first viewer had drawn whole before the late one opened
        late = browser.new_context(viewport={"width": 1400, "height": 1300}).new_page()
        try:
            open_watching(late, server.url)  # the run is live: its panel first, the settings folded
            assert not late.get_by_label("Epochs", exact=True).is_visible()
            wait_for_js(late, ALL_DRAWN, lambda: f"the late viewer's live charts; {drawn(late)}", arg=3,
                        timeout_ms=90_000)
            first = charts(late)
            seen = charts(page)  # what the first viewer has drawn whole so far
            assert first[1]["x"][0][0] == seen[1]["x"][0][0], "the late viewer's line starts where the run started"
            assert len(first[1]["x"][0]) >= len(grown[1]["x"][0]), (first[1]["points"], grown[1]["points"])
            assert first[0]["bars"] >= grown[0]["bars"] >= 1
            wait_for_js(late, AT_LEAST, "the late viewer's chart to grow", arg=[1, "points", first[1]["points"] + 1],
                        timeout_ms=60_000)
            # the late viewer drew the history whole from its snapshot, and after that only what every viewer drew
            # whole (a chart whose traces change goes whole for all). A stream the browser reconnected (a loaded
            # machine holds a connection past its heartbeat) sends a snapshot again, drawn whole: counted apart.
            # A chart the first viewer drew whole while the late one joined may come before or after the late one's
            # snapshot, so the late viewer's count lies between what the first viewer drew whole since each of two
            # readings: the one before the late viewer opened and the one after it drew.
            now = charts(page)
            snapshots = late.evaluate("() => window.__benchFeed.snapshots")
            assert snapshots >= 1
            for late_chart, first_now, first_seen, first_before in zip(charts(late), now, seen, before_join):
                least = snapshots + first_now["full"] - first_seen["full"]
                most = snapshots + first_now["full"] - first_before["full"]
                assert least <= late_chart["full"] <= most, (charts(late), now, seen, before_join, snapshots)
        finally:
            late.context.close()
        # the next epoch reaches the loss chart as an append as well
        wait_for_js(page, TRACE_AT_LEAST, "the second epoch on the live loss chart", arg=[2, 2], timeout_ms=120_000)
        assert charts(page)[2]["full"] == 1 and charts(page)[2]["extends"] >= 1, charts(page)[2]
    expect(page.get_by_text("Finished: steady epoch").first, "the run to finish").to_be_visible(timeout=180_000)
    # the finished run's charts are ordinary Plotly charts with every epoch
    expect(bars(page), "the final epoch chart").to_have_count(4, timeout=30_000)
