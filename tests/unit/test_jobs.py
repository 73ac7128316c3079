"""JobManager: queue order, one run at a time, Stop (cooperative and hard), crashes, hangs, store writes.

Most tests use the stand-in workers of fake_workers.py (real spawned processes, no framework); one trains for real.
"""

from __future__ import annotations

import importlib.util
import json
import time

import pytest

from bench.vocab import records
from bench.vocab.config import RunConfig
from bench.runs.jobs import JobManager
from bench.store import Store
from tests.fixtures import NO_GPU, TINY
from tests.polling import wait_for
from tests.unit import fake_workers
from tests.unit.test_record_keys import undeclared
from tests.fixtures import store  # noqa: F401 - the fixture, used by name

HW = NO_GPU




def manager_with(target, store: Store | None, **kwargs) -> JobManager:
    return JobManager(store, hardware=HW, worker_target=target, **kwargs)


def test_fake_run_finishes_and_is_stored(store):
    jm = manager_with(fake_workers.quick, store)
    run_id = jm.submit(TINY)
    snap = jm.wait(run_id, timeout_s=60)
    assert snap.status == "finished"
    assert [e.epoch for e in snap.epochs] == [1, 2, 3]
    assert snap.epochs[0].includes_tracing and not snap.epochs[1].includes_tracing
    assert all(e.t_end_s > e.t_start_s >= 0 for e in snap.epochs)
    assert snap.samples, "the sampler should have recorded samples while the worker ran"
    stored = store.get_run(run_id)
    assert stored.status == "finished"
    assert len(stored.epochs) == 3
    assert stored.samples, "samples must be flushed to the store"
    assert stored.summary is not None, "the outcome's summary is stored with the run"
    assert stored.summary.steady_epoch_seconds == pytest.approx(snap.summary.steady_epoch_seconds)


def test_runs_execute_one_at_a_time_in_order(store):
    jm = manager_with(fake_workers.quick, store)
    first = jm.submit(TINY)
    second = jm.submit(TINY.replace(epochs=1))
    seen_two_active = False

    def both_ended() -> bool:  # each look checks the order, until both have ended
        nonlocal seen_two_active
        at_once = {s.id: s for s in jm.snapshots()}  # both as of one moment (one lock), not one after the other
        a, b = at_once[first], at_once[second]
        running = [s for s in (a, b) if s.status in ("starting", "running")]
        seen_two_active |= len(running) > 1
        if a.active:
            assert b.status == "queued" and b.queue_position == 0
        return not a.active and not b.active

    wait_for(both_ended, 60, "both runs to end", poll_s=0.02)
    assert not seen_two_active
    assert jm.snapshot(first).ended_at <= jm.snapshot(second).started_at


def test_two_sessions_pressing_start_at_once_run_in_the_order_of_their_ids(store):
    """The store gives a run its id before the queue takes it: two sessions submitting at once must not swap places
    between the two, or the run with the lower id (created first) runs second."""
    import threading

    jm = manager_with(fake_workers.quick, store)
    create, second_created = jm.writer.create, threading.Event()

    def slow_first_create(state):
        create(state)
        if state.id == min(r.id for r in store.list_runs()):
            second_created.wait(1.0)  # the first session is held here while the second one submits
        else:
            second_created.set()

    jm.writer.create = slow_first_create
    ids: list[int] = []
    first = threading.Thread(target=lambda: ids.append(jm.submit(TINY.replace(epochs=1))))
    first.start()
    wait_for(lambda: len(store.list_runs()) == 1, 10, "the first run to be created")
    ids.append(jm.submit(TINY.replace(epochs=1)))
    first.join(10)
    snaps = [jm.wait(run_id, timeout_s=60) for run_id in sorted(ids)]
    assert [s.status for s in snaps] == ["finished", "finished"]
    assert snaps[0].ended_at <= snaps[1].started_at, "the run created first ran first"


def test_stop_is_cooperative_and_keeps_finished_epochs(store):
    jm = manager_with(fake_workers.quick, store)
    run_id = jm.submit(TINY.replace(epochs=200))
    wait_for(lambda: len(jm.snapshot(run_id).epochs) >= 1)
    jm.stop(run_id)
    snap = jm.wait(run_id, timeout_s=10)
    assert snap.status == "stopped"
    assert snap.error is None
    assert 1 <= len(snap.epochs) < 200
    assert snap.info.hard_stop is None
    assert store.get_run(run_id).status == "stopped"


