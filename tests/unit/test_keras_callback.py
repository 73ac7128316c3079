"""BenchCallback: a script's own model.fit recorded in the store as `bench run` records its runs (the model's size and
arithmetic, batch size, backend, device, each epoch timed as a worker times it, samples of this process), seen live by
a dashboard's JobManager on the same store while it trains, and left `interrupted` with its epochs when its process is
killed. These train real (tiny) models: slow."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bench.runs.jobs import JobManager
from bench.store import Store
from bench.plans import models
from bench.plans import model_file
from tests.fixtures import NO_GPU
from tests.polling import wait_for

pytestmark = pytest.mark.slow  # each test trains a real model

ROOT = Path(__file__).resolve().parents[2]


def _model_and_data(keras, samples: int = 512):
    import numpy as np

    rng = np.random.default_rng(0)
    x = rng.random((samples, 28, 28, 1), dtype="float32")
    y = rng.integers(0, 10, samples)
    model = keras.Sequential([keras.Input((28, 28, 1)), keras.layers.Flatten(),
                              keras.layers.Dense(32, activation="relu"), keras.layers.Dense(10)], name="mine")
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    return model, x, y


def test_a_fit_with_the_callback_is_a_stored_run_like_bench_runs_own(isolated_store):
    keras = pytest.importorskip("keras")
    from bench.integrations.keras import BenchCallback

    model, x, y = _model_and_data(keras)
    seen_live = {}

    class Look(keras.callbacks.Callback):  # what another process (a dashboard) sees while the fit runs
        def on_epoch_end(self, epoch, logs=None):
            if epoch == 1:
                dashboard = JobManager(Store(isolated_store), hardware=NO_GPU)
                seen_live["status"] = {r.id: r.status for r in Store(isolated_store).list_runs()}
                seen_live["current"] = dashboard.current()
                dashboard.shutdown()

    callback = BenchCallback(batch_size=64, sample_interval_s=0.1, dataset="my digits")
    model.fit(x, y, batch_size=64, epochs=3, validation_split=0.25, callbacks=[callback, Look()], verbose=0)

    run = Store(isolated_store).get_run(callback.run_id)
    assert run is not None and run.status == "finished"
    assert seen_live["status"] == {callback.run_id: "running"}, "live while it trained, never interrupted"
    current = seen_live["current"]
    assert current is not None and current.id == callback.run_id and current.active and current.owner, \
        "a dashboard on the same store shows the script's run as its current, live run"
    # the model's size and arithmetic, as the plans count them: this is the mlp-xs plan's layer stack
    plan = models.plan("mlp", "xs", (28, 28, 1), 10)
    assert run.info.params == model.count_params() == plan.params
    assert run.info.flops_per_sample == plan.flops_per_sample
    assert run.config.batch_size == 64 and run.config.model == "mine" and run.config.dataset == "my digits"
    assert run.config.backend == keras.config.backend() and run.config.device == "cpu"
    assert run.info.n_train == 6 * 64, "validation_split leaves 384 samples: 6 steps of 64"
    assert [e.epoch for e in run.epochs] == [1, 2, 3]
    assert [e.includes_tracing for e in run.epochs] == [True, False, False], "the tracing epoch is kept apart"
    assert all(e.t_start_s is not None and e.t_end_s > e.t_start_s for e in run.epochs), "on the samples' clock"
    assert run.summary.steady_epoch_seconds is not None and run.summary.achieved_gflops is not None
    assert run.samples and run.samples[0].process_rss_mib > 0, "samples of the script's own process"
    assert run.info.placement and run.info.worker_start.startswith("the script's own process")
    assert run.info.threads is not None and run.info.threads >= 1, "a CPU run says its threads, as a worker does"


def test_a_second_fit_after_one_that_raised_closes_the_first_as_stopped(isolated_store):
    keras = pytest.importorskip("keras")
    from bench.integrations.keras import BenchCallback

    model, x, y = _model_and_data(keras, samples=256)

    class Boom(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            raise KeyboardInterrupt  # as Ctrl-C in a notebook: fit never reaches on_train_end

    callback = BenchCallback(batch_size=64)
    with pytest.raises(KeyboardInterrupt):
        model.fit(x, y, batch_size=64, epochs=3, callbacks=[callback, Boom()], verbose=0)
    first = callback.run_id
    assert Store(isolated_store).get_run(first).status == "running", "this process still owns it"
    model.fit(x, y, batch_size=64, epochs=2, callbacks=[callback], verbose=0)
    runs = {r.id: r for r in Store(isolated_store).list_runs()}
    assert runs[first].status == "stopped" and len(runs[first].epochs) == 1
    assert runs[callback.run_id].status == "finished" and callback.run_id != first


SCRIPT = textwrap.dedent("""
    import numpy as np, keras
    from bench.integrations.keras import BenchCallback
    x = np.random.rand(512, 28, 28, 1).astype("float32"); y = np.random.randint(0, 10, 512)
    model = keras.Sequential([keras.Input((28, 28, 1)), keras.layers.Flatten(), keras.layers.Dense(10)])
    model.compile("adam", "sparse_categorical_crossentropy")
    model.fit(x, y, batch_size=64, epochs=1000, callbacks=[BenchCallback(batch_size=64)], verbose=0)
