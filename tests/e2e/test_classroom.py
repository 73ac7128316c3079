"""Real Chromium: a class watching one live run costs one publisher, not one script run per viewer per tick.

Two browser pages and a plain stream subscriber watch one live run: all three see the same epochs; while the run's
state does not change no page sends Streamlit a rerun (the panel has no timer); plotly.js is fetched once per
browser and never travels inside a websocket message.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.steps import main, new_page, open_train, store_of, wait_for_js, what_the_page_shows
from tests.polling import wait_for

pytestmark = pytest.mark.e2e

EPOCHS = """() => { const gd = document.querySelector('.bench-live-chart[data-name="epochs"]');
    return gd && gd.data ? gd.data.flatMap((t) => (t.x || []).filter((x) => x !== null)) : null; }"""
VIEW = "() => ({...(document.querySelector('.bench-live-view') || {dataset: {}}).dataset})"
SHOWS_EPOCHS = f"""(want) => {{ const got = ({EPOCHS})();
    return got !== null && got.length === want.length && got.every((x, i) => x === want[i]); }}"""
WATCHING_AT_LEAST = f"(n) => Number(({VIEW})().viewers || 0) >= n"
WATCHING_AT_MOST = f"(n) => Number(({VIEW})().viewers || 0) <= n"
PLOTLY_SIGNATURE = b"plotly.js v"  # the first line of every plotly.min.js bundle


class Subscriber(threading.Thread):
    """A viewer without a browser: reads the live stream and keeps the epoch chart's x values as the events give
    them (a snapshot's whole figure, then each increment's new points)."""

    def __init__(self, url: str) -> None:
        super().__init__(name="stream-subscriber", daemon=True)
        self.url = url
        self.epochs: list[Any] = []
        self.events = 0
        self.states: list[str] = []
        self._stop = threading.Event()

    def run(self) -> None:
        with urllib.request.urlopen(f"{self.url}/bench/live?variant=plain", timeout=60) as stream:
            for raw in stream:
                if self._stop.is_set():
                    return
                if raw.startswith(b"data: "):
                    self.apply(json.loads(raw[6:]))

    def apply(self, msg: dict[str, Any]) -> None:
        self.events += 1
        if msg.get("state"):
            self.states.append(msg["state"]["key"])
        change = (msg.get("charts") or {}).get("epochs", "absent")
        if change == "absent":
            return
        if change is None:
            self.epochs = []
        elif change["op"] == "full":
            self.epochs = [x for trace in change["figure"]["data"] for x in (trace.get("x") or []) if x is not None]
        else:
            for group in change["groups"]:
                for per_trace in group["update"]["x"]:
                    self.epochs += [x for x in per_trace if x is not None]

    def stop(self) -> None:
        self._stop.set()


def _watch_socket(page: Any) -> dict[str, Any]:
    """Count the rerun requests a page sends and the largest message it receives, with when each rerun was sent."""
    from streamlit.proto.BackMsg_pb2 import BackMsg

    seen: dict[str, Any] = {"reruns": [], "largest": 0, "plotly_in_message": False}

    def sent(payload: Any) -> None:
        msg = BackMsg()
        msg.ParseFromString(payload if isinstance(payload, bytes) else payload.encode())
        if msg.WhichOneof("type") == "rerun_script":
            seen["reruns"].append(time.monotonic())

    def received(payload: Any) -> None:
        data = payload if isinstance(payload, bytes) else payload.encode()
        seen["largest"] = max(seen["largest"], len(data))
        seen["plotly_in_message"] = seen["plotly_in_message"] or PLOTLY_SIGNATURE in data

    page.on("websocket", lambda ws: (ws.on("framesent", sent), ws.on("framereceived", received)))
    return seen


def _plotly_requests(page: Any) -> list[str]:
    found: list[str] = []
    page.on("request", lambda r: found.append(r.url) if "plotly" in r.url and r.url.endswith(".js") or
            "plotly.min.js" in r.url else None)
    return found


def test_two_pages_and_a_subscriber_see_the_same_epochs_without_timer_reruns(browser, server):
    link = f"{server.url}/train?epochs=5&limit_samples=30000&batch_size=4"  # 7.5 s replayed epochs (benchmarks.standins)
    presenter, student = new_page(browser, timeout_ms=90_000), new_page(browser, timeout_ms=90_000)
    sockets = {name: _watch_socket(p) for name, p in (("presenter", presenter), ("student", student))}
    plotly = {name: _plotly_requests(p) for name, p in (("presenter", presenter), ("student", student))}
    subscriber = Subscriber(server.url)
    try:
        for page in (presenter, student):
            open_train(page, link)
            page.locator(".bench-live-view").wait_for(state="attached")
        subscriber.start()
        store = store_of(server)
        with server.holding_last_epoch():
            presenter.get_by_role("button", name="Start").click()
            run_id = wait_for(lambda: (runs := store.list_runs()) and runs[-1].status == "running" and runs[-1].id,
                              90, "the run to be running")
            live_key = wait_for(lambda: next((k for k in reversed(subscriber.states) if k.endswith(":live")), None),
                                60, "the stream to say the run is live")
            # each page has drawn the live state: the presenter from its Start, the student after its one rerun
            for page in (presenter, student):
                expect(page.locator(".bench-live-view").first, f"the page drawn with {live_key}").to_have_attribute(
                    "data-drawn-state", live_key, timeout=60_000)
            wait_for(lambda: len(store.get_run(run_id, with_samples=False).epochs) >= 1, 60, "the first epoch")
            quiet_from = time.monotonic()
            reruns_before = {name: len(s["reruns"]) for name, s in sockets.items()}
            # epoch 4 of 5: the run waits at the hold after it, so the epochs stand still while the pages catch up
            wait_for(lambda: len(store.get_run(run_id, with_samples=False).epochs) >= 4, 90, "epoch 4, the held one")
            done = [e.epoch for e in store.get_run(run_id, with_samples=False).epochs]
            for name, page in (("presenter", presenter), ("student", student)):
                wait_for_js(page, SHOWS_EPOCHS, lambda name=name, page=page: (
                    f"the {name}'s epoch chart to show epochs {done}, it shows {page.evaluate(EPOCHS)}"),
                    arg=done, timeout_ms=20_000)
            wait_for(lambda: subscriber.epochs == done, 20, f"the subscriber to hold epochs {done}: "
                                                           f"{subscriber.epochs}")
            quiet_s = time.monotonic() - quiet_from
            for name, seen in sockets.items():
                extra = len(seen["reruns"]) - reruns_before[name]
                assert extra == 0, (f"the {name}'s page asked for {extra} rerun(s) in {quiet_s:.0f} s while the run's "
                                    f"state did not change: a timer, not a change, drove them")
            assert quiet_s >= 10, f"the quiet window was only {quiet_s:.1f} s: too short to catch a 1-2 s timer"
            assert int(student.evaluate(VIEW).get("reruns", "0")) <= 1, "one rerun for the state change, no more"
            expect(main(student).get_by_role("button", name="Stop")).to_have_count(1)  # no presenter key: all control
        for name, urls in plotly.items():
            assert len([u for u in urls if "plotly.min.js" in u]) == 1, f"{name} fetched plotly.js: {urls}"
        for name, seen in sockets.items():
            assert not seen["plotly_in_message"], f"plotly.js inside a websocket message to the {name}"
            assert seen["largest"] < 1_000_000, f"a {seen['largest']:,}-byte message to the {name}"
        # a reload is a new document; the browser keeps plotly.js (cache headers: immutable, a year)
        student.reload()
        student.locator(".bench-live-view").wait_for(state="attached")
        wait_for_js(student, f"() => ({EPOCHS})() !== null", "the charts again after the reload", timeout_ms=60_000)
        transferred = student.evaluate("""() => performance.getEntriesByType('resource')
            .filter((e) => e.name.includes('plotly.min.js')).map((e) => e.transferSize)""")
        assert transferred and all(size == 0 for size in transferred), (
            f"plotly.js came over the network again after a reload: {transferred} bytes")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{what_the_page_shows(student, server)}") from None
    finally:
        subscriber.stop()
        presenter.context.close()
        student.context.close()


def test_the_projector_view_shows_the_share_link_as_a_qr_code_and_the_room(browser, server):
    """The projector view's QR code is the link shown beside it: the watch page (the live run alone, no dashboard
    session); the presenter's screen says how many are watching, the watch page's viewers included."""
    from ui.present import qr_data_uri

    projector = new_page(browser, timeout_ms=90_000)
    student = new_page(browser, timeout_ms=90_000)
    try:
        projector.goto(f"{server.url}/train?present=1&epochs=3")
        projector.get_by_role("heading", name="Train").wait_for()
        code = main(projector).locator('img[src^="data:image/svg+xml"]').first
        code.wait_for()
        link = main(projector).locator('[data-testid="stCode"] code').first.inner_text().strip()
        assert link == f"{server.url}/watch", link
        assert code.get_attribute("src") == qr_data_uri(link), "the code is the link shown beside it"
        expect(projector.get_by_text("This code says localhost")).to_have_count(1)  # served on localhost here
        # the link opens the watch page, one click from the dashboard
        student.goto(link)
        student.get_by_role("link", name="Open the full dashboard").wait_for()
        assert student.locator('img[src^="data:image/svg+xml"]').count() == 0, "no projector view on the link"

        def watching() -> int:
            return int(projector.evaluate(VIEW).get("viewers") or 0)

        wait_for_js(projector, WATCHING_AT_LEAST, "the projector to count itself and the student", arg=2)
        expect(main(projector).get_by_text(f"{watching()} watching")).to_have_count(1)
        # the count follows the room: the student leaves, one fewer (a page of an earlier test may leave too)
        with_student = watching()
        student.context.close()
        wait_for_js(projector, WATCHING_AT_MOST, f"the count to drop from {with_student}", arg=with_student - 1)
    finally:
        projector.context.close()
        if student.context.pages:
            student.context.close()