def test_stop_kills_a_worker_that_ignores_it(store):
    jm = manager_with(fake_workers.deaf, store, stop_grace_s=0.5)
    run_id = jm.submit(TINY)
    wait_for(lambda: jm.snapshot(run_id).status == "running")
    t0 = time.monotonic()
    jm.stop(run_id)
    snap = jm.wait(run_id, timeout_s=15)
    assert snap.status == "stopped"
    assert snap.info.hard_stop is True
    assert time.monotonic() - t0 < 8


def test_stopping_a_queued_run_drops_it(store):
    jm = manager_with(fake_workers.quick, store)
    first = jm.submit(TINY.replace(epochs=20))
    second = jm.submit(TINY)
    assert jm.stop(second)
    assert jm.snapshot(second).status == "stopped"
    assert second not in jm.queued_ids()
    jm.stop(first)
    jm.wait(first, timeout_s=10)
    assert jm.snapshot(second).started_at is None


def test_killed_worker_fails_with_reason_and_keeps_epochs_then_next_run_works(store):
    jm = manager_with(fake_workers.one_epoch_then_die, store)
    run_id = jm.submit(TINY)
    snap = jm.wait(run_id, timeout_s=30)
    assert snap.status == "failed"
    assert "SIGKILL" in snap.error.message
    assert snap.error.hint
    assert len(store.get_run(run_id).epochs) == 1
    jm._worker_target = fake_workers.quick
    nxt = jm.submit(TINY.replace(epochs=1))
    assert jm.wait(nxt, timeout_s=30).status == "finished"


def test_a_worker_that_exits_0_after_stop_without_its_last_event_is_stopped_not_failed(store):
    """Seen in CI under load: Stop pressed, the worker ended cleanly, its `finished` event never came, and the run was
    shown as failed ("exited with code 0 without reporting") with a remedy about batch size."""
    jm = manager_with(fake_workers.stops_without_a_word, store)
    run_id = jm.submit(TINY.replace(epochs=200))
    wait_for(lambda: store.get_run(run_id).epochs, 30, "the run's first epoch", poll_s=0.05)
    assert jm.stop(run_id)
    snap = jm.wait(run_id, timeout_s=30)
    assert snap.status == "stopped", snap.error
    assert snap.error is None and snap.epochs, "stopped, with the epochs it finished"


def test_a_worker_that_exits_0_unasked_without_reporting_still_fails(store):
    jm = manager_with(fake_workers.exits_0_without_a_word, store)
    snap = jm.wait(jm.submit(TINY), timeout_s=30)
    assert snap.status == "failed" and "exited with code 0 without reporting" in snap.error.message


def test_hung_worker_is_detected(store):
    jm = manager_with(fake_workers.silent, store, hang_timeout_s=1.5)
    run_id = jm.submit(TINY)
    snap = jm.wait(run_id, timeout_s=30)
    assert snap.status == "failed"
    assert snap.error.error_type == "Hung"
    assert "1 s" in snap.error.message or "2 s" in snap.error.message


def test_runs_left_active_by_a_dead_owner_are_marked_interrupted_at_start(store):
    from tests.unit.test_store import dead_pid, set_owner

    run_id = store.create_run(TINY.to_dict(), status="running")
    live_id = store.create_run(TINY.to_dict(), status="running")  # owned by this (live) process
    store.add_epoch(run_id, {"epoch": 1, "epoch_seconds": 1.0, "includes_tracing": True})
    set_owner(store, run_id, owner_pid=dead_pid())
    jm = JobManager(store, hardware=HW)
    assert jm.interrupted_at_start == [run_id]
    assert store.get_run(live_id).status == "running"
    run = store.get_run(run_id)
    assert run.status == "interrupted"
    assert len(run.epochs) == 1


def test_without_store_runs_live_in_memory():
    jm = manager_with(fake_workers.quick, None)
    run_id = jm.submit(TINY.replace(epochs=2))
    assert run_id < 0
    assert jm.wait(run_id, timeout_s=30).status == "finished"


@pytest.mark.slow
def test_real_training_run_on_cpu(prestarted):
    """The real worker: TensorFlow (or the configured backend) trains a tiny MLP in a spawned process (the cold first
    run of the pre-started worker's test below, read here)."""
    store, run_id, snap = prestarted["store"], prestarted["first_id"], prestarted["first"]
    assert snap.status == "finished", snap.error
    assert len(snap.epochs) == 2
    assert "CPU" in snap.info.placement.upper()
    assert snap.info.params > 0 and snap.info.flops_per_sample > 0
    assert all(e.epoch_seconds > 0 and e.samples_per_s > 0 for e in snap.epochs)
    assert snap.epochs[0].includes_tracing is True
    assert snap.summary.steady_epoch_seconds == snap.epochs[1].epoch_seconds
    assert any(s.process_cpu_percent for s in snap.samples if s.process_cpu_percent is not None)
    assert store.get_run(run_id).status == "finished" and len(store.get_run(run_id).epochs) == 2
    # every key the real worker and the supervisor put in the record is declared by its type
    assert undeclared(records.RunRecord.model_validate(json.loads(json.dumps(snap.record().to_dict())))) == []


