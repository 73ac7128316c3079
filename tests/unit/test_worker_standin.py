"""The worker stand-in the browser tests' servers run (BENCH_WORKER_TARGET): the dashboard loads what the variable
names, refuses a wrong name with what to do, and the replayed run goes through a real JobManager as a run does."""

from __future__ import annotations

import pytest

from bench.vocab import settings
from bench.vocab.config import RunConfig
from bench.runs.jobs import JobManager
from benchmarks import standins
from tests.fixtures import NO_GPU
from tests.polling import wait_for


def test_unset_is_the_training_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BENCH_WORKER_TARGET", raising=False)
    assert settings.worker_target() is None
    monkeypatch.setenv("BENCH_WORKER_TARGET", " ")
    assert settings.worker_target() is None


def test_the_browser_tests_stand_in_is_loaded_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCH_WORKER_TARGET", standins.PACED_WORKER_TARGET)
    assert settings.worker_target() is standins.PACED_WORKER


@pytest.mark.parametrize(("raw", "says"), [
    ("benchmarks.standins", "must name a callable as module:name"),
    ("benchmarks.standins:SIMULATED_RUN_S", "must name a callable as module:name"),
    ("benchmarks.standins:nothing_here", "cannot be loaded"),
    ("no_such_module_anywhere:worker", "cannot be loaded"),
])
def test_a_wrong_name_is_refused_with_what_to_do(monkeypatch: pytest.MonkeyPatch, raw: str, says: str) -> None:
    monkeypatch.setenv("BENCH_WORKER_TARGET", raw)
    with pytest.raises(ValueError, match=says) as refused:
        settings.worker_target()
    assert "unset it for the training worker" in str(refused.value)


def test_a_replayed_run_finishes_with_its_own_epoch_times_and_stops_on_request() -> None:
    worker = standins.PacedWorker(step_s=0.001, min_epoch_s=0.2, max_epoch_s=0.3)
    manager = JobManager(None, hardware=NO_GPU, worker_target=worker, prestart=True)
    assert manager.prestart is False, "a stand-in worker has no spare to pre-start"
    try:
        config = RunConfig(dataset="synthetic-mnist", model="mlp", size="xs", epochs=3, batch_size=128,
                           limit_samples=2000, sample_interval_s=0.2)
        done = manager.wait(manager.submit(config), timeout_s=60)
        assert done.status == "finished", done.error
        assert [e.epoch for e in done.epochs] == [1, 2, 3]
        # 16 batches at 1 ms: the 0.2 s floor, measured as it was replayed
        assert all(0.15 <= e.epoch_seconds <= 2.0 for e in done.epochs), done.epochs
        assert done.info.framework.startswith("replayed")
        assert done.epochs[0].includes_tracing and not done.epochs[1].includes_tracing

        long_run = manager.submit(config.replace(epochs=500))
        wait_for(lambda: manager.snapshot(long_run).epochs, 30, "the long run's first epoch")
        manager.stop(long_run)
        stopped = manager.wait(long_run, timeout_s=30)
        assert stopped.status == "stopped" and 1 <= len(stopped.epochs) < 500
        assert stopped.info.hard_stop is None, "the stand-in honours Stop between batches"
    finally:
        manager.shutdown()


def test_a_held_replay_waits_before_its_last_epoch_until_released_and_can_be_stopped_there(
        tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    hold = tmp_path / "hold"
    monkeypatch.setenv(standins.HOLD_ENV, str(hold))  # the spawned worker inherits it
    hold.touch()
    worker = standins.PacedWorker(step_s=0.001, min_epoch_s=0.2, max_epoch_s=0.3)
    manager = JobManager(None, hardware=NO_GPU, worker_target=worker)
    try:
        config = RunConfig(dataset="synthetic-mnist", model="mlp", size="xs", epochs=3, batch_size=128,
                           limit_samples=2000, sample_interval_s=0.2)
        held = manager.submit(config)
        wait_for(lambda: len(manager.snapshot(held).epochs) == 2, 30, "the first two epochs")
        assert manager.wait(held, timeout_s=1.5).status == "running", "held before the last epoch"
        hold.unlink()
        done = manager.wait(held, timeout_s=30)
        assert done.status == "finished" and len(done.epochs) == 3, done.error

        hold.touch()
        stopped_there = manager.submit(config)
        wait_for(lambda: len(manager.snapshot(stopped_there).epochs) == 2, 30, "the second run's first two epochs")
        manager.stop(stopped_there)
        stopped = manager.wait(stopped_there, timeout_s=30)
        assert stopped.status == "stopped" and len(stopped.epochs) == 2
    finally:
        manager.shutdown()


def test_the_cli_runs_the_stand_in_and_refuses_a_wrong_name_before_any_run(monkeypatch, capsys, tmp_path) -> None:
    """`python -m bench run` honours the variable as the dashboard does (tests/unit/test_shared_store.py replays
    its CLI runs with it), and a name that loads nothing is bad input: exit 2 with what to do, nothing stored."""
    from bench.cli import main as cli
    from bench.store import Store

    args = ["run", "--epochs", "2", "--limit-samples", "256", "--json", str(tmp_path / "r.json")]
    monkeypatch.setenv("BENCH_WORKER_TARGET", "benchmarks.standins:nothing_here")
    assert cli.main(args) == 2
    assert "cannot be loaded" in capsys.readouterr().err
    assert Store().list_runs() == [], "nothing started"

    monkeypatch.setenv("BENCH_WORKER_TARGET", standins.PACED_WORKER_TARGET)
    assert cli.main(args) == 0, capsys.readouterr().err
    [run] = Store().list_runs()
    assert run.status == "finished" and run.info.framework.startswith("replayed")
