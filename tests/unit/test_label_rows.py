"""The utilization chart's names: phases and epochs in rows of their own, a bounded number of epoch names however long
the run, and rows that grow with the font in the projector view (the boxes themselves: tests/e2e/test_label_boxes.py)."""

from __future__ import annotations

from bench.output import chart_style, charts
from bench.vocab.readings import epochs_of, samples_of
from bench.vocab.run_info import Phase
from ui import present

PHASES = (Phase("loading data", 0.5), Phase("building model", 1.0), Phase("first step", 1.5), Phase("training", 2.0))


def figure(n_epochs: int, *, growing: bool = False) -> charts.go.Figure:
    epochs = [{"epoch": e, "epoch_seconds": 1.0, "includes_tracing": e == 1, "t_start_s": 1.0 + e,
               "t_end_s": 2.0 + e} for e in range(1, n_epochs + 1)]
    samples = [{"t_s": i * 0.5, "cpu_percent": 50.0, "gpus": []} for i in range(2 * n_epochs + 6)]
    return charts.utilization_figure([charts.Series("#1", epochs_of(epochs), samples_of(samples), PHASES)],
                                     growing=growing)


def rows_of(fig: charts.go.Figure) -> dict[str, int]:
    return {a.text: round(-a.yshift / charts.LABEL_ROW_PX) for a in fig.layout.annotations}


def test_named_epochs_are_bounded_and_never_change_as_a_run_grows():
    named = [e for e in range(1, 501) if charts.named_epoch(e)]
    assert named[:12] == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 20]
    assert len(named) <= 40 and 500 in named and 150 in named and 151 not in named


def test_phases_and_epochs_never_share_a_row():
    for fig in (figure(2), figure(2, growing=True), figure(200), figure(200, growing=True)):
        for text, row in rows_of(fig).items():
            assert row in (charts.EPOCH_ROWS if text.startswith("epoch") else charts.PHASE_ROWS), (text, row)


def test_a_figure_carries_few_names_however_long_the_run():
    assert len(figure(500).layout.annotations) <= 3 * charts.LABEL_MIN_PLOT_PX // 40
    assert len(figure(500, growing=True).layout.annotations) <= len(PHASES) + 36


def test_a_row_is_taller_than_a_name():
    assert charts.LABEL_ROW_PX >= chart_style.LABEL_PX * 1.4 + 2


def test_the_projector_view_grows_the_rows_with_the_names():
    fig = figure(3, growing=True)
    styled = present.style_figure(fig)
    for before, after in zip(fig.layout.annotations, styled.layout.annotations):
        scale = after.font.size / before.font.size
        assert scale > 1 and after.yshift == before.yshift * scale, (before, after)


def test_a_long_runs_epoch_lines_are_the_named_epochs_ends():
    for growing in (False, True):
        lines = [s.x0 for s in figure(500, growing=growing).layout.shapes if s.type == "line"]
        assert lines == [2.0 + e for e in range(1, 501) if charts.named_epoch(e)], "36 dotted lines, not 500"
