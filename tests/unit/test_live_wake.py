"""The live feed is woken by the run's changes (bench.runs.jobs.JobManager.changes), not by a timer: a poke is
published within the coalescing window, and pokes within that window make one event."""

from __future__ import annotations

import threading
import time

from tests.polling import wait_for
from tests.unit.test_live_feed import header
from ui import live, live_feed, live_messages


def typed(n: int) -> live_messages.RunHeader:
    return live_messages.RunHeader.model_validate(header(1, n))


class Run:
    def __init__(self, n: int) -> None:
        self.id, self.created_at, self.status, self.active, self.n = 1, 10.0, "running", True, n


def test_a_poke_is_published_at_once_and_pokes_close_together_make_one_event(monkeypatch):
    monkeypatch.setattr(live_feed, "TICK_S", 30.0)  # no look but the poked ones within the test
    box = [Run(0)]
    pub = live_feed.Publisher(lambda: box[0], header=lambda r: header(r.id, r.n), line=lambda r: None,
                              charts=lambda r: {}, figures=lambda r, v, n: {}, grow=live.GROW)
    published = threading.Event()
    shown: list[object] = []  # the header of each event, as published

    def on_publish() -> None:
        shown.append(pub.header)
        published.set()

    pub.on_publish(on_publish)
    pub.refresh(force=True)
    pub.subscribed(+1)
    try:
        published.clear()
        shown.clear()
        started = time.monotonic()
        for n in range(1, 6):  # five changes in quick succession
            box[0] = Run(n)
            pub.poke()
        assert published.wait(2.0), "a poke was not published"
        took = time.monotonic() - started
        assert took < 1.0, f"published {took:.2f} s after the poke"
        wait_for(lambda: typed(5) in shown, 2.0, "the last of the five changes to be published")
        box[0] = Run(6)  # a later change: once it is published, every event the five made has been published
        pub.poke()
        wait_for(lambda: typed(6) in shown, 2.0, "the later change to be published")
        five = shown[:shown.index(typed(5)) + 1]
        assert len(five) <= 2, f"pokes within the window were not coalesced: {len(five)} events"
        assert shown[len(five):] == [typed(6)], "the five changes made no event after their last one"
    finally:
        pub.subscribed(-1)
        pub.close()


def test_the_job_manager_tells_its_listeners():
    from bench.runs.jobs import JobManager

    manager = JobManager()
    told = []
    manager.changes.add(lambda: told.append(1))
    manager._changed()
    assert told == [1]


def test_a_runs_epochs_samples_and_end_each_tell_the_listeners():
    """A replayed run (no framework): every sample, epoch end and its end reach the listener."""
    from bench.vocab.config import RunConfig
    from bench.runs.jobs import JobManager
    from benchmarks import standins
    from tests.fixtures import NO_GPU
    from tests.polling import wait_for

    manager = JobManager(None, hardware=NO_GPU, worker_target=standins.ReplayedWorker(real_s=0.3),
                         sampler_factory=standins.replay_sampler(12, 3, 1, 0.3))
    told: list[tuple[int, int, str]] = []
    manager.changes.add(lambda: told.append(_seen(manager)))
    try:
        run_id = manager.submit(RunConfig(epochs=3, sample_interval_s=standins.SIMULATED_INTERVAL_S))
        wait_for(lambda: not manager.snapshot(run_id).active, timeout_s=60, what="the replayed run's end")
    finally:
        manager.shutdown()
    final = manager.snapshot(run_id)
    assert told and told[-1] == (len(final.epochs), len(final.samples), str(final.status)), told[-3:]
    assert {e for e, _, _ in told} >= set(range(len(final.epochs) + 1)), "an epoch's end told nobody"


def _seen(manager) -> tuple[int, int, str]:
    snap = manager.current()
    return (len(snap.epochs), len(snap.samples), str(snap.status)) if snap else (0, 0, "")
