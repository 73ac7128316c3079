"""Real browser, in front of a room: links open the form they describe (preset, targets, projector view), a bad
parameter gives a note and the default, the projector view's charts have large text, Copy link copies the page's
address, and a lesson step runs live."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from bench.vocab.config import RunConfig
from tests.e2e.steps import screenshot

pytestmark = pytest.mark.e2e


def target_tags(page):
    """The targets chosen in the Targets box, one tag each, in their order."""
    return page.locator('[data-testid="stMultiSelect"]').filter(has_text="Targets").locator("[data-tag]")


def test_compare_link_opens_the_preset_with_those_targets(page, server):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.goto(server.url + "/compare?preset=seed-cifar10-mlp&targets=cpu/1,cpu")
    page.get_by_role("heading", name="Compare").wait_for()
    model = page.get_by_role("combobox", name="Model", exact=True)
    expect(model, "the preset in the Model box").to_have_value(re.compile("CIFAR-10 MLP"), timeout=30_000)
    expect(page.get_by_label("Batch size", exact=True), "the preset's batch size 32").to_have_value(
        "32", timeout=30_000)
    expect(target_tags(page), "the link's targets").to_have_text(["cpu/1", "cpu"])
    assert page.get_by_text("were left out").count() == 0
    assert "preset=seed-cifar10-mlp" in page.url

    page.frame_locator("iframe").first.get_by_role("button", name="Copy link").click()
    button = page.frame_locator("iframe").first.locator("#copy")
    expect(button, "the copy confirmation").to_contain_text("copied", ignore_case=True, timeout=10_000)
    copied = page.evaluate("navigator.clipboard.readText()")
    assert "/compare?" in copied and "preset=seed-cifar10-mlp" in copied

    # cpu/1,cpu is also this 2-core machine's default order: the reverse shows the link is what sets it
    page.goto(server.url + "/compare?preset=seed-text&targets=cpu,cpu/1")
    page.get_by_role("heading", name="Compare").wait_for()
    expect(target_tags(page), "the targets in the link's order").to_have_text(["cpu", "cpu/1"], timeout=30_000)
    assert "IMDB" in page.get_by_role("combobox", name="Model", exact=True).input_value()


def test_train_link_opens_the_projector_view_with_those_settings(page, server):
    page.goto(server.url + "/train?epochs=7&size=m&present=1")
    page.get_by_role("heading", name="Train").wait_for()
    epochs = page.get_by_label("Epochs", exact=True)
    expect(epochs, "epochs 7 from the link").to_have_value("7", timeout=30_000)
    assert page.get_by_text(re.compile("669,706 params")).count() > 0, "the parameter count of size m"
    assert not epochs.is_visible(), "the settings are folded away in the projector view"
    assert page.get_by_role("switch", name="Projector view").is_checked()
    title_px = page.evaluate("parseFloat(getComputedStyle(document.querySelector('h1')).fontSize)")
    assert title_px >= 45, title_px  # 2.6rem at the projector's 19 px root
    assert "present=1" in page.url and "epochs=7" in page.url
    screenshot(page, "room-train-present")


def test_bad_parameter_shows_a_note_and_the_default(page, server):
    page.goto(server.url + "/train?epochs=-3")
    page.get_by_role("heading", name="Train").wait_for()
    page.get_by_text("Some settings in this link were left out").wait_for()
    assert page.get_by_text(re.compile(r"epochs=-3.*from 1 to 1,000")).count() > 0
    # the default (no run has been made on this module's server yet); the box settles after the first render
    expect(page.get_by_label("Epochs", exact=True), "the default epochs in the box").to_have_value(
        str(RunConfig().epochs), timeout=15_000)
    assert page.locator('[data-testid="stException"]').count() == 0


def test_projector_chart_text_is_large(page, server):
    """Tick labels 18 px, the title 24 px and the legend 18 px as the browser draws them, and smaller without."""
    def sizes(url: str) -> tuple[float, float]:
        page.goto(url)
        page.get_by_role("heading", name=re.compile("A small model")).wait_for()
        page.get_by_text(re.compile("^3 · Batch size")).click()
        tick = page.locator(".js-plotly-plot .ytick text").first
        tick.wait_for()
        title = page.locator(".js-plotly-plot .gtitle").first
        px = [float(el.evaluate("e => parseFloat(getComputedStyle(e).fontSize)")) for el in (tick, title)]
        return px[0], px[1]

    tick_px, title_px = sizes(server.url + "/lesson?present=1")
    assert tick_px >= 18 and title_px >= 24, (tick_px, title_px)
    plain_tick, plain_title = sizes(server.url + "/lesson")
    assert plain_tick < 18 and plain_title < 24, (plain_tick, plain_title)


def test_lesson_step_runs_live(page, server):
    page.goto(server.url + "/lesson")
    page.get_by_role("heading", name=re.compile("A small model")).wait_for()
    page.get_by_role("button", name=re.compile("^Run ")).click()
    result = page.get_by_text(re.compile(r"^Live: \S+ vs \S+"))
    expect(result.first, "the step's live speed-up").to_be_visible(timeout=240_000)
    assert page.get_by_text(re.compile(r"is \d+\.\dx (faster|slower) than")).count() >= 1
    screenshot(page, "room-lesson-step")
