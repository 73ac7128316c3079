"""Real Chromium: a lab with a teacher and three students, one on a phone (390 x 844). The teacher opens the lab on
the Lab page; each student opens /lab in a browser of their own, picks a run within the assignment and submits; the
fair queue trains them (real training, as shipped: the screenshot's figures are real) and the board, framed in the teacher's page, ends with three points on its
chart. The board is then shot at 1920 x 1080 for docs/screenshots/lab-board-1920x1080.png."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import Server
from tests.e2e.steps import new_page, rerun_ends, wait_for_js

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]
PHONE = {"width": 390, "height": 844}
# three students: a Latin name, a right-to-left one (drawn isolated: it must not reorder the text after it), an emoji
STUDENTS = [("Ana Lima", "xs", "32", PHONE), ("שרה", "s", "128", None), ("Kofi 🚀", "m", "512", None)]


def submit_as(browser, url: str, name: str, size: str, batch: str, viewport) -> object:
    page = new_page(browser, **(viewport or {}))
    page.goto(f"{url}/lab")
    form = page.locator("#form")
    expect(form).to_be_visible(timeout=30_000)
    page.fill("#student", name)
    page.select_option("#size", size)
    page.select_option("#batch_size", batch)
    page.click("#submit_button")
    expect(page.locator("#mine .card")).to_have_count(1, timeout=30_000)
    expect(page.locator("#you bdi")).to_have_text(name)
    return page


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    """A server that trains for real (TensorFlow, its pre-started worker): three runs of a few hundred samples."""
    srv = Server(tmp_path_factory.mktemp("lab"), training=True)
    yield srv
    srv.stop()


@pytest.mark.slow
def test_three_students_train_and_the_board_ends_with_three_points(browser, page, server):
    page.goto(f"{server.url}/lab_teacher")
    button = page.get_by_role("button", name="Open the lab")
    expect(button).to_be_visible(timeout=60_000)
    samples = page.get_by_label("Samples each run trains on")
    samples.fill("512")
    samples.press("Enter")
    with rerun_ends(page, "opening the lab"):
        button.click()
    expect(page.get_by_text("is open: the students can submit")).to_be_visible(timeout=30_000)

    students = [submit_as(browser, server.url, *s) for s in STUDENTS]
    phone = students[0]
    assert phone.evaluate("document.documentElement.scrollWidth") <= PHONE["width"], "no sideways scroll on a phone"

    board = page.frame_locator("iframe").first
    expect(board.locator("#chart")).to_have_attribute("data-points", "3", timeout=300_000)
    expect(board.locator("#results tbody tr")).to_have_count(3)
    expect(board.locator("#results bdi")).to_have_count(3)
    for student in students:
        expect(student.locator("#mine .card .status")).to_contain_text("finished", timeout=60_000)
        expect(student.locator("#mine .card .status")).to_contain_text("of 3 in the class")
    points = board.locator("#chart .scatterlayer .point")
    expect(points, "each run a point on both charts").to_have_count(6)

    wide = new_page(browser, width=1920, height=1080)
    wide.goto(f"{server.url}/lab/board")
    wait_for_js(wide, "() => document.getElementById('chart').dataset.points === '3'", "the board's three points")
    out = ROOT / "docs" / "screenshots" / "lab-board-1920x1080.png"
    wide.screenshot(path=str(out))
    assert out.stat().st_size > 20_000
    for p in [*students, wide]:
        p.context.close()
