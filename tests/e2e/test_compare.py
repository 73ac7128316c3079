"""Real browser: a CPU-1-thread vs CPU-all-threads comparison is drawn live from its stream as the Train page's panel
is (each run's status line updated in place, the charts appended to, not drawn whole, while a run is live), then
shows its headline, and its HTML report opens."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.steps import NO_WHOLE_QUEUED, screenshot, set_number, wait_for_js

pytestmark = pytest.mark.e2e

LIVE = """() => ({
    builds: [...document.querySelectorAll('.bench-live-header')].map((h) => Number(h.dataset.builds || 0)),
    updates: [...document.querySelectorAll('.bench-live-header')].map((h) => Number(h.dataset.updates || 0)),
    full: [...document.querySelectorAll('.bench-live-chart')].map((gd) => Number(gd.dataset.fullRenders || 0)),
    extends: [...document.querySelectorAll('.bench-live-chart')].map((gd) => Number(gd.dataset.extends || 0)),
    traces: [...document.querySelectorAll('.bench-live-chart')].map((gd) => (gd.data || []).length),
    points: [...document.querySelectorAll('.bench-live-chart')].map((gd) => Number(gd.dataset.points || 0)),
    resyncs: [...document.querySelectorAll('.bench-live-chart')].map(
        (gd) => (gd.dataset.resyncs || '').split('; ').filter(Boolean).length)})"""
CHARTS_DRAWN = f"() => {{ const live = ({LIVE})(); return live.full.length === 2 && live.full.every(Boolean); }}"
# one look at the live group, kept in the page (window.__benchLooks) with every look before it
LOOK = f"""() => {{ const live = ({LIVE})();
    (window.__benchLooks = window.__benchLooks || []).push(live); return live; }}"""


def test_cpu1_vs_cpu_all_headline_and_html_report(page, server, tmp_path):
    page.goto(server.url + "/compare")
    page.get_by_role("heading", name="Compare").wait_for()
    page.get_by_label("Epochs", exact=True).wait_for()
    set_number(page, "Epochs", 3)
    set_number(page, "Training samples (0 = all)", 6000)
    set_number(page, "Batch size", 4)  # 1,500 steps: replayed at about 1.5 s an epoch, so the group is seen live
    # watched until the group ends (1 s header and 2 s chart refreshes): the status elements are built once and
    # change their text in place; a chart is drawn whole only when its set of traces changes (a run's first points,
    # the second run's lines), everything else is appended. The runs are held before their last epoch until five
    # looks and three in-place refreshes were seen, so a slow machine cannot let the group end before it is watched.
    with server.holding_last_epoch():
        page.get_by_role("button", name="Start comparison").click()
        wait_for_js(page, f"() => ({LIVE})().builds.length === 2", "each run's status as one live element",
                    timeout_ms=90_000)
        wait_for_js(page, CHARTS_DRAWN, "the live comparison charts", timeout_ms=60_000)
        screenshot(page, "compare-live")  # the whole page (a live element may be re-attached while it scrolls)
        wait_for_js(page, f"""() => {{ const live = ({LOOK})();
                        return live.builds.length > 0 && window.__benchLooks.length >= 5 && live.updates[0] >= 3; }}""",
                    "five looks at the live group and three in-place refreshes", timeout_ms=90_000, poll_ms=300)
        # the first run held before its last epoch, still sampled: once its lines are drawn the charts are only
        # appended to (the hatched epoch's note in the title included)
        second = f"() => {{ const live = ({LIVE})(); return live.points[0] >= 2 && {NO_WHOLE_QUEUED} && live; }}"
        settled = wait_for_js(page, second, "the first run's second epoch, drawn", timeout_ms=60_000)
        grown = wait_for_js(page, f"(n) => {{ const live = ({LIVE})(); return live.extends[1] >= n && live; }}",
                            "three appends to the utilization chart", arg=settled["extends"][1] + 3,
                            timeout_ms=60_000)
        assert grown["full"] == settled["full"] and grown["traces"] == settled["traces"], (settled, grown)
    wait_for_js(page, f"() => ({LOOK})().builds.length === 0", "the live group to end", timeout_ms=180_000,
                poll_ms=300)
    seen: list[dict] = page.evaluate("() => window.__benchLooks")
    seen.pop()  # the last look found the group ended
    assert len(seen) >= 5 and all(s["builds"] == [1, 1] for s in seen), seen[-1]
    assert max(s["updates"][0] for s in seen) >= 3, seen[-1]  # refreshed in place, not rebuilt
    charted = [s for s in seen if len(s["full"]) == 2]
    assert charted, seen[-1]
    for i, name in enumerate(("time per epoch", "utilization")):
        # over the window watched: whole draws only where the traces changed, or the browser asked for the figure
        # again (a message it missed under load); before the first poll it may have gone through a set not seen
        changes = sum(a["traces"][i] != b["traces"][i] for a, b in zip(charted, charted[1:]))
        resyncs = charted[-1]["resyncs"][i] - charted[0]["resyncs"][i]
        assert charted[-1]["full"][i] - charted[0]["full"][i] <= changes + resyncs, (name, charted)
    assert max(s["extends"][1] for s in charted) >= 1, charted[-1]  # the utilization chart appended

    headline = page.get_by_text(re.compile(r"trains \d+\.\dx faster than|are about as fast"))
    expect(headline.first, "the comparison headline").to_be_visible(timeout=180_000)
    expect(page.get_by_role("button", name="HTML report"), "the comparison's export buttons").to_be_visible(
        timeout=180_000)
    text = headline.first.inner_text()
    assert "cpu/1" in text and "cpu" in text.replace("cpu/1", "")
    assert re.search(r"spread \d+\.\dx–\d+\.\dx", text)
    assert page.get_by_text("First epoch, with tracing, reported apart").count() > 0
    # ended: the lines and the headline are Streamlit's own elements; the two charts stay where they were, complete
    expect(page.locator(".bench-live-header"), "the live status lines gone").to_have_count(0, timeout=30_000)
    expect(page.locator(".js-plotly-plot").nth(1), "the ended comparison's two charts").to_be_attached(timeout=30_000)
    expect(page.locator(".bench-live-chart").first.locator(".barlayer .point"), "3 epochs x 2 runs").to_have_count(6)
    headline.first.scroll_into_view_if_needed()
    screenshot(page, "compare-cpu1-vs-cpu")

    with page.expect_download() as info:
        page.get_by_role("button", name="HTML report").click()
    report = tmp_path / "report.html"
    info.value.save_as(report)
    html = report.read_text()
    assert "faster than" in html or "about as fast" in html

    viewer = page.context.new_page()
    viewer.goto(report.as_uri())
    viewer.locator(".js-plotly-plot").first.wait_for(timeout=20_000)
    assert viewer.locator(".js-plotly-plot").count() >= 2
    assert viewer.locator(".barlayer .point").count() >= 6  # 3 epochs x 2 runs
    screenshot(viewer, "compare-html-report")
