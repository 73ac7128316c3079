"""The smoke run of benchmarks/lab_class.py on its current command line at its smallest size (``--smoke``: four
students submitting at once to a real dashboard server, two of them with a second run queued first, a replayed worker): the runs start
in the round-robin order, every one ends finished and is stored marked with the lab (docs/LAB.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.smoke import read, run


@pytest.mark.slow
def test_lab_class_smoke_runs_four_students_round_robin(tmp_path: Path) -> None:
    out = tmp_path / "lab.json"
    run(["-m", "benchmarks.lab_class", "--smoke", "--out", str(out)], tmp_path, timeout_s=300)
    result = read(out)
    assert result["runs_answered"] == 6 and not result["refused"]
    assert result["started_in_ideal_order"] and result["displacement"] == 0
    assert result["fifo_displacement"] > 0, "the pass must tell the round robin from first come, first served"
    assert result["lost"] == 0 and result["runs_stored_marked"] == 6
    assert result["board_answers"] > 0 and result["board_errors"] == 0
