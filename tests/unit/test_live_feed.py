"""ui.live_feed: the current run published once for every viewer, as a snapshot and increments that stay small."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from bench.output import charts
from bench.vocab.readings import epochs_of, samples_of
from ui import live_chart as lc
from ui import live_feed


def epochs(n: int) -> list[dict]:
    return [{"epoch": e, "epoch_seconds": 2.0, "includes_tracing": e == 1, "t_end_s": 2.0 * e, "samples_per_s": 10.0}
            for e in range(1, n + 1)]


def samples(n: int) -> list[dict]:
    return [{"t_s": i * 0.5, "cpu_percent": float(i % 100), "gpus": []} for i in range(n)]


@dataclass
class Run:
    """A run as the publisher reads it (the fields of a RunSnapshot it uses)."""

    id: int = 1
    created_at: float = 100.0
    status: str = "running"
    n_epochs: int = 0
    n_samples: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def active(self) -> bool:
        return self.status in ("starting", "running")


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def series(run: Run) -> list[charts.Series]:
    return [charts.Series(f"#{run.id}", epochs_of(epochs(run.n_epochs)), samples_of(samples(run.n_samples)))]


def util_figure(run: Run) -> Any:
    return charts.utilization_figure(series(run), growing=True)


def header(run: int, epochs: int) -> dict:
    """A live header as ui.live.header_data makes it (ui.live_messages.RunHeader), its progress text the epochs."""
    return {"run": run, "status": {"icon": "directions_run", "parts": [[f"Run #{run} ", False], ["running", True]]},
            "progress": {"fraction": 0.0, "text": f"{epochs} epochs"}, "tiles": [], "lines": [], "primary": None}


def make(run_box: list[Run | None], clock: Clock) -> live_feed.Publisher:
    return live_feed.Publisher(
        lambda: run_box[0],
        header=lambda r: header(r.id, r.n_epochs) if r.active else None,
        line=lambda r: {"text": f"Run #{r.id}: {r.status}" if r else "No run yet."},
        charts=lambda r: {"util": (r.n_epochs, r.n_samples, r.status)},
        figures=lambda r, variant, names: {"util": util_figure(r)},
        grow=(lambda name, r, layout: lc.start(name, series(r), layout),
              lambda name, r, sent: lc.grow(name, series(r), sent)), clock=clock)


def decode(data: bytes) -> dict:
    assert data.startswith(b"data: ") and data.endswith(b"\n\n")
    return json.loads(data[6:-2])


def test_a_state_change_is_published_at_once_and_the_same_bytes_go_to_everyone():
    box: list[Run | None] = [None]
    clock = Clock()
    pub = make(box, clock)
    assert pub.refresh() == live_feed.PageState()
    before = pub.seq  # the sidebar's "No run yet." went out
    box[0] = Run(n_samples=4)
    assert pub.refresh() == live_feed.PageState(), "within TICK_S the run is not looked at again"
    state = pub.refresh(force=True)
    assert state.run == 1 and state.active and state.key == "1@100.0:live"
    (first,) = pub.since(before, "plain")
    event = decode(first[1])
    assert event["state"]["key"] == state.key and event["header"] == header(1, 0)
    assert event["charts"]["util"]["op"] == "full", "a new run's charts go out whole"
    assert pub.since(before, "plain") == [first], "every subscriber is handed the same encoded event"
    assert pub.since(pub.seq, "plain") == []


def test_increments_carry_only_the_new_points_and_marks_and_do_not_grow_with_the_run():
    box: list[Run | None] = [Run(n_samples=10)]
    clock = Clock()
    pub = make(box, clock)
    pub.refresh(force=True)
    sizes = []
    for step in range(1, 61):  # one new epoch and four samples per chart window, 60 windows
        run = box[0]
        assert run is not None
        box[0] = Run(n_epochs=step, n_samples=10 + 4 * step)
        clock.t += live_feed.CHART_S
        before = pub.seq
        pub.refresh()
        (event,) = pub.since(before, "plain")
        msg = decode(event[1])
        change = msg["charts"]["util"]
        if step == 1:  # the first epoch: its line and its name have no template yet, the chart goes whole
            continue
        assert change["op"] == "extend", f"window {step}: {change['op']}"
        new_x = [x for g in change["groups"] for per_trace in g["update"]["x"] for x in per_trace]
        assert new_x and min(new_x) > (10 + 4 * (step - 1) - 1) * 0.5, "only points past those already sent"
        appended = change.get("append") or {}
        if charts.named_epoch(step):
            assert "shapes" in appended and "annotations" in appended, "an epoch's mark is appended, not re-sent"
            assert len(appended["shapes"]) == 1
        else:
            assert not appended, f"epoch {step} is not marked (charts.named_epoch): {appended}"
        sizes.append(len(event[1]))
    assert max(sizes[-10:]) < 2 * max(sizes[:10]), f"increment bytes grew with the run: {sizes[:12]} .. {sizes[-5:]}"


def test_a_joiner_gets_one_snapshot_shared_until_the_next_change():
    box: list[Run | None] = [Run(n_epochs=3, n_samples=40)]
    clock = Clock()
    pub = make(box, clock)
    pub.refresh(force=True)
    seq, data = pub.snapshot("plain")
    assert pub.snapshot("plain") == (seq, data) and pub.snapshot("plain")[1] is data, "encoded once for all joiners"
    msg = decode(data)
    assert msg["kind"] == "snapshot" and msg["seq"] == seq and msg["charts"]["util"]["op"] == "full"
    builds = pub.builds
    pub.snapshot("plain")
    assert pub.builds == builds


def test_a_subscriber_too_far_behind_is_told_to_take_a_snapshot():
    box: list[Run | None] = [Run(n_samples=2)]
    clock = Clock()
    pub = make(box, clock)
    pub.refresh(force=True)
    for i in range(live_feed.RING + 5):
        run = box[0]
        assert run is not None
        box[0] = Run(n_samples=3 + i)
        clock.t += live_feed.CHART_S
        pub.refresh()
    assert pub.since(1, "plain") is None
    assert pub.since(pub.seq - 3, "plain") is not None


def test_the_end_of_a_run_is_a_state_change_with_its_final_charts_and_no_header():
    box: list[Run | None] = [Run(n_epochs=2, n_samples=20)]
    clock = Clock()
    pub = make(box, clock)
    pub.refresh(force=True)
    box[0] = Run(status="finished", n_epochs=3, n_samples=24)
    clock.t += live_feed.TICK_S
    before = pub.seq
    assert pub.refresh().status == "finished"
    (event,) = pub.since(before, "plain")
    msg = decode(event[1])
    assert msg["state"]["active"] is False and msg["header"] is None
    change = msg["charts"]["util"]
    assert change["op"] == "extend", "the same run's chart: its last points, not the whole figure again"
    assert change["groups"], "the final charts' last points in the event of the end, not a chart window later"


def test_nothing_new_publishes_nothing_and_a_viewer_count_is_a_change():
    box: list[Run | None] = [Run(status="finished", n_epochs=3, n_samples=24)]
    clock = Clock()
    pub = make(box, clock)
    pub.refresh(force=True)
    seq, builds = pub.seq, pub.builds
    clock.t += 10 * live_feed.CHART_S
    pub.refresh()
    assert pub.seq == seq, "an ended run's figures are not re-sent"
    assert pub.builds == builds, "nor built again: what they draw did not change"
    pub._subscribers = [None] * 3  # as subscribed(+1) three times would, without starting the loop
    pub.refresh(force=True)
    (event,) = pub.since(seq, "plain")
    assert decode(event[1])["viewers"] == 3
