"""Real Chromium: a long run keeps the Train page answering. Epochs replayed ten a second (benchmarks.standins'
BRISK_WORKER) bring the stream's news faster than a page can draw a chart per message: the page joins what it has not
drawn yet and draws each chart at most every so often (ui/static/live.js), so the Stop button still takes a click
hundreds of epochs in, and the bars' axis keeps a readable number of ticks (bench.output.charts.epoch_step). Before
both, a page fell further behind with each epoch and stopped answering some 70 epochs in."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from benchmarks.standins import BRISK_WORKER_TARGET
from tests.e2e.conftest import Server
from tests.e2e.steps import new_page, open_train, screenshot, set_number, store_of, wait_for_js
from tests.polling import wait_for

pytestmark = pytest.mark.e2e

EPOCHS_BEFORE_STOP = 250
BARS = """() => { const gd = document.querySelector('.bench-live-chart[data-name="epochs"]');
    if (!gd || !gd.data) return null;
    return {bars: gd.data.reduce((n, t) => n + (t.x || []).length, 0),
            ticks: gd.querySelectorAll('.xtick').length}; }"""


@pytest.fixture(scope="module")
def brisk_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(Path(tmp_path_factory.mktemp("long-run")), env={"BENCH_WORKER_TARGET": BRISK_WORKER_TARGET})
    yield srv
    srv.stop()


def epochs_stored(server: Server, run_id: int) -> int:
    return len(store_of(server).get_run(run_id, with_samples=False).epochs)


def test_a_long_run_keeps_the_page_answering_and_draws_every_epoch(browser, brisk_server):
    page = new_page(browser, timeout_ms=45_000)
    open_train(page, brisk_server.url)
    set_number(page, "Epochs", 1000)
    set_number(page, "Training samples (0 = all)", 2000)
    page.get_by_role("button", name="Start").click()
    run_id = wait_for(lambda: (runs := store_of(brisk_server).list_runs()) and runs[-1].id, 30, "the run")
    wait_for(lambda: epochs_stored(brisk_server, run_id) >= EPOCHS_BEFORE_STOP, 240,
             f"{EPOCHS_BEFORE_STOP} epochs in the store")
    # the page, drawing all along, still answers: a question in its own script, then a person's click
    wait_for_js(page, "() => true", "the page to answer a script while the run streams", timeout_ms=20_000)
    page.get_by_role("button", name="Stop").click(timeout=30_000)
    wait_for(lambda: store_of(brisk_server).get_run(run_id, with_samples=False).status == "stopped", 60,
             "the run to stop")
    stored = epochs_stored(brisk_server, run_id)
    drawn = wait_for_js(page, f"() => {{ const b = ({BARS})(); return b && b.bars === {stored} && b; }}",
                        lambda: f"all {stored} epochs drawn; the chart holds {page.evaluate(BARS)}", timeout_ms=60_000)
    assert 2 <= drawn["ticks"] <= 10, f"{drawn['ticks']} epoch ticks under {stored} bars: a readable axis has few"
    expect(page.get_by_text(f"Run #{run_id} stopped").first).to_be_visible(timeout=60_000)
    expect(page.get_by_role("button", name="Stop"), "the panel's rerun after the run ended").to_have_count(
        0, timeout=60_000)
    page.locator('.bench-live-chart[data-name="epochs"]').scroll_into_view_if_needed()
    screenshot(page, "long-run-stopped")
