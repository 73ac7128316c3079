"""The Machines ranking as it is shown: a bar chart of the machines for one model (fastest at the top, and cheapest
where prices are given), and the notes its tables say once under themselves instead of in every cell (why a figure
is missing, what makes a row unequal to the baseline). Plotly only, no Streamlit: the Machines page and the HTML
gallery report both draw from here, so they say the same thing.
"""

from __future__ import annotations

import html
import textwrap
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from bench.analysis import machines as M
from bench.output import chart_style as style

MEASURED_COLOUR = style.PALETTE[0]
ESTIMATE_COLOUR = "#9fb4ee"  # the measured blue, lighter: a figure read between two measured sizes
BASELINE_LINE = "#0b1220"
TEXT_COLOUR = "#1f2937"  # the words after a bar: dark, whatever the page's theme makes of the chart's own text
MEASURED_NAME = "measured"
ESTIMATE_NAME = "read between sizes (estimate)"
BASELINE_NAME = "baseline (outlined)"
BASELINE_LINE_PX = 3
ESTIMATE_PATTERN = "/"
BAR_PX = 54  # height per bar: a two-line machine label fits beside it
NAME_CHARS = 42  # characters per line of a machine's label
PLOT_PX = 760  # the plot area's width at a 1600 px window, to leave room for the text after the longest bar
SHORT_CAVEAT_CHARS = 18  # a caveat longer than this is said as "other <trait>" on the bar
MISSING = "—"
_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


# -- the chart ----------------------------------------------------------------------------------------------------------
def short_caveat(flag: str) -> str:
    """A flag of :func:`bench.analysis.machines.differences` in a few words for a bar: ``backend jax (baseline
    tensorflow)`` -> ``backend jax``; a long value -> ``other suite``; a flag of another shape is kept whole."""
    trait, sep, _ = flag.partition(" (baseline ")
    if not sep:
        return flag
    name = trait.split(" ", 1)[0]
    return trait if len(trait) <= SHORT_CAVEAT_CHARS else f"other {name}"


def _label(row: M.Row, *, baseline: bool) -> str:
    """A bar's label: the machine's name (escaped: Plotly reads tags in text) on at most two lines, and the target."""
    lines = textwrap.wrap(row.machine_name, NAME_CHARS) or ["?"]
    if len(lines) > 2:
        lines = [lines[0], lines[1][: NAME_CHARS - 1] + "…"]
    text = "<br>".join(html.escape(line) for line in lines) + f" · {html.escape(row.target)}"
    return f"<b>{text}</b>" if baseline else text


def _unique(labels: list[str]) -> list[str]:
    """Labels made unique (two machines may share a name): a repeated one gets a number, or its bars would merge."""
    seen: Counter[str] = Counter()
    out = []
    for label in labels:
        seen[label] += 1
        out.append(label if seen[label] == 1 else f"{label} ({seen[label]})")
    return out


@dataclass(frozen=True)
class _Panel:
    title: str
    axis: str
    value: Callable[[M.Row], float | None]
    text: Callable[[float], str]
    hover: str


_TIME = _Panel("Time per 1,000 samples, fastest first", "seconds per 1,000 training samples",
               lambda r: r.seconds_per_1k, lambda v: f"{v:.3g} s", "%{x:.3g} s per 1,000 samples")
_COST = _Panel("Cost per 1,000 samples, cheapest first", "cost per 1,000 training samples (the hourly price's currency)",
               lambda r: r.cost_per_1k, lambda v: f"{v:.3g}", "%{x:.3g} per 1,000 samples")


def _bar_text(row: M.Row, value: float, panel: _Panel, *, baseline: bool) -> str:
    words = [("≈" if row.how == M.INTERPOLATED else "") + panel.text(value)]
    if baseline:
        words.append("baseline")
    if row.flags:
        words.append("unlike baseline: " + ", ".join(short_caveat(f) for f in row.flags))
    return html.escape(" · ".join(words))


def _x_top(values: list[float], texts: list[str]) -> float:
    """The end of the value axis: the text after each bar fits before it (widths estimated from the font)."""
    top = max(values)
    for value, text in zip(values, texts):
        share = min((len(text) * style.CHAR_PX * style.FONT_PX + 12) / PLOT_PX, 0.7)
        top = max(top, value / (1.0 - share))
    return top * 1.02


