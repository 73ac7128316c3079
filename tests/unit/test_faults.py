"""Faults a live demo survives without losing what was measured: a killed worker, out of memory, NVML going away,
a server restart, a store that cannot be written, a worker that hangs mid-epoch.

Every test goes through a JobManager with real spawned worker processes (the stand-ins of fake_workers.py; the OOM
ones run bench.runs.worker.worker_main, the real error path, around a fake train()).
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bench.runs.jobs import JobManager
from bench.hardware.monitor import nvml
from bench.store import Store, StoreError
from tests.fixtures import NO_GPU, TINY
from tests.polling import wait_for
from tests.unit import fake_nvml, fake_workers
from tests.fixtures import store  # noqa: F401 - the fixture, used by name

ROOT = Path(__file__).resolve().parents[2]




def manager_with(target, store: Store | None, **kwargs) -> JobManager:
    return JobManager(store, hardware=NO_GPU, worker_target=target, **kwargs)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped) counts as gone
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def assert_next_run_works(jm: JobManager) -> None:
    jm._worker_target = fake_workers.quick
    nxt = jm.submit(TINY.replace(epochs=1))
    snap = jm.wait(nxt, timeout_s=30)
    assert snap.status == "finished", snap.error
    assert len(snap.epochs) == 1


# -- a worker killed from outside ------------------------------------------------------------------------------------
def test_worker_sigkilled_mid_run_fails_with_reason_and_keeps_epochs_and_samples(store):
    jm = manager_with(fake_workers.quick, store)
    run_id = jm.submit(TINY.replace(epochs=200, sample_interval_s=0.1))
    snap = wait_for(lambda: (s := jm.snapshot(run_id)).epochs and s.info.pid and s.samples and s, 30,
                    "the first epoch")
    os.kill(snap.info.pid, signal.SIGKILL)  # as the kernel's OOM killer would
    final = jm.wait(run_id, timeout_s=30)

    assert final.status == "failed"
    assert final.error.error_type == "WorkerDied"
    assert "SIGKILL" in final.error.message
    assert "Epochs finished before then are kept" in final.error.message
    assert "batch size" in final.error.hint
    assert 1 <= len(final.epochs) < 200
    stored = store.get_run(run_id)
    assert stored.status == "failed"
    assert stored.error.error_type == "WorkerDied"
    assert [e.epoch for e in stored.epochs] == [e.epoch for e in final.epochs], "every finished epoch is kept"
    assert len(stored.samples) >= len(snap.samples) > 0, "samples taken before the kill are kept"
    assert stored.summary is not None, "the outcome's summary is stored with the run"
    assert stored.summary.first_epoch_seconds == pytest.approx(final.epochs[0].epoch_seconds)
    assert_next_run_works(jm)


# -- out of memory, through the real worker error path -----------------------------------------------------------------
@pytest.mark.parametrize(("target", "what_to_lower"), [
    (fake_workers.real_worker_gpu_oom, ("batch size", "model size")),
    (fake_workers.real_worker_host_oom, ("sample limit", "batch size", "model size")),
])
def test_out_of_memory_fails_saying_what_to_lower_and_the_manager_stays_usable(store, target, what_to_lower):
    jm = manager_with(target, store)
    run_id = jm.submit(TINY)
    snap = jm.wait(run_id, timeout_s=60)

    assert snap.status == "failed"
    assert snap.error.error_type == "OutOfMemory"
    assert ("OOM when allocating" in snap.error.message) or ("Unable to allocate" in snap.error.message)
    hint = snap.error.hint
    assert "lower" in hint
    for knob in what_to_lower:
        assert knob in hint, (knob, hint)
    assert "Traceback" in (snap.error.traceback or ""), "the traceback is kept for the record"
    assert len(snap.epochs) == 1
    stored = store.get_run(run_id)
    assert stored.status == "failed" and stored.error.error_type == "OutOfMemory"
    assert len(stored.epochs) == 1
    assert_next_run_works(jm)


# -- NVML failing while a run goes on ----------------------------------------------------------------------------------
@pytest.fixture
def fake_gpus():
    fake = fake_nvml.two_gpus()
    nvml.set_module(fake)
    yield fake
    nvml.reset()


GPU_MEASURES = ("util_percent", "mem_util_percent", "mem_used_mib", "mem_total_mib", "power_w", "temp_c",
                "sm_clock_mhz")


def test_gpu_lost_mid_run_sampling_goes_on_with_none_not_zero(store, fake_gpus):
    jm = manager_with(fake_workers.quick, store)
    run_id = jm.submit(TINY.replace(epochs=200, sample_interval_s=0.1))
    wait_for(lambda: len([s for s in jm.snapshot(run_id).samples if s.gpus]) >= 3, 30, "GPU samples")
    before = jm.snapshot(run_id).samples
    assert all(g.util_percent in (40.0, 90.0) for s in before for g in s.gpus)
    fake_gpus.lose_gpus_now()
    lost_from = len(before) + 1  # a sample in flight at the loss may be half read
    wait_for(lambda: len(jm.snapshot(run_id).samples) >= lost_from + 5, 30, "samples after the GPU was lost")
    jm.stop(run_id)
    snap = jm.wait(run_id, timeout_s=20)

    assert snap.status == "stopped", snap.error
    after = snap.samples[lost_from:]
    assert len(after) >= 5
    ts = [s.t_s for s in snap.samples]
    assert ts == sorted(ts), "samples keep coming in order"
    for sample in after:
        assert sample.cpu_percent is not None, "the CPU side is unaffected"
        assert [g.index for g in sample.gpus or ()] == [0, 1], "each GPU keeps its row"
        for gpu in sample.gpus or ():
            for key in GPU_MEASURES:
                assert getattr(gpu, key) is None, (key, gpu)  # a gap in the chart, never a false 0
    stored = store.get_run(run_id).samples
    assert len(stored) >= lost_from + 5
    assert all(g.util_percent is None for s in stored[lost_from:] for g in s.gpus)
    assert snap.summary.mean_gpu_util_percent is not None, "the readings before the loss still count"


def test_nvml_call_not_supported_mid_run_gives_none_for_that_reading_only(store, fake_gpus):
    jm = manager_with(fake_workers.quick, store)
    run_id = jm.submit(TINY.replace(epochs=200, sample_interval_s=0.1))
    wait_for(lambda: len(jm.snapshot(run_id).samples) >= 3, 30, "samples")
    n = len(jm.snapshot(run_id).samples) + 1
    fake_gpus.unsupported.add("nvmlDeviceGetPowerUsage")  # e.g. the driver stops exposing power mid-run
    wait_for(lambda: len(jm.snapshot(run_id).samples) >= n + 4, 30, "samples after power went away")
    jm.stop(run_id)
    snap = jm.wait(run_id, timeout_s=20)

    assert all(g.power_w in (150.0, 450.0) for s in snap.samples[: n - 1] for g in s.gpus)
    for sample in snap.samples[n:]:
        for gpu in sample.gpus or ():
            assert gpu.power_w is None
            assert gpu.util_percent in (40.0, 90.0)
            assert gpu.temp_c in (45.0, 65.0)


# -- the server restarted mid-run ---------------------------------------------------------------------------------------
SERVER_SCRIPT = textwrap.dedent("""
    import signal, sys
    from bench.runs.jobs import JobManager
    from bench.store import Store
    from tests.fixtures import NO_GPU, TINY
    from tests.unit import fake_workers

    jm = JobManager(Store(sys.argv[1]), hardware=NO_GPU, worker_target=fake_workers.real_worker_slow)
    jm.submit(TINY.replace(epochs=300))
    print("submitted", flush=True)
    signal.pause()  # a server that serves until it is killed (the test kills it)
