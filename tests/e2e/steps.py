"""What the real-browser tests do on a page, written once: open a page, set a number box, count the bars drawn, read
the sidebar, read the server's own store, keep a screenshot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.store import Store
from tests.polling import wait_for

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"


def new_page(browser: Any, *, width: int = 1400, height: int = 1300, timeout_ms: int = 30_000) -> Any:
    """A page in a browser context of its own (a person of their own: no shared cookies or session)."""
    page = browser.new_context(viewport={"width": width, "height": height}).new_page()
    page.set_default_timeout(timeout_ms)
    return page


def open_train(page: Any, url: str, *, timeout_ms: int = 60_000) -> None:
    """Open ``url`` (the Train page) and wait for its heading and its Epochs box."""
    page.goto(url)
    page.get_by_role("heading", name="Train").wait_for(timeout=timeout_ms)
    page.get_by_label("Epochs", exact=True).wait_for(timeout=timeout_ms)


def set_number(page: Any, label: str, value: int) -> None:
    """Type ``value`` into the number box labelled ``label`` and press Enter, as a person does."""
    box = page.get_by_label(label, exact=True)
    box.fill(str(value))
    box.press("Enter")
    page.wait_for_timeout(400)


def bar_count(page: Any) -> int:
    """Bars drawn in the first Plotly chart (time per epoch)."""
    return page.locator(".js-plotly-plot").first.locator(".barlayer .point").count()


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


def what_the_page_shows(page: Any, server: Any) -> str:
    """For a failure message: the newest run as the store has it, the page's status and progress lines (live
    element or Streamlit's), its Stop buttons and any exception or lost connection, and a screenshot's path."""
    runs = store_of(server).list_runs()
    run = {"id": runs[-1].id, "status": str(runs[-1].status), "ended_at": runs[-1].ended_at} if runs else None
    lines = page.evaluate("""() => [...document.querySelectorAll(
        '.bench-live-header, [data-testid="stProgress"], [data-testid="stException"], [data-testid="stStatusWidget"]')]
        .map((e) => e.innerText.replace(/\\s+/g, ' ').slice(0, 200))""")
    shot = screenshot(page, "failure")
    return (f"store: {run}; page: {lines}; Stop buttons: {page.get_by_role('button', name='Stop').count()}; "
            f"screenshot {shot}")
