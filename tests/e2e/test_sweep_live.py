"""Real Chromium: a live sweep's two charts (time per epoch, utilization of its points overlaid) come from its stream
as the Train page's do: drawn whole once, then appended to while a point is live, never drawn whole again while
its set of traces stands."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.steps import NO_WHOLE_QUEUED, wait_for_js

pytestmark = pytest.mark.e2e

CHART = ".bench-live-view .bench-live-chart"
STATE = f"""() => [...document.querySelectorAll('{CHART}')].map((gd) => ({{
    name: gd.dataset.name, full: Number(gd.dataset.fullRenders || 0), extends: Number(gd.dataset.extends || 0),
    points: Number(gd.dataset.points || 0), traces: (gd.data || []).length}}))"""
DRAWN = f"() => {{ const c = ({STATE})(); return c.length === 2 && c.every((x) => x.full) && c[1].points >= 4 && c; }}"
AT_LEAST = f"([i, key, n]) => {{ const c = ({STATE})()[i]; return !!c && c[key] >= n && ({STATE})(); }}"


def test_a_live_sweeps_charts_are_appended_to_not_drawn_again(page, server):
    page.goto(server.url + "/sweep")
    page.get_by_role("heading", name="Sweep", exact=True).wait_for()
    with server.holding_last_epoch():  # the first point stays live (and sampled) until the checks are done
        page.get_by_role("button", name="Start sweep").click()
        wait_for_js(page, DRAWN, lambda: f"the sweep's live charts; {page.evaluate(STATE)}", timeout_ms=120_000)
        assert [c["name"] for c in page.evaluate(STATE)] == ["cmp_epochs", "cmp_util"]
        # a point's first samples bring its lines (the chart goes whole); after them only new points and the
        # title's note on the hatched epoch: the utilization chart appended to three times, nothing drawn whole
        settled = wait_for_js(page, f"(n) => ({AT_LEAST})(n) && {NO_WHOLE_QUEUED} && ({STATE})()",
                              "the first point's second epoch, drawn", arg=[0, "points", 2], timeout_ms=60_000)
        grown = wait_for_js(page, AT_LEAST, "three appends to the utilization chart",
                            arg=[1, "extends", settled[1]["extends"] + 3], timeout_ms=60_000)
        assert [c["full"] for c in grown] == [c["full"] for c in settled], (settled, grown)
        assert [c["traces"] for c in grown] == [c["traces"] for c in settled], (settled, grown)
        assert grown[1]["points"] > settled[1]["points"], (settled, grown)
    expect(page.get_by_text("3 of 3 points done").first, "the sweep's end").to_be_visible(timeout=240_000)
    # ended: the charts hold every point's epochs (3 points x 3 epochs)
    expect(page.locator(CHART).first.locator(".barlayer .point"), "every epoch's bar").to_have_count(
        9, timeout=60_000)
