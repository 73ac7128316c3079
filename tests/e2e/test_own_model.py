"""Real Chromium: a script of its own that trains with BenchCallback shows live on a dashboard's Train page (the
dashboard started nothing: the run is another process's, read from the shared store), then in History once it ended.

The script trains a tiny real model, paced (a pause after each epoch) and held before its last epoch until the test
writes a line to its stdin, so the page sees it live however slowly this machine runs it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from playwright.sync_api import expect

from benchmarks import hostile_files
from tests.e2e.steps import ROOT, main, rerun_ends, screenshot, store_of, what_the_page_shows
from tests.polling import wait_for

pytestmark = pytest.mark.e2e
MODEL_NAME = "own_e2e_mlp"  # what History's filter finds it by

SCRIPT = textwrap.dedent(f"""
    import sys, time
    import numpy as np, keras
    from bench.integrations.keras import BenchCallback

    class Pace(keras.callbacks.Callback):  # between epochs, outside their timing: a page can watch each one land
        def on_epoch_end(self, epoch, logs=None):
            time.sleep(1.0)  # stand-in: a script's slower epochs (the test waits on what it stores, not on this)
            if epoch + 2 == self.params["epochs"]:
                sys.stdin.readline()  # held before the last epoch until the test has seen the run live

    x = np.random.rand(512, 28, 28, 1).astype("float32"); y = np.random.randint(0, 10, 512)
    model = keras.Sequential([keras.Input((28, 28, 1)), keras.layers.Flatten(), keras.layers.Dense(16),
                              keras.layers.Dense(10)], name="{MODEL_NAME}")
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    bench = BenchCallback(batch_size=64, sample_interval_s=0.2, dataset="e2e random digits")
    model.fit(x, y, batch_size=64, epochs=5, callbacks=[bench, Pace()], verbose=0)
    print("run", bench.run_id, flush=True)
""")


def test_a_scripts_run_shows_live_on_train_then_in_history(page, server, tmp_path: Path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "BENCH_STORE": str(server.store_path), "TF_CPP_MIN_LOG_LEVEL": "3"}
    proc = subprocess.Popen([sys.executable, str(script)], cwd=tmp_path, env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    store = store_of(server)
    try:
        run = wait_for(lambda: next((r for r in store.list_runs() if r.config.model == MODEL_NAME
                                     and r.status == "running" and r.epochs), None), 180,
                       "the script's run to store its first epoch")
        page.goto(server.url + "/train")
        page.get_by_role("heading", name="Train").wait_for(timeout=90_000)
        status = main(page).get_by_text(f"Run #{run.id}").first
        status.wait_for(timeout=90_000)
        expect(main(page).get_by_text("shown from the store").first,
               "the run is another process's, read from the store").to_be_visible(timeout=60_000)
        expect(main(page).get_by_text(MODEL_NAME).first, "its label names the script's model").to_be_visible()
        # live: the header follows the script's epochs as they land (4 of its 5 before the hold)
        header = page.locator(".bench-live-header")
        expect(header, "the live header").to_be_visible(timeout=60_000)
        wait_for(lambda: len(store.get_run(run.id, with_samples=False).epochs) >= 4, 120, "4 epochs stored")
        expect(header, "4 epochs done, on the page while the script still runs").to_contain_text(
            "4 of 5 epochs done", timeout=60_000)
        expect(header).to_contain_text("running")
        expect(page.get_by_role("button", name="Stop"), "no Stop for another process's run").to_have_count(0)
        screenshot(page, "own-model-live")
        out, err = proc.communicate("go\n", timeout=180)  # the last epoch, then the run's end
        assert proc.returncode == 0, err[-2000:]
        assert f"run {run.id}" in out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    done = store.get_run(run.id, with_samples=False)
    assert done.status == "finished" and len(done.epochs) == 5
    expect(main(page).get_by_text("Finished after 5 of 5 epochs").first,
           f"the page follows the run to its end: {what_the_page_shows(page, server)}").to_be_visible(timeout=90_000)

    page.goto(server.url + "/history")
    page.get_by_role("heading", name="History").wait_for(timeout=60_000)
    box = page.get_by_label("Filter (matches any column)")
    box.fill(MODEL_NAME)
    with rerun_ends(page, "the rerun after filtering"):
        box.press("Enter")
    grid = page.locator('[data-testid="stDataFrame"]').first
    grid.wait_for()
    bounds = grid.bounding_box()
    with rerun_ends(page, "the rerun after selecting the script's run"):
        page.mouse.click(bounds["x"] + 16, bounds["y"] + 35 + 35 / 2)  # the first (only) row's selection box
    expect(page.get_by_text("1 run(s) selected").first, "the script's run listed in History").to_be_visible(
        timeout=30_000)
    screenshot(page, "own-model-history")


def test_a_zip_bomb_uploaded_on_train_is_refused_and_the_server_stays_small(page, server, tmp_path: Path):
    """A 4.7 MB .keras whose config.json inflates to 1 GiB, uploaded as a person would: the page says why within
    seconds, and the server's resident memory, sampled every 20 ms through the upload and the refusal, barely moves
    (it reads the zip directory, never the member)."""
    import threading

    bomb = hostile_files.zip_bomb(tmp_path / "bomb.keras")
    page.goto(server.url + "/train")
    page.get_by_role("heading", name="Train").wait_for(timeout=90_000)
    uploader = page.locator('[data-testid="stFileUploader"]').filter(has_text=".keras file")
    uploader.wait_for(timeout=60_000)
    before = server.ps.memory_info().rss
    peak, done = [before], threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak.append(server.ps.memory_info().rss)
            done.wait(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        uploader.locator("input[type=file]").set_input_files(str(bomb))
        expect(main(page).get_by_text("config.json of 1,024.0 MB").first,
               "the refusal, with the inflated size").to_be_visible(timeout=60_000)
    finally:
        done.set()
        sampler.join(timeout=5)
    grown_mib = (max(peak) - before) / 2**20
    print(f"server RSS {before / 2**20:.0f} MiB before the upload, peak {max(peak) / 2**20:.0f} MiB "
          f"(+{grown_mib:.0f} MiB) over {len(peak)} samples")
    assert grown_mib < 100, f"the server grew by {grown_mib:.0f} MiB refusing a zip bomb"
    screenshot(page, "own-model-bomb-refused")
