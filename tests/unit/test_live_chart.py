"""ui.live_chart's increments: what a browser holding a live run's figure is sent as the figure grows."""

from __future__ import annotations

import json

from bench.output import charts
from bench.vocab.readings import epochs_of, samples_of
from ui import live_chart as lc


def samples(n: int, gpus: int = 0) -> list[dict]:
    return [{"t_s": i * 0.5, "cpu_percent": float(i % 100),
             "gpus": [{"index": g, "util_percent": 50.0} for g in range(gpus)]} for i in range(n)]


def epochs(n: int) -> list[dict]:
    return [{"epoch": e, "epoch_seconds": 2.0, "includes_tracing": e == 1, "t_end_s": 2.0 * e, "samples_per_s": 10.0}
            for e in range(1, n + 1)]


def util(n: int, k: int = 0, gpus: int = 0, run: int = 1, growing: bool = True) -> lc.Prepared:
    """The utilization figure as the live feed builds it for a live run (growing: every epoch's name kept)."""
    series = [charts.Series(f"#{run}", epochs_of(epochs(k)), samples_of(samples(n, gpus)))]
    return lc.prepare(charts.utilization_figure(series, growing=growing), scope=run)


def bars(k: int) -> lc.Prepared:
    return lc.prepare(charts.epoch_time_figure([charts.Series("#1", epochs_of(epochs(k)), ())]), scope=1)


def test_only_the_new_points_are_sent():
    step = lc.increment(util(10), util(13))
    assert step is not None
    (group,) = step["groups"]
    assert group["traces"] == [0]
    assert group["update"]["x"] == [[5.0, 5.5, 6.0]] and group["update"]["y"] == [[10.0, 11.0, 12.0]]
    assert lc.increment(util(13), util(13)) is None, "nothing new: nothing to send"


def test_bars_send_their_hover_data_and_hatching_with_each_new_epoch():
    step = lc.increment(bars(1), bars(2))
    assert step is not None
    update = step["groups"][0]["update"]
    assert update["x"] == [[2]] and update["y"] == [[2.0]]
    assert update["customdata"] == [[["steady", 10.0]]] and update["marker.pattern.shape"] == [[""]]


def test_an_epoch_mark_is_appended_beside_the_points():
    before, after = util(10, k=1), util(12, k=2)
    step = lc.increment(before, after)
    assert step is not None and step["layout"] is None, "nothing but the new epoch's band and name"
    assert set(step["append"]) == {"shapes", "annotations"}
    assert before.layout["shapes"] + step["append"]["shapes"] == after.layout["shapes"]
    assert [a["text"] for a in step["append"]["annotations"]][-1] == "epoch 2"


def test_the_increment_does_not_grow_with_the_runs_length():
    early = lc.increment(util(40, k=4), util(44, k=5))
    late = lc.increment(util(800, k=199), util(804, k=200))
    assert early is not None and late is not None and late["layout"] is None, "the names appended, none re-sent"
    assert len(json.dumps(late)) < 1.5 * len(json.dumps(early)), (early, late)
    # an ended run's figure (sent whole once) keeps only the names that fit
    assert len(util(800, k=200, growing=False).layout["annotations"]) < len(util(800, k=200).layout["annotations"])


def test_a_new_trace_layout_or_another_run_changes_the_signature():
    base = util(10)
    assert util(11, gpus=1).signature != base.signature, "a GPU line appeared: the figure goes whole"
    assert util(11, run=2).signature != base.signature, "another run"
    assert util(11).signature == base.signature


def test_a_history_thinned_for_drawing_still_gives_only_later_points():
    n = charts.MAX_POINTS + 400
    step = lc.increment(util(n), util(n + 7))
    assert step is not None
    xs = step["groups"][0]["update"]["x"][0]
    assert xs and all(x > (n - 1) * 0.5 for x in xs) and xs[-1] == (n + 6) * 0.5