def ranking_figure(ranking: M.Ranking, *, baseline: tuple[str, str] | None = None) -> go.Figure:
    """Horizontal bars of the machines for one model: seconds per 1,000 samples (fastest at the top) and, where any
    machine has a price, a second panel of cost per 1,000 samples (cheapest at the top).

    A measured figure is a solid bar; one read between two measured sizes is lighter, hatched, named so in the legend
    and written "≈" on its bar. The baseline (machine key, target) is outlined, its label bold and its bar says
    "baseline"; what makes a row unequal to the baseline (other backend, suite, XLA, ...) is said in short after its
    bar ("≠ backend jax, other suite"), in full on hover. Rows without a figure are not drawn (their reasons are the
    tables')."""
    key = (baseline[0], baseline[1]) if baseline else None
    panels = [(_TIME, list(ranking.by_time))] + ([(_COST, list(ranking.by_cost))] if ranking.by_cost else [])
    counts = [max(len(rows), 1) for _, rows in panels]
    fig = make_subplots(rows=len(panels), cols=1, subplot_titles=[p.title for p, _ in panels],
                        row_heights=[c / sum(counts) for c in counts], vertical_spacing=0.22 if len(panels) > 1 else 0.0)
    shown: set[str] = set()
    for number, (panel, rows) in enumerate(panels, start=1):
        is_base = [(r.machine, r.target) == key for r in rows]
        labels = _unique([_label(r, baseline=b) for r, b in zip(rows, is_base)])
        values = [panel.value(r) or 0.0 for r in rows]
        texts = [_bar_text(r, v, panel, baseline=b) for r, v, b in zip(rows, values, is_base)]
        groups = [(MEASURED_NAME, [i for i, r in enumerate(rows) if r.how == M.MEASURED and not is_base[i]]),
                  (ESTIMATE_NAME, [i for i, r in enumerate(rows) if r.how == M.INTERPOLATED and not is_base[i]]),
                  (BASELINE_NAME, [i for i in range(len(rows)) if is_base[i]])]
        for name, picked in groups:
            if not picked:
                continue
            estimated = rows[picked[0]].how == M.INTERPOLATED  # one look per trace (the baseline is one row):
            fig.add_bar(  # Plotly's legend swatch cannot draw a per-bar colour list
                x=[values[i] for i in picked], y=[labels[i] for i in picked], orientation="h", name=name,
                legendgroup=name, showlegend=name not in shown,
                marker={"color": ESTIMATE_COLOUR if estimated else MEASURED_COLOUR,
                        "pattern": {"shape": ESTIMATE_PATTERN if estimated else "", "fgcolor": MEASURED_COLOUR,
                                    "solidity": 0.25},
                        "line": {"color": BASELINE_LINE, "width": BASELINE_LINE_PX if name == BASELINE_NAME else 0}},
                text=[texts[i] for i in picked], textposition="outside", cliponaxis=False,
                textfont={"size": style.FONT_PX, "color": TEXT_COLOUR},
                customdata=[[html.escape(f"{rows[i].machine_name} · {rows[i].target}"),
                             html.escape(f"{rows[i].how_text}: {rows[i].note}"),
                             html.escape("; ".join(rows[i].flags) or "nothing unequal to the baseline"),
                             f"{rows[i].speedup:.3g}×" if rows[i].speedup is not None else "—"] for i in picked],
                hovertemplate=(f"%{{customdata[0]}}<br>{panel.hover}<br>%{{customdata[1]}}<br>"
                               "speed-up over the baseline %{customdata[3]}<br>%{customdata[2]}<extra></extra>"),
                row=number, col=1)
            shown.add(name)
        fig.update_yaxes(categoryorder="array", categoryarray=labels, autorange="reversed", row=number, col=1)
        fig.update_xaxes(**style.axis_style(title={"text": panel.axis}),
                         range=[0, _x_top(values, texts) if values else 1.0], exponentformat="e",
                         row=number, col=1)
    fig.update_layout(barmode="overlay", bargap=0.3)
    point = ranking.model if ranking.size is None else f"{ranking.model} {ranking.size}"
    height = 90 + BAR_PX * sum(counts) + 110 * len(panels)
    return style.layout(fig, f"Which machine for {html.escape(point)} at batch {ranking.batch_size}?", height=height)


