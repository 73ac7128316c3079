"""Real Chromium: the live header (one element, ui/live_header.py) in the projector view reads from the back of a
room as the Streamlit elements did: its tile values and progress text take the projector's sizes."""

from __future__ import annotations

import pytest

from tests.e2e.steps import (main, new_page, open_train, screenshot, set_number, start_and_wait_running, store_of,
                             wait_for_js)
from tests.polling import wait_for

pytestmark = pytest.mark.e2e

SIZES = """() => { const h = document.querySelector('.bench-live-header');
    if (!h || !h.querySelector('.blh-value')) return null;
    const px = (sel) => parseFloat(getComputedStyle(h.querySelector(sel)).fontSize);
    return {value: px('.blh-value'), progress: px('.blh-progress-text'),
            root: parseFloat(getComputedStyle(document.documentElement).fontSize)}; }"""


def test_the_live_header_takes_the_projector_views_sizes(browser, page, server):
    open_train(page, server.url)
    set_number(page, "Epochs", 4)
    set_number(page, "Training samples (0 = all)", 20000)
    # 0.5 s an epoch, replayed, held before the 4th: the sizes are read while it is live, and need no pace
    set_number(page, "Batch size", 40)
    with server.holding_last_epoch():  # live until the checks below are done
        store = store_of(server)
        run_id = start_and_wait_running(page, store)
        room = new_page(browser, width=1920, height=1080, timeout_ms=90_000)
        try:
            room.goto(server.url + "/train?present=1")
            main(room).get_by_text(f"Run #{run_id}").first.wait_for()
            plain = wait_for_js(page, SIZES, "the header on the plain page", timeout_ms=30_000)
            # the room's page mounts its header element after its status line; 30 s ran out once at load average 6
            # the projector view's style lands with the page's later elements: read the sizes once it has (under load
            # the header was drawn, at the plain sizes, before it, twice in a full run); never is a timeout, a failure
            big = wait_for_js(room, f"() => {{ const s = ({SIZES})(); return s && s.root === 19 ? s : null; }}",
                              "the header in the projector view, with the projector's style", timeout_ms=90_000)
            assert big["root"] == 19, big  # ui/present.py: html { font-size: 19px }
            assert big["value"] >= 3.2 * 19 - 0.5, (big, plain)  # .blh-value { font-size: 3.2rem }
            assert big["progress"] >= 1.3 * 19 - 0.5, (big, plain)
            assert plain["value"] < big["value"], (plain, big)
            screenshot(room, "room-live-header")
        finally:
            room.context.close()
    wait_for(lambda: store.get_run(run_id, with_samples=False).status == "finished", 240,
             "the run to finish")  # 120 s ran out once at load average 6