def data_parallel(backend: str) -> RunConfig:
    """devices=2 on a CPU target, JAX with XLA as the docs advise."""
    return TINY.replace(epochs=2, limit_samples=1024, batch_size=64, devices=2, backend=backend,
                        jit_compile=backend == "jax")


@pytest.mark.slow
@pytest.mark.parametrize(("backend", "engine"), [("tensorflow", "tf.distribute.MirroredStrategy"),
                                                  ("jax", "keras.distribution.DataParallel")])
def test_data_parallel_on_two_logical_cpus(store, backend, engine, request):
    """devices=2 on a CPU target: two logical CPU devices (TensorFlow's logical devices, JAX's host-platform device
    count), trained through the framework's own data-parallel engine; the record says which, and how the batch split.
    The TensorFlow run is the last of the pre-started worker's story (``prestarted``: a run for another environment,
    started cold), read here. The framework is looked for, not imported: it loads in the workers only."""
    if importlib.util.find_spec(backend) is None:
        pytest.skip(f"{backend} is not installed (requirements-dev.txt installs it)")
    if backend == "tensorflow":
        seen = request.getfixturevalue("prestarted")
        snap, config = seen["other"], seen["other"].config
    else:
        jm = JobManager(store, hardware=HW)
        run_id = jm.submit(data_parallel(backend))
        snap = jm.wait(run_id, timeout_s=180)
        config = jm.snapshot(run_id).config
    assert snap.status == "finished", snap.error
    info = snap.info
    assert (info.replicas, info.distribution) == (2, engine), info
    assert (info.global_batch_size, info.per_device_batch_size) == (64, 32)
    assert info.replica_devices is not None and len(info.replica_devices) == 2, info
    assert all("CPU" in d.upper() for d in info.replica_devices), info
    assert len(snap.epochs) == 2 and snap.epochs[1].epoch_seconds > 0
    assert config.devices == 2


@pytest.fixture(scope="module")
def prestarted(tmp_path_factory):
    """A manager that pre-starts a spare worker, through its whole story: a real cold run (2 epochs, 1,024 samples:
    test_real_training_run_on_cpu reads it), the spare loading the framework, the next matching run taken by it and
    stopped, then a run for another environment (data-parallel over two logical CPU devices:
    test_data_parallel_on_two_logical_cpus reads it), which discards the spare and starts cold. What each step showed is
    kept for the tests; the manager is shut down before they read it, so no spare loads a framework for nothing."""
    path = tmp_path_factory.mktemp("prestart") / "runs.sqlite3"
    store = Store(path)
    seen = {"store": store}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BENCH_STORE", str(path))  # as isolated_store sets it for a test's own runs
        jm = JobManager(store, hardware=HW, prestart=True)
        _prestart_story(jm, seen)
    seen["pool_after_shutdown"] = jm.pool.state()
    return seen


def _prestart_story(jm: JobManager, seen: dict) -> None:
    """The runs of the ``prestarted`` fixture, each step's outcome put in ``seen``; the manager shut down after."""
    try:
        seen["first_id"] = jm.submit(TINY.replace(epochs=2, limit_samples=1024))
        seen["first"] = first = jm.wait(seen["first_id"], timeout_s=180)
        if first.status == "finished":
            wait_for(lambda: jm.pool.state() == "ready", 120, "the spare worker to load the framework")
            seen["spare_pid"] = jm.pool.spare.process.pid
            seen["long_id"] = long_run = jm.submit(TINY.replace(epochs=500, limit_samples=2048, batch_size=16))
            wait_for(lambda: jm.snapshot(long_run).epochs, 60, "the pre-started run's first epoch")
            seen["long_running"] = jm.snapshot(long_run)
            seen["pool_after_take"] = jm.pool.state()
            jm.stop(long_run)
            seen["stopped"] = jm.wait(long_run, timeout_s=30)

            wait_for(lambda: jm.pool.state() is not None, 30, "a new spare after the stopped run")
            old_spare = jm.pool.spare.process
            # another environment: two logical CPU devices (test_data_parallel_on_two_logical_cpus reads this run)
            seen["other"] = jm.wait(jm.submit(data_parallel("tensorflow")), timeout_s=180)
            seen["old_spare_alive"] = old_spare.is_alive()
    finally:
        jm.shutdown()


