"""Plotly figures shared by every page and by exported reports (plotly only, no Streamlit).

Each function takes typed run data (a run's :class:`Series`: its epochs and samples as bench.vocab.readings types; sweep
rows as the dicts of a ``bench.sweep/1`` record) and returns a
``plotly.graph_objects.Figure``. Missing readings stay None, so lines show gaps rather than false zeros; a reading
never taken (no GPM, no process data) draws no line at all. Sizes, ticks and label placement: bench.output.chart_style.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy  # noqa: F401 - loaded whole before any thread draws: Plotly picks NumPy up from sys.modules, and a
import plotly.graph_objects as go  # figure built while another thread is half-way through importing NumPy fails
from plotly.subplots import make_subplots

from bench.analysis import sweeps
from bench.analysis.run_summary import Run
from bench.vocab.run_info import Phase
from bench.analysis.sweeps import SweepRow, SweepSpeedup
from bench.vocab import safe_text
from bench.output import chart_style as style
from bench.output.chart_style import PALETTE
from bench.vocab.readings import Epoch, GpuReading, Sample

GPU_DASHES = ("solid", "dot", "dash", "longdash", "dashdot")
MAX_POINTS = 1500  # per line drawn; longer histories are thinned evenly for drawing only
MIB_PER_GIB = 1024.0
UTIL_TICKS = [0, 20, 40, 60, 80, 100]
UTIL_TOP = 150.0  # the % axis ends above 100 so the phase and epoch names have three rows of their own
# Where the phase and epoch names go: the phases' names in the top row, the epochs' in the two rows under it, so a
# phase's name never sits on an epoch's. A row is a name's height and a gap (a name's box is about 1.4 times its font
# size high): ui.present.style_figure scales the rows with the font.
PHASE_ROWS = (0,)
EPOCH_ROWS = (1, 2)
LABEL_ROW_PX = round(style.LABEL_PX * 1.4 + 4)
# A figure drawn as built (st.plotly_chart, exported reports) keeps the names that fit a plot this narrow (a phone
# held upright: about 240 px of plot at 390 px), in its names' font: at any wider plot they stand further apart.
LABEL_MIN_PLOT_PX = 240
PHASE_NAMES = {"loading data": "data", "building model": "model"}  # worker phase -> name on the chart
PHASE_FILLS = ("#e6ebf3", "#f3ece0")
# GPM activity per GPU beside NVML utilization (None where the GPU has no GPM: no line then)
GPU_METRICS = (("util_percent", "GPU {i}", "solid"), ("sm_active_percent", "GPU {i} SM active", "dash"),
               ("tensor_active_percent", "GPU {i} tensor active", "dot"))



@dataclass(frozen=True)
class Series:
    """One run as a chart draws it: its name in the legend, epochs, samples and the start-up phases its worker
    reported (``info.phases``: ``{"phase": name, "t_s": seconds}``)."""

    label: str
    epochs: Sequence[Epoch] = ()
    samples: Sequence[Sample] = ()
    phases: Sequence[Phase] | None = None

    @classmethod
    def of_record(cls, record: Run, label: str) -> Series:
        """A run's series: its epochs, samples and start-up phases."""
        return cls(label=label, epochs=record.epochs, samples=record.samples, phases=record.info.phases)


def _axis(fig: go.Figure, row: int, *, x: bool = False, secondary_y: bool = False) -> str:
    """The layout name of a subplot's axis (``"yaxis2"``), as make_subplots named it."""
    subplot = fig.get_subplot(row, 1, secondary_y=secondary_y)
    return str((subplot.xaxis if x else subplot.yaxis).plotly_name)


def _layout(fig: go.Figure, title: str, *, height: int = 340, **more: Any) -> go.Figure:
    return style.layout(fig, title, height=height, **more)


def thin(rows: Sequence[Any], max_points: int = MAX_POINTS) -> list[Any]:
    """Evenly thin a long sequence for drawing (keeps the first and last rows)."""
    n = len(rows)
    if n <= max_points:
        return list(rows)
    step = (n - 1) / (max_points - 1)
    return [rows[round(i * step)] for i in range(max_points)]


