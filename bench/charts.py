"""Plotly figures shared by every page and by exported reports (plotly only, no Streamlit).

Each function takes plain run data (lists of epoch and sample dicts, as in run records) and returns a
``plotly.graph_objects.Figure``. Missing readings stay None, so lines show gaps rather than false zeros.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy  # noqa: F401 - loaded whole before any thread draws: Plotly picks NumPy up from sys.modules, and a
import plotly.graph_objects as go  # figure built while another thread is half-way through importing NumPy fails

from bench.target import Target

PALETTE = ("#1f4fd1", "#e4572e", "#17a398", "#f3a712", "#7b2cbf", "#5c6370", "#c2185b", "#2e7d32")
GPU_DASHES = ("solid", "dot", "dash", "longdash", "dashdot")
MAX_POINTS = 1500  # per line drawn; longer histories are thinned evenly for drawing only

Series = Mapping[str, Any]  # {"label": str, "epochs": [...], "samples": [...]}


def _layout(fig: go.Figure, title: str, *, height: int = 360) -> go.Figure:
    fig.update_layout(
        title={"text": title, "x": 0.01, "font": {"size": 17}},
        height=height,
        margin={"l": 55, "r": 15, "t": 60, "b": 100},
        # below the axis title: above the plot it collides with a title's second line on half-width charts
        legend={"orientation": "h", "yanchor": "top", "y": -0.3, "xanchor": "left", "x": 0.0},
        template="plotly_white",
        font={"size": 14},
        uirevision="keep",  # keep zoom across live redraws
    )
    return fig


def thin(rows: Sequence[Any], max_points: int = MAX_POINTS) -> list[Any]:
    """Evenly thin a long sequence for drawing (keeps the first and last rows)."""
    n = len(rows)
    if n <= max_points:
        return list(rows)
    step = (n - 1) / (max_points - 1)
    return [rows[round(i * step)] for i in range(max_points)]


def epoch_time_figure(series: Sequence[Series], *, title: str = "Time per epoch") -> go.Figure:
    """Bars of training seconds per epoch, one colour per run; the first (tracing) epoch drawn hatched."""
    fig = go.Figure()
    for i, s in enumerate(series):
        epochs = list(s.get("epochs") or [])
        colour = PALETTE[i % len(PALETTE)]
        fig.add_bar(
            x=[e["epoch"] for e in epochs],
            y=[e["epoch_seconds"] for e in epochs],
            name=str(s.get("label", f"run {i + 1}")),
            marker={
                "color": colour,
                "pattern": {"shape": ["/" if e.get("includes_tracing") else "" for e in epochs], "solidity": 0.35},
            },
            customdata=[[("includes tracing" if e.get("includes_tracing") else "steady"),
                         e.get("samples_per_s") or 0] for e in epochs],
            hovertemplate="epoch %{x}: %{y:.2f} s (%{customdata[0]})<br>%{customdata[1]:,.0f} samples/s<extra>%{fullData.name}</extra>",
        )
    fig.update_layout(barmode="group", bargap=0.25)
    fig.update_xaxes(title="epoch", dtick=1)
    fig.update_yaxes(title="seconds", rangemode="tozero")
    if any(e.get("includes_tracing") for s in series for e in (s.get("epochs") or [])):
        title += "<br><sup>hatched: the first epoch, which includes graph tracing</sup>"
    return _layout(fig, title)


def utilization_figure(series: Sequence[Series], *, title: str = "Utilization while training",
                       show_process: bool = True) -> go.Figure:
    """CPU % (whole machine) and each GPU's NVML utilization % over time; epoch ends as dotted lines."""
    fig = go.Figure()
    many = len(series) > 1
    shapes: list[dict[str, Any]] = []
    for i, s in enumerate(series):
        samples = thin(list(s.get("samples") or []))
        label = str(s.get("label", f"run {i + 1}"))
        prefix = f"{label} · " if many else ""
        colour = PALETTE[i % len(PALETTE)]
        t = [row["t_s"] for row in samples]
        fig.add_scatter(x=t, y=[row.get("cpu_percent") for row in samples], mode="lines",
                        name=f"{prefix}CPU, whole machine", line={"color": colour, "width": 2.5},
                        connectgaps=False, hovertemplate="%{x:.1f} s: %{y:.0f} %<extra>%{fullData.name}</extra>")
        gpu_indices = sorted({g["index"] for row in samples for g in (row.get("gpus") or [])})
        for k, index in enumerate(gpu_indices):
            values = []
            for row in samples:
                match = next((g for g in (row.get("gpus") or []) if g["index"] == index), None)
                values.append(match.get("util_percent") if match else None)
            fig.add_scatter(x=t, y=values, mode="lines", name=f"{prefix}GPU {index}",
                            line={"color": PALETTE[(i + 2 + k) % len(PALETTE)] if not many else colour,
                                  "width": 2.5, "dash": GPU_DASHES[k % len(GPU_DASHES)] if not many else "dash"},
                            connectgaps=False,
                            hovertemplate="%{x:.1f} s: %{y:.0f} %<extra>%{fullData.name}</extra>")
        if not many:  # one layout update for all epoch marks: add_vline per epoch costs ~10 ms each
            shapes += [{"type": "line", "xref": "x", "yref": "paper", "x0": e["t_end_s"], "x1": e["t_end_s"],
                        "y0": 0, "y1": 1, "line": {"color": "#9aa3b2", "dash": "dot", "width": 1}}
                       for e in s.get("epochs") or [] if e.get("t_end_s") is not None]
    if shapes:
        fig.update_layout(shapes=shapes)
    fig.update_xaxes(title="seconds since start", rangemode="tozero")
    fig.update_yaxes(title="utilization %", range=[0, 105])
    fig = _layout(fig, title)
    fig.update_layout(showlegend=True)  # name the line even when it is the only one (a CPU-only machine)
    return fig


