"""AppTest for every page: renders without exceptions, shows the right controls, refuses bad input clearly."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from benchmarks.standins import PACED_WORKER_TARGET

ROOT = Path(__file__).resolve().parents[2]
PAGES = ["pages/train.py", "pages/compare.py", "pages/sweep.py", "pages/history.py", "pages/system.py", "pages/lesson.py",
         "pages/machines.py"]


def app(path: str) -> AppTest:
    return AppTest.from_file(str(ROOT / path), default_timeout=30)


def shown(markdown: str) -> str:
    """``markdown`` as it reads: the pages escape outside text (ui.safe_text.escape), and "gpu\\:0" reads "gpu:0"."""
    return re.sub(r"\\(.)", r"\1", markdown)


def element_data(tree, name: str) -> list[dict]:
    """The JSON data of each custom element ``name`` (ui.v2_component) under ``tree`` (the app, or at.sidebar)."""
    return [json.loads(e.proto.json) for e in tree.get("bidi_component") if e.proto.component_name == name]


def test_app_navigation_renders_the_train_page():
    at = app("app.py").run()
    assert not at.exception
    assert at.title[0].value == "Train"
    # the sidebar's "Current run" line is one element (ui.live.sidebar_status), kept current by the stream
    (status,) = element_data(at.sidebar, "bench_live_status")
    assert status["line"]["text"] == "No run yet." and status["state"] == "none", status


@pytest.mark.parametrize("page", PAGES)
def test_every_page_renders(page):
    at = app(page).run()
    assert not at.exception, at.exception
    assert at.title, "each page has a title"


def test_train_page_controls_and_defaults():
    at = app("pages/train.py").run()
    assert at.selectbox(key="cfg_dataset").value == "synthetic-mnist"
    assert at.selectbox(key="cfg_model").value == "mlp"
    assert at.number_input(key="cfg_epochs").value == 5
    assert at.number_input(key="cfg_batch").value == 128
    assert at.radio(key="cfg_device").options == ["CPU (2 cores)"] or at.radio(key="cfg_device").value == "cpu"
    assert any("203,530 params" in c.value for c in at.caption), "parameter count of mlp s is shown"
    assert at.button(key="start_run")


def test_train_page_says_plainly_when_no_gpu_exists():
    at = app("pages/train.py").run()
    from bench.hardware import devices

    hw = devices.discover()
    if hw.gpus:
        pytest.skip("this machine has a GPU; the no-GPU message is not shown")
    assert any("No GPU is offered" in i.value for i in at.info)


def test_parameter_count_follows_the_size():
    at = app("pages/train.py").run()
    at.select_slider(key="cfg_size").set_value("m").run()
    assert any("669,706 params" in c.value for c in at.caption)


def test_start_with_bad_input_shows_what_to_do_and_starts_nothing():
    at = app("pages/train.py").run()
    at.number_input(key="cfg_limit").set_value(100).run()
    at.number_input(key="cfg_batch").set_value(512).run()
    at.button(key="start_run").click().run()
    assert not at.exception
    errors = " ".join(e.value for e in at.error)
    assert "batch size 512 is larger than the 100 training samples" in errors
    assert any("No run yet" in i.value for i in at.info)


def test_start_queues_a_run_and_the_panel_shows_it(monkeypatch):
    monkeypatch.setenv("BENCH_WORKER_TARGET", PACED_WORKER_TARGET)  # the page's wiring; real training: tests/unit/test_jobs.py
    at = app("pages/train.py").run()
    at.number_input(key="cfg_epochs").set_value(1).run()
    at.number_input(key="cfg_limit").set_value(256).run()
    at.button(key="start_run").click().run()
    assert not at.exception
    assert not at.error
    # a live run's header and charts are one element (ui.live.live_view) fed by the stream; the header's words are
    # in the element's data, and the page holds no header element and no chart of its own
    views = element_data(at, "bench_live_view")
    assert len(views) == 1, views
    assert not element_data(at, "bench_live_header") and not at.get("plotly_chart")
    header = views[0]["header"]
    assert header is not None, views[0]
    status = "".join(text for text, _bold in header["status"]["parts"])
    assert status.startswith("Run #") and header["progress"]["text"], header
    assert [t["label"] for t in header["tiles"]] == ["Last epoch", "Samples/s", "CPU", "GPU"]
    from ui.common import get_manager

    manager = get_manager()
    snap = manager.current()
    assert snap is not None and snap.config.epochs == 1
    assert header["run"] == snap.id and views[0]["state"] == f"{snap.id}@{snap.created_at}:live", views[0]
    manager.stop(snap.id)
    final = manager.wait(snap.id, timeout_s=60)
    assert final.status in ("stopped", "finished")


@pytest.mark.parametrize("spare", ["ready", "loading", None])
def test_start_on_a_ready_spare_waits_for_the_first_batch_before_redrawing(monkeypatch, spare):
    from bench.runs.jobs import JobManager
    from bench.runs.prestart import SparePool
    from ui import live

    waits = []
    monkeypatch.setattr(SparePool, "state", lambda self: spare)
    monkeypatch.setattr(JobManager, "submit", lambda self, config: 41)
    monkeypatch.setattr(JobManager, "wait_first_batch", lambda self, run_id, timeout_s: waits.append((run_id, timeout_s)))
    at = app("pages/train.py").run()
    at.button(key="start_run").click().run()
    assert not at.exception
    assert waits == ([(41, live.FIRST_BATCH_WAIT_S)] if spare == "ready" else [])


@pytest.mark.slow  # every page in a fresh interpreter: seconds each
def test_pages_do_not_import_tensorflow():
    code = (
        # the two seams of tests/app/conftest.py: neither imports a framework here (the real probe imports one in a
        # child of its own, 6 CPU-s: the check is on this process's modules)
        "import sys; from streamlit.testing.v1 import AppTest; from tests.app import page_seams; page_seams.apply()\n"
        f"for p in ['app.py', {', '.join(repr(p) for p in PAGES)}]:\n"
        f"    at = AppTest.from_file({str(ROOT)!r} + '/' + p, default_timeout=30).run()\n"
        "    assert not at.exception, (p, at.exception)\n"
        "bad = [m for m in ('tensorflow', 'keras', 'jax', 'torch') if m in sys.modules]\n"
        "assert not bad, bad\n"
        "print('clean')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr[-2000:]
    assert "clean" in out.stdout


def test_system_page_measures_and_lists_the_matmul_peak(monkeypatch):
    from bench.hardware import peak_cache, probe

    # the page's button, queue, message and cached listing are what this shows; the probe's child process and its
    # figures are tests/unit/test_probe.py's (a real child here imported TensorFlow: 6 CPU-s for a number)
    asked: list[tuple[str, int | None]] = []

    def measured(device: str = "cpu", *, cpu_threads: int | None = None, **kw) -> peak_cache.PeakEntry:
        asked.append((device, cpu_threads))
        return peak_cache.PeakEntry.model_validate(
            {"device": device, "peak_gflops": 105.1, "size": 1024, "measured_at": 1.75e9, "sizes": [512, 1024],
             "repeats": 3, "framework": "tensorflow test"})

    def peak_tables(at: AppTest) -> list:  # a machine with a GPU lists its GPUs in a table too
        return [t.value for t in at.table if "peak GFLOP/s" in t.value.columns]

    monkeypatch.setattr(probe, "measure_peak", measured)
    at = app("pages/system.py").run()
    assert not peak_tables(at), "nothing is cached yet"
    at.button(key="sys_peak").click().run(timeout=120)
    assert not at.exception
    assert asked == [("cpu", None)], asked
    assert any("105.1 GFLOP/s" in s.value for s in at.success), [e.value for e in at.error]
    at = app("pages/system.py").run()
    (listed,) = peak_tables(at)
    assert list(listed["peak GFLOP/s"]) == [105.1], listed


def test_a_finished_comparison_shows_its_headline_and_export_buttons(monkeypatch):
    """The page's view of a finished comparison; its runs are replayed (a real one: tests/unit/test_cli.py)."""
    monkeypatch.setenv("BENCH_WORKER_TARGET", PACED_WORKER_TARGET)
    from bench.analysis import compare
    from bench.vocab.config import RunConfig
    from ui.common import get_hardware, get_manager

    manager = get_manager()
    base = RunConfig(epochs=2, limit_samples=512, batch_size=128, size="xs")
    configs = compare.target_configs(base, ["cpu/1", "cpu"], get_hardware())
    manager.groups.submit("compare", configs, targets=["cpu/1", "cpu"])
    group = manager.groups.latest("compare")
    for run_id in group.run_ids:
        assert manager.wait(run_id, timeout_s=120).status == "finished"

    at = app("pages/compare.py").run()
    assert not at.exception, at.exception
    # the replayed sides run at one pace, so the sentence may be either form; it is the headline all the same
    assert any(("faster than" in s.value or "about as fast" in s.value) and "median steady epoch" in s.value
               for s in at.success), [s.value for s in at.success]
    labels = [b.proto.label for b in at.get("download_button")]
    assert labels == ["JSON", "HTML report"], labels  # a comparison has no single CSV


