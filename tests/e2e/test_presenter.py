"""One presenter, many viewers: with BENCH_PRESENTER_KEY set, only a session that entered the key may start or stop
runs; everyone else watches the same live run read-only. Plus what a served page must keep: XSRF protection on
uploads and the upload cap shown to the user. (Without a key Start is enabled: covered by test_train_live.py.)"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import Server
from tests.e2e.steps import (new_page, open_train, saying_what_the_page_shows, screenshot, set_number, settled,
                             sidebar, store_of)
from tests.polling import wait_for

pytestmark = pytest.mark.e2e
KEY = "secret"


@pytest.fixture(scope="module")
def presenter_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(tmp_path_factory.mktemp("presenter-server"), env={"BENCH_PRESENTER_KEY": KEY})
    yield srv
    srv.stop()


@pytest.fixture
def viewer(browser, presenter_server):
    page = new_page(browser, height=1200, timeout_ms=45_000)
    open_train(page, presenter_server.url)
    yield page
    page.context.close()


@pytest.fixture
def presenter(browser, presenter_server):
    page = new_page(browser, height=1200, timeout_ms=45_000)
    open_train(page, presenter_server.url)
    yield page
    page.context.close()


def start_button(page):
    return page.get_by_role("button", name="Start")


def expect_start_enabled(page) -> None:
    """Start is enabled once the rerun after unlocking has settled: while it runs, the old (disabled) button can
    still be on the page beside the new one."""
    settled(page, timeout_ms=30_000)
    expect(start_button(page), "one Start button once the rerun has settled").to_have_count(1, timeout=30_000)
    expect(start_button(page), "Start to be enabled for the presenter").to_be_enabled(timeout=30_000)


def unlock(page, key: str) -> None:
    sidebar(page).get_by_label("Presenter key").fill(key)
    sidebar(page).get_by_role("button", name="Unlock").click()


def test_a_viewer_is_view_only(viewer):
    assert start_button(viewer).is_disabled()
    expect(viewer.get_by_text("View only: enter the presenter key in the sidebar")).to_have_count(1)
    expect(sidebar(viewer).get_by_text("View only: the presenter starts and stops runs.")).to_have_count(1)
    assert viewer.get_by_label("Epochs", exact=True).is_disabled(), "the settings are read-only too"
    assert sidebar(viewer).get_by_label("Presenter key").get_attribute("type") == "password"


def test_a_wrong_key_is_refused_and_start_stays_disabled(viewer):
    unlock(viewer, "guess")
    sidebar(viewer).get_by_text("That key is not right.").wait_for()
    assert start_button(viewer).is_disabled()
    assert viewer.get_by_text("Presenter controls unlocked").count() == 0


def test_presenter_starts_and_stops_viewers_only_watch(presenter, viewer, presenter_server):
    unlock(presenter, KEY)
    sidebar(presenter).get_by_text("Presenter controls unlocked").wait_for()
    expect_start_enabled(presenter)
    assert start_button(viewer).is_disabled(), "unlocking one session unlocks no other"

    set_number(presenter, "Epochs", 200)  # long enough to be stopped midway
    set_number(presenter, "Training samples (0 = all)", 2000)
    start_button(presenter).click()
    run_id = wait_for(lambda: (runs := store_of(presenter_server).list_runs()) and runs[-1].id, 30, "the run")
    with saying_what_the_page_shows(presenter, presenter_server):  # seen in full runs, not alone
        expect(presenter.get_by_role("button", name="Stop").first, "the presenter's Stop button").to_be_visible(
            timeout=90_000)
    expect(sidebar(viewer), "the viewer to see the run").to_contain_text(f"Run #{run_id}: running",
                                                                           use_inner_text=True, timeout=180_000)
    viewer.get_by_text(f"Run #{run_id}").first.wait_for()
    assert viewer.get_by_role("button", name="Stop").count() == 0, "a viewer cannot stop the presenter's run"
    assert start_button(viewer).is_disabled()
    screenshot(viewer, "viewer-during-presenter-run")

    presenter.get_by_role("button", name="Stop").click()
    wait_for(lambda: store_of(presenter_server).get_run(run_id, with_samples=False).status == "stopped", 60,
             "the run to stop")
    expect(sidebar(viewer), "the viewer to see it stopped").to_contain_text(f"Run #{run_id}: stopped",
                                                                              use_inner_text=True, timeout=120_000)
    expect(viewer.locator("body"), "the viewer's panel to say stopped").to_contain_text(
        f"Run #{run_id} stopped", use_inner_text=True, timeout=60_000)
    assert viewer.get_by_role("button", name="Stop").count() == 0


def test_uploads_are_capped_and_need_the_xsrf_token(presenter, presenter_server):
    unlock(presenter, KEY)
    sidebar(presenter).get_by_text("Presenter controls unlocked").wait_for()
    presenter.get_by_label("Dataset").click()
    presenter.get_by_role("option", name="Your own .npz file").click()
    presenter.get_by_text("Your .npz (x_train, y_train, x_test, y_test)").wait_for()
    zones = presenter.locator('[data-testid="stFileUploaderDropzone"]')  # the .npz and the .keras uploads
    zone = zones.filter(has_text="NPZ")
    assert "200MB per file" in zone.inner_text().replace(" MB", "MB"), zone.inner_text()

    # A page on another site cannot push a file into the server: without Streamlit's XSRF cookie + header the
    # upload endpoint refuses (server.enableXsrfProtection stays on).
    body = b"--x\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.npz\"\r\n\r\nPK\r\n--x--\r\n"
    request = urllib.request.Request(
        f"{presenter_server.url}/_stcore/upload_file/some-session/some-file", data=body, method="PUT",
        headers={"Content-Type": "multipart/form-data; boundary=x", "Origin": "http://evil.example"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 403, refused.value.code
    assert b"XSRF" in refused.value.read(), "refused for the missing XSRF token, not for a malformed request"
