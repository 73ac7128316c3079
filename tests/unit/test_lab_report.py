"""bench.output.lab_report: the board's chart (ended runs only, a point each, coloured by device) and its exports,
with a student's name treated as the outside text it is (no markup in the chart or the HTML, no formula in the CSV)."""

from __future__ import annotations

import csv
import io

from bench.lab.assignment import Assignment
from bench.lab.board import Board, BoardRow
from bench.output import lab_report

HOSTILE = '=HYPERLINK("http://x")<script>alert(1)</script>'


def row(student: str, status: str, device: str = "cpu", **figures: object) -> BoardRow:
    fields: dict[str, object] = {"student": student, "family": "mlp", "size": "xs", "batch_size": 64, "epochs": 1,
                                 "target": "gpu:0" if device == "gpu" else "cpu", "status": status, "device": device,
                                 "params": 25450, **figures}
    return BoardRow(**fields)


BOARD = Board(lab="lab-1", state="open", assignment=Assignment(title="<b>Week</b>"), rows=(
    row("Ana", "running"), row("Ben", "queued", position=0),
    row(HOSTILE, "finished", samples_per_s=400.0, cpu_percent=150.0, ended_at=2.0),
    row("שרה", "finished", "gpu", samples_per_s=9000.0, gpu_percent=40.0, ended_at=1.0)))


def test_the_chart_draws_the_ended_runs_alone_coloured_by_device():
    fig = lab_report.figure(BOARD)
    by_name = {}
    for trace in fig.data:
        by_name.setdefault(trace.name, []).extend(trace.y)
    assert by_name == {"CPU": [400.0, 150.0], "GPU": [9000.0, 40.0]}, "speed, then the device's utilization"
    text = " ".join(t for trace in fig.data for t in trace.text)
    assert "<script>" not in text and "&lt;script&gt;" in text
    assert "<b>Week" not in fig.layout.title.text


def test_the_csv_makes_no_formula_and_keeps_every_row():
    rows = list(csv.DictReader(io.StringIO(lab_report.to_csv(BOARD))))
    assert len(rows) == 4
    assert rows[2]["student"].startswith("'="), "a spreadsheet shows it as text"


def test_the_html_escapes_names_and_isolates_them():
    page = lab_report.to_html(BOARD)
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert 'dir="auto"' in page and "<b>Week</b>" not in page
