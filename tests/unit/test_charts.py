"""Plotly figures: the data drawn is the data given; missing readings stay gaps; long histories are thinned."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest

from bench.analysis.sweeps import SweepRow
from bench.output import chart_style, charts
from bench.vocab.readings import epochs_of, samples_of
from bench.vocab.run_info import Phase


def epochs(n: int) -> list[dict]:
    return [{"epoch": i + 1, "epoch_seconds": 1.0 + i, "samples_per_s": 100.0, "includes_tracing": i == 0,
             "loss": 1.0 / (i + 1), "accuracy": 0.5, "val_loss": None, "val_accuracy": None, "t_end_s": 2.0 * (i + 1)}
            for i in range(n)]


def series(label: str, epoch_rows: Sequence[dict] = (), sample_rows: Sequence[dict] = (),
           phases: Sequence[Phase] | None = None) -> charts.Series:
    """A chart series from readable dict fixtures, as a run record holds them."""
    return charts.Series(label, epochs_of(epoch_rows), samples_of(sample_rows), phases)


def samples(n: int, gpus: int = 1) -> list[dict]:
    return [{"t_s": i * 0.5, "cpu_percent": None if i == 3 else 50.0, "cpu_per_core": [10.0, 90.0],
             "gpus": [{"index": g, "util_percent": None if i == 2 else 30.0} for g in range(gpus)]} for i in range(n)]


def test_epoch_bars_mark_the_tracing_epoch():
    fig = charts.epoch_time_figure([series("a", epochs(3)), series("b", epochs(2))])
    assert len(fig.data) == 2
    assert list(fig.data[0].y) == [1.0, 2.0, 3.0]
    assert list(fig.data[0].marker.pattern.shape) == ["/", "", ""]
    assert "tracing" in fig.layout.title.text


def test_utilization_keeps_gaps_and_draws_each_gpu():
    fig = charts.utilization_figure([series("r", epochs(2), samples(6, gpus=2))])
    names = [t.name for t in fig.data]
    assert names == ["CPU, whole machine", "GPU 0", "GPU 1"]
    assert fig.data[0].y[3] is None, "a missing CPU reading is a gap, not 0"
    assert fig.data[1].y[2] is None, "a missing GPU reading is a gap, not 0"
    assert len(fig.layout.shapes) == 2, "one dotted line per epoch end"


def test_utilization_names_a_lone_cpu_line():
    fig = charts.utilization_figure([series("r", epochs(1), samples(4, gpus=0))])
    assert [t.name for t in fig.data] == ["CPU, whole machine"]
    assert fig.layout.showlegend is True, "Plotly hides the legend of a single trace unless told"


def test_thin_bounds_points_and_keeps_the_ends():
    rows = list(range(10_000))
    out = charts.thin(rows, 1500)
    assert len(out) == 1500 and out[0] == 0 and out[-1] == 9999
    assert charts.thin(rows[:10], 1500) == rows[:10]


def test_sweep_gflops_draws_each_peak():
    rows = [SweepRow.model_validate({"params": p, "target": "cpu", "batch_size": 128, "size": s, "achieved_gflops": g,
                         "peak_gflops": 200.0}) for p, s, g in [(10**4, "xs", 5.0), (10**5, "s", 20.0), (10**6, "m", 60.0)]]
    fig = charts.sweep_gflops_figure(rows)
    assert list(fig.data[0].y) == [5.0, 20.0, 60.0]
    assert any(shape.y0 == 200.0 for shape in fig.layout.shapes)


def test_a_stale_peak_is_named_as_being_re_measured():
    rows = [SweepRow.model_validate({"params": p, "target": "cpu", "batch_size": 128, "size": s, "achieved_gflops": g,
                         "peak_gflops": 100.0, "peak_stale": s == "m", "peak_fraction": None if s == "m" else g / 100.0})
            for p, s, g in [(10**4, "xs", 5.0), (10**6, "m", 120.0)]]
    names = [tr.name for tr in charts.sweep_gflops_figure(rows).data if "matmul peak" in (tr.name or "")]
    assert names == ["cpu matmul peak 100 GFLOP/s (a run beat it: being re-measured)"]


def test_per_core_heatmap_rows_are_cores():
    fig = charts.per_core_heatmap(samples_of(samples(4)))
    assert list(fig.data[0].y) == ["core 0", "core 1"]
    assert list(fig.data[0].z[1]) == [90.0] * 4


def test_html_report_inlines_plotly_once():
    html = charts.to_html([charts.loss_accuracy_figure(epochs_of(epochs(2))),
                          charts.epoch_time_figure([series("run 1", epochs(2))])],
                          title="t")
    assert html.count("plotly.js v") == 1, "plotly.js is inlined exactly once"
    assert html.count("Plotly.newPlot") == 2 and "<h1>t</h1>" in html


def test_warm_up_builds_every_live_figure_kind(monkeypatch):
    built = {}
    for name in ("epoch_time_figure", "utilization_figure", "loss_accuracy_figure"):
        def build(*args, _real=getattr(charts, name), _name=name, **kwargs):
            built[_name] = _real(*args, **kwargs)
            return built[_name]
        monkeypatch.setattr(charts, name, build)
    charts.warm_up()
    assert set(built) == {"epoch_time_figure", "utilization_figure", "loss_accuracy_figure"}, built
    assert all(fig.data for fig in built.values()), "each figure drew its traces from the live record shapes"


def test_each_peak_line_has_its_targets_colour():
    rows = [SweepRow.model_validate({"target": t, "params": p, "size": s, "batch_size": 128, "achieved_gflops": g,
                         "peak_gflops": peak}) for t, peak in (("gpu:0", 170_000.0), ("cpu", 1_300.0))
            for s, p, g in (("xs", 25_000, 10.0), ("xl", 36_000_000, 300.0))]
    fig = charts.sweep_gflops_figure(rows)
    line_colour = {tr.name: tr.line.color for tr in fig.data}
    peak_colour = {shape.y0: shape.line.color for shape in fig.layout.shapes}
    assert peak_colour[170_000.0] == line_colour["gpu:0"]
    assert peak_colour[1_300.0] == line_colour["cpu"]
    assert line_colour["gpu:0"] != line_colour["cpu"]
    named = {tr.name: tr.line.color for tr in fig.data if "matmul peak" in (tr.name or "")}
    assert named["cpu matmul peak 1,300 GFLOP/s"] == peak_colour[1_300.0], "named in the legend, in its colour"
    assert not [a for a in fig.layout.annotations if "peak" in (a.text or "")], "no label on the line to hit the axis"
    low, high = fig.layout.yaxis.range
    assert low <= math.log10(10.0) and high >= math.log10(170_000.0), "the axis holds the data and every peak"


# -- readability ------------------------------------------------------------------------------------------------------
PHASES = (Phase("importing tensorflow", 0.2), Phase("loading data", 4.0), Phase("building model", 5.0),
          Phase("first step", 6.0), Phase("training", 6.8))


def process_samples(n: int, cores: float) -> list[dict]:
    return [{"t_s": i * 0.5, "cpu_percent": 50.0, "process_cpu_percent": 100.0 * cores, "process_rss_mib": 512.0,
             "ram_used_mib": 4096.0, "gpus": []} for i in range(n)]


def sweep_rows() -> list[SweepRow]:
    return [SweepRow.model_validate({"params": p, "target": t, "batch_size": 128, "size": s, "samples_per_s": r,
                         "achieved_gflops": r / 100, "peak_gflops": 1_300.0, "mean_cpu_percent": 60.0,
                         "mean_gpu_util_percent": None})
            for t in ("cpu", "cpu/1") for p, s, r in ((25_450, "xs", 55_000.0), (669_706, "m", 7_900.0))]


def every_figure() -> dict[str, object]:
    runs = [series("r", epochs(3), process_samples(20, 2), PHASES)]
    return {"epochs": charts.epoch_time_figure(runs), "util": charts.utilization_figure(runs),
            "loss": charts.loss_accuracy_figure(epochs_of(epochs(3))),
            "heat": charts.per_core_heatmap(samples_of(samples(4))),
            "sweep_util": charts.sweep_utilization_figure(sweep_rows()),
            "rate": charts.sweep_throughput_figure(sweep_rows()), "gflops": charts.sweep_gflops_figure(sweep_rows())}


@pytest.mark.parametrize("name", ["epochs", "util", "loss", "heat", "sweep_util", "rate", "gflops"])
def test_every_axis_has_tick_labels_of_at_least_14_px(name):
    fig = every_figure()[name]
    axes = [fig.layout[k] for k in fig.layout if k.startswith(("xaxis", "yaxis"))]
    assert axes
    for axis in axes:
        assert axis.tickfont.size is not None and axis.tickfont.size >= 14, (name, axis.plotly_name)
    assert fig.layout.font.size >= 14 and fig.layout.legend.font.size >= 14


def one_two_five(value: float) -> bool:
    mantissa = value / 10 ** math.floor(math.log10(value) + 1e-9)
    return any(math.isclose(mantissa, m) for m in (1, 2, 5))


@pytest.mark.parametrize("name", ["sweep_util", "rate", "gflops"])
def test_log_axes_label_only_one_two_five_or_powers_of_ten(name):
    fig = every_figure()[name]
    logs = [fig.layout[k] for k in fig.layout if k.startswith(("xaxis", "yaxis")) and fig.layout[k].type == "log"]
    assert logs, "parameters are on a log axis"
    for axis in logs:
        assert axis.tickmode == "array" and axis.tickvals, "Plotly's own log ticks label every minor tick"
        assert all(one_two_five(v) for v in axis.tickvals), axis.tickvals
        assert len(axis.ticktext) == len(axis.tickvals) and all(len(t) <= 4 for t in axis.ticktext), axis.ticktext


def test_log_ticks_thin_to_powers_of_ten_over_many_decades():
    vals, text, rng = chart_style.log_ticks([25_450, 36_818_954])
    assert text == ["10k", "100k", "1M", "10M", "100M"]
    assert rng == [4.0, 8.0]
    vals, text, rng = chart_style.log_ticks([3_000, 9_000])
    assert text == ["2k", "5k", "10k"], "two decades or fewer: 1-2-5, the axis from the tick below to the one above"
    assert chart_style.log_ticks([None, 0]) is None


def test_accuracy_axis_is_zero_to_one_in_round_steps():
    axis = charts.loss_accuracy_figure(epochs_of(epochs(3))).layout.yaxis2
    assert list(axis.range) == [0, 1.0]
    assert list(axis.tickvals) == [0, 0.2, 0.4, 0.6, 0.8, 1.0] and axis.tickformat == ".1f"


def test_utilization_axis_ticks_are_round():
    fig = charts.utilization_figure([series("r", epochs(1), process_samples(4, 1))])
    assert list(fig.layout.yaxis.tickvals) == [0, 20, 40, 60, 80, 100]
    assert all(float(v).is_integer() for v in fig.layout.yaxis2.tickvals), "whole cores"


def test_heatmap_colour_bar_ticks_have_room():
    for cores in (1, 2, 4, 16):  # the colour bar spans the plot: its ticks are as far apart as the plot allows
        fig = charts.per_core_heatmap(samples_of([{"t_s": 0.0, "cpu_per_core": [1.0] * cores}]))
        bar = fig.data[0].colorbar
        plot_px = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
        assert bar.len == 1.0 and bar.lenmode == "fraction" and bar.tickfont.size >= 14
        assert bar.tickvals[0] == 0 and bar.tickvals[-1] == 100
        assert plot_px / (len(bar.tickvals) - 1) >= 2 * bar.tickfont.size, (cores, plot_px, bar.tickvals)


def test_start_up_phases_are_shaded_and_named_and_epochs_named():
    timed = [e | {"t_start_s": 6.8 + 2 * i, "t_end_s": 8.8 + 2 * i} for i, e in enumerate(epochs(3))]
    fig = charts.utilization_figure([series("r", timed, process_samples(30, 2), PHASES)])
    rects = [s for s in fig.layout.shapes if s.type == "rect"]
    assert [(r.x0, r.x1) for r in rects] == [(0.2, 4.0), (4.0, 5.0), (5.0, 6.0), (6.0, 6.8)]
    # as built, the names that fit the narrowest plot; the live view's figure (its script thins them) carries all
    live = charts.utilization_figure([series("r", timed, process_samples(30, 2), PHASES)], growing=True)
    names = [a.text for a in live.layout.annotations]
    for phase in ("framework", "data", "model", "first step"):
        assert phase in names, names
    assert "epoch 1 (tracing)" in names and "epoch 2" in names and "training" not in names
    assert names[:4] == ["framework", "data", "model", "first step"], "the phases' names come first"
    for figure in (fig, live):  # a phase's name and an epoch's are never in the same row
        rows = {a.text: -a.yshift // charts.LABEL_ROW_PX for a in figure.layout.annotations}
        assert {r for t, r in rows.items() if not t.startswith("epoch")} <= set(charts.PHASE_ROWS), rows
        assert {r for t, r in rows.items() if t.startswith("epoch")} <= set(charts.EPOCH_ROWS), rows
    assert {"framework", "epoch 1 (tracing)"} <= {a.text for a in fig.layout.annotations}


def test_phase_bands_end_at_the_first_epoch_without_a_training_mark():
    bands = charts.phase_bands([Phase("loading data", 1.0), Phase("first step", 2.0)],
                               epochs_of([{"epoch": 1, "epoch_seconds": 3.5, "includes_tracing": True,
                                           "t_end_s": 3.5}]), 10.0)
    assert bands == [("data", 1.0, 2.0), ("first step", 2.0, 3.5)]
    assert charts.phase_bands(None, [], 10.0) == []


def test_no_phase_shading_for_a_record_without_phases():
    fig = charts.utilization_figure([series("r", epochs(2), samples(6))])
    assert not [s for s in fig.layout.shapes if s.type == "rect"]


def test_placed_labels_never_overlap():
    items = [(x * 0.3, f"epoch {x}") for x in range(40)]
    placed = chart_style.place_labels(items, (0.0, 12.0), rows=2, width_px=500)
    assert 2 < len(placed) < 40, "some labels kept, the crowded rest left out"
    per_s = 12.0 / 500
    for row in (0, 1):
        spans = sorted((x - (len(t) * chart_style.CHAR_PX * chart_style.LABEL_PX + 8) / 2 * per_s,
                        x + (len(t) * chart_style.CHAR_PX * chart_style.LABEL_PX + 8) / 2 * per_s)
                       for x, t, r in placed if r == row)
        assert all(a[1] <= b[0] + 1e-9 for a, b in zip(spans, spans[1:])), spans


def test_process_cpu_in_cores_and_memory_are_drawn_beside_the_machine():
    one, two = (series(name, epochs(1), process_samples(6, cores)) for name, cores in (("cpu/1", 1), ("cpu", 2)))
    fig = charts.utilization_figure([one, two])
    cores = {t.name: max(t.y) for t in fig.data if "process CPU" in t.name}
    assert cores == {"cpu/1 · training process CPU (cores, right axis)": 1.0,
                     "cpu · training process CPU (cores, right axis)": 2.0}
    assert all(t.yaxis == "y2" for t in fig.data if "process CPU" in t.name)
    memory = [t for t in fig.data if "process memory" in t.name]
    assert len(memory) == 2 and memory[0].y[0] == pytest.approx(0.5), "512 MiB drawn as 0.5 GiB"


def test_no_process_lines_where_none_were_sampled():
    fig = charts.utilization_figure([series("r", epochs(1), samples(6))])
    assert not [t for t in fig.data if "process" in t.name or "memory" in t.name]


def gpm_samples(sm: float | None) -> list[dict]:
    return [{"t_s": i * 0.5, "cpu_percent": 10.0, "gpus": [{"index": 0, "util_percent": 90.0, "sm_active_percent": sm,
                                                            "tensor_active_percent": None}]} for i in range(4)]


def test_gpm_lines_only_where_the_gpu_reports_them():
    with_gpm = charts.utilization_figure([series("r", [], gpm_samples(42.0))])
    assert [t.name for t in with_gpm.data] == ["CPU, whole machine", "GPU 0", "GPU 0 SM active"]
    assert list(with_gpm.data[2].y) == [42.0] * 4
    without = charts.utilization_figure([series("r", [], gpm_samples(None))])
    assert [t.name for t in without.data] == ["CPU, whole machine", "GPU 0"], "no GPM: no line, not a zero line"


def test_sweep_utilization_draws_gpm_for_gpu_targets_that_have_it():
    rows = [SweepRow.model_validate({"params": p, "target": "gpu:0", "batch_size": 128, "size": s, "mean_gpu_util_percent": 80.0,
                         "sm_active_percent": sm, "tensor_active_percent": None}) for p, s, sm in ((10**4, "xs", 10.0), (10**6, "m", 60.0))]
    names = [t.name for t in charts.sweep_utilization_figure(rows).data]
    assert names == ["gpu:0 (GPU %)", "gpu:0 (SM active %)"]


def test_a_live_runs_traces_are_there_from_its_first_sample():
    """psutil's first process reading is None; the traces must not appear later, or a live chart is redrawn whole."""
    rows = [{"t_s": 0.5 * i, "cpu_percent": 50.0, "cpu_per_core": [50.0, 50.0],
             "process_cpu_percent": None if i == 0 else 150.0, "process_rss_mib": 800.0, "ram_used_mib": 4000.0,
             "gpus": []} for i in range(6)]
    names = [[t.name for t in charts.utilization_figure([series("#1", [], rows[:n])]).data]
             for n in (0, 1, 6)]
    assert names[0] == names[1] == names[2], "before the first sample too"
    assert "training process CPU (cores, right axis)" in names[0]


