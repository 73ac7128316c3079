"""The overhead harness (benchmarks/): arithmetic, schedule, result keys, the markdown report, the command and its
hand-over from `python -m bench overhead`, and the stand-ins it plugs into a real JobManager.

The pass itself (minutes of training, a server and a browser) is never launched here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.cli import main as cli
from benchmarks import overhead, report, standins, stats
from tests.fixtures import NO_GPU
from tests.polling import wait_for

ROOT = Path(__file__).resolve().parents[2]


def epochs(*seconds: float) -> list[dict]:
    return [{"epoch": i + 1, "epoch_seconds": s, "includes_tracing": i == 0} for i, s in enumerate(seconds)]


def run(kind: str, rnd: int, *seconds: float, **extra) -> dict:
    return {"kind": kind, "round": rnd, "epochs": epochs(*seconds), "wall_s": 10.0 + sum(seconds),
            "steady_median_s": stats.median(seconds[1:]), **extra}


def test_median_ignores_missing_and_non_finite_values():
    assert stats.median([3.0, None, 1.0, float("nan"), 2.0]) == 2.0
    assert stats.median([]) is None
    assert stats.median([None]) is None


def test_steady_times_drop_the_tracing_epoch():
    assert stats.steady_times(epochs(9.0, 1.0, 2.0)) == [1.0, 2.0]


def test_ratio_of_medians_pools_every_steady_epoch():
    ours = [run("engine", 1, 9.0, 1.1, 1.1), run("engine", 2, 9.0, 1.1, 1.3)]
    base = [run("bare", 1, 9.0, 1.0, 1.0), run("bare", 2, 9.0, 1.0, 1.2)]
    assert stats.ratio_of_medians(ours, base) == pytest.approx(1.1 / 1.0)
    assert stats.ratio_of_medians([], base) is None


def test_paired_ratio_compares_within_each_round():
    ours = [run("engine", 1, 5.0, 2.0), run("engine", 2, 5.0, 4.4), run("engine", 3, 5.0, 1.5)]
    base = [run("bare", 1, 5.0, 2.0), run("bare", 2, 5.0, 4.0), run("bare", 3, 5.0, 1.0)]
    assert stats.paired_ratio(ours, base) == pytest.approx(1.1)


def test_min_ratio_and_spread():
    ours = [run("engine", 1, 5.0, 2.2, 3.0)]
    base = [run("bare", 1, 5.0, 2.0, 2.5), run("bare", 2, 5.0, 3.0)]
    assert stats.min_ratio(ours, base) == pytest.approx(1.1)
    # per-run medians 2.25 and 3.0 -> (3.0 - 2.25) / median(2.25, 3.0)
    assert stats.spread(base) == pytest.approx(0.75 / 2.625)
    assert stats.spread(base[:1]) is None


def test_cpu_per_second_and_verdicts():
    assert stats.cpu_ms_per_s(cpu_s=3.0, window_s=30.0) == pytest.approx(100.0)
    assert stats.cpu_ms_per_s(cpu_s=1.0, window_s=0.0) is None
    assert stats.verdict("engine_vs_bare_ratio", 1.03) == "pass"
    assert stats.verdict("engine_vs_bare_ratio", 1.031) == "miss"
    assert stats.verdict("page_ready_s", None) == "not measured"


def test_schedule_alternates_every_kind_each_round_with_a_rotated_order():
    order = stats.schedule(["bare", "engine", "watched"], 3)
    assert order == [(1, "bare"), (1, "engine"), (1, "watched"), (2, "engine"), (2, "watched"), (2, "bare"),
                     (3, "watched"), (3, "bare"), (3, "engine")]


def test_plans_keep_three_runs_per_side():
    quick, full = stats.plan_for(True), stats.plan_for(False)
    assert quick.rounds >= 3 and full.rounds >= 3
    assert quick.epochs >= 2, "a steady epoch needs a second epoch"
    assert "watched" in full.kinds() and "watched" not in stats.plan_for(False, browser=False).kinds()
    cfg = full.config()
    assert cfg.validate(NO_GPU) is cfg
    assert (cfg.model, cfg.size, cfg.batch_size, cfg.sample_interval_s) == ("mlp", "s", 128, 0.5)


def fake_result(extra: dict | None = None) -> dict:
    plan = stats.plan_for(True)
    runs = []
    for rnd in (1, 2, 3):
        runs += [run("bare", rnd, 3.0, 1.00, 1.02),
                 run("engine", rnd, 3.0, 1.01, 1.02, window_s=10.0, side_cpu_s=0.2),
                 run("sampling_off", rnd, 3.0, 1.00, 1.01), run("sampling_0.1", rnd, 3.0, 1.03, 1.04),
                 run("watched", rnd, 3.0, 1.10, 1.12, first_batch_s=6.5, window_s=10.0, server_cpu_s=0.8,
                     chromium_cpu_s=2.0, side_cpu_s=2.8)]
    memory = [{"cores": 32, "gpus": 2, "tracemalloc": False, "samples_kept": 3600, "renders_during_stream": 10,
               "renders_after_run": 5, "peak_growth_mb": 20.0, "retained_growth_mb": 19.0, "drift_after_run_mb": 0.1,
               "traced_peak_growth_mb": None, "snapshot_bytes": 210_000, "event_bytes_median": 9_000,
               "event_bytes_max": 40_000}]
    # benchmarks.render_cost's keys: the publisher's work per change (once for every viewer), the Train page's rerun
    render = {"page_ms": [400.0, 420.0], "page_first_ms": [900.0], "publish_ms": [90.0, 110.0],
              "publish_first_ms": [300.0], "first_event_bytes": 250_000, "event_bytes": 1_200, "snapshot_ms": [4.0],
              "snapshot_bytes": 260_000, "publish_builds": 2, "epochs": 36,
              "figure_ms": {"utilization_figure": 60.0, "utilization_figure_without_epoch_lines": 20.0,
                            "epoch_time_figure": 10.0, "loss_accuracy_figure": 5.0}}
    machine = {"cpu_model": "Test CPU 9000", "logical_cores": 2, "physical_cores": 2, "ram_total_gib": 8.0,
               "gpus": [], "gpu_reason": "no GPU here", "framework": "tensorflow 2.x", "platform": "Linux",
               "python": "3.11", "label": "Test CPU 9000 (2 cores), no GPU"}
    return stats.result_from(plan, plan.config().to_dict(), machine, runs,
                                {"page_ready_s": [1.5, 1.8, 3.5], **(extra or {})}, memory, render)


def test_result_holds_every_figure_the_machine_and_the_raw_runs():
    result = fake_result()
    for key in ("engine_vs_bare_ratio", "watched_vs_bare_ratio", "sampling_ratio", "page_ready_s", "first_batch_s",
                "rerun_ms", "memory_growth_mb", "sampling_ratio_0_1", "machine", "runs", "date", "config"):
        assert key in result, key
    assert result["engine_vs_bare_ratio"] == pytest.approx(1.015 / 1.01)
    assert result["watched_vs_bare_ratio"] == pytest.approx(1.11 / 1.01)
    assert result["page_ready_s"] == 1.8
    assert result["first_batch_s"] == 6.5
    assert result["rerun_ms"] == pytest.approx(100.0)  # worse of 80 ms server CPU a second and 100 ms per change
    assert result["memory_growth_mb"] == 20.0
    assert result["figures"]["watched_vs_bare_ratio"]["verdict"] == "miss"
    assert result["figures"]["page_ready_s"]["machine"] == "Test CPU 9000 (2 cores), no GPU"
    assert all("epochs" in r for r in result["runs"])
    json.dumps(result)  # JSON-ready


def test_the_live_panels_cost_is_the_publishers_work_per_change_not_a_viewers_rerun():
    d = fake_result()["details"]
    assert d["server_cpu_ms_per_s_watched"] == pytest.approx(80.0)  # 0.8 s of server CPU over a 10 s window
    assert d["publish_wall_ms"] == pytest.approx(100.0) and d["publish_first_wall_ms"] == pytest.approx(300.0)
    assert (d["publish_changes_timed"], d["publish_builds"]) == (2, 2)
    assert (d["publish_event_bytes"], d["publish_first_event_bytes"]) == (1_200, 250_000)
    assert (d["snapshot_wall_ms"], d["snapshot_bytes"]) == (4.0, 260_000)
    assert (d["train_page_rerun_wall_ms"], d["train_page_first_run_wall_ms"]) == (410.0, 900.0)
    assert not [key for key in d if "panel" in key or "per_tick" in key], "no name of the panel's old rerun"


def test_the_report_says_the_publisher_works_once_for_every_viewer_and_sends_no_plotly_js():
    text = report.render_markdown(every_figure_missed())
    detail = text.split("- **`rerun_ms`**:")[1].split("\n")[0]
    assert "80 ms per second" in detail and "100 ms median per change (2 of 2 timed changes built a chart)" in detail
    assert "once for every viewer" in detail and "an event of 1.2 kB" in detail
    assert "first publish of the run (every chart whole) 300 ms, an event of 250.0 kB" in detail
    assert "snapshot 260.0 kB, encoded in 4 ms" in detail
    assert "only when the run's state changes, 410 ms median, its first run 900 ms" in detail
    assert "no event carries it" in detail
    for said in ("reran", "per refresh", "carry Plotly.js", "carried Plotly.js", "before the live panel was fed"):
        assert said not in text, said
    miss = text.split("- **`rerun_ms`**")[1].split("\n")[0]
    assert "100 ms of wall time per change, done once for every viewer" in miss
    diagnosis = miss.split("Diagnosis:")[1]
    assert "epoch lines" not in diagnosis  # 40 ms of the publisher's 100: not most of it
    assert "the publisher building the charts is a large part of the server's cost while watched" in diagnosis
    table = text.split("| memory replay |")[1]
    assert "| 10 + 5 | 9.0 kB (40.0 kB) | 210.0 kB | 20.0 MB |" in table


def test_a_result_from_before_the_publisher_is_rendered_as_what_it_measured():
    """A pass of 2026-11-25 timed the panel as it was (a rerun per viewer every second): said so, never as the
    publisher's cost."""
    result = json.loads((ROOT / "tests" / "unit" / "recorded" / "overhead-before-publisher.json").read_text())
    assert report.measured_before_publisher(result["details"])
    assert not report.measured_before_publisher(fake_result()["details"])
    text = report.render_markdown(result)
    assert text.count("before the live panel was fed by one publisher") == 1
    assert "[CLASSROOM.md](CLASSROOM.md)" in text
    detail = text.split("- **`rerun_ms`**:")[1].split("\n")[0]
    assert "51 ms per refresh (the panel then reran once a second)" in detail
    assert "whose chart messages then carried Plotly.js (4.6 MB), 270 ms" in detail
    assert "publisher" not in detail and "per change" not in detail
    assert "| `rerun_ms` | 51 ms | ≤ 50 ms | miss | server cost of one live-panel refresh" in text
    assert "| memory replay | samples kept | redraws (during + after) |" in text
    d, legacy = report.details_of(result)
    assert legacy and d["server_cpu_ms_per_s_watched"] == result["details"]["rerun_server_cpu_ms_per_tick"]


