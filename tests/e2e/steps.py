"""What the real-browser tests do on a page, written once: open a page, set a number box, wait for a rerun or for a
condition over the page's counters, count the bars drawn, read the sidebar, read the server's own store, keep a
screenshot."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from google.protobuf.message import DecodeError
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from bench.store import Store
from tests.polling import wait_for

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"


# A JS expression: no live view has a chart's whole draw still waiting its turn (live.js draws a chart at a time, at
# its own pace, and says which wait in data-whole-queued), so what a test counts of whole draws is what was sent.
NO_WHOLE_QUEUED = "[...document.querySelectorAll('.bench-live-view')].every((v) => !v.dataset.wholeQueued)"

OPEN_PAGES: list[Any] = []  # the pages new_page opened and not yet closed: kept on a test's failure (conftest)


def new_page(browser: Any, *, width: int = 1400, height: int = 1300, timeout_ms: int = 30_000) -> Any:
    """A page in a browser context of its own (a person of their own: no shared cookies or session)."""
    page = browser.new_context(viewport={"width": width, "height": height}).new_page()
    page.set_default_timeout(timeout_ms)
    page.on("websocket", lambda socket: _follow(page, socket))
    OPEN_PAGES.append(page)
    page.on("close", lambda _: OPEN_PAGES.remove(page) if page in OPEN_PAGES else None)
    return page


def keep_failure(test_name: str) -> list[Path]:
    """A screenshot of every page still open, under test-artifacts/failures/: what each person saw when the test
    failed."""
    folder = ARTIFACTS / "failures"
    folder.mkdir(parents=True, exist_ok=True)
    kept = []
    for n, page in enumerate(list(OPEN_PAGES)):
        path = folder / f"{test_name.replace('/', '_')}-{n}.png"
        try:
            page.screenshot(path=str(path), full_page=True, timeout=10_000)
        except Exception:  # noqa: BLE001 - a page gone or hung: the others are still kept
            continue
        kept.append(path)
    return kept


def _follow(page: Any, socket: Any) -> None:
    """Keep the page's current Streamlit websocket as ``page.bench_socket`` (a visit opens a new one): rerun_ends
    waits on it."""
    if socket.url.endswith("/_stcore/stream"):
        page.bench_socket = socket


def open_train(page: Any, url: str, *, timeout_ms: int = 60_000) -> None:
    """Open ``url`` (the Train page) and wait for its heading and its Epochs box."""
    page.goto(url)
    page.get_by_role("heading", name="Train").wait_for(timeout=timeout_ms)
    page.get_by_label("Epochs", exact=True).wait_for(timeout=timeout_ms)


def set_number(page: Any, label: str, value: int, *, timeout_ms: int = 60_000) -> None:
    """Type ``value`` into the number box labelled ``label`` and press Enter, as a person does; return once the box
    holds it committed ("Press Enter to apply" gone) and the rerun that Enter started has ended."""
    box = page.get_by_label(label, exact=True)
    changed = box.input_value() != str(value)  # the same value typed again commits nothing and starts no rerun
    box.fill(str(value))
    with rerun_ends(page, f"the rerun after setting {label}", timeout_ms=timeout_ms, rerun=changed):
        box.press("Enter")
    expect(box, f"{label} to hold {value}").to_have_value(str(value), timeout=timeout_ms)
    widget = page.get_by_test_id("stNumberInput").filter(has=box)
    expect(widget.get_by_test_id("InputInstructions"), f"{label} committed").not_to_contain_text(
        "Enter", timeout=timeout_ms)


def _script_finished(payload: str | bytes) -> bool:
    """Whether a message from the server over Streamlit's websocket says a script run has finished."""
    data = payload if isinstance(payload, bytes) else payload.encode()
    try:
        return ForwardMsg.FromString(data).WhichOneof("type") == "script_finished"
    except DecodeError:
        return False


@contextmanager
def rerun_ends(page: Any, what: str, *, timeout_ms: int = 60_000, rerun: bool = True) -> Iterator[None]:
    """Do, inside the block, what reruns the page's script (a widget changed); leaving it waits until the server says a
    script run finished (on the page's websocket, as new_page follows it) and none is under way on the page.

    ``rerun=False``: the block starts no rerun; only wait until none is under way."""
    socket = getattr(page, "bench_socket", None)
    if not rerun or socket is None:  # a page not from new_page: only what the page says
        yield
    else:
        try:
            with socket.expect_event("framereceived", predicate=_script_finished, timeout=timeout_ms):
                yield
        except PlaywrightTimeout:
            raise AssertionError(f"timed out after {timeout_ms / 1000:g} s waiting for {what} to end") from None
    settled(page, timeout_ms=timeout_ms)


