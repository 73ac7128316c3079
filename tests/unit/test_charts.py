"""Plotly figures: the data drawn is the data given; missing readings stay gaps; long histories are thinned."""

from __future__ import annotations

import math

import pytest

from bench import charts


def epochs(n: int) -> list[dict]:
    return [{"epoch": i + 1, "epoch_seconds": 1.0 + i, "samples_per_s": 100.0, "includes_tracing": i == 0,
             "loss": 1.0 / (i + 1), "accuracy": 0.5, "val_loss": None, "val_accuracy": None, "t_end_s": 2.0 * (i + 1)}
            for i in range(n)]


def samples(n: int, gpus: int = 1) -> list[dict]:
    return [{"t_s": i * 0.5, "cpu_percent": None if i == 3 else 50.0, "cpu_per_core": [10.0, 90.0],
             "gpus": [{"index": g, "util_percent": None if i == 2 else 30.0} for g in range(gpus)]} for i in range(n)]


def test_epoch_bars_mark_the_tracing_epoch():
    fig = charts.epoch_time_figure([{"label": "a", "epochs": epochs(3)}, {"label": "b", "epochs": epochs(2)}])
    assert len(fig.data) == 2
    assert list(fig.data[0].y) == [1.0, 2.0, 3.0]
    assert list(fig.data[0].marker.pattern.shape) == ["/", "", ""]
    assert "tracing" in fig.layout.title.text


def test_utilization_keeps_gaps_and_draws_each_gpu():
    fig = charts.utilization_figure([{"label": "r", "samples": samples(6, gpus=2), "epochs": epochs(2)}])
    names = [t.name for t in fig.data]
    assert names == ["CPU, whole machine", "GPU 0", "GPU 1"]
    assert fig.data[0].y[3] is None, "a missing CPU reading is a gap, not 0"
    assert fig.data[1].y[2] is None, "a missing GPU reading is a gap, not 0"
    assert len(fig.layout.shapes) == 2, "one dotted line per epoch end"


def test_utilization_names_a_lone_cpu_line():
    fig = charts.utilization_figure([{"label": "r", "samples": samples(4, gpus=0), "epochs": epochs(1)}])
    assert [t.name for t in fig.data] == ["CPU, whole machine"]
    assert fig.layout.showlegend is True, "Plotly hides the legend of a single trace unless told"


def test_thin_bounds_points_and_keeps_the_ends():
    rows = list(range(10_000))
    out = charts.thin(rows, 1500)
    assert len(out) == 1500 and out[0] == 0 and out[-1] == 9999
    assert charts.thin(rows[:10], 1500) == rows[:10]


def test_sweep_gflops_draws_each_peak():
    rows = [{"params": p, "target": "cpu", "batch_size": 128, "size": s, "achieved_gflops": g, "peak_gflops": 200.0}
            for p, s, g in [(1e4, "xs", 5.0), (1e5, "s", 20.0), (1e6, "m", 60.0)]]
    fig = charts.sweep_gflops_figure(rows)
    assert list(fig.data[0].y) == [5.0, 20.0, 60.0]
    assert any(shape.y0 == 200.0 for shape in fig.layout.shapes)


def test_per_core_heatmap_rows_are_cores():
    fig = charts.per_core_heatmap(samples(4))
    assert list(fig.data[0].y) == ["core 0", "core 1"]
    assert list(fig.data[0].z[1]) == [90.0] * 4


def test_html_report_inlines_plotly_once():
    html = charts.to_html([charts.loss_accuracy_figure(epochs(2)), charts.epoch_time_figure([{"epochs": epochs(2)}])],
                          title="t")
    assert html.count("plotly.js v") == 1, "plotly.js is inlined exactly once"
    assert html.count("Plotly.newPlot") == 2 and "<h1>t</h1>" in html


def test_warm_up_builds_every_live_figure_kind():
    charts.warm_up()  # raises if a figure kind cannot be built from the live record shapes


def test_each_peak_line_has_its_targets_colour():
    rows = [{"target": t, "params": p, "size": s, "batch_size": 128, "achieved_gflops": g, "peak_gflops": peak}
            for t, peak in (("gpu:0", 170_000.0), ("cpu", 1_300.0))
            for s, p, g in (("xs", 25_000, 10.0), ("xl", 36_000_000, 300.0))]
    fig = charts.sweep_gflops_figure(rows)
    line_colour = {tr.name: tr.line.color for tr in fig.data}
    peak_colour = {shape.y0: shape.line.color for shape in fig.layout.shapes}
    assert peak_colour[170_000.0] == line_colour["gpu:0"]
    assert peak_colour[1_300.0] == line_colour["cpu"]
    assert line_colour["gpu:0"] != line_colour["cpu"]
    labels = {a.text: a.y for a in fig.layout.annotations if "matmul peak" in a.text}
    assert labels["cpu matmul peak 1,300 GFLOP/s"] == pytest.approx(math.log10(1_300.0)), "log axis: y in log10 units"
