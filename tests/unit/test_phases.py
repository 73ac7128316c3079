"""Start-up phases: the supervisor records when each began (seconds from the samples' origin) in the run's info,
the store keeps them, and the utilization chart shades them."""

from __future__ import annotations

import threading

from bench.vocab.record_types import RecordedHardware
from bench.vocab.readings import Sample
from bench.output import charts
from bench.vocab.records import Status
from bench.vocab.run_info import Phase
from bench.runs.run_state import RunState
from bench.runs.run_writer import RunWriter
from bench.store import Store
from bench.runs.recorder import Recorder
from tests.unit.test_run_parts import TINY


def test_phases_are_recorded_stored_and_drawn(tmp_path):
    store = Store(tmp_path / "runs.sqlite3")
    lock = threading.Lock()
    writer = RunWriter(store, lock)
    state = RunState(id=0, config=TINY, created_at=1.0, hardware=RecordedHardware())
    writer.create(state)
    sup = Recorder(state, lock=lock, writer=writer)
    t0 = sup.t0_wall = 1000.0
    from bench.runs import events as worker_events
    from bench.vocab.readings import Epoch
    from bench.vocab.run_info import RunInfo

    events = [worker_events.PhaseBegan(phase="importing tensorflow", time=t0 + 0.1),
              worker_events.PhaseBegan(phase="loading data", time=t0 + 5.0),
              worker_events.PhaseBegan(phase="building model", time=t0 + 5.5),
              worker_events.Started(info=RunInfo(placement="/device:CPU:0"), time=t0 + 6.0),
              worker_events.BatchEnded(epoch=1, batch=1, batches=4, time=t0 + 7.0),
              worker_events.BatchEnded(epoch=1, batch=2, batches=4, time=t0 + 7.2),
              worker_events.EpochEnded(epoch=Epoch(epoch=1, epoch_seconds=2.0, includes_tracing=True),
                                       started_wall=t0 + 6.1, ended_wall=t0 + 8.1, time=t0 + 8.1)]
    for event in events:
        sup.apply(event)
    expected = (Phase("importing tensorflow", 0.1), Phase("loading data", 5.0), Phase("building model", 5.5),
                Phase("first step", 6.0), Phase("training", 7.0))
    assert state.info.phases == expected, "one 'training' mark: the first step's end, not every progress event"
    writer.persist_end(state, Status.FINISHED)
    stored = store.get_run(state.id).info.phases
    assert stored == expected
    fig = charts.utilization_figure([charts.Series(label="r", epochs=state.epochs, samples=[Sample(t_s=9.0)],
                                                   phases=stored)])
    assert [(s.x0, s.x1) for s in fig.layout.shapes if s.type == "rect"] == [(0.1, 5.0), (5.0, 5.5), (5.5, 6.0),
                                                                             (6.0, 7.0)]


def test_the_first_batch_is_told_at_once_and_later_batches_wait_for_the_next_sample():
    """JobManager.wait_first_batch waits on the manager's Condition: the recorder must tell of the first batch (a
    page redraws on it after Start), not of each later one (they go with the next sample)."""
    from bench.runs import events as worker_events

    told: list[int] = []
    state = RunState(id=0, config=TINY, created_at=1.0, hardware=RecordedHardware())
    lock = threading.Lock()
    sup = Recorder(state, lock=lock, writer=RunWriter(None, lock), on_change=lambda: told.append(1))
    sup.t0_wall = 1000.0
    sup.apply(worker_events.BatchEnded(epoch=1, batch=1, batches=4, time=1001.0))
    assert len(told) == 1, "the first batch is told"
    sup.apply(worker_events.BatchEnded(epoch=1, batch=2, batches=4, time=1001.2))
    sup.apply(worker_events.BatchEnded(epoch=1, batch=3, batches=4, time=1001.4))
    assert len(told) == 1, "later batches are not told one by one"
