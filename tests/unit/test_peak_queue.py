"""PeakQueue (bench.runs.peaks): probes handed to the run queue as tasks, their futures, cancelling, waiting for other
processes' runs, and the re-probe of a peak a finished run beat.

The run queue is stood in for by a list of tasks that each test runs by hand; no worker and no training.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from bench.analysis import compare
from bench.vocab.config import RunConfig
from bench.hardware import peak_cache, probe
from bench.vocab.records import Status
from bench.runs.peaks import PeakQueue
from bench.runs.run_state import RunState
from bench.store import Store
from tests.polling import wait_for

HW = {"cpu": {"logical_cores": 2}, "gpus": [], "gpu_reason": "test"}
TINY = RunConfig(dataset="synthetic-mnist", model="mlp", size="xs", epochs=1, batch_size=64, limit_samples=512)


class Host:
    """Stands in for the run queue: keeps the tasks handed to it, in order, for the test to run."""

    def __init__(self, local: tuple[int, ...] = ()) -> None:
        self.tasks: list[Callable[[], None]] = []
        self.local = set(local)
        self.stopping = False

    def peaks(self, store: Store | None = None) -> PeakQueue:
        return PeakQueue(store, enqueue=self.tasks.append, own_runs=self.local,
                         stopping=lambda: self.stopping, state_lock=threading.Lock())


@pytest.fixture
def probes(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """probe.cached_peak stood in for: records what it was asked and measures 99 GFLOP/s (cpu/1 fails)."""
    calls: list[dict[str, Any]] = []

    def fake_peak(device: str, *, cpu_threads: int | None = None, refresh: bool = False) -> peak_cache.PeakEntry:
        calls.append({"device": device, "cpu_threads": cpu_threads, "refresh": refresh})
        if cpu_threads == 1:
            raise probe.ProbeError("no timer on this core")
        return peak_cache.PeakEntry(device=device, peak_gflops=99.0)

    monkeypatch.setattr(probe, "cached_peak", fake_peak)
    return calls


def test_a_probe_waits_in_the_run_queue_until_its_turn(probes):
    host = Host()
    peaks = host.peaks()
    future = peaks.queue("cpu", cpu_threads=2, refresh=True)
    assert len(host.tasks) == 1, "one task handed to the run queue"
    assert probes == [] and not future.done(), "nothing is measured before the queue reaches it"
    assert peaks.pending() == [future]
    host.tasks[0]()
    assert future.result(timeout=0) == peak_cache.PeakEntry(device="cpu", peak_gflops=99.0)
    assert probes == [{"device": "cpu", "cpu_threads": 2, "refresh": True}]
    assert peaks.pending() == []


def test_a_failed_probe_raises_its_error_from_the_future_and_leaves_the_pending_list(probes):
    host = Host()
    peaks = host.peaks()
    future = peaks.queue("cpu", cpu_threads=1)
    host.tasks[0]()
    with pytest.raises(probe.ProbeError, match="no timer on this core"):
        future.result(timeout=0)
    assert peaks.pending() == []


def test_pending_lists_the_probes_in_the_order_they_were_queued(probes):
    host = Host()
    peaks = host.peaks()
    first, second = peaks.queue("cpu"), peaks.queue("cpu", cpu_threads=2)
    assert peaks.pending() == [first, second]
    host.tasks[0]()
    assert peaks.pending() == [second]


def test_cancel_stops_the_probes_not_started_and_their_turn_measures_nothing(probes):
    host = Host()
    peaks = host.peaks()
    future = peaks.queue("cpu")
    peaks.cancel()
    assert future.cancelled()
    host.tasks[0]()
    assert probes == [], "a cancelled probe never measures"
    assert peaks.pending() == []


def test_a_probe_waits_while_another_processs_run_is_active(probes, isolated_store):
    store = Store(isolated_store)
    other = store.create_run(TINY.to_dict(), status="running")  # owned by this (live) process, not by the queue
    looks: list[list[int]] = []  # the active runs the queue saw at each look at the store
    list_runs = store.list_runs

    def looked(*args: Any, **kwargs: Any) -> Any:
        runs = list_runs(*args, **kwargs)
        looks.append([r.id for r in runs if r.status == "running"])
        return runs

    store.list_runs = looked  # type: ignore[method-assign]
    host = Host()
    future = host.peaks(store).queue("cpu")
    measuring = threading.Thread(target=host.tasks[0], daemon=True)
    measuring.start()
    # a second look proves the queue saw the other run at its first and chose to wait
    wait_for(lambda: len(looks) >= 2, 10, "the queue to look at the store a second time")
    assert looks[:2] == [[other], [other]]
    assert probes == [] and not future.done(), "the device is busy with another process's run"
    store.update_run(other, status="finished")
    assert wait_for(lambda: future.done(), 10, "the probe to run once the other run ended")
    measuring.join(5)
    assert future.result(timeout=0).peak_gflops == 99.0


def test_the_queues_own_runs_and_a_shutdown_are_not_waited_for(probes, isolated_store):
    store = Store(isolated_store)
    own = store.create_run(TINY.to_dict(), status="running")
    host = Host(local=(own,))
    future = host.peaks(store).queue("cpu")
    host.tasks[0]()
    assert future.result(timeout=0).peak_gflops == 99.0, "its own active run is not another process's"
    other = Host()
    other.stopping = True
    future = other.peaks(store).queue("cpu")
    other.tasks[0]()
    assert future.result(timeout=0).peak_gflops == 99.0, "a queue shutting down does not wait"


def finished_run(run_id: int = 7, config: RunConfig = TINY, status: str = Status.FINISHED) -> RunState:
    state = RunState(id=run_id, config=config, created_at=time.time(), hardware=HW)
    state.status = status
    return state


@pytest.fixture
def marked(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """peak_cache.mark_stale stood in for: records its calls and flags the peak (True)."""
    calls: list[dict[str, Any]] = []

    def fake_mark(device: str, achieved: float, **kw: Any) -> bool:
        calls.append({"device": device, "achieved": achieved, **kw})
        return True

    monkeypatch.setattr(peak_cache, "mark_stale", fake_mark)
    return calls


def test_a_run_that_beat_the_peak_flags_it_and_queues_a_fresh_probe(probes, marked, monkeypatch):
    monkeypatch.setattr(compare, "achieved_of", lambda summary, info: 128.6)
    host = Host()
    peaks = host.peaks()
    future = peaks.recheck(finished_run(7, TINY.replace(cpu_threads=2)))
    assert future is not None and peaks.pending() == [future]
    assert marked == [{"device": "cpu", "achieved": 128.6, "cpu_threads": 2, "backend": TINY.backend, "run_id": 7}]
    host.tasks[0]()
    assert probes == [{"device": "cpu", "cpu_threads": 2, "refresh": True}], "the new probe measures again"
    assert future.result(timeout=0).peak_gflops == 99.0


@pytest.mark.parametrize("status, achieved, flags", [
    (Status.FINISHED, None, True),  # no figure achieved: nothing to compare
    (Status.FINISHED, 52.0, False),  # below the peak (or flagged already): mark_stale says no
    (Status.STOPPED, 128.6, True),  # only a finished run counts
])
def test_a_run_that_beat_no_peak_queues_nothing(probes, monkeypatch, status, achieved, flags):
    monkeypatch.setattr(compare, "achieved_of", lambda summary, info: achieved)
    monkeypatch.setattr(peak_cache, "mark_stale", lambda *a, **kw: flags)
    host = Host()
    peaks = host.peaks()
    assert peaks.recheck(finished_run(status=status)) is None
    assert host.tasks == [] and peaks.pending() == []


def test_a_peak_cache_that_cannot_be_written_queues_nothing(probes, monkeypatch):
    monkeypatch.setattr(compare, "achieved_of", lambda summary, info: 128.6)

    def unwritable(*args: Any, **kwargs: Any) -> bool:
        raise OSError("read-only file system")

    monkeypatch.setattr(peak_cache, "mark_stale", unwritable)
    host = Host()
    assert host.peaks().recheck(finished_run()) is None and host.tasks == []