@pytest.mark.slow
def test_prestarted_worker_takes_the_next_matching_run_and_honours_stop(prestarted):
    """After a run, a spare worker loads the framework; the next run with the same environment goes to it (same
    process, no spawn), Stop reaches it, and a run for another environment discards it and starts cold."""
    first, store = prestarted["first"], prestarted["store"]
    assert first.status == "finished", first.error
    assert first.info.worker_start.startswith("cold")

    snap = prestarted["long_running"]
    assert snap.info.worker_start.startswith("pre-started")
    assert snap.info.pid == prestarted["spare_pid"]
    assert prestarted["pool_after_take"] is None, "the spare was used, not kept"
    stopped = prestarted["stopped"]
    assert stopped.status == "stopped"
    assert stopped.epochs and store.get_run(prestarted["long_id"]).epochs, "finished epochs are kept"

    other = prestarted["other"]
    assert other.status == "finished", other.error
    assert other.info.worker_start.startswith("cold"), "another environment (two logical devices) cannot use the spare"
    assert prestarted["old_spare_alive"] is False, "the unsuitable spare was ended"
    assert prestarted["pool_after_shutdown"] is None


def test_managers_start_cold_unless_asked():
    assert JobManager(None, hardware=HW).prestart is False
    assert JobManager(None, hardware=HW, prestart=True, worker_target=fake_workers.quick).prestart is False


@pytest.mark.parametrize(("raw", "expected"), [("1", True), ("", True), ("on", True), ("0", False), ("off", False)])
def test_prestart_setting(monkeypatch, raw, expected):
    from bench.vocab import settings

    monkeypatch.setenv("BENCH_PRESTART", raw)
    assert settings.prestart_worker() is expected


def test_prestart_setting_rejects_nonsense(monkeypatch):
    from bench.vocab import settings

    monkeypatch.setenv("BENCH_PRESTART", "maybe")
    with pytest.raises(ValueError, match="BENCH_PRESTART='maybe' must be 1 or 0"):
        settings.prestart_worker()


def test_a_gpu_worker_allocates_gpu_memory_as_needed_and_a_cpu_worker_sees_no_gpu(monkeypatch):
    from bench.hardware import devices
    from bench.runs import worker

    monkeypatch.setattr(worker.os, "environ", {"PATH": "/bin"})
    monkeypatch.setattr(devices, "discover", lambda: devices.Hardware(cpu=NO_GPU.cpu))
    monkeypatch.setattr(devices, "cuda_visible_devices_for", lambda device, hw: "GPU-1234")
    changes = worker.prepare_environment({"device": "gpu:0", "backend": "jax"})
    assert changes["CUDA_VISIBLE_DEVICES"] == "GPU-1234"
    assert changes["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
    assert changes["TF_FORCE_GPU_ALLOW_GROWTH"] == "true"

    monkeypatch.setattr(worker.os, "environ", {"XLA_PYTHON_CLIENT_PREALLOCATE": "true"})
    assert "XLA_PYTHON_CLIENT_PREALLOCATE" not in worker.prepare_environment({"device": "gpu:0"})  # the user's own

    monkeypatch.setattr(worker.os, "environ", {})
    cpu = worker.prepare_environment({"device": "cpu", "backend": "jax"})
    assert cpu["CUDA_VISIBLE_DEVICES"] == "" and cpu["JAX_PLATFORMS"] == "cpu"
    assert "XLA_PYTHON_CLIENT_PREALLOCATE" not in cpu


def test_wait_first_batch_returns_once_the_first_batch_is_reported(store):
    jm = manager_with(fake_workers.quick, store)
    try:
        run_id = jm.submit(RunConfig(epochs=1))
        assert jm.wait_first_batch(run_id, timeout_s=60)
        assert jm.snapshot(run_id).progress.batch >= 1
    finally:
        jm.shutdown()


@pytest.mark.slow  # waits out its timeout
def test_wait_first_batch_gives_up_after_its_timeout(store):
    jm = manager_with(fake_workers.silent, store)
    try:
        run_id = jm.submit(RunConfig(epochs=1))
        t0 = time.monotonic()
        assert not jm.wait_first_batch(run_id, timeout_s=0.5)
        assert 0.5 <= time.monotonic() - t0 < 5.0
        assert not jm.snapshot(run_id).progress
    finally:
        jm.shutdown()
