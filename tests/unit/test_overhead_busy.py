"""The overhead harness on a busy machine: a page wait that times out is tried again (never the end of the pass), and
the result says which figures other work on the machine makes unreliable."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import psutil
import pytest

from benchmarks import common, overhead, stats
from tests.polling import wait_for


def test_a_timed_out_try_is_tried_again_and_noted():
    calls = []

    def attempt():
        calls.append(1)
        if len(calls) == 1:
            raise TimeoutError("Locator.wait_for: Timeout 60000ms exceeded.")
        return {"epochs": []}

    notes: list[str] = []
    assert overhead.with_retries(attempt, "round 1's watched run", None, notes, lambda m: None) == {"epochs": []}
    assert len(calls) == 2
    assert notes == [("round 1's watched run was tried again after TimeoutError: Locator.wait_for: Timeout 60000ms "
                      "exceeded..")]


def test_every_try_failing_costs_the_figure_not_the_pass():
    def attempt():
        raise TimeoutError("the page never drew")

    notes: list[str] = []
    assert overhead.with_retries(attempt, "the profiled watched run", None, notes, lambda m: None, tries=2) is None
    assert notes[-1].startswith("the profiled watched run was left out: all 2 tries failed")


def test_other_errors_are_not_swallowed():
    def attempt():
        raise KeyError("a bug")

    with pytest.raises(KeyError, match="a bug"):  # a bug in the harness, not the machine's load
        overhead.with_retries(attempt, "x", None, [], lambda m: None)


def test_the_notes_name_the_figures_a_busy_machine_makes_unreliable():
    runs = [{"kind": "bare", "other_cores": c} for c in (0.9, 1.1, 1.3)]
    (note,) = stats.load_notes(runs, 2)
    assert note.startswith("Other work shared the machine: 1.10 cores of 2 (median over the runs, 0.90 to 1.30)")
    for name in ("watched_vs_bare_ratio", "page_ready_s", "first_batch_warm_s"):
        assert f"`{name}`" in note.split("The CPU-time figures")[0]
    assert "`watch_cores`" in note.split("The CPU-time figures")[1]
    assert stats.load_notes([{"kind": "bare", "other_cores": 0.1}] * 3, 2) == []
    assert stats.load_notes([{"kind": "bare"}], 2) == []


def test_other_load_counts_a_busy_process_that_is_not_ours():
    # a spinning process left to init (its shell parent exits at once): not this process's descendant
    code = "import time\nt = time.time() + 60\nwhile time.time() < t: pass"
    out = subprocess.run(["sh", "-c", f'{sys.executable} -c "{code}" >/dev/null 2>&1 & echo $!'], capture_output=True,
                         text=True, check=True)
    pid = int(out.stdout.strip())
    try:
        spinner = psutil.Process(pid)
        spun_s = common.cpu_seconds(spinner)
        # the window is the spinner's work, not a clock: a second of its CPU, however loaded the host
        with overhead.OtherLoad() as load:
            wait_for(lambda: common.cpu_seconds(spinner) - spun_s >= 1.0, 30, "the spinner to spin for 1 s of CPU")
    finally:
        os.kill(pid, signal.SIGKILL)
    assert load.cores is not None and load.cores >= 0.5, load.cores  # about one core, less what others took from it
