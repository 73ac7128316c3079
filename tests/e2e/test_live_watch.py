"""Real Chromium: the watch page (what the projector's QR code opens) on a phone while a run is live: the run's
header and its charts from the stream, no Streamlit session (no websocket, none of Streamlit's scripts), at most
500 kB of files on the wire for its first load, the full dashboard one click away, and the run's end drawn in place
without a reload."""

from __future__ import annotations

import pytest

from tests.e2e.steps import new_page, open_train, set_number, start_and_wait_running, store_of, wait_for_js

pytestmark = pytest.mark.e2e

PHONE = {"width": 390, "height": 844}
FIRST_LOAD_MAX_BYTES = 500_000

SHOWN = """() => { const v = document.querySelector('.bench-live-view');
    const h = v && v.querySelector('.bench-live-header');
    return {tiles: h ? h.querySelectorAll('.blh-tile').length : 0, status: h ? h.dataset.status : null,
            charts: [...document.querySelectorAll('.bench-live-chart .main-svg')].length,
            text: h ? h.innerText : ""}; }"""

FILES = """() => { const nav = performance.getEntriesByType('navigation')[0];
    const res = performance.getEntriesByType('resource').filter((r) => !r.name.includes('/bench/live?'));
    return {nav: nav.transferSize, files: res.map((r) => [r.name, r.transferSize, r.initiatorType])}; }"""


def test_a_phone_watches_the_run_on_the_watch_page(browser, page, server):
    open_train(page, server.url)
    set_number(page, "Epochs", 4)
    set_number(page, "Training samples (0 = all)", 20000)
    set_number(page, "Batch size", 40)  # about 0.5 s an epoch, replayed; held before the 4th
    with server.holding_last_epoch():
        run_id = start_and_wait_running(page, store_of(server))
        phone = new_page(browser, **PHONE, timeout_ms=90_000)
        sockets: list[str] = []
        phone.on("websocket", lambda ws: sockets.append(ws.url))
        try:
            phone.goto(server.url + "/watch")
            shown = wait_for_js(phone, f"() => {{ const s = ({SHOWN})(); return s.tiles === 4 && s.charts >= 2 && s; }}",
                                "the run's header and charts on the watch page", timeout_ms=90_000)
            assert f"Run #{run_id}" in shown["text"] and shown["status"] == "running", shown
            link = phone.get_by_role("link", name="Open the full dashboard")
            assert link.get_attribute("href").endswith("/train")
            files = phone.evaluate(FILES)
            total = files["nav"] + sum(size for _, size, _ in files["files"])
            assert total <= FIRST_LOAD_MAX_BYTES, (total, files)
            assert any("plotly-basic.min.js" in name for name, _, _ in files["files"]), files
            assert not sockets, f"a Streamlit session was opened: {sockets}"
            assert not [name for name, _, _ in files["files"] if "/static/js/" in name], "Streamlit's scripts loaded"
        except BaseException:
            phone.context.close()
            raise
    try:  # released: the run ends, and the page draws it in place
        wait_for_js(phone, f"() => ({SHOWN})().status === 'finished'", "the run's end on the watch page",
                    timeout_ms=120_000)
        assert phone.evaluate(SHOWN)["tiles"] == 4
    finally:
        phone.context.close()
