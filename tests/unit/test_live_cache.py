"""The live panel's shared figure cache: built once per run state, bounded in size."""

from __future__ import annotations

import plotly.graph_objects as go

from ui import live


def test_a_figure_is_built_once_per_state_and_the_cache_stays_bounded():
    built = []

    def build() -> go.Figure:
        built.append(1)
        return go.Figure()

    first = live.cached_figure(("t", 1, 0.0, 3, 10), build)
    assert live.cached_figure(("t", 1, 0.0, 3, 10), build) is first
    assert len(built) == 1
    live.cached_figure(("t", 1, 0.0, 3, 11), build)  # one more sample: a new figure
    assert len(built) == 2
    for n in range(live._FIGURES_MAX + 10):
        live.cached_figure(("t", 2, 0.0, 0, n), build)
    assert len(live._FIGURES) == live._FIGURES_MAX
    live.cached_figure(("t", 1, 0.0, 3, 10), build)  # evicted long ago: rebuilt
    assert len(built) == 2 + live._FIGURES_MAX + 10 + 1


def test_a_live_runs_charts_change_at_most_every_chart_refresh_and_once_more_when_it_ends():
    from types import SimpleNamespace

    def snap(active: bool, epochs: int, samples: int, status: str = "running") -> SimpleNamespace:
        return SimpleNamespace(id=7, created_at=100.0, active=active, status=status, epochs=[{}] * epochs,
                               samples=[{}] * samples)

    step = live.CHART_REFRESH_S
    t0 = 1000 * step  # the start of a window
    # new epochs and samples inside one window: the same key, so every rerun re-sends an identical figure
    assert live.chart_state(snap(True, 2, 10), t0) == live.chart_state(snap(True, 3, 14), t0 + step * 0.9)
    assert live.chart_state(snap(True, 3, 14), t0 + step) != live.chart_state(snap(True, 3, 14), t0)
    done = live.chart_state(snap(False, 5, 30, "finished"))
    assert done != live.chart_state(snap(True, 5, 30), t0)
    assert done != live.chart_state(snap(False, 5, 31, "finished")), "a finished run's charts show all its data"
