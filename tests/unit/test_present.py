"""Projector view: every figure the dashboard draws gets text readable from the back of a room, on a copy."""

from __future__ import annotations

import pytest

from bench.analysis.sweeps import SweepRow
from bench.output import charts
from bench.vocab.readings import epochs_of, samples_of
from ui import lesson, present

EPOCHS = [{"epoch": e, "epoch_seconds": 1.0 + e, "includes_tracing": e == 1, "t_end_s": float(e), "loss": 1.0 / e,
           "accuracy": 0.5, "val_loss": 1.0, "val_accuracy": 0.5, "samples_per_s": 100.0} for e in (1, 2, 3)]
SAMPLES = [{"t_s": float(t), "cpu_percent": 50.0, "gpus": [{"index": 0, "util_percent": 10.0}]} for t in range(4)]
SERIES = [charts.Series("#1", epochs_of(EPOCHS), samples_of(SAMPLES))]
ROWS = [SweepRow(target="gpu:0", params=10, size="xs", batch_size=32, achieved_gflops=3.0, peak_gflops=100.0,
                 samples_per_s=5.0, mean_gpu_util_percent=20.0)]

FIGURES = {
    "epochs": lambda: charts.epoch_time_figure(SERIES),
    "utilization": lambda: charts.utilization_figure(SERIES),
    "loss": lambda: charts.loss_accuracy_figure(epochs_of(EPOCHS)),
    "gflops": lambda: charts.sweep_gflops_figure(ROWS),
    "lesson": lambda: lesson.points_figure(ROWS, ["xs"], "t"),
}


@pytest.mark.parametrize("name", FIGURES)
def test_style_figure_sizes_every_text(name):
    fig = FIGURES[name]()
    out = present.style_figure(fig)
    layout = out.layout
    assert layout.title.font.size == 24
    assert layout.legend.font.size == 18
    axes = [getattr(layout, k) for k in layout if k.startswith(("xaxis", "yaxis")) and getattr(layout, k) is not None]
    assert len(axes) >= 2
    for axis in axes:
        assert axis.tickfont.size >= 18, axis
        assert axis.title.font.size >= 18
    for ann in layout.annotations or ():
        assert ann.font.size >= 18
    assert layout.height >= present.FIGURE_HEIGHT_PX


def test_style_figure_leaves_the_shared_figure_alone():
    fig = charts.epoch_time_figure(SERIES)
    before = fig.to_json()
    out = present.style_figure(fig)
    assert fig.to_json() == before
    assert out is not fig
    assert out.layout.title.text == fig.layout.title.text  # the text is kept, only its size changes
    assert len(out.data) == len(fig.data)
