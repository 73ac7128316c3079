"""ui.live_chart's diffing: what one viewer's browser is sent as a live run's figures grow."""

from __future__ import annotations

from bench.output import charts
from bench.readings import epochs_of, samples_of
from ui import live_chart as lc


def samples(n: int, gpus: int = 0) -> list[dict]:
    return [{"t_s": i * 0.5, "cpu_percent": float(i % 100),
             "gpus": [{"index": g, "util_percent": 50.0} for g in range(gpus)]} for i in range(n)]


def epochs(n: int) -> list[dict]:
    return [{"epoch": e, "epoch_seconds": 2.0, "includes_tracing": e == 1, "t_end_s": 2.0 * e, "samples_per_s": 10.0}
            for e in range(1, n + 1)]


def util(n: int, k: int = 0, gpus: int = 0, run: int = 1) -> lc.Prepared:
    series = [charts.Series(f"#{run}", epochs_of(epochs(k)), samples_of(samples(n, gpus)))]
    return lc.prepare(charts.utilization_figure(series), scope=run)


def bars(k: int) -> lc.Prepared:
    return lc.prepare(charts.epoch_time_figure([charts.Series("#1", epochs_of(epochs(k)), ())]), scope=1)


def acked(prep: lc.Prepared) -> lc.Held:
    """What a viewer holds once its browser has drawn ``prep`` whole."""
    message, held = lc.diff(prep, None)
    assert message["op"] == "full"
    _, held = lc.diff(prep, held, ack={"seq": message["seq"]})
    assert held.acked
    return held


def test_a_first_view_gets_the_whole_figure_and_keeps_getting_it_until_the_browser_acknowledges():
    first, held = lc.diff(util(10), None)
    assert first["op"] == "full" and first["figure"]["data"][0]["x"] == [i * 0.5 for i in range(10)]
    again, held = lc.diff(util(10), held)
    assert again == first, "nothing new: the same message, which the browser does not run again"
    grown, held = lc.diff(util(14), held, ack={"seq": first["seq"] - 1})  # an ack of an older figure
    assert grown["op"] == "full" and grown["seq"] == first["seq"] + 1 and len(grown["figure"]["data"][0]["x"]) == 14
    _, held = lc.diff(util(14), held, ack={"seq": grown["seq"]})
    assert held.acked


def test_after_the_ack_only_the_new_points_are_sent():
    held = acked(util(10))
    message, held = lc.diff(util(13), held)
    assert message["op"] == "extend"
    (delta,) = message["deltas"]
    (group,) = delta["groups"]
    assert group["traces"] == [0]
    assert group["update"]["x"] == [[5.0, 5.5, 6.0]] and group["update"]["y"] == [[10.0, 11.0, 12.0]]
    same, held2 = lc.diff(util(13), held)
    assert same == message and held2 == held


def test_bars_send_their_hover_data_and_hatching_with_each_new_epoch():
    held = acked(bars(1))
    message, _ = lc.diff(bars(2), held)
    update = message["deltas"][0]["groups"][0]["update"]
    assert update["x"] == [[2]] and update["y"] == [[2.0]]
    assert update["customdata"] == [[["steady", 10.0]]] and update["marker.pattern.shape"] == [[""]]


def test_an_epoch_mark_is_a_layout_change_beside_the_points():
    held = acked(util(10, k=1))
    message, _ = lc.diff(util(12, k=2), held)
    delta = message["deltas"][0]
    assert set(delta["layout"]) == {"shapes", "annotations"}, "the new epoch's band and its name; nothing else"
    assert len(delta["layout"]["shapes"]) == 2
    assert [a["text"] for a in delta["layout"]["annotations"]][-1] == "epoch 2"


def test_recent_deltas_ride_along_so_a_browser_that_skipped_some_catches_up():
    held = acked(util(4))
    for n in range(5, 5 + lc.RECENT + 3):
        message, held = lc.diff(util(n), held)
    assert len(message["deltas"]) == lc.RECENT
    seqs = [d["seq"] for d in message["deltas"]]
    assert seqs == list(range(seqs[0], seqs[0] + lc.RECENT)) and message["seq"] == seqs[-1]
    assert all(d["prev"] == d["seq"] - 1 for d in message["deltas"])


def test_a_new_trace_layout_or_another_run_or_a_resync_draws_the_figure_whole():
    held = acked(util(10))
    assert lc.diff(util(11, gpus=1), held)[0]["op"] == "full", "a GPU line appeared"
    assert lc.diff(util(11, run=2), held)[0]["op"] == "full", "another run"
    message, after = lc.diff(util(11), held, resync={"seq": 3, "at": 1})
    assert message["op"] == "full" and not after.acked
    _, after = lc.diff(util(11), after, ack={"seq": message["seq"]})
    assert lc.diff(util(12), after, resync={"seq": 3, "at": 1})[0]["op"] == "extend", "an old request is answered"


def test_a_history_thinned_for_drawing_still_gives_only_later_points():
    n = charts.MAX_POINTS + 400
    held = acked(util(n))
    message, _ = lc.diff(util(n + 7), held)
    xs = message["deltas"][0]["groups"][0]["update"]["x"][0]
    assert xs and all(x > (n - 1) * 0.5 for x in xs) and xs[-1] == (n + 6) * 0.5


def test_prepared_is_shared_by_cache_key():
    fig = charts.utilization_figure([charts.Series("#1", (), samples_of(samples(3)))])
    assert lc.prepared(("util", "t-1"), fig, 1) is lc.prepared(("util", "t-1"), fig, 1)
