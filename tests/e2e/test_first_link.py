"""The README's link as the first request a new server gets: the Train page with the link's settings, and never a
"Page not found" dialog on the way (a page URL first after a start used to meet Streamlit's folder mode)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.dashboard import DashboardServer

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def fresh_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DashboardServer]:
    srv = DashboardServer(tmp_path_factory.mktemp("first-link"), prestart=False)  # this page never trains
    srv.wait_healthy()
    yield srv
    srv.stop()


def test_the_readme_link_first_after_a_start_opens_train_with_its_settings(browser, fresh_server: DashboardServer,
                                                                          tmp_path: Path) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    assert "/train?epochs=7&size=m" in readme, "the link this test follows is the README's"
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    try:
        page.goto(f"{fresh_server.url}/train?epochs=7&size=m", wait_until="domcontentloaded", timeout=60_000)
        not_found: list[float] = []
        t0 = time.monotonic()
        while time.monotonic() - t0 < 8:  # the first seconds, where the dialog showed
            if "page not found" in page.inner_text("body").lower():
                not_found.append(round(time.monotonic() - t0, 2))
            time.sleep(0.2)
        page.get_by_role("heading", name="Train").wait_for(timeout=30_000)
        epochs = page.get_by_label("Epochs")
        assert not not_found, f"'Page not found' showed at {not_found} s"
        assert epochs.input_value() == "7", "the link's settings are applied"
    finally:
        context.close()