def test_compare_shows_a_shipped_h100_comparison_on_a_machine_without_a_gpu():
    at = app("pages/compare.py").run()
    choice = at.selectbox(key="cmp_bundled")
    label = next(o for o in choice.options if o.startswith("CIFAR-10 MLP"))
    choice.select(label).run()
    assert not at.exception, at.exception
    assert any("gpu:0 trains 11.5x faster than cpu" in shown(s.value) for s in at.success), [s.value for s in at.success]
    assert any("H100" in m.value and "not measured here" in m.value for m in at.markdown)
    table = next(df.value for df in at.dataframe if "source" in df.value.columns)
    ours = table[table["source"].str.startswith("this tool")]
    assert len(ours) == 1, "a CPU run and a GPU run make one row, both times and their ratio"
    row = ours.iloc[0]
    assert row["ratio"] == "6.1x" and row["CPU time"] != "—" and row["GPU time"] != "—", row.to_dict()
    assert "12.1x" in set(table["ratio"]), "the article's own ratio stands beside ours"


def test_sweep_shows_the_shipped_h100_sweeps_with_their_charts_and_flags_short_epochs():
    at = app("pages/sweep.py").run()
    choice = at.selectbox(key="swp_bundled")
    choice.select(next(o for o in choice.options if o.startswith("MLP xs..xl"))).run()
    assert not at.exception, at.exception
    assert any("H100" in m.value and "not measured here" in m.value for m in at.markdown)
    assert len(at.get("plotly_chart")) == 4, "utilization, samples/s, GFLOP/s vs peak and the GPU's speed-up"
    flagged = [shown(w.value) for w in at.warning if "Utilization of" in w.value]
    assert flagged and "xs/128 on cpu" in flagged[0], flagged  # a 0.18 s epoch, sampled every 0.2 s
    assert "on gpu:0" not in flagged[0], "the GPU's 0.43-0.5 s epochs held samples"

    choice = at.selectbox(key="swp_bundled")
    choice.select(next(o for o in choice.options if "2048" in o)).run()
    assert not at.exception, at.exception
    flagged = [shown(w.value) for w in at.warning if "Utilization of" in w.value]
    assert flagged and "xl/2048 on gpu:0" in flagged[0] and "xl/32" not in flagged[0], flagged


