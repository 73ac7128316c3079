"""The smoke runs of benchmarks/lab_class.py on its current command line at its smallest size (``--smoke``: four
students submitting at once to a real dashboard server, two of them with a second run queued first, a replayed worker),
on this machine and on a two-node Ray cluster started here (``--cluster``): the runs start in the round-robin order
(on the cluster, two at a time, one on each node), every one ends finished and is stored marked with the lab
(docs/LAB.md)."""

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


@pytest.mark.slow
def test_lab_class_smoke_on_a_two_node_cluster_hands_a_run_to_each_node(tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="Ray is not installed: pip install -r requirements-ray.txt")
    out = tmp_path / "lab.json"
    run(["-m", "benchmarks.lab_class", "--smoke", "--cluster", "--out", str(out)], tmp_path, timeout_s=300)
    result = read(out)
    assert result["runs_answered"] == 6 and not result["refused"]
    assert result["lanes"] == 2 and len(result["runs_per_node"]) == 2, result["runs_per_node"]
    assert sum(result["runs_per_node"].values()) == 6
    assert all(node.endswith(("(CPU node_a)", "(CPU node_b)")) for node in result["runs_per_node"])
    assert result["order_ok"] and result["handed_displacement"] <= 1
    assert result["lost"] == 0 and result["runs_stored_marked"] == 6
