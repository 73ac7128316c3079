"""Real browser: the Machines page with the shipped bundles and one imported into the server's store ranks the
machines for a model picked through the page's link (as a chart and as tables), marks a figure read between two sizes
as such, and its HTML report downloads and opens on its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.steps import main, screenshot, store_of

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]


def test_machines_ranking_read_between_sizes_and_html_report(page, server, tmp_path):
    doc = json.loads((ROOT / "docs/results/bundle-cpu-2core.json").read_text()) | {"label": "team workstation"}
    store_of(server).bundles.add(doc)

    page.goto(server.url + "/machines?mach_model=mlp&mach_size=s&mach_batch=2048"
              "&mach_base=store:1|cpu&mach_prices=shipped:bundle-h100|gpu:0=2.5")
    page.get_by_role("heading", name="Machines", exact=True).wait_for(timeout=60_000)
    body = main(page)
    body.get_by_text("team workstation").first.wait_for(timeout=30_000)
    assert body.get_by_text("H100 cloud VM").count() > 0
    # the ranking drawn above the tables (the page's first chart: plotly.js loads with it, slowly on a busy machine)
    chart = body.locator(".js-plotly-plot").first
    chart.wait_for(timeout=90_000)
    assert chart.get_by_text("unlike baseline: backend jax").count() > 0  # the caveat on the H100's bar
    assert chart.get_by_text("read between sizes (estimate)").count() > 0  # in the legend
    between = body.get_by_text("read between xs and m measured at batch 2048")
    between.first.wait_for(timeout=30_000)
    assert body.get_by_text("read between sizes").count() > 0
    assert body.get_by_text("never extrapolated").count() == 0  # s lies inside every measured range here
    screenshot(page, "machines-ranking")

    with page.expect_download() as info:
        page.get_by_role("button", name="Download the gallery (HTML report)").click()
    report = tmp_path / "machines.html"
    info.value.save_as(report)
    viewer = page.context.new_page()
    viewer.goto(report.as_uri())
    viewer.get_by_role("heading", name="Which machine for this model?").wait_for(timeout=20_000)
    assert viewer.get_by_text("team workstation").count() > 0
    assert viewer.get_by_text("read between sizes").count() > 0
    assert viewer.locator("script[src]").count() == 0  # self-contained: nothing fetched
    screenshot(viewer, "machines-html-report")


def test_machines_upload_adds_a_bundle_and_refuses_a_record(page, server, tmp_path):
    """The page's upload keeps a bundle in the server's store (it joins the table) and refuses a file that is not
    one with a message that says so, leaving the gallery as it was."""
    doc = json.loads((ROOT / "docs/results/bundle-cpu-2core.json").read_text()) | {"label": "uploaded laptop"}
    bundle = tmp_path / "laptop-bundle.json"
    bundle.write_text(json.dumps(doc))
    wrong = tmp_path / "not-a-bundle.json"
    wrong.write_text(json.dumps({"schema": "bench.run/1"}))

    before = [doc["label"] for _, doc in store_of(server).bundles.list()]
    page.goto(server.url + "/machines")
    page.get_by_role("heading", name="Machines", exact=True).wait_for(timeout=60_000)
    body = main(page)
    body.locator(".js-plotly-plot").first.wait_for(timeout=90_000)  # the page drawn whole before it is used
    body.get_by_text("Add a machine bundle").click()
    body.locator("input[type=file]").set_input_files(str(wrong))
    body.get_by_text("This file is not a machine bundle").wait_for(timeout=30_000)
    assert body.get_by_text("uploaded laptop").count() == 0
    body.locator("input[type=file]").set_input_files(str(bundle))
    body.get_by_text("uploaded laptop").first.wait_for(timeout=30_000)
    assert [doc["label"] for _, doc in store_of(server).bundles.list()] == [*before, "uploaded laptop"]
    screenshot(page, "machines-uploaded")
