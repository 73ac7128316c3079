"""Real Chromium: when a run ends on the Train page, its header (the live view's, in every state) changes in place:
one header with its four tiles from the first to the last, never two, never none, never a grey placeholder or an
empty chart, and the sidebar's line and the header say the same status at every moment (both from one message of
the stream). What the page shows is recorded in the page itself every 50 ms, however late the test gets round to
reading it."""

from __future__ import annotations

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

from tests.e2e.steps import open_train, set_number, settled, wait_for_js, what_the_page_shows

pytestmark = pytest.mark.e2e

RECORD = """() => {
    window.__shown = [];
    window.__looks = 0;
    let last = "";
    const t0 = performance.now();
    setInterval(() => {
        window.__looks += 1;
        const main = document.querySelector('[data-testid="stMain"]');
        const side = document.querySelector('.bench-live-status');
        if (!main) return;
        const visible = (selector) => [...main.querySelectorAll(selector)].filter((e) => e.checkVisibility());
        const charts = visible('.bench-live-chart');
        const headers = visible('.bench-live-header');
        const line = side ? side.innerText : "";
        const now = {
            headers: headers.length,
            tiles: visible('.bench-live-header .blh-tile').length,
            header_status: headers.length ? headers[0].dataset.status : null,
            line_status: (line.match(/Run #\\d+: (\\w+)/) || [])[1] || null,
            charts: charts.length,
            empty_charts: charts.filter((c) => !c.querySelector('.main-svg')).length,
            finished: main.innerText.includes('Finished: steady'),
        };
        const key = JSON.stringify(now);
        if (key !== last) { last = key; window.__shown.push({at_ms: Math.round(performance.now() - t0), ...now}); }
    }, 50);
}"""


def test_a_runs_end_changes_its_header_in_place_with_the_sidebar(page, server):
    open_train(page, server.url)
    set_number(page, "Epochs", 3)
    set_number(page, "Training samples (0 = all)", 5000)
    page.evaluate(RECORD)
    page.get_by_role("button", name="Start").click()
    try:  # the run's end drawn, and the page's own messages for it
        page.wait_for_function("""() => document.querySelector('[data-testid="stMain"]').innerText
            .includes('Finished: steady') && document.querySelector('.bench-live-header[data-status="finished"]')""",
                               timeout=180_000, polling=200)
    except PlaywrightTimeout:
        raise AssertionError(f"the run did not end on the page: {what_the_page_shows(page, server)}") from None
    settled(page)  # the script run that drew the end is over: all it draws for the end is on the page
    looks = page.evaluate("() => window.__looks")
    # the record's next look proves it saw the settled page; the sidebar's line then says the header's status
    wait_for_js(page, """(looks) => { const s = window.__shown.at(-1);
                                      return window.__looks > looks
                                          && (s.line_status === null || s.line_status === s.header_status); }""",
                "the record to look at the settled page, its sidebar line saying the header's status", arg=looks)
    shown = page.evaluate("() => window.__shown")
    assert shown[-1]["finished"] and shown[-1]["tiles"] == 4 and shown[-1]["header_status"] == "finished", shown[-1]
    first = next(i for i, s in enumerate(shown) if s["headers"])
    after = shown[first:]
    assert all(s["headers"] == 1 and s["tiles"] == 4 for s in after), f"one header, four tiles, throughout: {after}"
    assert not any(s["empty_charts"] for s in shown), f"no chart shown empty: {shown}"
    drawn = [s["charts"] for s in after]
    assert drawn == sorted(drawn), f"no chart goes away: {after}"
    disagree = [s for s in after if s["line_status"] and s["header_status"] != s["line_status"]]
    assert not disagree, f"the sidebar and the header said different things: {disagree}"
    expect(page.get_by_role("button", name="Stop"), "the Stop button goes at the run's end").to_have_count(0)