def test_prestarted_first_batch_is_reported_beside_the_cold_one():
    result = fake_result({"first_batch_prestarted_runs_s": [1.9, 1.5, 2.4]})
    assert result["first_batch_s"] == 6.5
    assert result["details"]["first_batch_prestarted_s"] == 1.9
    assert result["first_batch_warm_s"] == 1.9 and result["figures"]["first_batch_warm_s"]["verdict"] == "miss"
    text = report.render_markdown(result)
    assert "1.90 s, 1.50 s, 2.40 s, median 1.90 s." in text
    assert "not measured" in report.render_markdown(fake_result())


def test_watch_cores_is_the_server_and_browser_cpu_of_the_watched_runs():
    result = fake_result()
    assert result["watch_cores"] == pytest.approx(result["details"]["side_cpu_cores"]["watched"])
    assert result["watch_cores"] == pytest.approx(0.28)


def test_markdown_has_a_target_line_per_figure_and_explains_each_miss():
    text = report.render_markdown(fake_result())
    assert "| `engine_vs_bare_ratio` | 1.005 | ≤ 1.030 | pass |" in text
    assert "| `watched_vs_bare_ratio` | 1.099 | ≤ 1.050 | miss |" in text
    assert "| `page_ready_s` | 1.80 s | ≤ 2.00 s | pass |" in text
    assert "| `watch_cores` | 0.28 cores | ≤ 0.10 cores | miss |" in text
    assert "| `rerun_ms` | 100 ms | ≤ 50 ms | miss |" in text
    assert "| `memory_growth_mb` | 20.0 MB | ≤ 50.0 MB | pass |" in text
    assert "Test CPU 9000 · 2 logical cores" in text and "8.0 GiB RAM" in text
    misses = text.split("## Misses")[1].split("## Measured in detail")[0]
    assert "**`watched_vs_bare_ratio`**" in misses and "Diagnosis:" in misses
    assert "What would close it: [PERFORMANCE-METHOD.md](PERFORMANCE-METHOD.md#watched_vs_bare_ratio)" in misses
    assert "**`engine_vs_bare_ratio`**" not in misses
    assert "{_" not in text and "_fmt(" not in text, "every placeholder is filled"


