"""The figures' shared look, readable from the back of a room: type sizes, round ticks, log axes labelled at 1-2-5 or
powers of ten only, and labels placed so that none overlaps another (plotly only, no Streamlit)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import plotly.graph_objects as go
import plotly.io as pio

FONT_PX = 15  # body text and legends
TICK_PX = 15  # tick labels on every axis
TITLE_PX = 19
LABEL_PX = 13  # phase and epoch names inside a plot
CHAR_PX = 0.62  # average glyph width as a share of its font size (sans-serif), to estimate a label's width
PLOT_WIDTH_PX = 520  # the plot area of a half-width chart at 1600 px: labels are placed to fit this or wider

PALETTE = ("#1f4fd1", "#e4572e", "#17a398", "#f3a712", "#7b2cbf", "#5c6370", "#c2185b", "#2e7d32")
AXIS_GREY = "#6b7280"
TEMPLATE = "plotly_white"
# Every new figure starts from this template instead of Plotly's own, which it would then replace: applying a
# template is a deep copy and a validation of it, paid for every figure of every chart refresh
# (docs/PERFORMANCE-METHOD.md, 'Many viewers of one run').
pio.templates.default = TEMPLATE


def axis_style(**extra: Any) -> dict[str, Any]:
    """One axis' readable defaults: large tick labels, titles at body size, no minor tick labels."""
    return {"tickfont": {"size": TICK_PX}, "title": {"font": {"size": FONT_PX}}, "automargin": True, **extra}


def legend_rows(fig: go.Figure, width_px: float = PLOT_WIDTH_PX + 140) -> int:
    """How many rows the horizontal legend below the plot takes: its names packed left to right, as Plotly wraps."""
    rows, used = 0, width_px
    for trace in fig.data:
        if trace.showlegend is False or not trace.name:
            continue
        width = len(trace.name) * CHAR_PX * FONT_PX + 50  # the line sample and gaps
        if used + width > width_px:
            rows, used = rows + 1, 0.0
        used += width
    return rows


def layout(fig: go.Figure, title: str, *, height: int = 380, legend: bool = True,
           axes: Mapping[str, dict[str, Any]] | None = None, **more: Any) -> go.Figure:
    """Title, sizes, margins and legend of every figure; every axis gets large tick labels. ``height`` is without
    the legend: the figure grows by each row its legend needs, so the legend never runs into the axis title.

    ``axes`` (layout name, e.g. ``"yaxis2"``, to its properties) and ``more`` (other layout keys) join the same
    update: each update walks Plotly's checks over the whole layout, so a figure's axes set one by one
    (``update_xaxes`` per axis) cost several times what one update does."""
    rows = legend_rows(fig) if legend else 0
    bottom = 60 + 26 * rows + (14 if rows else 0)
    if pio.templates.default != TEMPLATE:  # changed since this module set it: the figure does not start from it
        fig.update_layout(template=TEMPLATE)
    readable = {"tickfont": {"size": TICK_PX}, "automargin": True}
    names = dict.fromkeys([*(a.plotly_name for a in (*fig.select_xaxes(), *fig.select_yaxes())), *(axes or {})])
    fig.update_layout(
        title={"text": title, "x": 0.01, "font": {"size": TITLE_PX}},
        height=height - 60 + bottom,
        margin={"l": 60, "r": 20, "t": 70, "b": bottom},
        # at the figure's foot, below the axis title: above the plot it collides with a title's second line
        legend={"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom", "xanchor": "left", "x": 0.0,
                "font": {"size": FONT_PX}},
        font={"size": FONT_PX},
        hoverlabel={"font": {"size": FONT_PX}},
        uirevision="keep",  # keep zoom across live redraws
        **{name: {**(axes or {}).get(name, {}), **readable} for name in names},
        **more,
    )
    return fig


def si(value: float) -> str:
    """A tick value in few characters: 500, 2k, 50k, 1M, 20M, 1G."""
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:g}{suffix}"
    return f"{value:g}"


def log_ticks(values: Iterable[float | None]) -> tuple[list[float], list[str], list[float]] | None:
    """Ticks of a log axis over ``values``: at 1, 2 and 5 times each power of ten when the values span at most two
    decades, at powers of ten only when they span more. Returns (tick values, their labels, the axis range in log10
    units, from the tick at or below the smallest value to the one at or above the largest), or None without a
    positive value."""
    finite = [v for v in values if v is not None and isinstance(v, (int, float)) and math.isfinite(v) and v > 0]
    if not finite:
        return None
    low, high = min(finite), max(finite)
    first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
    last = max(last, first + 1)
    steps = (1, 2, 5) if last - first <= 2 else (1,)
    candidates = [m * 10.0 ** k for k in range(first, last + 1) for m in steps]
    below = max((c for c in candidates if c <= low * 1.0001), default=candidates[0])
    above = min((c for c in candidates if c >= high / 1.0001), default=candidates[-1])
    if above <= below:
        above = next(c for c in candidates if c > below)
    ticks = [c for c in candidates if below <= c <= above]
    return ticks, [si(t) for t in ticks], [math.log10(below), math.log10(above)]


def log_axis(values: Iterable[float | None], title: str) -> dict[str, Any]:
    """A log axis' settings with :func:`log_ticks` (Plotly's own labels every minor tick: '3 4 5 6 7 8 9 100k')."""
    spec = axis_style(type="log", title={"text": title, "font": {"size": FONT_PX}})
    ticks = log_ticks(values)
    if ticks is not None:
        tickvals, ticktext, rng = ticks
        pad = 0.03 * (rng[1] - rng[0])  # markers at the ends stay whole
        spec.update(tickmode="array", tickvals=tickvals, ticktext=ticktext, range=[rng[0] - pad, rng[1] + pad])
    return spec


def nice_step(span: float, max_ticks: int = 6) -> float:
    """The smallest 1-2-5 step that covers ``span`` in at most ``max_ticks`` intervals."""
    if span <= 0 or not math.isfinite(span):
        return 1.0
    raw = span / max_ticks
    power = 10.0 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def place_labels(items: Sequence[tuple[float, str]], x_range: tuple[float, float], *, rows: int = 2,
                 width_px: float = PLOT_WIDTH_PX, font_px: float = LABEL_PX) -> list[tuple[float, str, int]]:
    """Put each (x, text) label, in the order given (the first have priority), in the first of ``rows`` rows where
    it overlaps no label already placed (widths estimated from the font at ``width_px`` of plot); a label that fits
    in no row is left out. Returns (x, text, row) for the labels kept."""
    low, high = x_range
    per_px = (high - low) / width_px if high > low else 1.0
    taken: list[list[tuple[float, float]]] = [[] for _ in range(rows)]
    placed = []
    for x, text in items:
        half = (len(text) * CHAR_PX * font_px + 8) / 2 * per_px
        left, right = max(x - half, low), min(x + half, high)
        if right - left < 2 * half * 0.999:  # shifted inside the plot, so no label leaves it
            left, right = (low, low + 2 * half) if x - half < low else (high - 2 * half, high)
        for row in range(rows):
            if all(right <= a or left >= b for a, b in taken[row]):
                taken[row].append((left, right))
                placed.append(((left + right) / 2, text, row))
                break
    return placed
