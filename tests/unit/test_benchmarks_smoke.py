"""Every measuring entry point of benchmarks/ and every measuring `bench` command, run at its smallest size: each
test asserts that the output holds the figures it should (not only that it exited 0), so a change that breaks a
benchmark fails `make test` the day it lands, not the day someone needs the figure (docs/TESTING.md).

The browser and server benchmarks need Chromium and Playwright (requirements-dev.txt); without them they skip, saying
so. Each test function covers one benchmark, so that a benchmark rewritten changes its own test alone.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks.dashboard import browser_unavailable
from benchmarks.standins import BRISK_WORKER_TARGET
from tests.polling import wait_for

ROOT = Path(__file__).resolve().parents[2]


def run(args: list[str], tmp_path: Path, *, timeout_s: float = 240.0, env: dict[str, str] | None = None,
        ) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` from the checkout, its store in ``tmp_path``; fails with its output when it exits non-zero."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), "BENCH_STORE": str(tmp_path / "runs.sqlite3"), **(env or {})}
    # a session of its own, so that a benchmark that runs out of time is ended with every process it started (its
    # server, the server's worker, Chromium), not its first process alone
    proc = subprocess.Popen([sys.executable, *args], cwd=ROOT, env=full_env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"{' '.join(args)} took more than {timeout_s:.0f} s:\n{out[-3000:]}\n{err[-3000:]}")
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # whatever it left behind
        except ProcessLookupError:
            pass
    done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    assert done.returncode == 0, f"{' '.join(args)} exited {done.returncode}:\n{out[-3000:]}\n{err[-3000:]}"
    return done


def read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def needs_browser() -> None:
    reason = browser_unavailable()
    if reason:
        pytest.skip(f"needs a browser: {reason}")


def measured(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value and value >= 0


# -- python -m bench overhead ---------------------------------------------------------------------------------------
@pytest.mark.slow
def test_bench_overhead_smoke_measures_every_figure_over_a_real_watched_window(tmp_path: Path) -> None:
    """`python -m bench overhead --smoke`: every side replayed, one round; the watched window held live 3 s; the
    memory replay (benchmarks/memory.py) and the render timing run as in a real pass. Without a browser, the figures
    that need none (`--no-browser`)."""
    browser = browser_unavailable() is None
    out = tmp_path / "overhead.json"
    done = run(["-m", "bench", "overhead", "--smoke", "--json", str(out), *([] if browser else ["--no-browser"])],
               tmp_path, timeout_s=280)
    result = read(out)
    assert result["replayed"] is True and result["schema"] == "bench.overhead/1"
    figures = ["engine_vs_bare_ratio", "sampling_ratio", "rerun_ms", "memory_growth_mb"]
    if browser:
        figures += ["watched_vs_bare_ratio", "page_ready_s", "first_batch_s", "watch_cores"]
    for name in figures:
        assert measured(result[name]), f"{name} not measured: {result['details']['notes']}"
        assert name in done.stdout
    details = result["details"]
    kinds = {"bare", "engine", "sampling_off", "sampling_0.1"} | ({"watched"} if browser else set())
    assert {r["kind"] for r in result["runs"]} == kinds and all(len(r["epochs"]) == 3 for r in result["runs"])
    if browser:
        assert details["watch_window_s"] >= 3.0, "the page watched a live run for the whole window"
    assert details["train_page_rerun_wall_ms"] is not None and details["publish_wall_ms"] is not None
    [memory] = details["memory"]
    assert memory["samples_kept"] > 0 and memory["renders_during_stream"] > 0
    assert any("replayed by a stand-in worker" in note for note in details["notes"])


def test_bench_overhead_smoke_never_writes_the_doc(tmp_path: Path) -> None:
    from benchmarks import overhead

    for extra in (["--write-doc"], ["--report", str(tmp_path / "x.md")], ["--quick"], ["--rounds", "3"]):
        assert overhead.main(["--smoke", *extra]) == 2
    assert not (tmp_path / "x.md").exists()


# -- benchmarks/store_soak.py ---------------------------------------------------------------------------------------
@pytest.mark.slow
def test_store_soak_smoke_loses_nothing(tmp_path: Path) -> None:
    out = tmp_path / "soak.json"
    run(["-m", "benchmarks.store_soak", "--processes", "2", "--seconds", "2", "--json", str(out)], tmp_path)
    result = read(out)
    assert result["processes"] == 2 and result["runs"] >= 2 and result["epochs"] > 0 and result["samples"] > 0
    assert measured(result["writes_per_s"]) and measured(result["write_ms_p50"]) and measured(result["write_ms_p99"])
    assert result["lost_epochs"] == 0 and result["lost_samples"] == 0 and result["duplicated_samples"] == 0
    assert result["problems"] == []


# -- benchmarks/metrics_scrape.py -----------------------------------------------------------------------------------
@pytest.mark.slow
def test_metrics_scrape_smoke_costs_each_way_in_each_state(tmp_path: Path) -> None:
    needs_browser()
    out = tmp_path / "scrape.json"
    run(["-m", "benchmarks.metrics_scrape", "--scripted-gpu", "--scrapes", "2", "--rounds", "1", "--json", str(out)],
        tmp_path, timeout_s=300)
    result = read(out)
    for state in ("idle", "live"):
        for key in ("rendered_pooled_ms", "shared_pooled_ms", "health_pooled_ms"):
            assert isinstance(result[state][key], (int, float)), (state, key)
        assert result[state]["text_bytes"] > 0
    assert result["scripted_gpu"] is True


# -- benchmarks/record_libs.py --------------------------------------------------------------------------------------
def test_record_libs_smoke_weighs_each_library(tmp_path: Path) -> None:
    pytest.importorskip("msgspec", reason="benchmarks/record_libs.py weighs msgspec, not a project dependency")
    pytest.importorskip("pydantic", reason="benchmarks/record_libs.py weighs pydantic v2")
    report = tmp_path / "libs.md"
    run(["-m", "benchmarks.record_libs", "--samples", "50", "--report", str(report)], tmp_path)
    text = report.read_text(encoding="utf-8")
    assert "msgspec" in text and "pydantic" in text and "bench.vocab.readings" in text


# -- benchmarks/render_cost.py (the live view's; its current child interface) -----------------------------------------
@pytest.mark.slow
def test_render_cost_smoke_times_the_publisher_and_the_page(tmp_path: Path) -> None:
    from benchmarks.common import run_child

    out = tmp_path / "render.json"
    run_child("benchmarks.render_cost", ["render", json.dumps({"real_s": 1.0, "repeats": 1}), str(out)],
              timeout_s=180, log_path=tmp_path / "render.log")
    result = read(out)
    assert result["publish_ms"] and all(measured(v) for v in result["publish_ms"])
    assert result["page_ms"] and result["event_bytes"] > 0


# -- benchmarks/watch_cost.py (the live view's; its current command line) ---------------------------------------------
@pytest.mark.slow
def test_watch_cost_smoke_reads_the_server_and_the_pages(tmp_path: Path) -> None:
    needs_browser()
    out = tmp_path / "watch.json"
    run(["-m", "benchmarks.watch_cost", "--pages", "1", "--window", "2", "--json", str(out)], tmp_path, timeout_s=300)
    result = read(out)
    assert result, "no pass written"
    text = json.dumps(result)
    assert "server_cores" in text and "chromium_cores" in text


# -- benchmarks/feed_cost.py (the live view's; its current command line) ----------------------------------------------
@pytest.mark.slow
def test_feed_cost_smoke_reads_each_way_of_feeding(tmp_path: Path) -> None:
    needs_browser()
    out = tmp_path / "feed.json"
    run(["-m", "benchmarks.feed_cost", "--pages", "1", "--rounds", "1", "--window", "2", "--json", str(out)], tmp_path,
        timeout_s=300)
    rows = read(out)
    assert rows and all("chromium_cores" in row for row in rows)


# -- benchmarks/classroom.py + viewers.py (the live view's; their current command line) -------------------------------
@pytest.mark.slow
@pytest.mark.timeout(900)  # its smallest pass trains three real runs after the pre-started worker loads the framework
def test_classroom_smoke_serves_one_emulated_viewer(tmp_path: Path) -> None:
    needs_browser()
    out = tmp_path / "classroom.json"
    run(["-m", "benchmarks.classroom", "--viewers", "1", "--epochs", "2", "--limit", "512", "--size", "xs",
         "--calibrate", "0", "--out", str(out)], tmp_path, timeout_s=840)
    result = read(out)
    assert [r["viewers"] for r in result["runs"]] == [1], "one class of one emulated viewer"
    assert len(result["baselines"]) == 2 and result["baseline"]["steady_epoch_s"]


# -- python -m bench suite ------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_bench_suite_smoke_writes_a_bundle(tmp_path: Path) -> None:
    """`python -m bench suite --quick --no-peak`, its runs replayed by the stand-in worker (BENCH_WORKER_TARGET):
    the suite's loop, the bundle and its store entry, without training."""
    out = tmp_path / "bundle.json"
    run(["-m", "bench", "suite", "--quick", "--no-peak", "--out", str(out)], tmp_path, timeout_s=300,
        env={"BENCH_WORKER_TARGET": BRISK_WORKER_TARGET})
    bundle = read(out)
    assert bundle["schema"] == "bench.bundle/1" and bundle["runs"]
    assert all(run["status"] == "finished" and run["epochs"] for run in bundle["runs"])


# -- benchmarks/standins.py: a stand-in worker ends with its parent, as the real worker does --------------------------
HOLDER = """
import multiprocessing as mp, sys, time
from benchmarks.standins import PACED_WORKER
if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    q, stop = ctx.Queue(), ctx.Event()
    p = ctx.Process(target=PACED_WORKER, args=({"epochs": 50, "limit_samples": 128}, q, stop, None))
    p.start()
    print(p.pid, flush=True)
    time.sleep(60)
"""


@pytest.mark.slow
def test_a_stand_in_worker_exits_when_its_parent_is_killed(tmp_path: Path) -> None:
    import psutil

    script = tmp_path / "holder.py"
    script.write_text(HOLDER, encoding="utf-8")
    holder = subprocess.Popen([sys.executable, str(script)], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert holder.stdout is not None
        worker = psutil.Process(int(holder.stdout.readline()))
        holder.kill()
        holder.wait()
        wait_for(lambda: not worker.is_running() or worker.status() == psutil.STATUS_ZOMBIE, 10,
                 "the orphaned stand-in worker to exit")
    finally:
        holder.kill()
        holder.wait()
