"""Pages act only through the JobManager: deleting a run, probing a peak (queued like a run, never beside one)."""

from __future__ import annotations

import threading
import time

import pytest

from tests.fixtures import NO_GPU
from bench.vocab.config import RunConfig
from bench.hardware.peak_cache import PeakEntry
from bench.runs.jobs import JobManager, RunActiveError
from bench.store import Store
from tests.polling import wait_for
from tests.fixtures import manager  # noqa: F401 - the fixture, used by name

HW = NO_GPU
TINY = RunConfig(dataset="synthetic-mnist", model="mlp", size="xs", epochs=3, batch_size=64, limit_samples=512,
                 sample_interval_s=0.2)


def test_a_deleted_run_leaves_the_queue_the_current_view_and_the_store_at_once(manager):
    first = manager.wait(manager.submit(TINY.replace(epochs=1)), timeout_s=30)
    second = manager.wait(manager.submit(TINY.replace(epochs=1)), timeout_s=30)
    assert manager.current().id == second.id
    manager.delete_run(second.id)
    assert manager.snapshot(second.id) is None
    assert manager.current().id == first.id, "the sidebar and Train fall back to the run before"
    assert manager.store.get_run(second.id) is None
    manager.delete_run(first.id)
    assert manager.current() is None, "nothing left, in memory or in the store"


def test_deleting_an_active_run_is_refused_with_what_to_do(manager):
    run_id = manager.submit(TINY.replace(epochs=40))
    wait_for(lambda: manager.snapshot(run_id).status == "running", 30, "the run to start")
    with pytest.raises(RunActiveError, match=f"Run #{run_id} is still running: stop it first"):
        manager.delete_run(run_id)
    assert manager.store.get_run(run_id, with_samples=False) is not None
    manager.stop(run_id)
    manager.wait(run_id, timeout_s=30)
    manager.delete_run(run_id)
    assert manager.store.get_run(run_id) is None


def test_deleting_another_live_processs_run_is_refused(manager):
    other = Store(manager.store.path)
    run_id = other.create_run(TINY.to_dict(), status="running")  # owned by this (live) process, not by `manager`
    with pytest.raises(RunActiveError, match="in another process"):
        manager.delete_run(run_id)


def test_a_peak_probe_waits_for_the_run_before_it_and_the_run_after_waits_for_it(manager, monkeypatch):
    from bench.hardware import probe

    calls = []
    measuring, measured = threading.Event(), threading.Event()

    def fake_peak(device, *, cpu_threads=None, refresh=False):  # measures until the test lets it finish
        active = [s.id for s in manager.snapshots() if s.status in ("starting", "running")]
        calls.append({"t0": time.time(), "active": active})
        measuring.set()
        measured.wait(60)
        calls[-1]["t1"] = time.time()
        return PeakEntry(peak_gflops=123.0, size=256, device=device)

    monkeypatch.setattr(probe, "cached_peak", fake_peak)
    before = manager.submit(TINY.replace(epochs=3))
    future = manager.peaks.queue("cpu", cpu_threads=1)
    after = manager.submit(TINY.replace(epochs=1))
    try:
        assert measuring.wait(60), "the probe never measured"
        assert manager.snapshot(after).status == "queued", "the run queued after the probe started while it measured"
    finally:
        measured.set()
    assert future.result(timeout=60).peak_gflops == 123.0
    a, b = manager.wait(before, timeout_s=30), manager.wait(after, timeout_s=30)
    assert calls[0]["active"] == [], "no run was active while the probe measured"
    assert calls[0]["t0"] >= a.ended_at, "the probe waited for the run queued before it"
    assert b.started_at >= calls[0]["t1"], "the run queued after it waited for the probe"


def test_a_sweep_group_probes_its_targets_first_and_records_the_peaks(manager, monkeypatch):
    from bench.hardware import probe

    def fake_peak(device, *, cpu_threads=None, refresh=False):
        if cpu_threads == 1:
            raise probe.ProbeError("no timer on this core")
        return PeakEntry(peak_gflops=99.0)

    monkeypatch.setattr(probe, "cached_peak", fake_peak)
    configs = [TINY.replace(epochs=1), TINY.replace(epochs=1, cpu_threads=1)]
    gid = manager.groups.submit("sweep", configs, targets=["cpu", "cpu/1"],
                                peaks={"cpu": configs[0], "cpu/1": configs[1]})
    group = manager.groups.latest("sweep")
    assert group.id == gid and group.targets == ("cpu", "cpu/1")
    for run_id in group.run_ids:
        manager.wait(run_id, timeout_s=30)
    group = manager.groups.latest("sweep")
    assert {t: p.gflops for t, p in group.peaks.items()} == {"cpu": 99.0, "cpu/1": None}
    assert "no timer" in group.peaks["cpu/1"].error and group.peaks["cpu"].error is None


def test_train_follows_the_newest_stored_run_of_another_process(isolated_store, monkeypatch):
    """After a restart the view shows the last stored run; a run another process starts later replaces it, grows,
    and cannot be stopped from here."""
    from bench.runs import stored_view

    monkeypatch.setattr(stored_view, "STORED_REFRESH_S", 0.0)
    store = Store(isolated_store)
    old = store.create_run(TINY.to_dict(), status="finished")
    viewer = JobManager(Store(isolated_store), hardware=HW)
    assert viewer.current().id == old and viewer.current().owner is None
    other = store.create_run(TINY.to_dict(), status="running")  # another process's run (this pid is alive)
    snap = viewer.current()
    assert snap.id == other and snap.active and snap.owner and "process" in snap.owner
    store.add_epoch(other, {"epoch": 1, "epoch_seconds": 1.0, "includes_tracing": True})
    assert len(viewer.current().epochs) == 1, "it grows as the other process writes"
    assert viewer.stop(other) is False
    viewer.shutdown()