""")


def test_a_killed_script_leaves_an_interrupted_run_with_its_epochs(isolated_store, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "BENCH_STORE": str(isolated_store), "TF_CPP_MIN_LOG_LEVEL": "3"}
    proc = subprocess.Popen([sys.executable, str(script)], cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        def running_with_epochs():
            if not isolated_store.exists():
                return None
            return next((r for r in Store(isolated_store).list_runs() if r.status == "running" and len(r.epochs) >= 3),
                        None)

        run = wait_for(running_with_epochs, 180, "the script's run to store 3 epochs")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    after = wait_for(lambda: next((r for r in Store(isolated_store).list_runs()
                                   if r.id == run.id and r.status == "interrupted"), None),
                     30, "the killed script's run to read as interrupted")
    assert len(after.epochs) >= 3, "its epochs are kept"
    assert after.summary is not None and after.summary.steady_epoch_seconds is not None
    dashboard = JobManager(Store(isolated_store), hardware=NO_GPU)
    try:
        assert not dashboard.current().active, "never shown as live"
    finally:
        dashboard.shutdown()


def test_the_cost_benchmark_runs_at_its_smallest_size(tmp_path):
    out = tmp_path / "cost.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run([sys.executable, "-m", "benchmarks.callback_cost", "--repeats", "1", "--epochs", "2",
                           "--samples", "512", "--json", str(out)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "of the steady epoch" in done.stdout
    import json

    result = json.loads(out.read_text())
    assert result["steady_epoch_s_without"] > 0 and result["steady_epoch_s_with"] > 0
    assert result["runs_stored"] and result["runs_stored"][0]["status"] == "finished"


def test_the_example_records_its_run_and_saves_a_file_the_train_page_takes(isolated_store, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "BENCH_STORE": str(isolated_store), "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "own_model.py"), "--epochs", "2", "--samples",
                           "512", "--batch-size", "64"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    [run] = Store(isolated_store).list_runs()
    assert run.status == "finished" and len(run.epochs) == 2 and run.config.model == "own_cnn"
    assert f"recorded as run #{run.id}" in done.stdout
    own = model_file.check_model_file(str(tmp_path / "own_model.keras"), (28, 28, 1), 10)
    assert own.params == run.info.params and own.flops_per_sample == run.info.flops_per_sample, \
        "the file and the script's run have the same size and arithmetic"


def test_a_layer_without_a_formula_leaves_the_flops_uncounted_and_says_which():
    keras = pytest.importorskip("keras")
    from bench.training.keras_build import own_model

    model = keras.Sequential([keras.Input((28, 28, 1)), keras.layers.Conv2D(4, 3, strides=2),
                              keras.layers.BatchNormalization(), keras.layers.Flatten(), keras.layers.Dense(10)])
    own = own_model(model)
    assert own.params == model.count_params()
    assert own.flops_per_sample is None
    assert "Conv2D (this variant)" in own.flops_reason and "BatchNormalization" in own.flops_reason
    assert "FLOPs not counted" in own.describe()


def test_a_store_that_cannot_be_opened_costs_the_record_never_the_training(tmp_path):
    keras = pytest.importorskip("keras")
    from bench.integrations.keras import BenchCallback

    model, x, y = _model_and_data(keras, samples=128)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    callback = BenchCallback(batch_size=64, store=blocker / "runs.sqlite3")
    history = model.fit(x, y, batch_size=64, epochs=2, callbacks=[callback], verbose=0)
    assert len(history.history["loss"]) == 2 and callback.run_id is None


def test_train_shows_another_processs_live_run_over_its_own_ended_ones(isolated_store, monkeypatch):
    """A dashboard that has run something of its own still shows a script's run (any other process's) while that one
    is live, and its own latest run again once nothing else is live."""
    from bench.runs import stored_view
    from tests.fixtures import TINY
    from tests.unit import fake_workers

    monkeypatch.setattr(stored_view, "STORED_REFRESH_S", 0.0)
    dashboard = JobManager(Store(isolated_store), hardware=NO_GPU, worker_target=fake_workers.quick)
    try:
        own = dashboard.submit(TINY)
        assert dashboard.wait(own, timeout_s=60).status == "finished"
        assert dashboard.current().id == own
        store = Store(isolated_store)
        other = store.create_run(TINY.to_dict(), status="running")  # another process's (this pid is alive)
        snap = dashboard.current()
        assert snap.id == other and snap.active and snap.owner, "the live run of another process is shown"
        store.update_run(other, status="finished", ended_at=1.0)
        assert not dashboard.current().active
    finally:
        dashboard.shutdown()