# short enough for a phone's chart (390 px): the legend and the docs say the rest
HATCHED_NOTE = "<br><sup>hatched: epoch 1, with graph tracing</sup>"  # under a title, once one is


def epoch_step(n_epochs: int) -> int:
    """The epoch axis' tick step for ``n_epochs`` epochs: every epoch up to 8, then a 1-2-5 step that keeps at most 8
    ticks (a label for each of a long run's epochs is unreadable, and costs the browser most of a chart's draw: over
    a second at 200 epochs, docs/TESTING.md)."""
    return max(1, int(style.nice_step(n_epochs, 8)))


def epoch_time_figure(series: Sequence[Series], *, title: str = "Time per epoch") -> go.Figure:
    """Bars of training seconds per epoch, one colour per run; the first (tracing) epoch drawn hatched."""
    fig = go.Figure()
    for i, s in enumerate(series):
        epochs = s.epochs
        colour = PALETTE[i % len(PALETTE)]
        fig.add_bar(
            x=[e.epoch for e in epochs],
            y=[e.epoch_seconds for e in epochs],
            name=safe_text.chart(s.label),
            marker={
                "color": colour,
                "pattern": {"shape": ["/" if e.includes_tracing else "" for e in epochs], "solidity": 0.35},
            },
            customdata=[[("includes tracing" if e.includes_tracing else "steady"),
                         e.samples_per_s or 0] for e in epochs],
            hovertemplate="epoch %{x}: %{y:.2f} s (%{customdata[0]})<br>%{customdata[1]:,.0f} samples/s<extra>%{fullData.name}</extra>",
        )
    if any(e.includes_tracing for s in series for e in s.epochs):
        title += HATCHED_NOTE
    n_epochs = max((len(s.epochs) for s in series), default=0)
    axes: dict[str, dict[str, Any]] = {
        "xaxis": {"title": {"text": "epoch"}, "tickmode": "linear", "tick0": 0, "dtick": epoch_step(n_epochs)},
        "yaxis": {"title": {"text": "seconds"}, "rangemode": "tozero"}}
    return _layout(fig, title, axes=axes, barmode="group", bargap=0.25)


def _values(samples: Sequence[Sample], key: str, scale: float = 1.0) -> list[float | None]:
    values = [getattr(row, key) for row in samples]
    return [None if v is None else v / scale for v in values]


def _gpu_values(samples: Sequence[Sample], index: int, key: str) -> list[float | None]:
    values = []
    for row in samples:
        match = row.gpu(index)
        values.append(getattr(match, key) if match else None)
    return values


def _drawn(values: Sequence[float | None]) -> bool:
    return any(v is not None for v in values)


def phase_bands(phases: Sequence[Phase] | None, epochs: Sequence[Epoch],
                t_max: float) -> list[tuple[str, float, float]]:
    """(name, start s, end s) of each start-up phase the worker reported (framework, data, model, first step): each
    lasts until the next begins; the last until training's first step ended (else the first epoch's end)."""
    marks = sorted(phases or (), key=lambda p: p.t_s)
    first_end = next((e.t_end_s for e in epochs if e.t_end_s is not None), t_max)
    bands = []
    for i, mark in enumerate(marks):
        name = mark.phase
        if name == "training":
            continue
        end = marks[i + 1].t_s if i + 1 < len(marks) else first_end
        name = "framework" if name.startswith("importing") else safe_text.chart(PHASE_NAMES.get(name, name))
        start = max(0.0, float(mark.t_s))
        if end > start:
            bands.append((name, start, float(end)))
    return bands


