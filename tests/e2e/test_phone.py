"""Real Chromium at 390 x 844, a phone held upright: a viewer who opens Train while a run is live sees the run's status
and progress on the first screen (the settings folded), the tiles and charts one under the other, and no two epoch or
phase names on the utilization chart drawn over each other."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.steps import (
    main,
    new_page,
    open_train,
    open_watching,
    screenshot,
    set_number,
    start_and_wait_running,
    store_of,
    wait_for_js,
)
from tests.polling import wait_for

pytestmark = pytest.mark.e2e
PHONE = {"width": 390, "height": 844}

# every epoch or phase name drawn on a live chart, as boxes in page pixels (hidden names are not drawn)
NAMES = """(gd) => [...gd.querySelectorAll('.annotation')].map((a) => {
    const r = a.getBoundingClientRect();
    return {text: a.textContent, left: r.left, right: r.right, top: r.top, bottom: r.bottom};
}).filter((r) => r.right > r.left)"""
# the phone's live utilization chart (the second in the main area): its drawn names and its name counters, once the
# relayout that hides names has followed the draw that added them (as many drawn as it counts shown); else false
UTIL = "document.querySelectorAll('[data-testid=\"stMain\"] .bench-live-chart')[1]"
NAMES_SETTLED = f"""() => {{ const gd = {UTIL}; if (!gd) return false;
    const boxes = ({NAMES})(gd), all = Number(gd.dataset.names || 0), shown = Number(gd.dataset.namesShown || 0);
    return boxes.length === shown && {{boxes, all, shown}}; }}"""
NAMES_AT_LEAST = f"(n) => {{ const gd = {UTIL}; return !!gd && Number(gd.dataset.names || 0) >= n; }}"


def overlapping(boxes: list[dict]) -> list[tuple[str, str]]:
    return [(a["text"], b["text"]) for i, a in enumerate(boxes) for b in boxes[i + 1:]
            if a["left"] < b["right"] and b["left"] < a["right"] and a["top"] < b["bottom"] and b["top"] < a["bottom"]]


def test_a_phone_joining_a_live_run_sees_it_first_and_its_names_never_overlap(browser, page, server):
    open_train(page, server.url)
    set_number(page, "Epochs", 40)
    set_number(page, "Training samples (0 = all)", 20000)
    # 2,500 steps, replayed at 2.5 s an epoch, 40 of them: the epochs keep coming through the checks below, however
    # late a slow machine reaches them, and the run is stopped once they are done. (Held instead, a run is still
    # sampled: the chart's time axis grows without new epochs and squeezes out their names, so "a dozen names"
    # stood only from about 30 s to 55 s after Start.) Held before the 40th as well, should the checks outlast it.
    set_number(page, "Batch size", 8)
    with server.holding_last_epoch():  # live until the checks below are done
        store = store_of(server)
        run_id = start_and_wait_running(page, store)

        phone = new_page(browser, **PHONE, timeout_ms=90_000)
        try:
            open_watching(phone, server.url)
            status = main(phone).get_by_text(f"Run #{run_id}").first
            progress = main(phone).locator('.blh-progress').first
            expect(progress, "the run's progress").to_contain_text("Epoch", use_inner_text=True, timeout=60_000)
            assert phone.evaluate("() => window.scrollY") == 0
            for what, element in (("status line", status), ("progress", progress)):
                box = element.bounding_box()
                assert box and box["y"] >= 0 and box["y"] + box["height"] <= PHONE["height"], (what, box)
            assert not phone.get_by_label("Epochs", exact=True).is_visible(), "the settings are folded"
            expect(phone.get_by_text(f"run #{run_id} was live when you came")).to_have_count(1)

            # tiles and charts one under the other
            tiles = main(phone).locator('.blh-tile')
            expect(tiles.nth(3), "the tiles").to_be_attached(timeout=30_000)
            lefts = {round(tiles.nth(i).bounding_box()["x"]) for i in range(4)}
            assert len(lefts) == 1, f"the tiles stand one under the other: {lefts}"
            charts = main(phone).locator(".bench-live-chart")
            expect(charts.nth(1), "the live charts").to_be_attached(timeout=60_000)
            first, second = charts.nth(0).bounding_box(), charts.nth(1).bounding_box()
            assert second["y"] >= first["y"] + first["height"] - 1, (first, second)
            assert second["width"] <= PHONE["width"], second

            # the epoch names pile up as the run goes on; each drawn one stays clear of the others
            util = charts.nth(1)
            wait_for_js(phone, NAMES_AT_LEAST, "a dozen epoch names on the phone's live utilization chart", arg=12,
                        timeout_ms=120_000)
            assert store.get_run(run_id, with_samples=False).status == "running", "checked while the run is live"
            drawn = wait_for_js(phone, NAMES_SETTLED, lambda: f"the names drawn to be those counted shown: "
                                f"{util.evaluate(NAMES)}, {util.evaluate('(gd) => ({...gd.dataset})')}")
            boxes, counted = drawn["boxes"], {"all": drawn["all"], "shown": drawn["shown"]}
            assert len(boxes) == counted["shown"] >= 2, (boxes, counted)
            assert counted["shown"] < counted["all"], f"at 390 px some names are thinned: {counted}"
            assert overlapping(boxes) == [], overlapping(boxes)
            shot = screenshot(phone, "phone-live-run")
            util.screenshot(path=str(shot.with_name("phone-live-utilization.png")))
        finally:
            phone.context.close()
        page.get_by_role("button", name="Stop").click()
    wait_for(lambda: store.get_run(run_id, with_samples=False).status == "stopped", 120, "the run to stop")
