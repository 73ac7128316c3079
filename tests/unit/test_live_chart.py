"""ui.live_chart's increments: what a browser holding a live chart is sent as its series grow, built from the new
readings alone (one run with its marks, as the Train page draws it, or a group's runs overlaid, as Compare, Sweep and
the lesson draw them)."""

from __future__ import annotations

import json

from bench.output import charts
from bench.vocab.readings import epochs_of, samples_of
from ui import live_chart as lc


def samples(n: int, gpus: int = 0, start: int = 0) -> list[dict]:
    return [{"t_s": i * 0.5, "cpu_percent": float(i % 100), "process_cpu_percent": 80.0, "process_rss_mib": 900.0,
             "gpus": [{"index": g, "util_percent": 50.0} for g in range(gpus)]} for i in range(start, n)]


def epochs(n: int) -> list[dict]:
    return [{"epoch": e, "epoch_seconds": 2.0, "includes_tracing": e == 1, "t_end_s": 2.0 * e, "samples_per_s": 10.0}
            for e in range(1, n + 1)]


def series(n: int, k: int = 0, gpus: int = 0, label: str = "#1") -> charts.Series:
    return charts.Series(label, epochs_of(epochs(k)), samples_of(samples(n, gpus)))


def sent(kind: str, group: list[charts.Series]) -> lc.Sent:
    """What viewers hold once the chart was sent whole for ``group``, as the live feed sends it."""
    fig = {"util": lambda: charts.utilization_figure(group, growing=True),
           "epochs": lambda: charts.epoch_time_figure(group)}[kind]()
    return lc.start(kind, group, lc.prepare(fig).layout)


def test_only_the_new_points_are_sent():
    step = lc.grow("util", [series(13)], sent("util", [series(10)]))
    assert step is not None
    change, after = step
    assert change is not None
    (group,) = change["groups"]
    assert group["traces"] == [0, 1, 2], "the machine's CPU, the process' CPU, its memory"
    assert group["update"]["x"][0] == [5.0, 5.5, 6.0] and group["update"]["y"][0] == [10.0, 11.0, 12.0]
    assert lc.grow("util", [series(13)], after) == (None, after), "nothing new: nothing to send"


def test_bars_send_their_hover_data_and_hatching_with_each_new_epoch():
    step = lc.grow("epochs", [series(0, k=2)], sent("epochs", [series(0, k=1)]))
    assert step is not None and step[0] is not None
    update = step[0]["groups"][0]["update"]
    assert update["x"] == [[2]] and update["y"] == [[2.0]]
    assert update["customdata"] == [[["steady", 10.0]]] and update["marker.pattern.shape"] == [[""]]


def test_a_long_runs_bars_keep_a_few_epoch_ticks_and_go_whole_when_the_step_grows():
    for n in (1, 8, 9, 17, 50, 200, 1000):
        fig = charts.epoch_time_figure([series(0, k=n)])
        assert 1 <= n / fig.layout.xaxis.dtick <= 8 or (n <= 8 and fig.layout.xaxis.dtick == 1), (n, fig.layout.xaxis)
    assert charts.loss_accuracy_figure(epochs_of(epochs(200))).layout.xaxis.dtick == 50, "one step for both charts"
    held = sent("epochs", [series(0, k=8)])  # a tick each epoch
    assert lc.grow("epochs", [series(0, k=9)], held) is None, "the ninth epoch widens the step: the chart goes whole"
    held = sent("epochs", [series(0, k=9)])
    step = lc.grow("epochs", [series(0, k=10)], held)
    assert step is not None and step[0]["groups"][0]["update"]["x"] == [[10]], "the same step: the new bar alone"


def test_the_first_hatched_epoch_names_the_hatching_in_the_title():
    step = lc.grow("epochs", [series(0, k=1)], sent("epochs", [series(0)]))
    assert step is not None and step[0] is not None
    title = step[0]["layout"]["title"]
    assert title["text"] == charts.epoch_time_figure([series(0, k=1)]).layout.title.text
    assert step[0]["groups"][0]["update"]["marker.pattern.shape"] == [["/"]]
    assert lc.grow("epochs", [series(0, k=2)], step[1])[0]["layout"] is None, "named once"


def test_an_epoch_mark_is_appended_beside_the_points():
    held = sent("util", [series(12, k=2)])  # two names sent: a template in each row
    step = lc.grow("util", [series(14, k=3)], held)
    assert step is not None and step[0] is not None
    change = step[0]
    assert change["layout"] is None, "nothing but the new epoch's line and name"
    assert set(change["append"]) == {"shapes", "annotations"}
    assert [a["text"] for a in change["append"]["annotations"]] == ["epoch 3"]
    assert change["append"]["shapes"][0]["x0"] == 6.0


def test_the_increment_does_not_grow_with_the_runs_length():
    def one(n: int, k: int) -> dict:
        step = lc.grow("util", [series(n + 4, k + 1)], sent("util", [series(n, k)]))
        assert step is not None and step[0] is not None
        return step[0]

    early, late = one(40, 4), one(800, 199)
    assert late["layout"] is None, "the names appended, none re-sent"
    assert len(json.dumps(late)) < 1.5 * len(json.dumps(early)), (early, late)


def test_a_new_line_or_another_series_sends_the_chart_whole():
    held = sent("util", [series(10)])
    assert lc.grow("util", [series(11, gpus=1)], held) is None, "a GPU line appeared"
    assert lc.grow("util", [series(11), series(0, label="#2")], held) is None, "another run in the group"


def test_a_history_thinned_for_drawing_still_gives_only_later_points():
    n = charts.MAX_POINTS + 400
    step = lc.grow("util", [series(n + 7)], sent("util", [series(n)]))
    assert step is not None and step[0] is not None
    xs = step[0]["groups"][0]["update"]["x"][0]
    assert xs == [(n + i) * 0.5 for i in range(7)]


# -- a group's runs overlaid -------------------------------------------------------------------------------------------
def test_a_groups_runs_each_grow_their_own_traces():
    first, second = series(20, k=2, label="#1 cpu/1"), series(6, k=0, label="#2 cpu")
    held = sent("util", [first, second])
    step = lc.grow("util", [series(24, k=3, label="#1 cpu/1"), series(9, label="#2 cpu")], held)
    assert step is not None and step[0] is not None
    change = step[0]
    (group,) = change["groups"]
    # each run draws three lines (CPU, process CPU, process memory): the first run's are 0-2, the second's 3-5
    assert group["traces"] == [0, 1, 2, 3, 4, 5]
    assert group["update"]["x"][0] == [10.0, 10.5, 11.0, 11.5] and group["update"]["x"][3] == [3.0, 3.5, 4.0]
    assert change["append"] is None, "an overlay has no epoch marks"
    bars = lc.grow("epochs", [series(0, k=3, label="#1 cpu/1"), series(0, k=1, label="#2 cpu")],
                   sent("epochs", [series(0, k=2, label="#1 cpu/1"), series(0, k=1, label="#2 cpu")]))
    assert bars is not None and bars[0] is not None
    assert bars[0]["groups"][0]["traces"] == [0] and bars[0]["groups"][0]["update"]["x"] == [[3]]


def test_a_queued_run_of_the_group_starting_sends_the_chart_whole_once():
    held = sent("util", [series(20, k=2, label="#1"), series(0, label="#2")])
    assert lc.grow("util", [series(22, k=2, label="#1"), series(0, label="#2")], held) is not None
    assert lc.grow("util", [series(22, k=2, label="#1"), series(2, label="#2")], held) is None, \
        "its memory line appears: the chart's traces changed"
