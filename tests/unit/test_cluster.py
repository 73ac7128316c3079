"""Runs, sweeps and faults on a real Ray cluster started on this machine: a head and a second node (two raylets, two
node ids, one host, as Ray's own tests start them with ray.cluster_utils.Cluster), each with a custom resource
standing for a node type (node_a, node_b). The runs replay their epochs (benchmarks.standins.PacedWorker): what is
tested is the placement, the events and samples coming home, the record and the faults, not the training. The lab
on the cluster is here too (below): students submit through the lab's JSON API, the fair queue hands a run to each
node.

One cluster for the module (a start is ~10 CPU-s of Ray processes); the test that removes the second node runs last.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

os.environ.setdefault("RAY_ENABLE_AUTO_CONNECT", "0")  # as bench.cluster sets it: no thread joins again by itself
if importlib.util.find_spec("ray") is None:  # looked up, not imported: every test process collects this file
    pytest.skip("Ray is not installed: pip install -r requirements-ray.txt", allow_module_level=True)

from bench.cluster import nodes as cluster_nodes  # noqa: E402
from bench.cluster import launch  # noqa: E402
from bench.cluster.launch import ClusterLauncher  # noqa: E402
from bench.lab.board import Board, SubmitAnswer  # noqa: E402
from bench.lab.room import LabRoom  # noqa: E402
from bench.vocab.config import RunConfig  # noqa: E402
from bench.vocab.records import Status  # noqa: E402
from bench.runs.jobs import JobManager  # noqa: E402
from bench.store import Store  # noqa: E402
from benchmarks.lab_class import displacement, ideal_order  # noqa: E402
from benchmarks.standins import PACED_WORKER_TARGET, PacedWorker  # noqa: E402
from tests.polling import wait_for  # noqa: E402
from tests.unit.test_cli import bench  # noqa: E402
from ui import lab_routes  # noqa: E402

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
MB = 1024 * 1024


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    """A head (node_a) and a second node (node_b), one CPU each, small object stores, no dashboard; this process
    joins it as the driver."""
    from ray.cluster_utils import Cluster

    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    started = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "resources": {"node_a": 1}, "object_store_memory": 80 * MB, "include_dashboard": False})
    second = started.add_node(num_cpus=1, resources={"node_b": 1}, object_store_memory=80 * MB)
    started.wait_for_nodes()
    started.second = second
    try:
        yield started
    finally:
        cluster_nodes.disconnect()
        started.shutdown()


def _manager(cluster: Any, tmp_path: Path, epoch_s: float, where: str | None = None) -> JobManager:
    launcher = ClusterLauncher(cluster.address, where=where)
    return JobManager(Store(tmp_path / "runs.sqlite3"), hardware=launcher.machine, launcher=launcher,  # type: ignore[arg-type]
                      worker_target=PacedWorker(min_epoch_s=epoch_s, max_epoch_s=epoch_s), stop_grace_s=3.0)


def _config(epochs: int, batch_size: int = 100) -> RunConfig:
    return RunConfig(epochs=epochs, limit_samples=2000, batch_size=batch_size, sample_interval_s=0.2)


def _node_of(record: Any) -> str:
    return str(record.info.ray.node_id)


def test_the_cluster_lists_both_nodes_with_their_resources_and_hardware(cluster: Any) -> None:
    found = cluster_nodes.inventory(cluster.address)
    assert len({n["node_id"] for n in found}) == 2  # one host, two nodes told apart by Ray's node id
    assert sorted(r for n in found for r in n["custom_resources"]) == ["node_a", "node_b"]
    assert all(n["hardware"] and n["cores"] >= 1 for n in found)
    # the suite runs once per kind of node: here two kinds, told apart by their custom resources
    kinds = launch.node_kinds(ClusterLauncher(cluster.address))
    assert sorted(node.kind for node, _ in kinds) == ["CPU node_a", "CPU node_b"]
    assert all(launch.suite_targets(node, machine)[0] == "cpu" for node, machine in kinds)


def test_a_sweep_of_four_points_runs_on_both_nodes_live_and_stored_with_where(cluster: Any, tmp_path: Path) -> None:
    manager = _manager(cluster, tmp_path, epoch_s=0.6)
    group = manager.groups.submit("sweep", [_config(3, b) for b in (50, 100, 200, 400)], targets=["cpu"])
    ids = manager.groups.latest("sweep").run_ids
    assert manager.groups.of_run(ids[0]).id == group
    live = wait_for(lambda: [s for s in map(manager.snapshot, ids) if s.active and s.epochs and s.samples], 60,
                    "a point's epochs and the node's samples arriving live")
    assert live[0].info.ray.node_id  # where it runs, known while it runs
    done = [manager.wait(i, timeout_s=90) for i in ids]
    assert [s.status for s in done] == [Status.FINISHED] * 4, [s.error for s in done]
    stored = [manager.store.get_run(i) for i in ids]
    assert {_node_of(r) for r in stored} == {n.id for n in cluster_nodes.nodes(cluster.address)}
    # side by side: runs on the two nodes overlapped in time (each node's device held by one run at a time)
    spans = sorted((r.started_at, r.ended_at, _node_of(r)) for r in stored)
    assert any(a[2] != b[2] and b[0] < a[1] for a, b in zip(spans, spans[1:]))
    for node in {s[2] for s in spans}:
        mine = [s for s in spans if s[2] == node]
        assert all(b[0] >= a[1] - 0.5 for a, b in zip(mine, mine[1:])), mine  # never two at once on one node
    for record in stored:
        assert record.status == Status.FINISHED and len(record.epochs) == 3 and record.samples
        where = record.info.ray
        assert where.custom_resources in (("node_a",), ("node_b",)) and where.held == {"num_cpus": 1}
        assert record.hardware.cpu is not None  # the node's own discovery, not the "not placed yet" label
        # epochs on the samples' clock: each epoch ends after it starts, within the run's sampled span
        ends = [e.t_end_s for e in record.epochs]
        assert ends == sorted(ends) and 0 < ends[-1] <= record.samples[-1].t_s + 1.0
    manager.shutdown()


def test_a_run_placed_by_a_custom_resource_goes_to_that_node_and_stop_ends_it_in_seconds(cluster: Any,
                                                                                          tmp_path: Path) -> None:
    manager = _manager(cluster, tmp_path, epoch_s=1.0, where="node_b")
    run_id = manager.submit(_config(30))
    wait_for(lambda: manager.snapshot(run_id).epochs, 60, "the run's first epoch")
    asked = time.monotonic()
    assert manager.stop(run_id)
    snap = manager.wait(run_id, timeout_s=30)
    took = time.monotonic() - asked
    assert snap.status == Status.STOPPED and took < 5.0, (snap.status, took)
    record = manager.store.get_run(run_id)
    assert record.status == Status.STOPPED and record.epochs
    assert record.info.ray.custom_resources == ("node_b",)
    manager.shutdown()


def test_no_node_matching_is_refused_with_what_the_cluster_holds(cluster: Any) -> None:
    with pytest.raises(cluster_nodes.ClusterError, match="node_a, node_b"):
        ClusterLauncher(cluster.address, where="H100")


def test_the_cli_sweeps_on_the_cluster_and_an_unreachable_one_exits_2(cluster: Any, isolated_store: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCH_WORKER_TARGET", PACED_WORKER_TARGET)
    out = bench("sweep", "--cluster", cluster.address, "--targets", "cpu", "--sizes", "xs,s", "--epochs", "2",
                "--limit-samples", "500", "--batch-size", "100", timeout=180)
    assert out.returncode == 0, out.stderr
    runs = Store(isolated_store).list_runs()
    assert len(runs) == 2 and all(r.status == Status.FINISHED for r in runs)
    assert all(r.info.ray.node_id for r in runs)
    refused = bench("run", "--cluster", "127.0.0.1:9", "--epochs", "1", timeout=60)
    assert refused.returncode == 2 and "cannot be reached" in refused.stderr, refused.stderr
    assert len(Store(isolated_store).list_runs()) == 2  # nothing queued for the unreachable cluster


def test_a_supervisor_that_dies_mid_run_leaves_it_interrupted_and_its_node_free(cluster: Any, isolated_store: Path,
                                                                               monkeypatch: pytest.MonkeyPatch,
                                                                               tmp_path: Path) -> None:
    monkeypatch.setenv("BENCH_WORKER_TARGET", PACED_WORKER_TARGET)
    child = subprocess.Popen([sys.executable, "-m", "bench", "run", "--cluster", cluster.address, "--on", "node_b",
                              "--epochs", "40"], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        store = Store(isolated_store)
        wait_for(lambda: any(r.epochs for r in store.list_runs()), 90, "the CLI's run training on the cluster")
    finally:
        child.kill()  # the dashboard or CLI gone: no supervisor, no Stop, no end written
        child.wait(10)
    run = wait_for(lambda: next((r for r in store.list_runs() if r.status == Status.INTERRUPTED), None), 30,
                   "the orphaned run marked interrupted")
    assert run.epochs and run.info.ray.custom_resources == ("node_b",)
    # its agent ended with its owner, so node_b's cores are free for the next run
    manager = _manager(cluster, tmp_path, epoch_s=0.3, where="node_b")
    after = manager.wait(manager.submit(_config(2)), timeout_s=60)
    assert after.status == Status.FINISHED, after.error
    manager.shutdown()


# -- the lab on the cluster ---------------------------------------------------------------------------------------
# The lab's students submit through its JSON API (Starlette's test client, no Streamlit server): the fair queue hands
# two runs at once, one a node, in round-robin order, each alone on its node; none is lost, and the board names each
# run's node.
ASSIGNMENT = {"title": "Cluster lab", "families": ["mlp"], "sizes": ["xs"], "epochs_min": 1, "epochs_max": 2,
              "batch_min": 32, "batch_max": 256, "targets": ["cpu"], "cap": 2, "limit_samples": 256}


@pytest.fixture
def lab(cluster: Any, tmp_path: Path,
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
                                                                              cluster: Any) -> None:
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


def test_a_lost_node_interrupts_its_run_with_its_epochs_and_the_group_goes_on(cluster: Any, tmp_path: Path) -> None:
    manager = _manager(cluster, tmp_path, epoch_s=0.8)
    manager.groups.submit("sweep", [_config(6, b) for b in (50, 100, 200)], targets=["cpu"])
    ids = manager.groups.latest("sweep").run_ids
    def on_second() -> Any:
        return next((s for s in map(manager.snapshot, ids)
                     if s.info.ray is not None and s.info.ray.custom_resources == ("node_b",)
                     and len(s.epochs) >= 2), None)

    doomed = wait_for(on_second, 60, "a run on the second node with two epochs")
    second = doomed.info.ray.node_id
    cluster.remove_node(cluster.second)
    lost = manager.wait(doomed.id, timeout_s=60)
    assert lost.status == Status.INTERRUPTED, (lost.status, lost.error)
    assert lost.error is not None and lost.error.error_type == "NodeLost" and second[:8] in lost.error.message
    record = manager.store.get_run(doomed.id)
    assert record.status == Status.INTERRUPTED and len(record.epochs) >= 2
    others = [manager.wait(i, timeout_s=120) for i in ids if i != doomed.id]
    assert [s.status for s in others] == [Status.FINISHED] * len(others), [s.error for s in others]
    manager.shutdown()
