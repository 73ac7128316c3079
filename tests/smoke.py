"""What the benchmarks' smoke runs share (tests/unit/test_smoke_*.py): a benchmark run as a command from the checkout,
its store in the test's folder, ended with every process it started; and the checks on what it wrote.

The smoke runs are split into several files so that pytest-xdist (``--dist loadfile``) spreads them over its
processes; tests/conftest.py collects them first (:func:`longest_first`), so that the longest start first and none is
left to run alone at the end (docs/TESTING.md).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from benchmarks.dashboard import browser_unavailable

ROOT = Path(__file__).resolve().parents[1]
# Kept on purpose: Ray's session logs, which Ray keeps after a cluster stops (as `ray start` does), and the workers'
# logs each cluster node keeps in its own temporary directory (bench/cluster/agent.py)
KEPT = ("ray", "bench-cluster-logs")


def run(args: list[str], tmp_path: Path, *, timeout_s: float = 240.0, env: dict[str, str] | None = None,
        ) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` from the checkout, its store in ``tmp_path``; fails with its output when it exits non-zero, or
    when it leaves anything in the temporary directory it was given (its servers' folders, logs, stores: run a hundred
    times, a benchmark must not fill /tmp). That directory is removed when the run passes, and kept, named in the
    failure, when it does not (a failed benchmark keeps its scratch folders there for their logs)."""
    # a short path in /tmp, not under tmp_path: a Ray cluster's sockets live under it (at most 107 bytes a path)
    scratch = Path(tempfile.mkdtemp(prefix="smoke-"))
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), "BENCH_STORE": str(tmp_path / "runs.sqlite3"),
                "TMPDIR": str(scratch), **(env or {})}
    # a session of its own, so that a benchmark that runs out of time is ended with every process it started (its
    # server, the server's worker, Chromium), not its first process alone
    proc = subprocess.Popen([sys.executable, *args], cwd=ROOT, env=full_env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"{' '.join(args)} took more than {timeout_s:.0f} s (its TMPDIR: {scratch}):\n{out[-3000:]}\n"
                    f"{err[-3000:]}")
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # whatever it left behind
        except ProcessLookupError:
            pass
    done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    assert done.returncode == 0, (f"{' '.join(args)} exited {done.returncode} (its TMPDIR: {scratch}):\n{out[-3000:]}\n"
                                  f"{err[-3000:]}")
    left = sorted(path.name for path in scratch.iterdir() if path.name not in KEPT)
    assert not left, f"{' '.join(args)} left {left} in its temporary directory {scratch}"
    shutil.rmtree(scratch, ignore_errors=True)
    return done


def read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def needs_browser() -> None:
    reason = browser_unavailable()
    if reason:
        pytest.skip(f"needs a browser: {reason}")


def measured(value: Any) -> bool:
    """A figure that was measured: a finite number from 0 up (not None, not a bool, not NaN)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value and value >= 0


# The smoke files, longest first, as measured (docs/TESTING.md): pytest-xdist hands a file to whichever process is
# free in collection order (the Makefile turns its reordering by test count off), so the longest start first and the
# short ones fill in beside them, and no long one is left to run alone at the end.
LONGEST_FIRST = ("test_smoke_classroom.py", "test_smoke_overhead.py", "test_smoke_watch_cost.py",
                 "test_smoke_feed_cost.py", "test_smoke_metrics_scrape.py", "test_smoke_suite.py",
                 "test_smoke_stores.py")


def longest_first(items: list[pytest.Item]) -> None:
    """Move the smoke files' tests to the front of ``items``, longest file first; every other test keeps its place
    after them (a stable sort, so a file's tests stay together and in their order)."""
    def rank(item: pytest.Item) -> int:
        name = item.path.name
        return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)
