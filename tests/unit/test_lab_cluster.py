"""The lab on a real two-node Ray cluster started here (tests/unit/test_cluster.py's fixture: a head and a second
node, one CPU each, told apart by node_a and node_b): students submit through the lab's JSON API (Starlette's test
client, no Streamlit server), the fair queue hands two runs at once, one a node, in round-robin order, each alone on
its node; none is lost, and the board names each run's node. The runs replay their epochs
(benchmarks.standins.PacedWorker): what is tested is the lab's fan-out over the cluster, not the training."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from tests.polling import wait_for
from tests.unit.test_cluster import cluster  # noqa: F401 - the two-node cluster fixture (skips without Ray)

from bench.cluster import nodes as cluster_nodes
from bench.cluster.launch import ClusterLauncher
from bench.lab.board import Board, SubmitAnswer
from bench.lab.room import LabRoom
from bench.runs.jobs import JobManager
from bench.store import Store
from benchmarks.lab_class import displacement, ideal_order
from benchmarks.standins import PacedWorker
from ui import lab_routes

pytestmark = pytest.mark.slow
ASSIGNMENT = {"title": "Cluster lab", "families": ["mlp"], "sizes": ["xs"], "epochs_min": 1, "epochs_max": 2,
              "batch_min": 32, "batch_max": 256, "targets": ["cpu"], "cap": 2, "limit_samples": 256}


@pytest.fixture
def lab(cluster: Any, tmp_path: Path,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[TestClient, LabRoom]]:
    monkeypatch.setattr(lab_routes, "presenter_key", lambda: None)
    launcher = ClusterLauncher(cluster.address)
    manager = JobManager(Store(tmp_path / "runs.sqlite3"), hardware=launcher.machine, launcher=launcher,
                         worker_target=PacedWorker(min_epoch_s=0.5, max_epoch_s=0.5), stop_grace_s=3.0)
    room = LabRoom(manager, thread=False)  # the test hands and publishes (pump, publish): every run queued first
    lab_routes.install(room)
    try:
        yield TestClient(Starlette(routes=lab_routes.routes())), room
    finally:
        lab_routes.install(None)
        room.shutdown()
        manager.shutdown()


def test_a_class_on_two_nodes_runs_round_robin_one_run_a_node_and_loses_none(lab: tuple[TestClient, LabRoom],
                                                                              cluster: Any) -> None:  # noqa: F811
    client, room = lab
    assert client.post("/lab/api/open", json=ASSIGNMENT).status_code == 200
    assert room.lanes == 2, "one CPU run on each of the two nodes"
    answers: list[SubmitAnswer] = []
    # Ana queues two runs first, then Ben, Cleo and Dan one each: first come, first served would start Ana's second
    # run second; the round robin starts it last
    for student in ("Ana", "Ana", "Ben", "Cleo", "Dan"):
        token = next((a.token for a in answers if a.student == student), None)
        answer = client.post("/lab/api/submit", json={"student": student, "family": "mlp", "size": "xs",
                                                      "batch_size": 64, "epochs": 2, "target": "cpu", "token": token})
        assert answer.status_code == 200, answer.text
        answers.append(SubmitAnswer.model_validate(answer.json()))
    def ended() -> Board | None:
        room.pump()
        room.publish()
        board = Board.model_validate(client.get("/lab/api/board").json())
        return board if all(r.status not in ("queued", "starting", "running") for r in board.rows) else None

    board = wait_for(ended, 180, "every run of the class to end", poll_s=0.2)
    rows = board.rows
    assert sorted(r.ticket for r in rows) == sorted(a.ticket for a in answers), "every run on the board"
    assert [r.status for r in rows] == ["finished"] * 5, [(r.student, r.status, r.message) for r in rows]
    ideal = ideal_order([(a.ticket, a.student) for a in answers])
    assert [r.student for r in sorted(rows, key=lambda r: ideal.index(r.ticket or 0))] == [
        "Ana", "Ben", "Cleo", "Dan", "Ana"]
    handed = [r.ticket for r in sorted(rows, key=lambda r: r.run_id or 0)]  # run ids rise in the order handed
    assert handed == ideal, "the fair queue's order, two at a time"
    started = [r.ticket for r in sorted(rows, key=lambda r: r.started_at or 0)]
    assert displacement(started, ideal) <= 1, "two handed at once may start either way round, no further"
    # one run a node at a time, the two nodes side by side, each run's node named on the board
    stored = {r.id: r for r in room.manager.store.list_runs()}
    node_of = {r.ticket: str(stored[r.run_id].info.ray.node_id) for r in rows if r.run_id}
    assert set(node_of.values()) == {n.id for n in cluster_nodes.nodes(cluster.address)}, "runs on both nodes"
    spans = sorted((r.started_at or 0, r.ended_at or 0, node_of[r.ticket]) for r in rows)
    for node in set(node_of.values()):
        mine = [s for s in spans if s[2] == node]
        assert all(b[0] >= a[1] - 0.5 for a, b in zip(mine, mine[1:])), mine  # never two at once on a node
    assert any(a[2] != b[2] and b[0] < a[1] for a, b in zip(spans, spans[1:])), "the two nodes side by side"
    for row in rows:
        assert row.node == f"node {node_of[row.ticket][:8]} ({stored[row.run_id].info.ray.kind})"
        assert row.node.endswith(("(CPU node_a)", "(CPU node_b)")) and row.samples_per_s
    marked = [r for r in stored.values() if r.info.lab is not None and r.info.lab.lab == board.lab]
    assert sorted(r.info.lab.student for r in marked) == ["Ana", "Ana", "Ben", "Cleo", "Dan"], "none lost"
