"""Real Chromium: the projector view's first screen of Train at 1280x720, 1920x1080 and 3840x2160: the title below
Streamlit's header (not under it), the controls (Start, Copy link) in one row, side by side, and all of them on the
screen. A screenshot of each size is kept in docs/screenshots/."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.steps import new_page

pytestmark = pytest.mark.e2e

SCREENS = [(1280, 720), (1920, 1080), (3840, 2160)]
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
ROW_PX = 10  # the controls' tops and middles agree to this (Copy link's button is drawn smaller, in its frame)

BOXES = """() => {
    const box = (e) => { const r = e.getBoundingClientRect();
        return {left: r.left, right: r.right, top: r.top, bottom: r.bottom}; };
    const main = document.querySelector('[data-testid="stMain"]');
    const copy = main.querySelector('iframe');
    return {header: box(document.querySelector('[data-testid="stHeader"]')), title: box(main.querySelector('h1')),
            start: box([...main.querySelectorAll('button')].find((b) => b.innerText.includes('Start'))),
            frame: copy ? box(copy) : null};
}"""


def copy_button(page: Any, frame: dict[str, float]) -> dict[str, float]:
    """The Copy link button's box in the page (it is drawn in a frame of its own)."""
    inner = page.frame_locator('[data-testid="stMain"] iframe').first.get_by_role("button", name="Copy link")
    inner.wait_for()
    r = inner.evaluate("(b) => { const r = b.getBoundingClientRect(); return {left: r.left, right: r.right, "
                       "top: r.top, bottom: r.bottom}; }")
    return {k: v + (frame["left"] if k in ("left", "right") else frame["top"]) for k, v in r.items()}


@pytest.mark.parametrize("width,height", SCREENS, ids=[f"{w}x{h}" for w, h in SCREENS])
def test_the_projector_views_first_screen_shows_everything_whole(browser, server, width, height):
    page = new_page(browser, width=width, height=height)
    try:
        page.goto(f"{server.url}/train?present=1")
        page.get_by_role("heading", name="Train").wait_for()
        page.get_by_role("button", name="Start").wait_for()
        # laid out once the projector view's styles apply (its larger type) and the Copy link's frame is drawn
        page.wait_for_function("""() => getComputedStyle(document.documentElement).fontSize === '19px'
            && document.querySelector('[data-testid="stMain"] iframe')""")
        boxes = page.evaluate(BOXES)
        copy = copy_button(page, boxes["frame"])
        header, title, start = boxes["header"], boxes["title"], boxes["start"]
        assert title["top"] >= header["bottom"], f"the title starts under the header: {title} {header}"
        assert abs(start["top"] - copy["top"]) <= ROW_PX, f"one row: {start} {copy}"
        middles = [(b["top"] + b["bottom"]) / 2 for b in (start, copy)]
        assert abs(middles[0] - middles[1]) <= 3, f"one row, centred: {start} {copy}"
        assert start["right"] <= copy["left"], f"side by side, not overlapping: {start} {copy}"
        assert copy["left"] - start["right"] <= 40, f"close together, not a column apart: {start} {copy}"
        for name, b in (("title", title), ("Start", start), ("Copy link", copy)):
            assert b["left"] >= 0 and b["top"] >= 0 and b["right"] <= width and b["bottom"] <= height, (name, b)
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"projector-{width}x{height}.png"))
    finally:
        page.context.close()


def test_the_projectors_first_screen_shows_a_live_run(browser, page, server):
    """At 1920x1080 with ?present=1 and a run live, the run's header and the top of its charts are on the first
    screen (the settings, the QR code and the controls come after them)."""
    from tests.e2e.steps import open_train, set_number, start_and_wait_running, store_of, wait_for_js

    open_train(page, server.url)
    set_number(page, "Epochs", 4)
    set_number(page, "Training samples (0 = all)", 20000)
    set_number(page, "Batch size", 40)
    with server.holding_last_epoch():
        start_and_wait_running(page, store_of(server))
        room = new_page(browser, width=1920, height=1080, timeout_ms=90_000)
        try:
            room.goto(f"{server.url}/train?present=1")
            boxes = wait_for_js(room, """() => { const r = (e) => e && e.getBoundingClientRect();
                const header = r(document.querySelector('.bench-live-header .blh-tiles'));
                const chart = r(document.querySelector('.bench-live-chart .main-svg'));
                return getComputedStyle(document.documentElement).fontSize === '19px' && header && chart
                    && {header: header.bottom, chart: chart.top, chartBottom: chart.bottom, scroll: window.scrollY}; }""",
                                "the live run's header and charts in the projector view", timeout_ms=90_000)
            assert boxes["scroll"] == 0, boxes
            assert boxes["header"] <= 1080 and boxes["chart"] <= 1080 - 250, f"the charts start on the first screen: {boxes}"
            room.screenshot(path=str(SHOTS / "projector-1920x1080-live.png"))
        finally:
            room.context.close()