@pytest.mark.parametrize("default", ["plotly_white", "plotly"])
def test_every_figure_has_the_white_template_whatever_plotlys_default(monkeypatch, default):
    import plotly.graph_objects as go
    import plotly.io as pio

    from bench.output import chart_style

    monkeypatch.setattr(pio.templates, "default", default)  # "plotly": something reset the default after import
    fig = chart_style.layout(go.Figure(go.Bar(x=[1], y=[2])), "t")
    white = go.Figure(layout={"template": "plotly_white"}).to_dict()["layout"]["template"]
    assert fig.to_dict()["layout"]["template"] == white


HOSTILE = '<a href="https://evil.example/x">click</a><img src="https://evil.example/i.png">&amp;'


def _drawn_texts(fig) -> list[str]:
    """Every text Plotly draws as its pseudo-HTML: trace names, category labels, annotations and the title."""
    data = fig.to_plotly_json()
    texts = [str(t.get("name") or "") for t in data["data"]]
    texts += [str(x) for t in data["data"] for x in (t.get("x") or ()) if isinstance(x, str)]
    texts += [str(a.get("text") or "") for a in data["layout"].get("annotations", ())]
    texts.append(str((data["layout"].get("title") or {}).get("text") or ""))
    return texts


def test_outside_text_is_drawn_as_text_in_every_chart():
    """A run's label, its target as stored and an imported record's phase names reach a chart as text: no live link,
    no outside image, the text itself shown (Plotly turns &lt; back into <)."""
    runs = [series(HOSTILE, epochs(3), process_samples(20, 2), (Phase(HOSTILE, 0.2), Phase("training", 1.0))),
            series("plain", epochs(2), process_samples(10, 1))]
    rows = [SweepRow.model_validate({"params": p, "target": HOSTILE, "batch_size": 128, "size": "xs", "samples_per_s": 5.0,
                         "achieved_gflops": 1.0, "peak_gflops": 9.0}) for p in (10, 20)]
    one = [series(HOSTILE, epochs(3), process_samples(20, 2), (Phase(HOSTILE, 0.2), Phase("training", 1.0)))]
    figures = [charts.epoch_time_figure(runs), charts.utilization_figure(runs), charts.utilization_figure(one),
               charts.sweep_utilization_figure(rows), charts.sweep_throughput_figure(rows),
               charts.sweep_gflops_figure(rows), charts.sweep_speedup_figure([], HOSTILE)]
    for fig in figures:
        texts = _drawn_texts(fig)
        assert not any("<a " in t or "<img" in t for t in texts), texts
    shown = " ".join(t for fig in figures for t in _drawn_texts(fig))
    assert "&lt;a href=" in shown and "&amp;amp;" in shown  # the label is there, as text
