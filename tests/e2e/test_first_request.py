"""A page URL as the first request a new server gets: the page comes through app.py's navigation, with the sidebar's
links to the other pages, its "Current run" line and the link's settings in the form (Streamlit's pages/ folder
mode, which a page URL first after a start meets, runs the page script alone: no navigation, no sidebar status)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.steps import main, new_page, sidebar

pytestmark = pytest.mark.e2e

WAIT_MS = 60_000  # a fresh server's first page: Streamlit's start, the page's imports, on a shared 2-core machine
# Compare's settings as a link writes them (ui.url_state): fields named after the run config, `targets` the
# multiselect's choice, first the baseline. `targets=cpu` differs from the default pair on any machine.
COMPARE_LINK = "/compare?epochs=3&batch_size=64&limit_samples=6000&targets=cpu"


def _expect_navigation_and_sidebar(page: Any, *, current: str) -> None:
    """app.py drew this page view: the navigation links to the other pages and the sidebar's "Current run" line."""
    nav = sidebar(page).get_by_test_id("stSidebarNav")
    for title in ("Train", "Compare", "Sweep", "Machines", "History", "System", "Lesson"):
        if title != current:
            expect(nav.get_by_role("link", name=title, exact=True)).to_be_visible(timeout=WAIT_MS)
    expect(sidebar(page).get_by_text("Current run", exact=True)).to_be_visible(timeout=WAIT_MS)
    # the page is found under its own name: Streamlit's "Page not found" dialog (which stays until closed) never came
    expect(page.get_by_text("Page not found"), "Streamlit's page-not-found dialog").to_have_count(0)


def test_a_compare_link_as_the_servers_first_request(browser: Any, server: Any) -> None:
    """The module's server has served nothing before this page: its first request is a Compare link."""
    page = new_page(browser)
    try:
        page.goto(server.url + COMPARE_LINK)
        expect(main(page).get_by_role("heading", name="Compare")).to_be_visible(timeout=WAIT_MS)
        _expect_navigation_and_sidebar(page, current="Compare")
        expect(page.get_by_label("Epochs", exact=True)).to_have_value("3", timeout=WAIT_MS)
        expect(page.get_by_label("Batch size", exact=True)).to_have_value("64")
        expect(page.get_by_label("Training samples (0 = all)", exact=True)).to_have_value("6000")
        targets = main(page).get_by_test_id("stMultiSelect").filter(has_text="Targets (the first is the baseline)")
        chips = targets.get_by_role("button", name=re.compile(r"^Remove "))  # one per chosen target
        expect(chips).to_have_count(1)
        expect(chips).to_have_accessible_name("Remove cpu")
        expect(main(page).get_by_text("Some settings in this link were left out")).to_have_count(0)
        expect(page).to_have_url(server.url + COMPARE_LINK)  # the link stays the page's address
    finally:
        page.context.close()


def test_history_as_a_new_browsers_first_request(browser: Any, server: Any) -> None:
    """A second browser (a context of its own, no shared session) whose first request is the History page."""
    page = new_page(browser)
    try:
        page.goto(server.url + "/history")
        expect(main(page).get_by_role("heading", name="History")).to_be_visible(timeout=WAIT_MS)
        _expect_navigation_and_sidebar(page, current="History")
        expect(page).to_have_url(server.url + "/history")
    finally:
        page.context.close()
