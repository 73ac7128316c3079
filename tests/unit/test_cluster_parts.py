"""The cluster path's parts that need no cluster: how a node is named and matched, what a run holds on it, the
cluster as one machine for validation, and a cluster run's samples kept out of this machine's /metrics. The real
two-node cluster is tests/unit/test_cluster.py."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from bench.cluster.launch import ClusterLauncher, ClusterMachine, demand, slots_needed, suite_targets
from bench.cluster.nodes import Node, NodeMachine, Placement, address_of
from bench.vocab.config import ConfigError, RunConfig
from bench.vocab.errors import RecordError
from bench.hardware.monitor import Sample
from ui import metrics_route
from bench.vocab.records import Status
from bench.vocab.run_info import RunInfo
from bench.runs.run_state import RunState, snapshot_of
from tests.fixtures import NO_GPU

GPU_NODE = Node(id="95a3640e3549e9c85a5c3d1c2a4437c3", ip="10.0.0.5", alive=True, hostname="gpu1",
                resources={"CPU": 8.0, "GPU": 2.0, "accelerator_type:H100": 1.0, "memory": 1e9, "node:10.0.0.5": 1.0})
CPU_NODE = Node(id="a881ed7e58f4ed7f6e7a45150aa74723", ip="10.0.0.6", alive=True,
                resources={"CPU": 4.0, "lab_b": 1.0, "object_store_memory": 1e8})


def test_a_node_is_named_by_what_the_cluster_holds() -> None:
    assert GPU_NODE.accelerator_type == "H100" and GPU_NODE.custom == () and GPU_NODE.kind == "H100"
    assert CPU_NODE.accelerator_type is None and CPU_NODE.custom == ("lab_b",) and CPU_NODE.kind == "CPU lab_b"
    assert GPU_NODE.matches("H100") and GPU_NODE.matches("10.0.0.5") and GPU_NODE.matches("95a364")
    assert not GPU_NODE.matches("95a36") and not GPU_NODE.matches("lab_b") and CPU_NODE.matches("lab_b")
    assert GPU_NODE.label() == "node 95a3640e at 10.0.0.5: 8 CPUs, 2 GPUs (H100)"


def test_a_run_holds_the_nodes_cores_or_one_whole_gpu() -> None:
    cpu, gpu, gpus = RunConfig(device="cpu"), RunConfig(device="gpu:0"), RunConfig(device="gpus")
    assert demand(cpu, GPU_NODE) == {"num_cpus": 8, "num_gpus": 0} and slots_needed(cpu, GPU_NODE) == ("cpu", 1)
    assert demand(gpu, GPU_NODE) == {"num_cpus": 1, "num_gpus": 1} and slots_needed(gpu, GPU_NODE) == ("gpu", 1)
    assert demand(gpus, GPU_NODE)["num_gpus"] == 2


def test_the_cluster_validates_a_run_against_the_nodes_it_may_go_to() -> None:
    cpu_only = NodeMachine(node=CPU_NODE, hardware=NO_GPU, node_cores=4)
    machine = ClusterMachine("10.0.0.5:6379", [cpu_only])
    assert machine.device_choices() == ["cpu"] and machine.cores == 4 and machine.gpu_reason
    RunConfig(device="cpu").validate(machine)
    with pytest.raises(ConfigError):
        RunConfig(device="gpu:0").validate(machine)
    assert "not placed yet" in (machine.record().label or "")
    assert suite_targets(CPU_NODE, cpu_only) == ["cpu", "cpu/1"]


def test_the_cluster_trains_as_many_runs_at_once_as_it_has_devices_for_them() -> None:
    launcher = object.__new__(ClusterLauncher)  # no cluster joined: its nodes are given
    second_cpu = Node(id="b" * 32, ip="10.0.0.7", alive=True, resources={"CPU": 2.0})
    launcher.nodes = lambda: [GPU_NODE, CPU_NODE, second_cpu]  # type: ignore[method-assign]
    cpu, gpu, gpus = RunConfig(device="cpu"), RunConfig(device="gpu:0"), RunConfig(device="gpus")
    assert launcher.lanes([cpu]) == 3, "a CPU run holds a node's cores: one a node"
    assert launcher.lanes([gpu]) == 2, "a GPU run holds one whole GPU: the GPU node's two, the CPU nodes none"
    assert launcher.lanes([gpus]) == 1
    assert launcher.lanes([cpu, gpu]) == 4, "the GPU node counts its two GPU runs, each CPU node one CPU run"
    launcher.nodes = lambda: []  # type: ignore[method-assign]
    assert launcher.lanes([cpu]) == 1, "never none: a run handed waits for a node to join"


@pytest.mark.parametrize("ray, label", [
    ({"node_id": GPU_NODE.id, "kind": "H100", "address": "10.0.0.5:6379"}, "node 95a3640e (H100)"),
    ({"node_id": CPU_NODE.id, "kind": None}, "node a881ed7e (?)"),
    ({"node_id": CPU_NODE.id, "kind": " "}, "node a881ed7e (?)"),
    ({"kind": "CPU"}, None), (None, None),
])
def test_a_runs_node_is_read_from_its_info_once_or_not_at_all(ray: dict | None, label: str | None) -> None:
    placement = Placement.of(RunInfo.model_validate({"ray": ray} if ray is not None else {}))
    assert (placement.label() if placement else None) == label


@pytest.mark.parametrize("ray", [
    {"node_id": CPU_NODE.id, "kind": "CPU\nlab"}, {"node_id": 7}, "node",
    {"node_id": CPU_NODE.id, "kind": "CPU\u202elab"},  # a kind that would reverse what follows it on the page
    {"node_id": CPU_NODE.id, "custom_resources": ["lab\u2067b"]}, {"node_id": CPU_NODE.id, "hostname": "gpu\u20281"},
    {"node_id": "../etc", "kind": "CPU"}, {"node_id": "", "kind": "CPU"}, {"node_id": "a" * 129},
])
def test_a_runs_node_that_is_not_one_line_of_text_is_refused_when_read(ray: object) -> None:
    with pytest.raises(RecordError, match=r"ray"):
        RunInfo.model_validate({"ray": ray})


def test_the_address_comes_from_the_option_else_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCH_RAY_ADDRESS", " head:6379 ")
    assert address_of(None) == "head:6379" and address_of("auto") == "auto"
    monkeypatch.setenv("BENCH_RAY_ADDRESS", "")
    assert address_of(None) is None


def test_a_cluster_runs_samples_are_not_served_as_this_machines_metrics() -> None:
    def live(info: RunInfo) -> object:
        state = RunState(id=1, config=RunConfig(), created_at=time.time(), hardware=SimpleNamespace(),  # type: ignore[arg-type]
                         status=Status.RUNNING, info=info)
        state.samples.append(Sample(t_s=0.5, cpu_percent=50.0, cpu_per_core=(50.0,), process_cpu_percent=90.0,
                                    process_rss_mib=100.0, ram_used_mib=1000.0, gpus=()))
        return snapshot_of(state, queue_position=None, store_attached=False)

    assert metrics_route.own_sample(live(RunInfo())) is not None  # a local run: its sampler read this machine
    on_node = RunInfo().updated(ray={"node_id": CPU_NODE.id, "kind": CPU_NODE.kind})
    assert metrics_route.own_sample(live(on_node)) is None  # the node's reading is not this machine's