def _marks(fig: go.Figure, s: Series, t_max: float, *, growing: bool = False) -> None:
    """One run's start-up phases shaded and named, its epochs' ends dotted and its epochs named, the phases' names in
    their row and the epochs' in theirs (PHASE_ROWS, EPOCH_ROWS).

    As built (``growing`` False: a figure drawn as it is) only the names that fit a plot LABEL_MIN_PLOT_PX wide are
    kept (chart_style.place_labels), so no two overlap at any wider one. ``growing`` (the live view's figure, sent to
    browsers as increments, whose script hides a name that would touch another at the width it draws): every phase
    and the epochs of :func:`named_epoch`, each in a row by its place, so a longer run's marks and names only add to
    those before."""
    epochs = s.epochs
    bands = phase_bands(s.phases, epochs, t_max)
    shapes: list[dict[str, Any]] = [
        {"type": "rect", "xref": "x", "yref": "paper", "x0": x0, "x1": x1, "y0": 0, "y1": 1, "layer": "below",
         "fillcolor": PHASE_FILLS[k % len(PHASE_FILLS)], "line": {"width": 0}} for k, (_, x0, x1) in enumerate(bands)]
    phase_names = [((x0 + x1) / 2, name) for name, x0, x1 in bands]
    epoch_names = []
    start = bands[-1][2] if bands else None
    for e in epochs:
        end = e.t_end_s
        if end is None:
            continue
        if named_epoch(e.epoch):  # a long run's every end dotted greys the chart: the ends of the epochs named
            shapes.append({"type": "line", "xref": "x", "yref": "paper", "x0": end, "x1": end, "y0": 0, "y1": 1,
                           "line": {"color": "#9aa3b2", "dash": "dot", "width": 1}})
        begin = e.t_start_s if e.t_start_s is not None else start
        name = f"epoch {e.epoch}" + (" (tracing)" if e.includes_tracing else "")
        epoch_names.append((e.epoch, (begin + end) / 2 if begin is not None else end, name))
        start = end
    if growing:
        placed = [*_in_rows(phase_names, PHASE_ROWS),
                  *_in_rows([(x, text) for epoch, x, text in epoch_names if named_epoch(epoch)], EPOCH_ROWS)]
    else:
        placed = [*_fitting(phase_names, PHASE_ROWS, t_max), *_fitting(_round_first(epoch_names), EPOCH_ROWS, t_max)]
    names = [{"x": x, "y": UTIL_TOP, "xref": "x", "yref": "y", "yanchor": "top", "yshift": -row * LABEL_ROW_PX,
              "text": text, "showarrow": False, "font": {"size": style.LABEL_PX, "color": "#374151"}}
             for x, text, row in placed]
    # one layout update for all marks and names: add_vline or add_annotation each re-checks every mark before it
    # (about 8 ms a name with a 36-epoch run), and this figure is built again at every live refresh
    if shapes or names:
        fig.update_layout(shapes=shapes, annotations=[*fig.layout.annotations, *names])


def named_epoch(epoch: int) -> bool:
    """Whether the utilization chart marks ``epoch``'s end with a dotted line, and a live chart carries its name:
    every epoch to 9, then every 5th to 95, every 50th to 950, ... (about 18 a decade), so a 500-epoch run carries 36
    lines and names, not 500, and each epoch's answer never changes as the run grows."""
    if epoch < 10:
        return True
    step = 10 ** (len(str(epoch)) - 1) // 2
    return epoch % step == 0


def _in_rows(labels: Sequence[tuple[float, str]], rows: Sequence[int]) -> list[tuple[float, str, int]]:
    return [(x, text, rows[i % len(rows)]) for i, (x, text) in enumerate(labels)]


def _round_first(names: Sequence[tuple[int, float, str]]) -> list[tuple[float, str]]:
    """The epochs' names for place_labels, the first epoch's and then round ones first (every 10th of 40, every 50th
    of 200: about as many as fit LABEL_MIN_PLOT_PX), the rest after them, for the space left."""
    if not names:
        return []
    last = max(epoch for epoch, _, _ in names)
    width_px = len(f"epoch {last}") * style.CHAR_PX * style.LABEL_PX + 8
    step = max(1, int(style.nice_step(last, max(1, int(len(EPOCH_ROWS) * LABEL_MIN_PLOT_PX / width_px)))))
    first = [(x, text) for epoch, x, text in names if epoch == 1 or epoch % step == 0]
    return first + [(x, text) for epoch, x, text in names if not (epoch == 1 or epoch % step == 0)]