""")


@pytest.mark.slow  # several processes started and run to their end
def test_server_killed_mid_run_then_restarted_marks_it_interrupted_and_keeps_epochs(isolated_store):
    path = isolated_store
    Store(path)
    server = subprocess.Popen([sys.executable, "-c", SERVER_SCRIPT, str(path)], cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    worker_pid = None
    try:
        def running_with_epochs_and_samples():
            run = Store(path).get_run(1)
            ok = run and run.status == "running" and len(run.epochs) >= 2 and run.samples
            return ok and run

        run = wait_for(running_with_epochs_and_samples, 60, "the server's run to store epochs and samples")
        worker_pid = run.info.pid
        os.kill(server.pid, signal.SIGKILL)  # no cleanup at all, as a crash or a power cut
        server.wait(timeout=10)
        assert worker_pid, "the worker's pid is stored with the run"
        # an orphaned worker would go on training and skew the next run's timing (and keep the GPU's memory)
        wait_for(lambda: not pid_alive(worker_pid), 10, "the worker to end with its server")
        with sqlite3.connect(path) as con:  # the row as left (a reader through Store settles dead owners first)
            raw_status = con.execute("SELECT status FROM runs WHERE id = ?", (run.id,)).fetchone()[0]
        assert raw_status == "running", "nobody was left to record the end"

        restarted = JobManager(Store(path), hardware=NO_GPU, worker_target=fake_workers.quick)
        assert restarted.interrupted_at_start == [run.id]
        after = Store(path).get_run(run.id)
        assert after.status == "interrupted"
        assert after.error.error_type == "Interrupted"
        assert "epochs finished before then are kept" in after.error.message
        assert after.ended_at is not None
        assert len(after.epochs) >= len(run.epochs) >= 2
        assert len(after.samples) >= len(run.samples) > 0, "samples flushed before the crash are kept"
        nxt = restarted.submit(TINY.replace(epochs=1))
        assert restarted.wait(nxt, timeout_s=30).status == "finished"
        assert nxt != run.id
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(timeout=10)
        if worker_pid and pid_alive(worker_pid):  # the orphaned worker of the killed server
            os.kill(worker_pid, signal.SIGKILL)


# -- the store cannot be written during a run --------------------------------------------------------------------------
def test_store_locked_mid_run_then_free_again_gets_everything_written(store):
    store.busy_timeout_s = 0.5  # a lock held longer than this counts as a failing store (30 s by default)
    jm = manager_with(fake_workers.quick, store)
    run_id = jm.submit(TINY.replace(epochs=6))
    wait_for(lambda: len(store.get_run(run_id, with_samples=False).epochs) >= 1, 30, "the first stored epoch")
    locker = sqlite3.connect(store.path, timeout=0.1, isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")  # another program holds the write lock
    try:
        error = wait_for(lambda: jm.snapshot(run_id).store_error, 60, "the store error to show")
        assert "could not be saved" in error
        assert "locked" in error and "another program holds a lock" in error
        assert "retried" in error, "the message says the store is retried"
        assert not jm.snapshot(run_id).saved
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    snap = jm.wait(run_id, timeout_s=60)
    wait_for(lambda: jm.snapshot(run_id).saved, 30, "the store to catch up")

    assert snap.status == "finished"
    assert [e.epoch for e in snap.epochs] == [1, 2, 3, 4, 5, 6], "the run is complete in memory"
    stored = store.get_run(run_id)
    assert stored.status == "finished", "the outcome reached the store once it answered"
    assert [e.epoch for e in stored.epochs] == [1, 2, 3, 4, 5, 6], "the epochs it missed were written"
    assert stored.summary is not None and stored.summary.steady_epoch_seconds is not None
    assert jm.snapshot(run_id).store_error is None
    assert len(stored.samples) == len(jm.snapshot(run_id).samples), "no sample was lost"


@pytest.mark.parametrize(("sqlite_text", "hint"), [
    ("database or disk is full", "the disk is full"),
    ("attempt to write a readonly database", "read-only"),
])
def test_store_failing_for_good_mid_run_keeps_every_epoch_in_memory(store, monkeypatch, sqlite_text, hint):
    calls = []
    real_add_epoch = store.add_epoch

    def first_epoch_only(run_id, epoch):
        calls.append(epoch["epoch"])
        if len(calls) > 1:
            raise StoreError(store._explain(sqlite3.OperationalError(sqlite_text)))
        real_add_epoch(run_id, epoch)

    def failing(*args, **kwargs):
        raise StoreError(store._explain(sqlite3.OperationalError(sqlite_text)))

    monkeypatch.setattr(store, "add_epoch", first_epoch_only)  # writes happen in this (the server) process
    jm = manager_with(fake_workers.quick, store)
    run_id = jm.submit(TINY)
    wait_for(lambda: len(calls) >= 2, 30, "the second epoch to be offered")
    for name in ("add_epochs", "add_samples", "update_run"):  # from now on nothing can be written
        monkeypatch.setattr(store, name, failing)
    snap = jm.wait(run_id, timeout_s=30)

    assert snap.status == "finished"
    assert [e.epoch for e in snap.epochs] == [1, 2, 3]
    assert calls == [1, 2], "after the first failure, writes wait for the store to answer again"
    assert not snap.saved
    assert snap.store_error and "Results could not be saved" in snap.store_error
    assert sqlite_text in snap.store_error and hint in snap.store_error
    assert snap.record().to_dict()["store_error"] == snap.store_error, "exports carry the warning"
    assert [e.epoch for e in store.get_run(run_id).epochs] == [1]


def test_a_failing_store_is_logged_once_per_outage(store, monkeypatch, caplog):
    def failing(*args, **kwargs):
        raise StoreError(store._explain(sqlite3.OperationalError("attempt to write a readonly database")))

    jm = manager_with(fake_workers.quick, store)
    run_id = jm.submit(TINY.replace(epochs=1))
    assert jm.wait(run_id, timeout_s=30).status == "finished"
    for name in ("add_epoch", "add_epochs", "add_samples", "update_run"):
        monkeypatch.setattr(store, name, failing)
    with caplog.at_level("WARNING", logger="bench.runs.jobs"):
        run_id = jm.submit(TINY.replace(epochs=8, sample_interval_s=0.1))
        snap = jm.wait(run_id, timeout_s=30)
    assert len(snap.samples) > 8 and len(snap.epochs) == 8
    warnings = [r for r in caplog.records if "readonly" in r.getMessage()]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]


def test_store_unwritable_from_the_start_runs_in_memory_and_says_so(store, monkeypatch):
    def refuse(*args, **kwargs):
        raise StoreError(store._explain(sqlite3.OperationalError("attempt to write a readonly database")))

    monkeypatch.setattr(store, "create_run", refuse)
    jm = manager_with(fake_workers.quick, store)
    run_id = jm.submit(TINY)
    snap = jm.wait(run_id, timeout_s=30)

    assert run_id < 0, "an in-memory id"
    assert snap.status == "finished" and len(snap.epochs) == 3
    assert snap.store_error and "read-only" in snap.store_error
    assert store.list_runs() == []


# -- a worker that hangs after some epochs -----------------------------------------------------------------------------
def test_worker_hanging_mid_epoch_is_ended_and_its_epochs_are_kept(store):
    jm = manager_with(fake_workers.epochs_then_hang, store, hang_timeout_s=1.5)
    run_id = jm.submit(TINY.replace(epochs=5))
    pid = wait_for(lambda: jm.snapshot(run_id).info.pid, 30, "the worker to start")
    snap = jm.wait(run_id, timeout_s=30)

    assert snap.status == "failed"
    assert snap.error.error_type == "Hung"
    assert "sent nothing" in snap.error.message and "BENCH_HANG_TIMEOUT_S" in snap.error.hint
    assert [e.epoch for e in snap.epochs] == [1, 2]
    stored = store.get_run(run_id)
    assert stored.status == "failed" and [e.epoch for e in stored.epochs] == [1, 2]
    wait_for(lambda: not pid_alive(pid), 10, "the hung worker to be ended")
    assert_next_run_works(jm)
