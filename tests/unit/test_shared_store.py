"""Two processes, one store: real CLI processes and a dashboard's JobManager share one SQLite file, none ever sees
another's live run as `interrupted`, a killed owner's run is, and a store that fails mid-run loses nothing.

The CLIs replay their runs (BENCH_WORKER_TARGET, the stand-in the browser tests use): what is proven here is the store
shared by real processes, their owners, heartbeats and fallback files, none of which depends on the framework; the
CLI's real training is proven by tests/unit/test_cli.py."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from bench.vocab.config import RunConfig
from bench.vocab.records import RunRecord
from bench.runs.jobs import JobManager
from bench.store import Store
from benchmarks.standins import PACED_WORKER_TARGET
from tests.fixtures import NO_GPU
from tests.polling import wait_for
from tests.unit import fake_workers

ROOT = Path(__file__).resolve().parents[2]
TINY_RUN = ("run", "--dataset", "synthetic-mnist", "--model", "mlp", "--size", "xs", "--batch-size", "100",
            "--sample-interval", "0.2")


def start_cli(store: Path, *args: str, cwd: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "BENCH_STORE": str(store), "BENCH_WORKER_TARGET": PACED_WORKER_TARGET}
    return subprocess.Popen([sys.executable, "-m", "bench", *args], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def stored(store: Path, run_id: int) -> RunRecord | None:
    return Store(store).get_run(run_id, with_samples=False)


def run_with_epochs(store: Path, n: int, *, exclude: tuple[int, ...] = ()) -> RunRecord | None:
    for run in Store(store).list_runs():
        if run.id not in exclude and run.status == "running" and len(run.epochs) >= n:
            return run
    return None


@pytest.mark.slow  # several processes started and run to their end
def test_two_clis_and_a_dashboard_share_a_store_and_see_each_others_runs_live(isolated_store, tmp_path):
    store = isolated_store
    Store(store)
    long_cli = start_cli(store, *TINY_RUN, "--epochs", "300", "--limit-samples", "2000", cwd=tmp_path)
    short_cli = None
    try:
        first = wait_for(lambda: run_with_epochs(store, 3), 120, "the first CLI's run to store 3 epochs")
        short_cli = start_cli(store, *TINY_RUN, "--epochs", "3", "--limit-samples", "1000", cwd=tmp_path)
        # a dashboard opens the same store meanwhile, and runs something of its own
        dashboard = JobManager(Store(store), hardware=NO_GPU, worker_target=fake_workers.quick)
        assert dashboard.interrupted_at_start == [], "opening the dashboard interrupted a live CLI run"
        own = dashboard.submit(RunConfig(epochs=4, limit_samples=512, sample_interval_s=0.2))
        seen: dict[int, set[str]] = {}

        def short_cli_ended() -> bool:  # each look notes every run's status, until the short CLI has ended
            for run in Store(store).list_runs():  # every listing also marks runs whose owner is gone
                seen.setdefault(run.id, set()).add(run.status)
            return short_cli.poll() is not None

        wait_for(short_cli_ended, 180, "the short CLI to end", poll_s=0.3)
        assert short_cli.returncode == 0, short_cli.stderr.read()
        assert dashboard.wait(own, timeout_s=60).status == "finished"
        assert all("interrupted" not in statuses for statuses in seen.values()), seen
        assert len(seen) == 3, f"three runs overlapped: {seen}"
        long_run = stored(store, first.id)
        assert long_run is not None and long_run.status == "running", "the long CLI run is still live"
        assert dashboard.current().id == own

        # the owner of the long run is killed: no process is left to finish it
        long_cli.send_signal(signal.SIGKILL)
        long_cli.wait(timeout=10)
        killed_at = time.monotonic()
        wait_for(lambda: stored(store, first.id) and
                 any(r.id == first.id and r.status == "interrupted" for r in Store(store).list_runs()),
                 30, "the killed owner's run to show as interrupted")
        assert time.monotonic() - killed_at < 30, "within the heartbeat limit"
        after = Store(store).get_run(first.id)
        assert len(after.epochs) >= 3 and after.summary is not None and after.summary.steady_epoch_seconds is not None
        dashboard.shutdown()
    finally:
        for proc in (long_cli, short_cli):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)


@contextlib.contextmanager
def unwritable(folder: Path) -> Iterator[None]:
    """Make the store's folder and files refuse writes: `chattr +i` as root (root ignores permissions), else modes.
    The folder is locked first, so the WAL files a connection makes and removes cannot change under the listing."""
    if os.geteuid() == 0:
        if shutil.which("chattr") is None:
            pytest.skip("running as root without chattr: a read-only store cannot be made")
        done = subprocess.run(["chattr", "+i", str(folder)], capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"chattr +i is not allowed here ({done.stderr.strip()}): a read-only store cannot be made")
        files = [str(p) for p in folder.iterdir() if p.is_file()]
        try:
            subprocess.run(["chattr", "+i", *files], check=True)
            yield
        finally:
            subprocess.run(["chattr", "-i", *files, str(folder)], check=True)
    else:
        folder_mode = folder.stat().st_mode
        folder.chmod(0o555)
        modes = {p: p.stat().st_mode for p in folder.iterdir() if p.is_file()}
        for p in modes:
            p.chmod(0o444)
        try:
            yield
        finally:
            for p, mode in modes.items():
                p.chmod(mode)
            folder.chmod(folder_mode)


@pytest.mark.slow  # several processes started and run to their end
def test_store_made_unwritable_mid_run_cli_keeps_every_epoch_in_a_fallback_file_and_exits_nonzero(
        isolated_store, tmp_path):
    store = isolated_store
    Store(store)
    epochs = 16  # 0.5 s each, replayed: the store is locked after the third, with 13 still to come
    cli = start_cli(store, *TINY_RUN, "--epochs", str(epochs), "--limit-samples", "3000", cwd=tmp_path)
    try:
        run = wait_for(lambda: run_with_epochs(store, 3), 120, "3 stored epochs")
        with unwritable(store.parent):
            _, err = cli.communicate(timeout=240)
        in_store = Store(store).get_run(run.id)
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait(timeout=10)

    assert cli.returncode == 3, err
    assert "Traceback" not in err
    fallbacks = list(tmp_path.glob("bench-unsaved-*.json"))
    assert len(fallbacks) == 1, err
    assert err.count("Everything measured") == 1 and str(fallbacks[0]) in err, "the path is given, once"
    assert err.count("could not be saved") == 1, f"said once, not once per sample:\n{err}"
    record = json.loads(fallbacks[0].read_text())
    assert record["status"] == "finished"
    assert [e["epoch"] for e in record["epochs"]] == list(range(1, epochs + 1)), "every epoch is in the file"
    assert len(in_store.epochs) < epochs, "the store really missed some"
    assert record["samples"], "the samples came along"


def test_cli_without_any_store_keeps_the_run_in_a_file(tmp_path):
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the store's folder should be")
    cli = start_cli(blocked / "runs.sqlite3", *TINY_RUN, "--epochs", "2", "--limit-samples", "500", cwd=tmp_path)
    _, err = cli.communicate(timeout=240)
    assert cli.returncode == 3, err
    fallbacks = list(tmp_path.glob("bench-unsaved-*.json"))
    assert len(fallbacks) == 1 and "import" in err
    assert len(json.loads(fallbacks[0].read_text())["epochs"]) == 2


@pytest.mark.slow  # several processes started and run to their end
def test_short_soak_three_writers_lose_nothing(tmp_path):
    from benchmarks import store_soak

    result = store_soak.soak(3, 8.0, tmp_path)
    assert result["problems"] == [], result["problems"]
    assert result["runs"] >= 3 and result["epochs"] >= 3 * store_soak.EPOCHS_PER_RUN
    assert result["lost_epochs"] == 0 and result["lost_samples"] == 0 and result["database_locked"] == 0
    assert result["duplicated_samples"] == 0, "no sample is stored twice"
    assert result["samples"] > 0, "samples were taken: the count of duplicates means something"
    assert "nothing lost, nothing twice" in store_soak.render(result)
