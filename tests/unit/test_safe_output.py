"""Outside text is safe by construction where it is shown: the terminal runs none of its control sequences
(bench.vocab.safe_text.terminal, the CLI's TerminalStream) and a spreadsheet runs none of its formulas nor splits its
cells into rows (bench.output.report.spreadsheet_safe)."""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
import unicodedata
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.cli import main as cli
from bench.vocab import safe_text
from bench.output import report
from bench.store import Store

ROOT = Path(__file__).resolve().parents[2]
REPORTED = [
    "\x1b[2J",
    "\x1b]8;;https://x\x1b\\click\x1b]8;;\x1b\\",
    "fine\r@SUM(1+1)*cmd|' /C calc'!A0",
    "bell\x07 del\x7f c1\x9b31m",
    "abc\u202edcba\u2066x\u2069",
    " =1+1", "\n@SUM(1)", "\t=cmd", "\u202e=cmd", "-2+3", "+x", "a,b\"c\"\nd",
]
CONTROLS = [chr(c) for c in (*range(0x20), 0x7f, *range(0x80, 0xa0))]
BIDI = [chr(c) for c in (*range(0x202a, 0x202f), *range(0x2066, 0x206a), 0x200e, 0x200f, 0x061c)]
SPECIAL = CONTROLS + BIDI + ["\u2028", "\u2029", " ", "=", "+", "-", "@", ",", '"', "'", "\\", "]8;;", "[2J"]
texts = st.lists(st.one_of(st.sampled_from(SPECIAL), st.text(max_size=3)), max_size=8).map("".join)


def raw_controls(text: str) -> list[str]:
    """Every character in ``text`` a terminal would act on rather than show."""
    return [c for c in text if unicodedata.category(c) == "Cc" or c in BIDI or c in "\u2028\u2029"]


def formula_led(cell: str) -> bool:
    lead = cell.lstrip("".join(SPECIAL[: len(CONTROLS) + len(BIDI)]) + " \u2028\u2029\u200b\ufeff")
    return lead[:1] in ("=", "+", "-", "@") or cell[:1] in ("\t", "\r")


# -- the terminal -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text", REPORTED)
def test_reported_text_reaches_the_terminal_escaped(text: str) -> None:
    shown = safe_text.terminal(text)
    assert raw_controls(shown) == []
    if "\x1b" in text:
        assert "\\x1b" in shown
    if "\r" in text:
        assert "\\r" in shown


def test_plain_text_is_unchanged_and_escapes_are_visible() -> None:
    assert safe_text.terminal("CPU (2 threads) — ok") == "CPU (2 threads) — ok"
    assert safe_text.terminal("a\x1b[2Jb\r\u202e") == "a\\x1b[2Jb\\r\\u202e"
    assert safe_text.terminal("two\nlines", keep="\n") == "two\nlines"


@settings(derandomize=True, max_examples=150, deadline=None)
@given(texts)
def test_no_generated_text_reaches_the_terminal_raw(text: str) -> None:
    assert raw_controls(safe_text.terminal(text)) == []
    assert raw_controls(safe_text.terminal(text, keep="\n").replace("\n", "")) == []


def test_the_cli_stream_escapes_everything_but_its_own_newlines() -> None:
    inner = io.StringIO()
    stream = safe_text.TerminalStream(inner)
    stream.write("label \x1b]8;;https://x\x1b\\ end\n")
    stream.control("\r\x1b[K")
    assert inner.getvalue() == "label \\x1b]8;;https://x\\x1b\\ end\n\r\x1b[K"


LABELS = ["\x1b[2Jwiped", "\x1b]8;;https://x\x1b\\link\x1b]8;;\x1b\\", "two\nrows\r\u202e"]


def test_bench_runs_prints_no_control_character(isolated_store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = Store(isolated_store)
    for label in LABELS:
        store.create_run({"epochs": 1}, status="finished", label=label)
    assert cli.main(["runs"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and raw_controls(out.replace("\n", "")) == []
    assert len(out.splitlines()) == len(LABELS)  # a label's newline starts no row
    assert "\\x1b[2Jwiped" in out


def test_bench_runs_as_a_process_prints_no_escape(isolated_store: Path) -> None:
    Store(isolated_store).create_run({"epochs": 1}, status="finished", label=LABELS[0] + LABELS[1])
    out = subprocess.run([sys.executable, "-m", "bench", "runs"], cwd=ROOT, capture_output=True, timeout=120,
                         env={**os.environ, "BENCH_STORE": str(isolated_store)})
    assert out.returncode == 0, out.stderr
    assert b"\x1b" not in out.stdout and b"\x1b" not in out.stderr
    assert b"\\x1b]8;;https://x" in out.stdout


# -- the spreadsheet --------------------------------------------------------------------------------------------------
def read_back(cells: list[str]) -> list[list[str]]:
    frame = pd.DataFrame({"label": cells, "n": range(len(cells))})
    return list(csv.reader(io.StringIO(report.spreadsheet_safe(frame).to_csv(index=False), newline="")))


def check_csv(cells: list[str]) -> None:
    rows = read_back(cells)
    assert len(rows) == len(cells) + 1 and all(len(row) == 2 for row in rows)
    for (label, _), cell in zip(rows[1:], cells):
        assert not formula_led(label), repr(label)
        assert label in (cell, "'" + cell)  # the text itself, behind a quote where it was a formula


def test_reported_cells_stay_one_cell_each_and_no_formula() -> None:
    check_csv(REPORTED)
    rows = read_back(["fine\r@SUM(1+1)*cmd|x"])
    assert rows[1][0] == "fine\r@SUM(1+1)*cmd|x"


def test_formula_behind_blanks_or_controls_is_neutralised() -> None:
    for text in (" =1+1", "\n@SUM(1)", "\x00=1", "\u202e+1", "\t-1", "\rx"):
        assert safe_text.spreadsheet_cell(text) == "'" + text
    assert safe_text.spreadsheet_cell("fine") == "fine"
    assert safe_text.spreadsheet_cell(-1.5) == -1.5


def test_column_names_are_neutralised_too() -> None:
    table = report.spreadsheet_safe(pd.DataFrame({"=cmd": ["x"]}))
    assert next(csv.reader(io.StringIO(table.to_csv(index=False)))) == ["'=cmd"]


@settings(derandomize=True, max_examples=150, deadline=None)
@given(st.lists(texts, min_size=1, max_size=4))
def test_no_generated_cell_splits_rows_or_runs_as_a_formula(cells: list[str]) -> None:
    check_csv(cells)