def test_after_a_restart_train_shows_the_last_run_and_history_its_figures(isolated_store):
    import streamlit as st

    from bench.store import Store
    from tests.unit.test_store import dead_pid, set_owner

    store = Store(isolated_store)
    run_id = store.create_run({"dataset": "synthetic-mnist", "model": "mlp", "size": "xs", "epochs": 40},
                              status="running", label="mlp xs")
    for n in range(1, 32):
        store.add_epoch(run_id, {"epoch": n, "epoch_seconds": 0.5 if n > 1 else 2.0, "includes_tracing": n == 1,
                                 "samples_per_s": 4000.0, "loss": 1.0, "t_start_s": n * 0.5, "t_end_s": n * 0.5 + 0.5})
    store.add_samples(run_id, [{"t_s": 1.0 + i * 0.5, "cpu_percent": 60.0, "gpus": []} for i in range(30)])
    set_owner(store, run_id, owner_pid=dead_pid())  # the server that ran it was killed
    st.cache_resource.clear()  # a new server process: a new JobManager on the same store
    try:
        at = app("pages/train.py").run()
        assert not at.exception, at.exception
        # the run's header is the live view's in every state (ui.live.live_view): its data says what it draws
        [view] = element_data(at, "bench_live_view")
        header = view["header"]
        assert "".join(text for text, _ in header["status"]["parts"]).startswith(f"Run #{run_id} interrupted"), header
        assert "No run yet" not in " ".join(i.value for i in at.info)
        assert header["progress"]["text"] == "Interrupted after 31 of 40 epochs", header

        at = app("pages/history.py").run()
        assert not at.exception, at.exception
        table = at.dataframe[0].value
        row = table[table["id"] == run_id].iloc[0]
        assert row["status"] == "interrupted" and row["epochs"] == "31/40"
        assert row["samples/s"] == "4,000", "computed from the epochs it has"
        assert row["mean CPU %"] == "60"
    finally:
        st.cache_resource.clear()


def test_compare_figures_are_built_once_for_every_viewer(monkeypatch):
    """Two browsers on one comparison: the manager's group is drawn from one cached figure per state."""
    import streamlit as st

    from bench.output import charts
    from bench.vocab.config import RunConfig
    from tests.unit import fake_workers
    from ui import common

    st.cache_resource.clear()
    try:
        manager = common.get_manager()
        manager._worker_target = fake_workers.quick
        base = RunConfig(size="xs", epochs=3, limit_samples=512, sample_interval_s=0.2)
        gid = manager.groups.submit("compare", [base.replace(cpu_threads=1), base], targets=["cpu/1", "cpu"])
        for run_id in manager.groups.latest("compare").run_ids:
            assert manager.wait(run_id, timeout_s=60).status == "finished"
        built = []
        real = charts.epoch_time_figure
        monkeypatch.setattr(charts, "epoch_time_figure", lambda series, **kw: built.append(1) or real(series, **kw))
        viewers = [app("pages/compare.py").run(), app("pages/compare.py").run()]
        for at in viewers:
            assert not at.exception, at.exception
            assert any("faster than" in s.value or "as fast" in s.value for s in at.success), "the headline shows"
        assert manager.groups.latest("compare").id == gid
        assert len(built) == 1, f"the comparison's epoch figure was built {len(built)} times for two viewers"
    finally:
        st.cache_resource.clear()
