"""Real browser: a CPU-1-thread vs CPU-all-threads comparison is drawn live from its stream as the Train page's panel
is (each run's status line updated in place, the charts appending), then shows its headline, and its HTML report
opens."""

from __future__ import annotations

import re

import pytest

from tests.e2e.steps import screenshot, set_number
from tests.polling import wait_for

pytestmark = pytest.mark.e2e

LIVE = """() => ({
    builds: [...document.querySelectorAll('.bench-live-header')].map((h) => Number(h.dataset.builds || 0)),
    updates: [...document.querySelectorAll('.bench-live-header')].map((h) => Number(h.dataset.updates || 0)),
    full: [...document.querySelectorAll('.bench-live-chart')].map((gd) => Number(gd.dataset.fullRenders || 0)),
    extends: [...document.querySelectorAll('.bench-live-chart')].map((gd) => Number(gd.dataset.extends || 0)),
    traces: [...document.querySelectorAll('.bench-live-chart')].map((gd) => (gd.data || []).length),
    resyncs: [...document.querySelectorAll('.bench-live-chart')].map(
        (gd) => (gd.dataset.resyncs || '').split('; ').filter(Boolean).length)})"""


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
    seen: list[dict] = []

    def look() -> dict:
        seen.append(live := page.evaluate(LIVE))
        return live

    with server.holding_last_epoch():
        page.get_by_role("button", name="Start comparison").click()
        wait_for(lambda: len(page.evaluate(LIVE)["builds"]) == 2, 90, "each run's status as one live element")
        wait_for(lambda: (live := page.evaluate(LIVE))["full"] and len(live["full"]) == 2 and all(live["full"]), 60,
                 "the live comparison charts")
        screenshot(page, "compare-live")  # the whole page (a live element may be re-attached while it scrolls)
        wait_for(lambda: (live := look())["builds"] and len(seen) >= 5 and live["updates"][0] >= 3, 90,
                 "five looks at the live group and three in-place refreshes", poll_s=0.3)
    while look()["builds"]:
        page.wait_for_timeout(300)
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
    wait_for(lambda: headline.count() > 0 and page.get_by_role("button", name="HTML report").count() > 0, 180,
             "the comparison headline and its export buttons")
    text = headline.first.inner_text()
    assert "cpu/1" in text and "cpu" in text.replace("cpu/1", "")
    assert re.search(r"spread \d+\.\dx–\d+\.\dx", text)
    assert page.get_by_text("First epoch, with tracing, reported apart").count() > 0
    # ended: the lines and the headline are Streamlit's own elements; the two charts stay where they were, complete
    wait_for(lambda: not page.evaluate(LIVE)["builds"], 30, "the live status lines gone")
    wait_for(lambda: page.locator(".js-plotly-plot").count() >= 2, 30, "the ended comparison's two charts")
    assert page.locator(".bench-live-chart").first.locator(".barlayer .point").count() == 6, "3 epochs x 2 runs"
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