def _fitting(labels: Sequence[tuple[float, str]], rows: Sequence[int], t_max: float) -> list[tuple[float, str, int]]:
    placed = style.place_labels(labels, (0.0, t_max), rows=len(rows), width_px=LABEL_MIN_PLOT_PX)
    return [(x, text, rows[row]) for x, text, row in placed]


def utilization_figure(series: Sequence[Series], *, title: str = "Utilization while training",
                       show_process: bool = True, growing: bool = False) -> go.Figure:
    """The whole machine's CPU % and each GPU's NVML utilization % (with SM and tensor-core activity where NVML GPM
    reports them) over time; with ``show_process``, the training process's CPU in cores (right axis) and, in a
    second row, its memory beside the machine's. One run: its start-up phases shaded and named, its epochs named
    (``growing``: the names for a browser that thins them to the width it draws, a live run's increments; see
    _marks)."""
    many = len(series) > 1
    runs = [(s, thin(s.samples)) for s in series]
    # drawn from the first sample that carries the reading, even while its value is still None (psutil's first
    # process reading is): a live chart keeps its traces from the start instead of being redrawn when they appear
    # and before the first sample, since this project's sampler always takes them
    waiting = not any(rows for _, rows in runs)
    process = show_process and (waiting or any(row.carries("process_cpu_percent") for _, rows in runs for row in rows))
    memory = show_process and (waiting or any(row.carries(k) for _, rows in runs for row in rows
                                              for k in ("process_rss_mib", "ram_used_mib")))
    fig = make_subplots(rows=2 if memory else 1, cols=1, shared_xaxes=True, vertical_spacing=0.1,
                        row_heights=[0.7, 0.3] if memory else None, specs=[[{"secondary_y": process}]]
                        + ([[{}]] if memory else []))
    hover = "%{x:.1f} s: %{y:.0f} %<extra>%{fullData.name}</extra>"
    t_max, top_cores = 0.0, 0.0
    for i, (s, samples) in enumerate(runs):
        prefix = f"{safe_text.chart(s.label)} · " if many else ""
        colour = PALETTE[i % len(PALETTE)]
        t = [row.t_s for row in samples]
        t_max = max([t_max, *t, *(e.t_end_s or 0.0 for e in s.epochs)])
        fig.add_scatter(x=t, y=_values(samples, "cpu_percent"), mode="lines", name=f"{prefix}CPU, whole machine",
                        line={"color": colour, "width": 2.5}, connectgaps=False, hovertemplate=hover, row=1, col=1)
        cores = _values(samples, "process_cpu_percent", 100.0)
        if process:
            top_cores = max([top_cores, *(c for c in cores if c is not None)])
            fig.add_scatter(x=t, y=cores, mode="lines", name=f"{prefix}training process CPU (cores, right axis)",
                            line={"color": colour, "width": 2, "dash": "dot"},
                            connectgaps=False, row=1, col=1, secondary_y=True,
                            hovertemplate="%{x:.1f} s: %{y:.2f} cores<extra>%{fullData.name}</extra>")
        gpu_indices = sorted({g.index for row in samples for g in row.gpus or ()})
        for k, index in enumerate(gpu_indices):
            for m, (key, name, dash) in enumerate(GPU_METRICS):
                values = _gpu_values(samples, index, key)
                if m and not _drawn(values):
                    continue  # no GPM on this GPU: no line, rather than a false zero
                line = ({"color": colour, "dash": ("dash", "dashdot", "dot")[m]} if many else
                        {"color": PALETTE[(2 + m + 3 * k) % len(PALETTE)],
                         "dash": dash if len(gpu_indices) == 1 else GPU_DASHES[k % len(GPU_DASHES)]})
                fig.add_scatter(x=t, y=values, mode="lines", name=prefix + name.format(i=index),
                                line={**line, "width": 2.5 if m == 0 else 2}, connectgaps=False,
                                hovertemplate=hover, row=1, col=1)
        if memory:  # as above: the whole machine solid, the training process dotted (overlaid: the process only)
            for key, name, dash in (("ram_used_mib", "machine memory in use", "solid"),
                                    ("process_rss_mib", "training process memory", "dot"))[1 if many else 0:]:
                values = _values(samples, key, MIB_PER_GIB)
                if waiting or any(row.carries(key) for row in samples):
                    fig.add_scatter(x=t, y=values, mode="lines", name=f"{prefix}{name} (GiB)", connectgaps=False,
                                    line={"color": colour if many else PALETTE[5], "dash": dash, "width": 2},
                                    row=2, col=1,
                                    hovertemplate="%{x:.1f} s: %{y:.2f} GiB<extra>%{fullData.name}</extra>")
    # every axis in the one layout update (chart_style.layout)
    axes: dict[str, dict[str, Any]] = {a.plotly_name: {"rangemode": "tozero"} for a in fig.select_xaxes()}
    axes[_axis(fig, 2 if memory else 1, x=True)]["title"] = {"text": "seconds since start"}
    axes[_axis(fig, 1)] = {"title": {"text": "utilization %"}, "range": [0, UTIL_TOP], "tickvals": UTIL_TICKS}
    if process:
        top = max(1, math.ceil(top_cores * 1.1))
        step = max(1, int(style.nice_step(top, 4)))
        axes[_axis(fig, 1, secondary_y=True)] = {"title": {"text": "cores"}, "range": [0, top * UTIL_TOP / 100],
                                                 "tickvals": list(range(0, top + 1, step)), "showgrid": False}
    if memory:
        axes[_axis(fig, 2)] = {"title": {"text": "GiB"}, "rangemode": "tozero", "nticks": 4}
    # showlegend: name the line even when it is the only one (a CPU-only machine)
    fig = _layout(fig, title, height=480 if memory else 380, axes=axes, showlegend=True)
    if not many and series:
        # last: every layout update after them would copy and re-check all the marks and names again (about half of
        # this figure's build time when they came first)
        _marks(fig, series[0], t_max, growing=growing)
    return fig