def loss_accuracy_figure(epochs: Sequence[Mapping[str, Any]], *, title: str = "Loss and accuracy") -> go.Figure:
    """Training and validation loss (left axis) and accuracy (right axis) per epoch."""
    fig = go.Figure()
    x = [e["epoch"] for e in epochs]
    fig.add_scatter(x=x, y=[e.get("loss") for e in epochs], name="loss", mode="lines+markers",
                    line={"color": PALETTE[1]})
    fig.add_scatter(x=x, y=[e.get("val_loss") for e in epochs], name="val loss", mode="lines+markers",
                    line={"color": PALETTE[1], "dash": "dot"})
    fig.add_scatter(x=x, y=[e.get("accuracy") for e in epochs], name="accuracy", mode="lines+markers",
                    line={"color": PALETTE[2]}, yaxis="y2")
    fig.add_scatter(x=x, y=[e.get("val_accuracy") for e in epochs], name="val accuracy", mode="lines+markers",
                    line={"color": PALETTE[2], "dash": "dot"}, yaxis="y2")
    fig.update_layout(yaxis={"title": "loss", "rangemode": "tozero"},
                      yaxis2={"title": "accuracy", "overlaying": "y", "side": "right", "range": [0, 1.02]})
    fig.update_xaxes(title="epoch", dtick=1)
    return _layout(fig, title, height=320)


