"""Real Chromium: the watch page draws a run whose names hold a right-to-left override (U+202E) with every other word
of its status line in reading order, each name inside an isolating element. The page, its modules and one snapshot
of its stream are the project's own (ui.watch, ui.static_files, ui.live_feed over ui.live.header_data), served to the
browser by Playwright's routes: no dashboard server is needed to draw them."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest

from bench.runs.run_state import RunSnapshot
from bench.vocab.config import RunConfig
from bench.vocab.record_types import RecordedHardware
from bench.vocab.run_info import RunInfo
from tests.e2e.steps import wait_for_js
from ui import live, live_feed, static_files, watch

pytestmark = pytest.mark.e2e

ORIGIN = "http://bench.test"
RLO = "\u202e"

# where each character of ``word`` (its first occurrence in the status line) is drawn, left to right, and whether its
# text lies inside an isolating element (<bdi>, or an element with dir) or between FSI and PDI
DRAWN = """(word) => {
    const status = document.querySelector('.bench-live-header .blh-status');
    const walker = document.createTreeWalker(status, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        const at = node.data.indexOf(word);
        if (at < 0) continue;
        const lefts = [...word].map((_, k) => { const r = document.createRange(); r.setStart(node, at + k);
            r.setEnd(node, at + k + 1); return r.getBoundingClientRect().left; });
        const before = node.data.slice(0, at);
        const fenced = before.lastIndexOf('\\u2068') > before.lastIndexOf('\\u2069');
        return {lefts, isolated: !!node.parentElement.closest('bdi, [dir]') || fenced};
    }
    return null; }"""


def snapshot() -> RunSnapshot:
    return RunSnapshot(id=7, config=RunConfig(dataset=f"mnist{RLO}", model="mlp"), status="running", created_at=0.0,
                       started_at=0.0, ended_at=None, phase="training", info=RunInfo(placement="/device:CPU:0"),
                       progress=None, epochs=(), samples=(), error=None, store_error=None,
                       hardware=RecordedHardware(), queue_position=None, owner=f"eve{RLO}")


def stream(snap: RunSnapshot) -> bytes:
    """One snapshot of the Train feed, as the live routes send a joining viewer."""
    publisher = live_feed.Publisher(lambda: snap, header=live.header_data, line=live.sidebar_line,
                                    charts=lambda run: {}, figures=lambda run, variant, names: {}, grow=live.GROW)
    publisher.refresh(force=True)
    return publisher.snapshot("plain")[1]


def serve(page: Any, events: bytes) -> None:
    def answer(route: Any) -> None:
        path = urlsplit(route.request.url).path
        if path == watch.PATH:
            found = watch.page()
            route.fulfill(status=200, body=found.body, content_type=found.media_type)
        elif path == static_files.stream_url():
            route.fulfill(status=200, body=events, content_type="text/event-stream",
                          headers={"Cache-Control": "no-store"})
        elif path.startswith("/bench/static/") and (file := static_files.static_file(path.rsplit("/", 1)[1])):
            route.fulfill(status=200, body=file.body, content_type=file.media_type)
        else:
            route.fulfill(status=404, body=b"")
    page.route(f"{ORIGIN}/**", answer)


def test_an_override_in_a_runs_names_reorders_no_other_word_on_the_watch_page(browser: Any) -> None:
    page = browser.new_context(viewport={"width": 1800, "height": 900}).new_page()
    try:
        serve(page, stream(snapshot()))
        page.goto(f"{ORIGIN}{watch.PATH}")
        wait_for_js(page, "() => { const s = document.querySelector('.bench-live-header .blh-status');"
                          " return s && s.textContent.includes('Run #7'); }", "the run's status line", timeout_ms=60_000)
        for word in ("cpu", "batch 128", "run by", "(shown from the store)"):
            drawn = page.evaluate(DRAWN, word)
            assert drawn is not None, f"{word!r} is not in the status line"
            assert drawn["lefts"] == sorted(drawn["lefts"]) and len(set(drawn["lefts"])) == len(word), \
                f"{word!r} is not drawn left to right: {drawn['lefts']}"
        owner = page.evaluate(DRAWN, "eve")
        assert owner is not None and owner["isolated"], owner
    finally:
        page.context.close()