def test_cpu_beside_the_worker_implies_a_slowdown_per_training_thread():
    d = fake_result()["details"]
    assert d["training_threads"] == 2  # all cores of the fake 2-core machine
    assert d["side_cpu_cores"]["engine"] == pytest.approx(0.02)
    assert d["expected_ratio_from_cpu"]["watched"] == pytest.approx(1 + 0.28 / 2)
    text = report.render_markdown(fake_result())
    assert "| started from the server, one Chromium page watching (server + Chromium) | 0.280 cores | +14.0 % |" in text
    assert "implies about +14.0 %" in text.split("## Misses")[1]


def test_markdown_says_when_nothing_missed():
    result = fake_result()
    result["watched_vs_bare_ratio"] = 1.01
    result["watch_cores"] = 0.05
    result["rerun_ms"] = 40.0
    assert "None: every measured figure met its target" in report.render_markdown(result)


def test_noise_note_says_whether_the_excess_stands_out():
    assert "cannot tell it from" in report.noise_note(1.02, 0.05)
    assert "larger than" in report.noise_note(1.10, 0.05)
    assert report.noise_note(None, 0.05) == ""


def test_write_outputs(tmp_path):
    result = fake_result()
    report.write_outputs(result, report_path=tmp_path / "PERF.md", json_path=tmp_path / "out" / "r.json")
    assert json.loads((tmp_path / "out" / "r.json").read_text())["schema"] == stats.SCHEMA
    assert (tmp_path / "PERF.md").read_text().startswith("# Performance")