def loss_accuracy_figure(epochs: Sequence[Epoch], *, title: str = "Loss and accuracy") -> go.Figure:
    """Training and validation loss (left axis) and accuracy (right axis) per epoch."""
    fig = go.Figure()
    x = [e.epoch for e in epochs]
    fig.add_scatter(x=x, y=[e.loss for e in epochs], name="loss", mode="lines+markers",
                    line={"color": PALETTE[1]})
    fig.add_scatter(x=x, y=[e.val_loss for e in epochs], name="val loss", mode="lines+markers",
                    line={"color": PALETTE[1], "dash": "dot"})
    fig.add_scatter(x=x, y=[e.accuracy for e in epochs], name="accuracy", mode="lines+markers",
                    line={"color": PALETTE[2]}, yaxis="y2")
    fig.add_scatter(x=x, y=[e.val_accuracy for e in epochs], name="val accuracy", mode="lines+markers",
                    line={"color": PALETTE[2], "dash": "dot"}, yaxis="y2")
    # accuracy 0-1 in steps of 0.2 (an overlaying axis left to itself syncs to the loss axis: 0.205, 0.409, ...)
    axes: dict[str, dict[str, Any]] = {
        "xaxis": {"title": {"text": "epoch"}, "tickmode": "linear", "tick0": 0, "dtick": epoch_step(len(x))},
        "yaxis": {"title": {"text": "loss"}, "rangemode": "tozero"},
        "yaxis2": {"title": {"text": "accuracy"}, "overlaying": "y", "side": "right", "range": [0, 1.0],
                   "tickmode": "array", "tickvals": [0, 0.2, 0.4, 0.6, 0.8, 1.0], "tickformat": ".1f",
                   "showgrid": False}}
    return _layout(fig, title, height=300, axes=axes)


