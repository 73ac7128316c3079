"""Real Chromium: when a run ends on the Train page, the ended run's header replaces the live one in place: the page
never shows grey placeholders (Streamlit's stSkeleton, drawn while an element's code loads), an empty chart, no header
at all, or two headers at once. What the page shows is recorded in the page itself every 50 ms, however late the test
gets round to reading it; the page opens with no run, so Streamlit loads its metric and progress code only when the
run ends (the slowest case)."""

from __future__ import annotations

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.e2e.steps import open_train, set_number, what_the_page_shows

pytestmark = pytest.mark.e2e

RECORD = """() => {
    window.__shown = [];
    let last = "";
    const t0 = performance.now();
    setInterval(() => {
        const main = document.querySelector('[data-testid="stMain"]');
        if (!main) return;
        const visible = (selector) => [...main.querySelectorAll(selector)].filter((e) => e.checkVisibility());
        const charts = visible('.bench-live-chart');
        const now = {
            skeletons: visible('[data-testid="stSkeleton"]').length,
            tiles: visible('[data-testid="stMetric"]').length,
            charts: charts.length,
            empty_charts: charts.filter((c) => !c.querySelector('.main-svg')).length,
            finished: main.innerText.includes('Finished: steady'),
        };
        const key = JSON.stringify(now);
        if (key !== last) { last = key; window.__shown.push({at_ms: Math.round(performance.now() - t0), ...now}); }
    }, 50);
}"""


def test_the_ended_runs_header_replaces_the_live_one_in_place(page, server):
    open_train(page, server.url)
    set_number(page, "Epochs", 3)
    set_number(page, "Training samples (0 = all)", 5000)
    page.evaluate(RECORD)
    page.get_by_role("button", name="Start").click()
    try:  # the ended run's header drawn, and the live header gone
        page.wait_for_function("""() => document.querySelector('[data-testid="stMain"]').innerText
            .includes('Finished: steady') && !document.querySelector('.bench-live-view[data-holding]')
            && !document.querySelector('.bench-live-header [data-testid="stMetric"]')""", timeout=180_000, polling=200)
    except PlaywrightTimeout:
        raise AssertionError(f"the run did not end on the page: {what_the_page_shows(page, server)}") from None
    page.wait_for_timeout(500)  # a few more records after the swap
    shown = page.evaluate("() => window.__shown")
    assert shown[-1]["finished"] and shown[-1]["tiles"] == 4, shown[-1]
    first_tiles = next(i for i, s in enumerate(shown) if s["tiles"])
    after = shown[first_tiles:]
    assert all(s["tiles"] == 4 for s in after), f"one header with its four tiles from the first on: {after}"
    assert not any(s["skeletons"] for s in shown), f"no grey placeholder: {shown}"
    assert not any(s["empty_charts"] for s in shown), f"no chart shown empty: {shown}"
    drawn = [s["charts"] for s in after]
    assert drawn == sorted(drawn), f"no chart goes away: {after}"
