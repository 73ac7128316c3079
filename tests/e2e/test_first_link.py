"""The README's link as the first request a new server gets: the Train page with the link's settings, and never a
"Page not found" dialog on the way (a page URL first after a start used to meet Streamlit's folder mode)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import Server

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def fresh_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(tmp_path_factory.mktemp("first-link"))  # a new server: the link is its first request
    yield srv
    srv.stop()


# Notes, from the document's first node on, every moment at which the page's text says "page not found": the dialog
# is looked for at each change of the page, not on a clock, until the form proves the page was drawn.
WATCH_NOT_FOUND = """
window.__notFoundAt = [];
new MutationObserver(() => {
    const text = document.body ? document.body.textContent.toLowerCase() : "";
    if (text.includes("page not found")) window.__notFoundAt.push(Math.round(performance.now()) / 1000);
}).observe(document, {childList: true, subtree: true, characterData: true});
"""


def _opens_train_with_seven_epochs(page, url: str) -> list[float]:
    """Open ``url``; the seconds (since the document began) at which "Page not found" showed before the Train page's
    form held the link's settings (none, when all is well)."""
    page.goto(url, wait_until="domcontentloaded", timeout=60_000)
    page.get_by_role("heading", name="Train").wait_for(timeout=30_000)
    # the page may still be drawing its first run under load (the heading comes before the form): wait for the form
    expect(page.get_by_label("Epochs"), "the link's settings are applied (Epochs 7)").to_have_value(
        "7", timeout=15_000)
    return page.evaluate("window.__notFoundAt")


def test_the_readme_link_opens_train_with_its_settings_first_and_later(browser, fresh_server: Server) -> None:
    """As a new server's first request, and again once the server has served other pages (where Streamlit used to
    answer /train with "Page not found": the default page lived at the root only)."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    assert "/train?epochs=7&size=m" in readme, "the link this test follows is the README's"
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.add_init_script(WATCH_NOT_FOUND)  # in every document the page opens, before Streamlit's own scripts
    outside: list[str] = []  # a classroom without internet: the page asks nothing of any other host
    page.on("request", lambda r: r.url.startswith((fresh_server.url, "data:", "blob:")) or outside.append(r.url))
    try:
        first = _opens_train_with_seven_epochs(page, f"{fresh_server.url}/train?epochs=7&size=m")
        page.goto(f"{fresh_server.url}/system", wait_until="domcontentloaded", timeout=60_000)
        page.get_by_role("heading", name="System").wait_for(timeout=60_000)
        later = _opens_train_with_seven_epochs(page, f"{fresh_server.url}/train?epochs=7&size=m")
        root = _opens_train_with_seven_epochs(page, f"{fresh_server.url}/?epochs=7")
        assert not first and not later and not root, f"'Page not found' showed at {first} / {later} / {root} s"
        assert "/train" in page.url and "epochs=7" in page.url, "the root opens Train at its own address"
        assert not outside, f"requests to other hosts: {outside}"
    finally:
        context.close()
