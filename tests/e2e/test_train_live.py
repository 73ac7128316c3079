"""Real Chromium against a real `streamlit run` server: start a CPU run, watch it live, stop another."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import screenshot
from tests.polling import wait_for

pytestmark = pytest.mark.e2e


def set_number(page, label: str, value: int) -> None:
    box = page.get_by_label(label, exact=True)
    box.fill(str(value))
    box.press("Enter")
    page.wait_for_timeout(400)


def bar_count(page) -> int:
    """Bars drawn in the first Plotly chart (time per epoch)."""
    return page.locator(".js-plotly-plot").first.locator(".barlayer .point").count()


def open_train(page, server) -> None:
    page.goto(server.url)
    page.get_by_role("heading", name="Train").wait_for()
    page.get_by_label("Epochs", exact=True).wait_for()


def test_start_a_cpu_run_and_watch_both_charts_grow(page, server):
    open_train(page, server)
    set_number(page, "Epochs", 3)
    set_number(page, "Training samples (0 = all)", 12000)
    set_number(page, "Batch size", 8)  # 1500 steps an epoch, about 3 s here: several refreshes per epoch
    page.get_by_role("button", name="Start").click()
    page.get_by_text("Run #1").first.wait_for(timeout=30_000)

    charts = page.locator(".js-plotly-plot")
    wait_for(lambda: charts.count() >= 2, 60, "the epoch and utilization charts")
    wait_for(lambda: page.locator(".js-plotly-plot").nth(1).locator(".scatterlayer .trace").count() >= 1, 60,
             "a CPU utilization line")
    wait_for(lambda: bar_count(page) >= 1, 120, "the first epoch bar")
    first = bar_count(page)
    wait_for(lambda: bar_count(page) > first, 120, "the epoch chart to grow")
    wait_for(lambda: page.get_by_text("Finished: steady epoch").count() > 0, 120, "the run to finish")
    # The finished line and the chart arrive in one rerun, but Plotly draws after the text is in the DOM.
    wait_for(lambda: bar_count(page) == 3, 15, "the chart to show all three epochs")
    assert page.get_by_text("trained on").count() > 0
    shot = screenshot(page, "train-finished")
    assert shot.stat().st_size > 10_000
    # the server now keeps the next worker with TensorFlow loaded, and says so
    wait_for(lambda: page.get_by_text("Worker ready").count() > 0, 120, "the pre-started worker to be ready")


def test_a_run_after_the_first_goes_to_the_prestarted_worker(page, server):
    from pathlib import Path

    from bench.store import Store

    store = Store(Path(server.log).parent / "runs.sqlite3")
    known = {r["id"] for r in store.list_runs()}
    open_train(page, server)
    wait_for(lambda: page.get_by_text("Worker ready").count() > 0, 120, "the pre-started worker to be ready")
    set_number(page, "Epochs", 2)
    set_number(page, "Training samples (0 = all)", 2000)
    page.get_by_role("button", name="Start").click()
    run_id = wait_for(lambda: max({r["id"] for r in store.list_runs()} - known, default=None), 30, "the new run")
    page.get_by_text(f"Run #{run_id}").first.wait_for(timeout=30_000)
    run = wait_for(lambda: (r := store.get_run(run_id, with_samples=False))["status"] in ("finished", "failed") and r,
                   120, "the run to end")
    assert run["status"] == "finished", run.get("error")
    assert run["info"]["worker_start"].startswith("pre-started"), run["info"]


def test_stop_a_second_run_midway(page, server):
    open_train(page, server)
    set_number(page, "Epochs", 200)
    set_number(page, "Training samples (0 = all)", 4000)
    page.get_by_role("button", name="Start").click()
    wait_for(lambda: page.get_by_role("button", name="Stop").count() > 0, 60, "the Stop button")
    wait_for(lambda: page.get_by_text("Epoch 2/200").count() > 0 or bar_count(page) >= 1, 120, "training to run")
    page.get_by_role("button", name="Stop").click()
    wait_for(lambda: page.get_by_text("Stopped after").count() > 0, 30, "the run to stop")
    wait_for(lambda: page.get_by_role("button", name="Stop").count() == 0, 10, "the Stop button to go away")
    screenshot(page, "train-stopped")