def per_core_heatmap(samples: Sequence[Sample], *, title: str = "CPU utilization per core") -> go.Figure:
    """Heatmap of per-core CPU % over time (rows = cores)."""
    rows = thin(samples, 600)
    cores = max((len(r.cpu_per_core or ()) for r in rows), default=0)
    z = [[(r.cpu_per_core or ())[c] if c < len(r.cpu_per_core or ()) else None for r in rows] for c in range(cores)]
    plot_px = max(120, 26 * cores)
    # ticks far enough apart for their font: 0 and 100 on a short bar, 0/50/100 from 3 tick heights each
    ticks = [0, 50, 100] if plot_px >= 6 * style.TICK_PX else [0, 100]
    fig = go.Figure(go.Heatmap(x=[r.t_s for r in rows], y=[f"core {c}" for c in range(cores)], z=z,
                               zmin=0, zmax=100, colorscale="Blues",
                               colorbar={"title": {"text": "%", "side": "top"}, "tickvals": ticks, "len": 1.0,
                                         "lenmode": "fraction", "thickness": 18,
                                         "tickfont": {"size": style.TICK_PX}}))
    fig.update_xaxes(title="seconds since start")
    fig = style.layout(fig, title, height=plot_px + 70 + 60, legend=False)
    step = max(1, int(style.nice_step(cores, max(1, plot_px // 24))))
    fig.update_yaxes(tickmode="array", tickvals=[f"core {c}" for c in range(0, cores, step)])
    return fig


def to_html(figures: Sequence[go.Figure], *, title: str, intro_html: str = "") -> str:
    """A self-contained HTML page (plotly.js inlined once) holding the figures, for stakeholders."""
    parts = []
    for i, fig in enumerate(figures):
        parts.append(fig.to_html(full_html=False, include_plotlyjs=(i == 0), config={"displaylogo": False}))
    body = "\n".join(f'<div class="fig">{p}</div>' for p in parts)
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{title}</title><style>body{{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#0b1220}}"
        ".fig{margin:1.5em 0}</style></head><body>"
        f"<h1>{title}</h1>{intro_html}{body}</body></html>"
    )


# -- sweeps -----------------------------------------------------------------------------------------------------------
def _by_target(rows: Sequence[SweepRow]) -> dict[str, list[SweepRow]]:
    groups: dict[str, list[SweepRow]] = {}
    for row in rows:
        if row.params:
            label = safe_text.chart(row.target)
            if len({r.batch_size for r in rows}) > 1:
                label += f" · batch {row.batch_size}"
            if len({r.steps_per_execution for r in rows}) > 1:
                label += f" · {row.steps_per_execution} steps/exec"
            if len({r.devices for r in rows}) > 1:
                label += f" × {row.devices}"
            groups.setdefault(label, []).append(row)
    return {k: sorted(v, key=lambda r: r.params or 0) for k, v in groups.items()}


def _sweep_lines(rows: Sequence[SweepRow], key: str, title: str, y_title: str, *,
                 log_y: bool = False, also_y: Sequence[float] = ()) -> go.Figure:
    fig = go.Figure()
    groups = _by_target(rows)
    for i, (label, group) in enumerate(groups.items()):
        fig.add_scatter(x=[r.params for r in group], y=[getattr(r, key) for r in group], mode="lines+markers",
                        name=label, text=[r.size for r in group], line={"color": PALETTE[i % len(PALETTE)]},
                        hovertemplate="%{text}: %{x:,} params → %{y:,.1f}<extra>%{fullData.name}</extra>")
    fig.update_layout(xaxis=_params_axis(rows))
    if log_y:
        fig.update_layout(yaxis=style.log_axis([*(getattr(r, key) for r in rows), *also_y], y_title))
    else:
        fig.update_yaxes(title=y_title, rangemode="tozero")
    return _layout(fig, title)


def _params_axis(rows: Sequence[SweepRow | SweepSpeedup]) -> dict[str, Any]:
    return style.log_axis([r.params for r in rows], "parameters")


def sweep_utilization_figure(rows: Sequence[SweepRow]) -> go.Figure:
    """Mean utilization vs parameters: NVML GPU % for GPU targets (with SM and tensor-core activity where NVML GPM
    reported them), whole-machine CPU % for CPU targets."""
    fig = go.Figure()
    for i, (label, group) in enumerate(_by_target(rows).items()):
        lines = ([("mean_gpu_util_percent", "GPU %", "solid"), ("sm_active_percent", "SM active %", "dash"),
                  ("tensor_active_percent", "tensor active %", "dot")] if sweeps.on_gpu(group[0])
                 else [("mean_cpu_percent", "CPU %", "solid")])
        for m, (key, name, dash) in enumerate(lines):
            values = [getattr(r, key) for r in group]
            if m and all(v is None for v in values):
                continue  # no GPM: no line, rather than a false zero
            fig.add_scatter(x=[r.params for r in group], y=values, mode="lines+markers",
                            name=f"{label} ({name})", line={"color": PALETTE[i % len(PALETTE)], "dash": dash},
                            text=[r.size for r in group],
                            hovertemplate="%{text}: %{x:,} params → %{y:.0f} %<extra>%{fullData.name}</extra>")
    fig.update_layout(xaxis=_params_axis(rows))
    fig.update_yaxes(title="mean utilization %", range=[0, 105], tickvals=UTIL_TICKS)
    return _layout(fig, "Utilization vs model size")


def sweep_throughput_figure(rows: Sequence[SweepRow]) -> go.Figure:
    return _sweep_lines(rows, "samples_per_s", "Samples/s vs model size", "samples/s (steady)", log_y=True)


_SETTING_WORDS = (("batch_size", "batch"), ("steps_per_execution", "steps/call"), ("devices", "devices"))


def setting_labels(rows: Sequence[SweepRow | SweepSpeedup], *, skip: tuple[str, ...] = ()) -> list[str]:
    """Each row's settings among those that vary across ``rows`` (batch size, steps per execution, device count; not
    those in ``skip``, e.g. the chart's own x axis), e.g. ``batch 256 · devices 2``: what tells one line of a sweep
    chart from another ('' when none varies)."""
    varying = [(k, w) for k, w in _SETTING_WORDS if k not in skip and len({getattr(r, k) for r in rows}) > 1]
    return [" · ".join(f"{w} {getattr(row, k)}" for k, w in varying) for row in rows]


def sweep_speedup_figure(speedups: Sequence[SweepSpeedup], label: str) -> go.Figure:
    """Speed-up against parameter count, one line per setting that varies (batch size, steps per execution, device
    count), so points of different settings are never joined into one line."""
    fig = go.Figure()
    pts = sorted((s for s in speedups if s.params), key=lambda s: s.params or 0)
    lines: dict[str, list[SweepSpeedup]] = {}
    for s, setting in zip(pts, setting_labels(pts)):
        lines.setdefault(setting, []).append(s)
    for i, (setting, group) in enumerate(lines.items()):
        fig.add_scatter(x=[s.params for s in group], y=[s.speedup for s in group], mode="lines+markers",
                        name=safe_text.chart(f"{label} · {setting}" if setting else label),
                        text=[s.size for s in group],
                        line={"color": PALETTE[i % len(PALETTE)]},
                        hovertemplate="%{text}: %{x:,} params → %{y:.2f}x<extra></extra>")
    fig.add_hline(y=1.0, line={"color": "#9aa3b2", "dash": "dot"})
    fig.update_layout(xaxis=_params_axis(pts))
    fig.update_yaxes(title="speed-up (x)", rangemode="tozero")
    return _layout(fig, f"Speed-up vs model size: {safe_text.chart(label)}")


def scaling_figure(rows: Sequence[SweepRow]) -> go.Figure:
    """Scaling efficiency (samples/s with N devices over N x samples/s with one) against the device count, one line
    per model size (and target, batch size), with perfect scaling (100 %) dotted; the speed-up over one device on
    hover. Points without a one-device row to compare with are left out."""
    fig = go.Figure()
    lines: dict[str, list[SweepRow]] = {}
    targets = len({r.target for r in rows}) > 1
    for row, setting in zip(rows, setting_labels(rows, skip=("devices",))):  # devices is the x axis here
        if row.scaling_efficiency is None:
            continue
        label = " · ".join(part for part in (str(row.size), row.target if targets else "", setting) if part)
        lines.setdefault(label, []).append(row)
    for i, (label, group) in enumerate(lines.items()):
        group = sorted(group, key=lambda r: r.devices)
        fig.add_scatter(x=[r.devices for r in group], y=[100 * (r.scaling_efficiency or 0) for r in group],
                        mode="lines+markers", name=label, line={"color": PALETTE[i % len(PALETTE)]},
                        customdata=[r.speedup_over_one_device for r in group],
                        hovertemplate="%{x} devices → %{y:.0f} % of perfect (%{customdata:.2f}x one device)"
                                      "<extra>%{fullData.name}</extra>")
    fig.add_hline(y=100, line={"color": "#9aa3b2", "dash": "dot"})
    counts = sorted({r.devices for r in rows})
    fig.update_xaxes(title="devices (data-parallel)", tickvals=counts, type="log" if len(counts) > 2 else "linear")
    fig.update_yaxes(rangemode="tozero")
    fig.update_yaxes(title="throughput with N / (N × one device), %")
    return _layout(fig, "Scaling over devices")


def sweep_gflops_figure(rows: Sequence[SweepRow]) -> go.Figure:
    """Achieved training GFLOP/s vs parameters, with each target's measured matmul peak as a dashed line."""
    peaks = {}
    stale: set[str] = set()
    for row in rows:
        if row.peak_gflops:
            peaks[row.target] = row.peak_gflops
        if row.peak_stale:
            stale.add(row.target)
    fig = _sweep_lines(rows, "achieved_gflops", "Achieved GFLOP/s vs the measured peak", "GFLOP/s", log_y=True,
                       also_y=list(peaks.values()))
    # a peak takes its target's line colour; grey when the target has several lines (one per batch size)
    colours: dict[str, list[str]] = {}
    for i, label in enumerate(_by_target(rows)):
        colours.setdefault(label.split(" · ")[0], []).append(PALETTE[i % len(PALETTE)])
    for target, peak in sorted(peaks.items()):
        own = colours.get(safe_text.chart(target), [])
        colour = own[0] if len(own) == 1 else style.AXIS_GREY
        line = {"color": colour, "dash": "dash", "width": 1.5}
        fig.add_hline(y=peak, line=line)
        # named in the legend, below the plot: a label on the line runs into the axis or the markers
        fig.add_scatter(x=[None], y=[None], mode="lines", line=line, name=f"{safe_text.chart(target)} matmul peak {peak:,.0f} GFLOP/s"
                        + (" (a run beat it: being re-measured)" if target in stale else ""),
                        hoverinfo="skip")
    return fig


def warm_up() -> None:
    """Build and serialise one figure of each kind on tiny data.

    Plotly loads its validators lazily, so the first figure of each kind costs 100-300 ms more than the next; a server
    calls this in a background thread at start so that cost does not land on the first live refresh of a run.
    """
    samples = [Sample(t_s=float(t), cpu_percent=1.0, cpu_per_core=(1.0,), process_cpu_percent=100.0,
                      process_rss_mib=500.0, ram_used_mib=900.0, gpus=(GpuReading(index=0, util_percent=1.0),))
               for t in (0, 1)]
    epochs = [Epoch(epoch=1, epoch_seconds=1.0, includes_tracing=True, t_end_s=1.0, loss=1.0, accuracy=0.5,
                    val_loss=1.0, val_accuracy=0.5)]
    series = [Series(label="warm-up", epochs=epochs, samples=samples,
                     phases=[Phase(phase="loading data", t_s=0.0), Phase(phase="first step", t_s=0.5)])]
    for fig in (epoch_time_figure(series), utilization_figure(series), loss_accuracy_figure(epochs)):
        fig.to_dict()
        fig.to_json()
