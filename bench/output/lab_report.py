"""A lab's board as the class sees it and as the teacher takes it home: the shared chart (each ended run a point,
its model's parameters against samples/s and against the utilization of the device it trained on, coloured by
device), and the exports (JSON: the board record; CSV: one row a run, spreadsheet-safe; HTML: the chart and the
table in one file). Names are outside text: escaped in the chart (bench.vocab.safe_text.chart) and the HTML, made
no formula in the CSV."""

from __future__ import annotations

import html
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from bench.lab.board import Board, BoardRow
from bench.output import chart_style
from bench.output.report import spreadsheet_safe
from bench.vocab import records, safe_text

DEVICE_COLOURS = {"cpu": chart_style.PALETTE[0], "gpu": chart_style.PALETTE[1]}
ENDED = records.TERMINAL  # the one spelling of the ended statuses
COLUMNS = ("student", "family", "size", "batch_size", "epochs", "target", "status", "node", "params",
           "samples_per_s", "cpu_percent", "gpu_percent", "seconds", "run_id")


def points(board: Board) -> list[BoardRow]:
    """The runs the chart draws: ended with a measured rate, oldest first."""
    return sorted((r for r in board.rows if r.status in ENDED and r.samples_per_s and r.params),
                  key=lambda r: r.ended_at or 0.0)


def utilization(row: BoardRow) -> float | None:
    """The busy share of the device the run trained on: the GPU's utilization, or the process's CPU (100 a core)."""
    return row.gpu_percent if row.device == "gpu" else row.cpu_percent


def figure(board: Board) -> go.Figure:
    """Parameters against samples/s (left) and against the device's utilization (right), a point a run."""
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1,
                        subplot_titles=("Samples per second", "Device utilization (%; CPU: 100 a core)"))
    rows = points(board)
    for device, colour in DEVICE_COLOURS.items():
        mine = [r for r in rows if r.device == device]
        text = [f"{safe_text.chart(r.student)}<br>{r.family} {r.size} · batch {r.batch_size} · {r.target}"
                for r in mine]
        common: dict[str, Any] = dict(mode="markers", marker={"size": 13, "color": colour, "line": {"width": 1,
                                      "color": "#ffffff"}}, text=text, legendgroup=device,
                                      hovertemplate="%{text}<br>%{x:,} parameters<br>%{y:,.0f}<extra></extra>")
        fig.add_trace(go.Scatter(x=[r.params for r in mine], y=[r.samples_per_s for r in mine],
                                 name=device.upper(), **common), row=1, col=1)
        fig.add_trace(go.Scatter(x=[r.params for r in mine], y=[utilization(r) for r in mine],
                                 name=device.upper(), showlegend=False, **common), row=1, col=2)
    for col in (1, 2):  # 1-2-5 ticks (Plotly's own label every minor tick)
        fig.update_xaxes(row=1, col=col, **chart_style.log_axis([r.params for r in rows], "parameters"))
    fig.update_yaxes(row=1, col=1, rangemode="tozero", **chart_style.axis_style(title={"text": "samples/s"}))
    fig.update_yaxes(row=1, col=2, rangemode="tozero", **chart_style.axis_style(title={"text": "%"}))
    fig.update_layout(height=460, margin={"l": 60, "r": 20, "t": 60, "b": 50}, font={"size": chart_style.FONT_PX},
                      legend={"orientation": "h", "y": -0.2}, uirevision="lab",
                      title={"text": f"{safe_text.chart(board.assignment.title if board.assignment else 'Lab')}: "
                                     f"{len(rows)} run{'s' * (len(rows) != 1)} measured"})
    return fig


def table(board: Board) -> list[dict[str, Any]]:
    """The results table: every row of the board, the columns the exports write."""
    return [{k: getattr(r, k) for k in COLUMNS} for r in board.rows]


def to_csv(board: Board) -> str:
    import pandas as pd

    return spreadsheet_safe(pd.DataFrame(table(board), columns=list(COLUMNS))).to_csv()


def to_json(board: Board) -> str:
    return board.model_dump_json(indent=2)


def to_html(board: Board) -> str:
    """One file: the chart (plotly.js inlined, so it opens offline) and the table, every name escaped."""
    chart = figure(board).to_html(full_html=False, include_plotlyjs=True)
    head = "".join(f"<th>{html.escape(c)}</th>" for c in COLUMNS)
    body = "".join("<tr>" + "".join(f"<td dir=\"auto\">{html.escape('' if v is None else str(v))}</td>"
                                    for v in row.values()) + "</tr>" for row in table(board))
    title = html.escape(board.assignment.title if board.assignment else "Lab")
    return (f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title></head><body>"
            f"<h1>{title}</h1>{chart}<table border=\"1\" cellspacing=\"0\" cellpadding=\"4\"><thead><tr>{head}</tr>"
            f"</thead><tbody>{body}</tbody></table></body></html>")
