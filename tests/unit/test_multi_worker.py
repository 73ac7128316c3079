"""A multi-worker run on this machine: two `python -m bench run --workers ... --worker-index I` processes over
localhost train one model through JAX's distributed runtime (keras.distribution.initialize), and the store reads
their two records as one run: the coordinating member's, holding the other's epochs and samples as ``members``."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from bench.vocab import records
from bench.hardware import devices
from bench.vocab.config import ConfigError, RunConfig
from bench.output import report
from bench.store import Store

ROOT = Path(__file__).resolve().parents[2]
# 512 samples: 8 steps an epoch for each member, 32 samples a device. A synchronised step over localhost took 60 ms
# on an idle 2-core machine and 180 ms at load 7, so the 32 steps an epoch of 2,048 samples cost 5 to 15 s more over
# three epochs and proved nothing more (the members' agreement, batches and halves are the same at any size).
TINY = ["--dataset", "synthetic-mnist", "--model", "mlp", "--size", "xs", "--epochs", "3", "--batch-size", "64",
        "--limit-samples", "512", "--sample-interval", "0.2", "--jit-compile"]  # XLA on, as the docs advise under JAX


def free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("localhost", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


@pytest.fixture(scope="module")
def cluster_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store both members of one two-worker run wrote to, as two processes on this machine do."""
    pytest.importorskip("jax")
    folder = tmp_path_factory.mktemp("cluster")
    store = folder / "runs.sqlite3"
    workers = ",".join(f"localhost:{port}" for port in free_ports(2))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "BENCH_STORE": str(store), "KERAS_BACKEND": "jax"}
    members = [subprocess.Popen([sys.executable, "-m", "bench", "run", "--workers", workers, "--worker-index",
                                 str(i), *TINY], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True) for i in (1, 0)]
    outs = [m.communicate(timeout=300) for m in members]
    for member, (out, err) in zip(members, outs):
        assert member.returncode == 0, out + err
    return store


@pytest.mark.slow
def test_both_members_train_and_the_store_reads_one_run(cluster_store: Path) -> None:
    store = Store(cluster_store)
    listed = store.list_runs()
    assert len(listed) == 1, "the second member's run is read as part of the first's"
    run = store.get_run(listed[0].id)
    assert run is not None and run.status == "finished"
    [member] = run.members
    assert member.status == "finished"
    chief, other = run.info.cluster, member.info.cluster
    assert chief is not None and other is not None
    assert chief.id == other.id and (chief.index, other.index) == (0, 1) and chief.size == 2
    for each in (run, member):
        assert [e.epoch for e in each.epochs] == [1, 2, 3]
        assert len(each.samples) >= 2, "each member samples its own process"
        info = each.info
        assert (info.replicas, info.global_batch_size, info.per_device_batch_size) == (2, 64, 32)
        assert info.n_train == 256, "each member trains its half of the 512 samples"
    # one model: the members' losses agree, step by step synchronised
    assert [e.loss for e in run.epochs] == pytest.approx([e.loss for e in member.epochs], rel=1e-5)


@pytest.mark.slow
def test_the_record_holds_every_member_and_imports_as_one_run(cluster_store: Path, tmp_path: Path) -> None:
    store = Store(cluster_store)
    record = store.get_run(store.list_runs()[0].id)  # the store's run is the record
    assert record is not None
    typed = records.load(json.loads(report.to_json(record)))
    assert isinstance(typed, records.RunRecord) and len(typed.members) == 1
    assert len(typed.members[0].epochs) == 3 and typed.members[0].samples

    elsewhere = Store(tmp_path / "other.sqlite3")  # the coordinator's machine, reading a file from the cluster
    ids = report.import_into_store(elsewhere, record)
    assert len(ids) == 2
    [one] = elsewhere.list_runs()
    assert len(elsewhere.get_run(one.id).members) == 1


@pytest.mark.parametrize(("changes", "says"), [
    ({"workers": "localhost:7000,localhost:7001"}, "needs both --workers"),
    ({"workers": "localhost:7000", "worker_index": 0}, "from 2 to 64 members"),
    ({"workers": "a:7000,a:7000", "worker_index": 0}, "names a member twice"),
    ({"workers": "a:7000,b:70000", "worker_index": 0}, "'b:70000' is not HOST:PORT"),
    ({"workers": "a:7000,b:7000", "worker_index": 2}, "--worker-index must be from 0 to 1"),
    ({"workers": "a:7000,b:7000", "worker_index": 0, "backend": "tensorflow"}, "set KERAS_BACKEND=jax"),
    ({"workers": "a:7000,b:7000", "worker_index": 0, "batch_size": 63}, "does not split evenly over 2 workers"),
])
def test_bad_cluster_settings_say_what_to_do(changes: dict, says: str) -> None:
    with pytest.raises(ConfigError) as caught:
        RunConfig(**{"backend": "jax", **changes}).validate(devices.discover())
    assert any(says in e for e in caught.value.errors), caught.value.errors


@pytest.mark.slow
def test_the_dashboard_draws_the_members_side_by_side(cluster_store: Path) -> None:
    from streamlit.testing.v1 import AppTest

    store = Store(cluster_store)
    record = store.get_run(store.list_runs()[0].id)  # the store's run is the record
    assert record is not None

    def page(record: "records.RunRecord") -> None:
        from ui import results

        results.members_side_by_side(record, key="members")

    main = sys.modules["__main__"]
    try:
        at = AppTest.from_function(page, args=(record,), default_timeout=60).run()
    finally:  # the script runner installs its script as __main__, which a later spawned process would run again
        sys.modules["__main__"] = main
    assert not at.exception, at.exception
    assert any("trained on 2 workers" in m.value for m in at.markdown), [m.value for m in at.markdown]
    figures = [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
    names = {trace.get("name") for fig in figures for trace in fig["data"]}
    assert any("worker 0" in str(n) for n in names) and any("worker 1" in str(n) for n in names), names
