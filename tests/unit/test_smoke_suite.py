"""The smoke run of `python -m bench suite --smoke`, its runs replayed by a stand-in worker; and the stand-in
worker's own promise: it ends with the process that started it, as the real worker does (docs/TESTING.md)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench.runs import suite
from benchmarks.standins import BRISK_WORKER_TARGET
from tests.polling import wait_for
from tests.smoke import ROOT, read, run


@pytest.mark.slow
def test_bench_suite_smoke_writes_a_bundle_of_every_kind_of_workload(tmp_path: Path) -> None:
    """`python -m bench suite --smoke --no-peak`, its runs replayed (BENCH_WORKER_TARGET): the suite's loop over
    every kind of workload on every CPU target, the bundle and its store entry, without training."""
    out = tmp_path / "bundle.json"
    done = run(["-m", "bench", "suite", "--smoke", "--no-peak", "--out", str(out)], tmp_path, timeout_s=240,
               env={"BENCH_WORKER_TARGET": BRISK_WORKER_TARGET})
    bundle = read(out)
    assert bundle["schema"] == "bench.bundle/1" and bundle["suite"]["variant"] == "smoke"
    kinds = {w.kind for w in suite.workloads("smoke")}
    assert kinds == {w.kind for w in suite.workloads("full")}, "every kind of workload, once"
    announced = re.search(r"\(smoke\): (\d+) workloads on (.+): (\d+) runs", done.stderr)
    assert announced, done.stderr[-2000:]
    workloads, targets, runs = int(announced[1]), announced[2].split(", "), int(announced[3])
    assert workloads == len(suite.workloads("smoke")) and "cpu" in targets and runs == workloads * len(targets)
    assert len(bundle["runs"]) == runs, done.stderr[-2000:]
    assert all(run["status"] == "finished" and len(run["epochs"]) == 3 for run in bundle["runs"])
    assert f"wrote {out}" in done.stdout


HOLDER = """
import multiprocessing as mp, signal, sys
from benchmarks.standins import PACED_WORKER
if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    q, stop = ctx.Queue(), ctx.Event()
    p = ctx.Process(target=PACED_WORKER, args=({"epochs": 50, "limit_samples": 128}, q, stop, None))
    p.start()
    print(p.pid, flush=True)
    signal.pause()  # alive until the test kills it
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