def every_figure_missed() -> dict:
    result = fake_result({"first_batch_prestarted_runs_s": [1.9]})
    for name, (target, _, _) in stats.TARGETS.items():
        result[name] = target * 2
    return result


INTERNALS = ("bench.runs.jobs.Sampler", "fake_long_worker", "prepare_environment", "_tf_datasets", "bare_fit",
             "overhead.py", "CHART_REFRESH_S", "MAX_LIVE_SAMPLES", "MAX_POINTS", "add_vline", "extendTraces",
             "psutil reads", "render_run", "publish_ms", "panel_ms", "PLOTLY_SENT", "live_feed")


def test_the_generated_doc_names_no_internals_and_links_the_method_page_for_each_miss():
    text = report.render_markdown(every_figure_missed())
    assert [name for name in INTERNALS if name in text] == []
    misses = text.split("## Misses")[1].split("## Measured in detail")[0]
    for name in stats.FIGURES:
        assert f"**`{name}`**" in misses and f"(PERFORMANCE-METHOD.md#{name})" in misses, name


def _anchors(markdown: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    import re

    return {re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
            for line in markdown.splitlines() if line.startswith("#")}


def test_every_link_of_the_generated_doc_reaches_a_heading_of_the_method_page():
    import re

    method = ROOT / "docs" / "PERFORMANCE-METHOD.md"
    anchors = _anchors(method.read_text())
    text = report.render_markdown(every_figure_missed())
    links = re.findall(r"\(PERFORMANCE-METHOD\.md#([^)]+)\)", text)
    assert "how-the-overhead-is-measured" in links and len(set(links)) == len(stats.FIGURES) + 1
    assert [link for link in links if link not in anchors] == []


def test_the_shipped_doc_is_the_shipped_result_rendered():
    result = json.loads((ROOT / "docs" / "overhead.json").read_text())
    assert result["schema"] == stats.SCHEMA
    assert (ROOT / "docs" / "PERFORMANCE.md").read_text() == report.render_markdown(result), \
        "docs/PERFORMANCE.md is generated: python -m bench overhead --from-json docs/overhead.json --write-doc"


def test_bench_hands_the_overhead_options_to_the_harness():
    args = cli.build_parser().parse_args(["overhead", "--quick", "--json", "x.json"])
    assert (args.command, args.harness_args) == ("overhead", ["--quick", "--json", "x.json"])
    assert cli.COMMANDS["overhead"] is cli.overhead.cmd_overhead
    options = overhead.build_parser().parse_args(args.harness_args)
    assert (options.quick, options.json_path, options.rounds, options.write_doc) == (True, "x.json", None, False)


def test_bench_overhead_runs_the_harness_in_a_child_from_the_checkout(tmp_path, capfd):
    """The CLI hands over without touching sys.path: a child Python runs benchmarks.overhead in the checkout."""
    assert cli.main(["overhead", "--from-json", str(tmp_path / "missing.json")]) == 2
    assert "missing.json" in capfd.readouterr().err


def test_a_pass_writes_the_doc_only_when_asked(tmp_path, monkeypatch, capsys):
    doc = tmp_path / "docs" / "PERFORMANCE.md"
    monkeypatch.setattr(overhead, "DEFAULT_REPORT", doc)
    monkeypatch.setattr(overhead, "run_benchmark", lambda plan: {**fake_result(), "quick": plan.quick})
    assert overhead.main(["--quick", "--json", str(tmp_path / "oh.json")]) == 0
    assert json.loads((tmp_path / "oh.json").read_text())["quick"] is True
    assert not doc.exists()
    assert "engine_vs_bare_ratio" in capsys.readouterr().out
    assert overhead.main(["--quick", "--write-doc"]) == 0
    assert doc.read_text() == report.render_markdown({**fake_result(), "quick": True})
    assert overhead.main(["--report", str(tmp_path / "elsewhere.md")]) == 0
    assert (tmp_path / "elsewhere.md").read_text().startswith("# Performance")


def test_from_json_renders_a_saved_result_without_measuring(tmp_path, monkeypatch):
    doc = tmp_path / "PERFORMANCE.md"
    saved = tmp_path / "saved.json"
    report.write_outputs(fake_result(), json_path=saved)
    monkeypatch.setattr(overhead, "DEFAULT_REPORT", doc)
    monkeypatch.setattr(overhead, "run_benchmark", lambda plan: pytest.fail("--from-json must not measure"))
    assert overhead.main(["--from-json", str(saved)]) == 0
    assert not doc.exists()
    assert overhead.main(["--from-json", str(saved), "--write-doc"]) == 0
    assert doc.read_text() == report.render_markdown(json.loads(saved.read_text()))


def test_from_json_refuses_measuring_options_and_unreadable_files(tmp_path, capsys):
    assert overhead.main(["--from-json", str(tmp_path / "missing.json")]) == 2
    assert "cannot read" in capsys.readouterr().err
    assert overhead.main(["--from-json", "x.json", "--quick"]) == 2
    assert "measures nothing" in capsys.readouterr().err


def test_cli_refuses_fewer_than_three_rounds(capsys):
    assert overhead.main(["--rounds", "2"]) == 2
    assert "at least 3" in capsys.readouterr().err


def test_overhead_help_exits_0():
    proc = subprocess.run([sys.executable, "-m", "bench", "overhead", "--help"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "--quick" in proc.stdout and "--json" in proc.stdout and "--write-doc" in proc.stdout


def test_an_engine_without_the_harness_beside_it_says_so(tmp_path):
    """An installed engine (no benchmarks/ beside bench/) cannot measure the dashboard: exit 2 and say why."""
    import os
    import shutil

    shutil.copytree(ROOT / "bench", tmp_path / "bench", ignore=shutil.ignore_patterns("__pycache__"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-m", "bench", "overhead", "--quick"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60, env=env)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "benchmarks/" in proc.stderr and "checkout" in proc.stderr


# -- the stand-ins, through JobManager's own arguments -------------------------------------------------------------
def test_the_replayed_run_reaches_jobmanager_through_its_worker_target_and_sampler_factory():
    from bench.vocab.config import RunConfig
    from bench.runs.jobs import JobManager

    sampler = standins.SamplerChoice(standins.replay_sampler(40, 4, 1, 0.3))
    manager = JobManager(None, hardware=NO_GPU, worker_target=standins.ReplayedWorker(real_s=0.5), sampler_factory=sampler)
    try:
        snap = manager.wait(manager.submit(RunConfig(epochs=3)), timeout_s=60)
        assert snap.status == "finished", snap.error
        assert [e.epoch for e in snap.epochs] == [1, 2, 3]
        assert len(snap.samples) == 40 and len(snap.samples[0].cpu_per_core) == 4
        sampler.factory = standins.null_sampler
        snap = manager.wait(manager.submit(RunConfig(epochs=2)), timeout_s=60)
        assert snap.status == "finished" and len(snap.epochs) == 2 and snap.samples == ()
    finally:
        manager.shutdown()


def test_the_held_replay_stays_live_until_stop():
    from bench.vocab.config import RunConfig
    from bench.runs.jobs import JobManager

    manager = JobManager(None, hardware=NO_GPU, worker_target=standins.ReplayedWorker(real_s=0.3, hold=True),
                         sampler_factory=standins.null_sampler)
    try:
        run_id = manager.submit(RunConfig(epochs=2))
        wait_for(lambda: len(manager.snapshot(run_id).epochs) == 2, timeout_s=60, what="the replayed epochs")
        assert manager.snapshot(run_id).active
        manager.stop(run_id)
        assert manager.wait(run_id, timeout_s=60).status == "stopped"
    finally:
        manager.shutdown()


def test_the_benchmarks_publish_the_live_panel_as_the_dashboard_does(monkeypatch):
    """The render and memory figures time the live panel's publisher as ui.live.feed makes it, on a clock of the
    benchmark's own and never the process's; each forced refresh with a chart interval's samples more builds a chart."""
    from bench.vocab.config import RunConfig
    from bench.runs.jobs import JobManager

    pytest.importorskip("ui.live", reason="streamlit is not installed")
    from benchmarks import memory, render_cost
    from ui import live_feed

    installed = live_feed.installed()
    ours, _clock = memory.live_publisher(lambda: None)
    assert isinstance(ours, live_feed.Publisher) and live_feed.installed() is installed, "made afresh, not installed"

    manager = JobManager(None, hardware=NO_GPU, worker_target=standins.ReplayedWorker(real_s=0.3, hold=True),
                         sampler_factory=standins.replay_sampler(40, 4, 1, 0.3))
    try:
        run_id = manager.submit(RunConfig(epochs=2, sample_interval_s=standins.SIMULATED_INTERVAL_S))
        wait_for(lambda: len(manager.snapshot(run_id).epochs) == 2 and len(manager.snapshot(run_id).samples) == 40,
                 timeout_s=60, what="the replayed epochs and samples")
        snap = manager.snapshot(run_id)
        assert snap.active
        costs = render_cost.publish_costs(snap, repeats=2)
    finally:
        manager.stop(run_id)
        manager.wait(run_id, timeout_s=60)
        manager.shutdown()
    assert costs["publish_builds"] == 2, "each timed refresh (a chart interval's samples more) built a chart"
    assert len(costs["publish_ms"]) == 2 and all(ms > 0 for ms in costs["publish_ms"])
    assert 0 < costs["event_bytes"] < costs["first_event_bytes"], "an increment is smaller than the whole charts"
    assert costs["snapshot_bytes"] > costs["event_bytes"]
    times = memory.figure_timings(snap, repeats=2)
    assert set(times) == {"epoch_time_figure", "utilization_figure", "utilization_figure_without_epoch_lines",
                          "loss_accuracy_figure"} and all(ms is not None and ms > 0 for ms in times.values())


@pytest.mark.slow
def test_the_bare_baseline_trains_what_prepare_training_prepares(tmp_path):
    """The bare side runs in its own process, a plain model.fit on bench.runs.worker.prepare_training's model and data."""
    from benchmarks.common import run_child

    from bench.vocab.config import RunConfig

    config = RunConfig(model="mlp", size="xs", epochs=2, batch_size=64, limit_samples=512, cpu_threads=1).validate(NO_GPU)
    (tmp_path / "config.json").write_text(json.dumps(config.to_dict()))
    run_child("benchmarks.baseline", ["bare", str(tmp_path / "config.json"), str(tmp_path / "out.json")],
              timeout_s=240, log_path=tmp_path / "bare.log")
    epochs = json.loads((tmp_path / "out.json").read_text())["epochs"]
    assert [e["epoch"] for e in epochs] == [1, 2] and [e["includes_tracing"] for e in epochs] == [True, False]
    assert all(e["epoch_seconds"] > 0 for e in epochs)


def test_the_pass_alternates_every_side_and_switches_the_sampler_per_run(monkeypatch):
    """run_benchmark's orchestration, with the measuring steps replaced (no training, server or browser here)."""
    from bench.runs.jobs import default_sampler

    factories, choices = {}, []

    class RecordedChoice(standins.SamplerChoice):
        def __init__(self, factory):
            super().__init__(factory)
            choices.append(self)

    def fake_engine_run(manager, config, timeout_s=900.0):
        factory = choices[0].factory  # what the manager's sampler_factory builds for this run
        kind = "sampling_0.1" if config.sample_interval_s == 0.1 else factory.__name__
        factories.setdefault(kind, set()).add(factory)
        return {"run_id": 1, "epochs": epochs(3.0, 1.0, 1.0), "samples": 0, "window_s": 2.0, "side_cpu_s": 0.02}

    def fake_child(module, args, *, timeout_s, log_path):
        out = Path(args[2])
        if module == "benchmarks.memory":
            out.write_text(json.dumps({"cores": 2, "gpus": 0, "tracemalloc": False, "samples_kept": 3600,
                                       "renders_during_stream": 1, "renders_after_run": 1, "peak_growth_mb": 5.0,
                                       "retained_growth_mb": 4.0, "drift_after_run_mb": 0.0,
                                       "traced_peak_growth_mb": None}))
        else:
            out.write_text(json.dumps({"page_ms": [40.0], "page_first_ms": [90.0], "publish_ms": [30.0, 34.0],
                                       "publish_first_ms": [60.0], "first_event_bytes": 9000, "event_bytes": 800,
                                       "snapshot_ms": [2.0], "snapshot_bytes": 9500, "publish_builds": 2,
                                       "figure_ms": {}, "epochs": 36}))

    monkeypatch.setattr(overhead, "bare_run", lambda config, tmp, rnd, kind: epochs(3.0, 1.0, 1.0))
    monkeypatch.setattr(overhead, "engine_run", fake_engine_run)
    monkeypatch.setattr(overhead, "SamplerChoice", RecordedChoice)
    monkeypatch.setattr(overhead, "run_child", fake_child)
    monkeypatch.setattr(overhead, "machine", lambda: {"logical_cores": 2, "label": "test"})

    class Quiet(overhead.OtherLoad):  # the real reading counts this suite's other worker: a note this test is not about
        def __exit__(self, *exc: object) -> None:
            self.cores = 0.0

    monkeypatch.setattr(overhead, "OtherLoad", Quiet)
    result = overhead.run_benchmark(stats.plan_for(True, browser=False), log=lambda message: None)
    assert [(r["round"], r["kind"]) for r in result["runs"]] == stats.schedule(
        ["bare", "engine", "sampling_off", "sampling_0.1"], 3)
    assert result["engine_vs_bare_ratio"] == 1.0 and result["memory_growth_mb"] == 5.0
    assert result["rerun_ms"] == 32.0, "no watched run: the figure is the publisher's work per change alone"
    assert result["details"]["train_page_rerun_wall_ms"] == 40.0
    assert result["details"]["notes"] == ["Browser figures not measured: --no-browser."]
    assert factories["null_sampler"] == {standins.null_sampler}
    assert factories["default_sampler"] == {default_sampler}
    assert factories["sampling_0.1"] == {default_sampler}
    assert len(choices) == 1 and choices[0].factory is default_sampler


def test_page_steps_split_page_ready_into_consecutive_steps():
    marks = {"healthy_s": 0.7, "front_end_s": 1.4, "socket_open_s": 1.5, "first_message_s": 1.7, "ready_s": 2.3}
    steps = report.page_steps(marks)
    assert [round(sec, 2) for _, sec in steps] == [0.7, 0.7, 0.1, 0.2, 0.6]
    assert abs(sum(sec for _, sec in steps) - marks["ready_s"]) < 1e-9
    assert steps[-1][0] == report.PAGE_STEP_SCRIPT
    assert report.page_steps({**marks, "socket_open_s": None}) == []


def test_the_page_profile_sorts_each_frame_into_its_part_and_names_the_largest_first():
    from benchmarks import dashboard

    part = dashboard._profile_part
    assert part({"functionName": "(idle)", "url": ""}) is None
    assert part({"functionName": "(program)", "url": ""}) == "native"
    assert part({"functionName": "(garbage collector)", "url": ""}) == "gc"
    assert part({"functionName": "getBoundingClientRect", "url": ""}) == "dom"
    assert part({"functionName": "Ul", "url": "http://localhost:8501/static/js/react-dom.js"}) == "streamlit"
    assert part({"functionName": "redraw", "url": "f385e0ce-4331-4d5c-8a9e-7a65c082b778"}) == "plotly"
    # plotly.js and live.js are the dashboard's own static files, under /bench/static/: not Streamlit's front end
    assert part({"functionName": "newPlot", "url": "http://localhost:8501/bench/static/plotly.min.js?v=1a2b"}) == "plotly"
    assert part({"functionName": "onFeed", "url": "http://localhost:8501/app/bench/static/live.js?v=3c4d"}) == "plotly"
    note = report.profile_note({"page_profile_ms_per_s": {"plotly": 50.0, "streamlit": 80.0, "native": 10.0},
                                "page_profile_chromium_cpu_share": 0.25})
    assert note.index("Streamlit's front end") < note.index("Plotly") < note.index("style, layout and paint")
    assert "80 ms" in note and "25 %" in note
    assert report.profile_note({}) == ""


def test_a_short_watch_window_is_flagged_in_the_notes():
    short = stats._short_window_note([{"window_s": 0.5}, {"window_s": 0.6}, {"window_s": 0.7}], None)
    assert len(short) == 1 and "0.6 s" in short[0] and "watch_cores" in short[0]
    assert stats._short_window_note([{"window_s": 30.0}] * 3, None) == []
    assert stats._short_window_note([], None) == []
    held = stats._short_window_note([{"window_s": 0.005}], {"window_s": 3.2})
    assert len(held) == 1 and "The watched window lasted 3.2 s" in held[0]
    assert stats._short_window_note([{"window_s": 0.005}], {"window_s": 11.0}) == []


def test_watch_cores_is_taken_over_the_held_window_when_one_was_watched():
    """A quick pass's watched runs end before the page has drawn them (a window of milliseconds): the figure is the
    server's and Chromium's CPU over the replayed run held live for the plan's window instead."""
    base = fake_result()
    plan = stats.plan_for(True)
    assert plan.watch_window_s >= stats.SHORT_WATCH_WINDOW_S and not plan.replayed
    smoke = stats.plan_for(smoke=True)
    assert smoke.replayed and smoke.watch_window_s >= 2.0 and smoke.prestart_runs == 0
    window = {"window_s": 11.0, "side_cpu_s": 1.1, "server_cpu_s": 0.3, "chromium_cpu_s": 0.8}
    result = stats.result_from(plan, base["config"], {"logical_cores": 2}, base["runs"],
                               {"watch_window": window}, [], None)
    assert result["watch_cores"] == pytest.approx(0.1)
    assert result["details"]["watch_window_s"] == 11.0
    assert result["details"]["watch_server_cpu_share"] == pytest.approx(0.3 / 11.0)
    without = stats.result_from(plan, base["config"], {"logical_cores": 2}, base["runs"], {}, [], None)
    assert without["watch_cores"] == without["details"]["side_cpu_cores"].get("watched")


def test_the_report_says_how_long_the_page_watched_when_a_window_was_held():
    result = fake_result()
    assert "held live for" not in report.render_markdown(result)
    result["details"].update(watch_window_s=10.8, watch_server_cpu_share=0.03, watch_chromium_cpu_share=0.06,
                             watched_runs_cpu_cores=0.05)
    text = report.render_markdown(result)
    assert "one Chromium page watched a replayed run held live for 10.8 s" in text and "0.05 cores" in text
