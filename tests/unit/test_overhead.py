"""The overhead benchmark's pure parts: arithmetic, schedule, result keys, the markdown report, the CLI entry.

The benchmark itself (minutes of training, a server and a browser) is never launched here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench import cli, overhead

ROOT = Path(__file__).resolve().parents[2]


def epochs(*seconds: float) -> list[dict]:
    return [{"epoch": i + 1, "epoch_seconds": s, "includes_tracing": i == 0} for i, s in enumerate(seconds)]


def run(kind: str, rnd: int, *seconds: float, **extra) -> dict:
    return {"kind": kind, "round": rnd, "epochs": epochs(*seconds), "wall_s": 10.0 + sum(seconds),
            "steady_median_s": overhead.median(seconds[1:]), **extra}


def test_median_ignores_missing_and_non_finite_values():
    assert overhead.median([3.0, None, 1.0, float("nan"), 2.0]) == 2.0
    assert overhead.median([]) is None
    assert overhead.median([None]) is None


def test_steady_times_drop_the_tracing_epoch():
    assert overhead.steady_times(epochs(9.0, 1.0, 2.0)) == [1.0, 2.0]


def test_ratio_of_medians_pools_every_steady_epoch():
    ours = [run("engine", 1, 9.0, 1.1, 1.1), run("engine", 2, 9.0, 1.1, 1.3)]
    base = [run("bare", 1, 9.0, 1.0, 1.0), run("bare", 2, 9.0, 1.0, 1.2)]
    assert overhead.ratio_of_medians(ours, base) == pytest.approx(1.1 / 1.0)
    assert overhead.ratio_of_medians([], base) is None


def test_paired_ratio_compares_within_each_round():
    ours = [run("engine", 1, 5.0, 2.0), run("engine", 2, 5.0, 4.4), run("engine", 3, 5.0, 1.5)]
    base = [run("bare", 1, 5.0, 2.0), run("bare", 2, 5.0, 4.0), run("bare", 3, 5.0, 1.0)]
    assert overhead.paired_ratio(ours, base) == pytest.approx(1.1)


def test_min_ratio_and_spread():
    ours = [run("engine", 1, 5.0, 2.2, 3.0)]
    base = [run("bare", 1, 5.0, 2.0, 2.5), run("bare", 2, 5.0, 3.0)]
    assert overhead.min_ratio(ours, base) == pytest.approx(1.1)
    # per-run medians 2.25 and 3.0 -> (3.0 - 2.25) / median(2.25, 3.0)
    assert overhead.spread(base) == pytest.approx(0.75 / 2.625)
    assert overhead.spread(base[:1]) is None


def test_per_tick_cpu_and_verdicts():
    assert overhead.per_tick_ms(cpu_s=3.0, window_s=30.0, refresh_s=1.0) == pytest.approx(100.0)
    assert overhead.per_tick_ms(cpu_s=1.0, window_s=0.0) is None
    assert overhead.verdict("engine_vs_bare_ratio", 1.03) == "pass"
    assert overhead.verdict("engine_vs_bare_ratio", 1.031) == "miss"
    assert overhead.verdict("page_ready_s", None) == "not measured"


def test_refresh_matches_the_live_panel():
    live = pytest.importorskip("ui.live", reason="streamlit is not installed")
    assert overhead.REFRESH_S == live.REFRESH_S


def test_schedule_alternates_every_kind_each_round_with_a_rotated_order():
    order = overhead.schedule(["bare", "engine", "watched"], 3)
    assert order == [(1, "bare"), (1, "engine"), (1, "watched"), (2, "engine"), (2, "watched"), (2, "bare"),
                     (3, "watched"), (3, "bare"), (3, "engine")]


def test_plans_keep_three_runs_per_side():
    quick, full = overhead.plan_for(True), overhead.plan_for(False)
    assert quick.rounds >= 3 and full.rounds >= 3
    assert quick.epochs >= 2, "a steady epoch needs a second epoch"
    assert "watched" in full.kinds() and "watched" not in overhead.plan_for(False, browser=False).kinds()
    cfg = full.config()
    assert cfg.validate() is cfg
    assert (cfg.model, cfg.size, cfg.batch_size, cfg.sample_interval_s) == ("mlp", "s", 128, 0.5)


def fake_result(extra: dict | None = None) -> dict:
    plan = overhead.plan_for(True)
    runs = []
    for rnd in (1, 2, 3):
        runs += [run("bare", rnd, 3.0, 1.00, 1.02),
                 run("engine", rnd, 3.0, 1.01, 1.02, window_s=10.0, side_cpu_s=0.2),
                 run("sampling_off", rnd, 3.0, 1.00, 1.01), run("sampling_0.1", rnd, 3.0, 1.03, 1.04),
                 run("watched", rnd, 3.0, 1.10, 1.12, first_batch_s=6.5, window_s=10.0, server_cpu_s=0.8,
                     chromium_cpu_s=2.0, side_cpu_s=2.8)]
    memory = [{"cores": 32, "gpus": 2, "tracemalloc": False, "samples_kept": 3600, "renders_during_stream": 10,
               "renders_after_run": 5, "peak_growth_mb": 20.0, "retained_growth_mb": 19.0, "drift_after_run_mb": 0.1,
               "traced_peak_growth_mb": None}]
    render = {"page_ms": [400.0, 420.0], "panel_ms": [90.0, 110.0], "epochs": 36,
              "figure_ms": {"utilization_figure": 60.0, "utilization_figure_without_epoch_lines": 20.0,
                            "epoch_time_figure": 10.0, "loss_accuracy_figure": 5.0}}
    machine = {"cpu_model": "Test CPU 9000", "logical_cores": 2, "physical_cores": 2, "ram_total_gib": 8.0,
               "gpus": [], "gpu_reason": "no GPU here", "framework": "tensorflow 2.x", "platform": "Linux",
               "python": "3.11", "label": "Test CPU 9000 (2 cores), no GPU"}
    return overhead.result_from(plan, plan.config().to_dict(), machine, runs,
                                {"page_ready_s": [2.0, 2.5, 3.5], **(extra or {})}, memory, render)


def test_result_holds_every_figure_the_machine_and_the_raw_runs():
    result = fake_result()
    for key in ("engine_vs_bare_ratio", "watched_vs_bare_ratio", "sampling_ratio", "page_ready_s", "first_batch_s",
                "rerun_ms", "memory_growth_mb", "sampling_ratio_0_1", "machine", "runs", "date", "config"):
        assert key in result, key
    assert result["engine_vs_bare_ratio"] == pytest.approx(1.015 / 1.01)
    assert result["watched_vs_bare_ratio"] == pytest.approx(1.11 / 1.01)
    assert result["page_ready_s"] == 2.5
    assert result["first_batch_s"] == 6.5
    assert result["rerun_ms"] == pytest.approx(100.0)  # worse of 80 ms server CPU per tick and 100 ms panel wall
    assert result["memory_growth_mb"] == 20.0
    assert result["figures"]["watched_vs_bare_ratio"]["verdict"] == "miss"
    assert result["figures"]["page_ready_s"]["machine"] == "Test CPU 9000 (2 cores), no GPU"
    assert all("epochs" in r for r in result["runs"])
    json.dumps(result)  # JSON-ready


def test_prestarted_first_batch_is_reported_beside_the_cold_one():
    result = fake_result({"first_batch_prestarted_runs_s": [1.9, 1.5, 2.4]})
    assert result["first_batch_s"] == 6.5
    assert result["details"]["first_batch_prestarted_s"] == 1.9
    text = overhead.render_markdown(result)
    assert "1.90 s, 1.50 s, 2.40 s, median 1.90 s." in text
    assert "not measured" in overhead.render_markdown(fake_result())


def test_markdown_has_a_target_line_per_figure_and_explains_each_miss():
    text = overhead.render_markdown(fake_result())
    assert "| `engine_vs_bare_ratio` | 1.005 | ≤ 1.030 | pass |" in text
    assert "| `watched_vs_bare_ratio` | 1.099 | ≤ 1.050 | miss |" in text
    assert "| `page_ready_s` | 2.50 s | ≤ 3.00 s | pass |" in text
    assert "| `rerun_ms` | 100 ms | ≤ 150 ms | pass |" in text
    assert "| `memory_growth_mb` | 20.0 MB | ≤ 50.0 MB | pass |" in text
    assert "Test CPU 9000 · 2 logical cores" in text and "8.0 GiB RAM" in text
    misses = text.split("## Misses")[1].split("## How")[0]
    assert "**`watched_vs_bare_ratio`**" in misses and "What would close it:" in misses
    assert "**`engine_vs_bare_ratio`**" not in misses
    assert "{_" not in text and "_fmt(" not in text, "every placeholder is filled"


def test_cpu_beside_the_worker_implies_a_slowdown_per_training_thread():
    d = fake_result()["details"]
    assert d["training_threads"] == 2  # all cores of the fake 2-core machine
    assert d["side_cpu_cores"]["engine"] == pytest.approx(0.02)
    assert d["expected_ratio_from_cpu"]["watched"] == pytest.approx(1 + 0.28 / 2)
    text = overhead.render_markdown(fake_result())
    assert "| started from the server, one Chromium page watching (server + Chromium) | 0.280 cores | +14.0 % |" in text
    assert "implies about +14.0 %" in text.split("## Misses")[1]


def test_markdown_says_when_nothing_missed():
    result = fake_result()
    result["watched_vs_bare_ratio"] = 1.01
    assert "None: every measured figure met its target" in overhead.render_markdown(result)


def test_noise_note_says_whether_the_excess_stands_out():
    assert "cannot tell it from" in overhead.noise_note(1.02, 0.05)
    assert "larger than" in overhead.noise_note(1.10, 0.05)
    assert overhead.noise_note(None, 0.05) == ""


def test_write_outputs(tmp_path):
    result = fake_result()
    overhead.write_outputs(result, report_path=tmp_path / "PERF.md", json_path=tmp_path / "out" / "r.json")
    assert json.loads((tmp_path / "out" / "r.json").read_text())["schema"] == overhead.SCHEMA
    assert (tmp_path / "PERF.md").read_text().startswith("# Performance")


def test_cli_parses_the_overhead_options():
    args = cli.build_parser().parse_args(["overhead", "--quick", "--json", "x.json"])
    assert (args.command, args.quick, args.json_path, args.rounds) == ("overhead", True, "x.json", None)
    assert cli.COMMANDS["overhead"] is cli.cmd_overhead


def test_cli_refuses_fewer_than_three_rounds(capsys):
    assert cli.main(["overhead", "--rounds", "2"]) == 2
    assert "at least 3" in capsys.readouterr().err


def test_overhead_help_exits_0():
    proc = subprocess.run([sys.executable, "-m", "bench", "overhead", "--help"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "--quick" in proc.stdout and "--json" in proc.stdout