def settled(page: Any, *, timeout_ms: int = 60_000) -> None:
    """Wait until no script run is under way on ``page`` (Streamlit's app root says "notRunning")."""
    expect(page.get_by_test_id("stApp"), "the page's script run to end").to_have_attribute(
        "data-test-script-state", "notRunning", timeout=timeout_ms)


def wait_for_js(page: Any, js: str, what: str | Callable[[], str], *, arg: Any = None, timeout_ms: int = 30_000,
                poll_ms: int = 100) -> Any:
    """Wait until the function ``js`` (of ``arg``), run in ``page`` every ``poll_ms``, returns a truthy value; return
    that value. A timeout fails the test with ``what`` (a callable is asked only then, to say what the page held).

    For conditions over a page's counters and chart data, which no locator expresses; Playwright polls them in the page
    (page.wait_for_function)."""
    try:
        return page.wait_for_function(js, arg=arg, timeout=timeout_ms, polling=poll_ms).json_value()
    except PlaywrightTimeout:
        said = what() if callable(what) else what
        raise AssertionError(f"timed out after {timeout_ms / 1000:g} s waiting for {said}") from None


def bars(page: Any) -> Any:
    """The bars drawn in the first Plotly chart (time per epoch)."""
    return page.locator(".js-plotly-plot").first.locator(".barlayer .point")


def bar_count(page: Any) -> int:
    """Bars drawn in the first Plotly chart (time per epoch)."""
    return bars(page).count()


def sidebar(page: Any) -> Any:
    return page.locator('[data-testid="stSidebar"]')


def store_of(server: Any) -> Store:
    """The server's own store, read from this process while the server writes to it."""
    return Store(server.store_path)


def start_and_wait_running(page: Any, store: Store) -> int:
    """Press Start on the Train page and wait until the store has the run running; its id."""
    page.get_by_role("button", name="Start").click()
    run_id: int = wait_for(lambda: (runs := store.list_runs()) and runs[-1].status == "running" and runs[-1].id,
                           60, "the run to be running")
    return run_id


def screenshot(page: Any, name: str) -> Path:
    """The whole page as test-artifacts/<name>.png (CI keeps the folder)."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def open_watching(page: Any, url: str, *, timeout_ms: int = 90_000) -> None:
    """Open ``url`` (the Train page) while a run is live, as a viewer joining it: wait for the heading and the run's
    status line (the settings are folded then, so their boxes are not visible)."""
    page.goto(url)
    page.get_by_role("heading", name="Train").wait_for(timeout=timeout_ms)
    main(page).get_by_text("Run #").first.wait_for(timeout=timeout_ms)


def main(page: Any) -> Any:
    """The page's main area (the sidebar left out)."""
    return page.locator('[data-testid="stMain"]')


@contextmanager
def saying_what_the_page_shows(page: Any, server: Any) -> Iterator[None]:
    """An expectation that fails inside the block fails with what the page and its server held then."""
    try:
        yield
    except AssertionError as exc:
        raise AssertionError(f"{exc}; {what_the_page_shows(page, server)}") from None


def what_the_page_shows(page: Any, server: Any) -> str:
    """For a failure message: the newest run as the store has it, the page's status and progress lines (live
    element or Streamlit's), its Stop buttons and any exception or lost connection, and a screenshot's path."""
    runs = store_of(server).list_runs()
    run = {"id": runs[-1].id, "status": str(runs[-1].status), "ended_at": runs[-1].ended_at} if runs else None
    lines = page.evaluate("""() => [...document.querySelectorAll(
        '.bench-live-header, [data-testid="stProgress"], [data-testid="stException"], [data-testid="stStatusWidget"]')]
        .map((e) => e.innerText.replace(/\\s+/g, ' ').slice(0, 200))""")
    feed = page.evaluate("() => window.__benchFeed || null")  # the stream as this page received it
    shot = screenshot(page, "failure")
    return (f"store: {run}; page: {lines}; stream: {feed}; Stop buttons: "
            f"{page.get_by_role('button', name='Stop').count()}; screenshot {shot}")
