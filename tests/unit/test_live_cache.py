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