# -- the tables' notes --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Missing:
    """One reason a figure is missing, said once under a table, with where it holds (:attr:`text`)."""

    figure: str  # "Time", "Energy", "Cost", "Speed-up"
    reason: str
    where: tuple[tuple[str, tuple[str, ...]], ...]  # (machine name, its targets), in the table's order

    @property
    def where_text(self) -> str:
        """Where the reason holds, as the bars name them: ``laptop · cpu, cpu/1; desk · cpu``."""
        return "; ".join(f"{name} · {', '.join(targets)}" for name, targets in self.where)

    @property
    def text(self) -> str:
        """The whole note: ``Energy — cpu: RAPL not readable here — on laptop · cpu, cpu/1``."""
        return f"{self.figure} {MISSING} {self.reason.rstrip('. ')} {MISSING} on {self.where_text}"


# the figures a row may lack, each with the reason a row gives for its absence
FIGURES: tuple[tuple[str, Callable[[M.Row], float | None], Callable[[M.Row], str]], ...] = (
    ("Time", lambda r: r.seconds_per_1k, lambda r: M.NOT_MEASURED),
    ("Energy", lambda r: r.energy_j_per_1k, lambda r: r.energy_why),
    ("Cost", lambda r: r.cost_per_1k, lambda r: r.cost_why),
    ("Speed-up", lambda r: r.speedup, lambda r: r.speedup_why),
)


def mark(number: int) -> str:
    """A note's mark: 1 -> ``¹``, 12 -> ``¹²``."""
    return str(number).translate(_SUPERSCRIPT)


@dataclass(frozen=True)
class TableNotes:
    """What a table says once under itself: why figures are missing (grouped by figure and reason) and the numbered
    notes its cells point at (the ways a row is unequal to the baseline, and how an energy figure was found)."""

    missing: tuple[Missing, ...]
    notes: tuple[tuple[str, str], ...]  # (mark, note) in the order first met

    def marks(self, texts: Sequence[str]) -> str:
        """The marks of these notes, e.g. ``¹ ³`` (empty for none)."""
        found = {text: m for m, text in self.notes}
        return " ".join(found[t] for t in texts if t in found)

    def caveats(self, row: M.Row) -> str:
        """The marks of what makes ``row`` unequal to the baseline."""
        return self.marks(row.flags)

    def energy_mark(self, row: M.Row) -> str:
        """The mark of what is said beside a row's energy figure (integrated from power samples), or ``""``."""
        return self.marks([row.energy_beside] if row.energy_beside else [])


def table_notes(rows: Sequence[M.Row]) -> TableNotes:
    """The notes of a table of rows: each missing figure's reason once with the machines and targets it holds for,
    and a numbered note for each distinct caveat or energy remark."""
    groups: dict[tuple[str, str], dict[str, list[str]]] = {}
    for row in rows:
        for figure, value, why in FIGURES:
            if value(row) is None:
                groups.setdefault((figure, why(row)), {}).setdefault(row.machine_name, []).append(row.target)
    order = [figure for figure, _, _ in FIGURES]
    missing = tuple(Missing(figure, reason, tuple((n, tuple(t)) for n, t in where.items()))
                    for (figure, reason), where in sorted(groups.items(), key=lambda g: order.index(g[0][0])))
    texts: list[str] = []
    for row in rows:
        for text in (*row.flags, *([row.energy_beside] if row.energy_beside else [])):
            if text not in texts:
                texts.append(text)
    return TableNotes(missing=missing, notes=tuple((mark(i), t) for i, t in enumerate(texts, start=1)))


def cell(value: float | None, fmt: str, marks: str = "") -> str:
    """A figure as a table shows it: formatted, with its notes' marks; ``—`` where there is none (the reason is said
    under the table)."""
    if value is None:
        return MISSING
    return format(value, fmt) + (f" {marks}" if marks else "")