def per_core_heatmap(samples: Sequence[Mapping[str, Any]], *, title: str = "CPU utilization per core") -> go.Figure:
    """Heatmap of per-core CPU % over time (rows = cores)."""
    rows = thin(list(samples), 600)
    cores = max((len(r.get("cpu_per_core") or []) for r in rows), default=0)
    z = [[(r.get("cpu_per_core") or [None] * cores)[c] if c < len(r.get("cpu_per_core") or []) else None
          for r in rows] for c in range(cores)]
    fig = go.Figure(go.Heatmap(x=[r["t_s"] for r in rows], y=[f"core {c}" for c in range(cores)], z=z,
                               zmin=0, zmax=100, colorscale="Blues", colorbar={"title": "%"}))
    fig.update_xaxes(title="seconds since start")
    return _layout(fig, title, height=max(220, 60 + 28 * cores))


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
def _by_target(rows: Sequence[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        if row.get("params"):
            label = str(row.get("target"))
            if len({r.get("batch_size") for r in rows}) > 1:
                label += f" · batch {row.get('batch_size')}"
            if len({r.get("steps_per_execution") or 1 for r in rows}) > 1:
                label += f" · {row.get('steps_per_execution') or 1} steps/exec"
            groups.setdefault(label, []).append(row)
    return {k: sorted(v, key=lambda r: r["params"]) for k, v in groups.items()}


def _on_gpu(row: Mapping[str, Any]) -> bool:
    """Whether a sweep row's target is a GPU (or all of them); a row whose target is no target counts as CPU."""
    try:
        return Target.parse(str(row.get("target"))).is_gpu
    except ValueError:
        return False


def _sweep_lines(rows: Sequence[Mapping[str, Any]], key: str, title: str, y_title: str, *,
                 log_y: bool = False, y_range: list[float] | None = None) -> go.Figure:
    fig = go.Figure()
    for i, (label, group) in enumerate(_by_target(rows).items()):
        fig.add_scatter(x=[r["params"] for r in group], y=[r.get(key) for r in group], mode="lines+markers",
                        name=label, text=[r.get("size") for r in group], line={"color": PALETTE[i % len(PALETTE)]},
                        hovertemplate="%{text}: %{x:,} params → %{y:,.1f}<extra>%{fullData.name}</extra>")
    fig.update_xaxes(title="parameters", type="log")
    fig.update_yaxes(title=y_title, type="log" if log_y else "linear", range=y_range,
                     rangemode=None if log_y else "tozero")
    return _layout(fig, title)


def sweep_utilization_figure(rows: Sequence[Mapping[str, Any]]) -> go.Figure:
    """Mean utilization vs parameters: NVML GPU % for GPU targets, whole-machine CPU % for CPU targets."""
    fig = go.Figure()
    for i, (label, group) in enumerate(_by_target(rows).items()):
        gpu = [r.get("mean_gpu_util_percent") for r in group]
        is_gpu = _on_gpu(group[0])
        values = gpu if is_gpu else [r.get("mean_cpu_percent") for r in group]
        fig.add_scatter(x=[r["params"] for r in group], y=values, mode="lines+markers",
                        name=f"{label} ({'GPU' if is_gpu else 'CPU'} %)", line={"color": PALETTE[i % len(PALETTE)]},
                        text=[r.get("size") for r in group],
                        hovertemplate="%{text}: %{x:,} params → %{y:.0f} %<extra>%{fullData.name}</extra>")
    fig.update_xaxes(title="parameters", type="log")
    fig.update_yaxes(title="mean utilization %", range=[0, 105])
    return _layout(fig, "Utilization vs model size")


def sweep_throughput_figure(rows: Sequence[Mapping[str, Any]]) -> go.Figure:
    return _sweep_lines(rows, "samples_per_s", "Samples/s vs model size", "samples/s (steady)", log_y=True)


def sweep_speedup_figure(speedups: Sequence[Mapping[str, Any]], label: str) -> go.Figure:
    fig = go.Figure()
    pts = sorted((s for s in speedups if s.get("params")), key=lambda s: s["params"])
    fig.add_scatter(x=[s["params"] for s in pts], y=[s["speedup"] for s in pts], mode="lines+markers", name=label,
                    text=[s.get("size") for s in pts], line={"color": PALETTE[0]},
                    hovertemplate="%{text}: %{x:,} params → %{y:.2f}x<extra></extra>")
    fig.add_hline(y=1.0, line={"color": "#9aa3b2", "dash": "dot"})
    fig.update_xaxes(title="parameters", type="log")
    fig.update_yaxes(title="speed-up (x)", rangemode="tozero")
    return _layout(fig, f"Speed-up vs model size: {label}")


def sweep_gflops_figure(rows: Sequence[Mapping[str, Any]]) -> go.Figure:
    """Achieved training GFLOP/s vs parameters, with each target's measured matmul peak as a dashed line."""
    fig = _sweep_lines(rows, "achieved_gflops", "Achieved GFLOP/s vs the measured peak", "GFLOP/s", log_y=True)
    peaks = {}
    for row in rows:
        if row.get("peak_gflops"):
            peaks[str(row.get("target"))] = row["peak_gflops"]
    # a peak takes its target's line colour; grey when the target has several lines (one per batch size)
    colours: dict[str, list[str]] = {}
    for i, label in enumerate(_by_target(rows)):
        colours.setdefault(label.split(" · ")[0], []).append(PALETTE[i % len(PALETTE)])
    for target, peak in sorted(peaks.items()):
        own = colours.get(target, [])
        colour = own[0] if len(own) == 1 else "#6b7280"
        fig.add_hline(y=peak, line={"color": colour, "dash": "dash", "width": 1.5})
        # placed by hand: on a log axis Plotly reads an annotation's y as log10 of the value (add_hline's own
        # annotation lands off the chart)
        fig.add_annotation(x=1, xref="x domain", y=math.log10(peak), yref="y", xanchor="right", yanchor="bottom",
                           text=f"{target} matmul peak {peak:,.0f} GFLOP/s", showarrow=False,
                           font={"color": colour, "size": 11})
    return fig


def warm_up() -> None:
    """Build and serialise one figure of each kind on tiny data.

    Plotly loads its validators lazily, so the first figure of each kind costs 100-300 ms more than the next; a server
    calls this in a background thread at start so that cost does not land on the first live refresh of a run.
    """
    samples = [{"t_s": 0.0, "cpu_percent": 1.0, "cpu_per_core": [1.0], "gpus": [{"index": 0, "util_percent": 1.0}]},
               {"t_s": 1.0, "cpu_percent": 2.0, "cpu_per_core": [2.0], "gpus": [{"index": 0, "util_percent": 2.0}]}]
    epochs = [{"epoch": 1, "epoch_seconds": 1.0, "includes_tracing": True, "t_end_s": 1.0, "loss": 1.0,
               "accuracy": 0.5, "val_loss": 1.0, "val_accuracy": 0.5}]
    series = [{"label": "warm-up", "epochs": epochs, "samples": samples}]
    for fig in (epoch_time_figure(series), utilization_figure(series), loss_accuracy_figure(epochs)):
        fig.to_dict()
        fig.to_json()
