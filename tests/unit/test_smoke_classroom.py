"""The smoke run of benchmarks/classroom.py (with benchmarks/viewers.py, its emulated viewers), on its current
command line at its smallest size (``--smoke``): one class of one viewer, its runs replayed (``--paced``: no framework
loaded; a real pass trains), its waits on the clock short."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.smoke import needs_browser, read, run


@pytest.mark.slow
def test_classroom_smoke_serves_one_emulated_viewer(tmp_path: Path) -> None:
    needs_browser()
    out = tmp_path / "classroom.json"
    run(["-m", "benchmarks.classroom", "--smoke", "--out", str(out)], tmp_path, timeout_s=300)
    result = read(out)
    assert [r["viewers"] for r in result["runs"]] == [1], "one class of one emulated viewer"
    assert len(result["baselines"]) == 2 and result["baseline"]["steady_epoch_s"]
    assert result["paced"] is True
