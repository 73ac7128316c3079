"""MLflow logging (bench.output.mlflow_log) against a real tracking store: the `mlflow` package's own SQLite backend in
a temporary folder, started by the test, nothing mocked. Read back through MLflow's own client: a CLI run with its
params, per-epoch metrics and system metrics under MLflow's names; a comparison as a parent run with children; a
tracking server that is down (a closed port) leaves the run finished and stored, says so, and `export --mlflow`
sends it later; `import --mlflow` reads a logged run back.

The first test trains a tiny model through the entry point, as a user types it; the others replay their runs with
the worker stand-in (BENCH_WORKER_TARGET) in this process, so the file takes well under a minute on two cores. The
naming tests at the top need no MLflow and no framework."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from bench.output import mlflow_log
from bench.vocab.records import RunRecord
from bench.runs.jobs import JobManager
from bench.store import Store
from benchmarks.standins import PACED_WORKER_TARGET
from tests.fixtures import NO_GPU
from tests.fixtures import TINY as TINY_CONFIG
from tests.polling import wait_for
from tests.unit import fake_workers

ROOT = Path(__file__).resolve().parents[2]
TINY = ["--dataset", "synthetic-mnist", "--model", "mlp", "--size", "xs", "--epochs", "2", "--batch-size", "128",
        "--limit-samples", "1024", "--sample-interval", "0.2"]


# -- naming: no MLflow needed -----------------------------------------------------------------------------------------
def _record(**over: object) -> RunRecord:
    gpu = {"index": 0, "util_percent": 87.0, "mem_used_mib": 1024.0, "mem_total_mib": 4096.0, "power_w": 150.0,
           "power_limit_w": 300.0}
    data = {"status": "finished", "config": {"model": "mlp", "epochs": 2}, "started_at": 1_700_000_000.0,
            "hardware": {"cpu": {"ram_total_mib": 8192.0}},
            "epochs": [{"epoch": 1, "epoch_seconds": 2.0, "includes_tracing": True, "samples_per_s": 500.0,
                        "loss": 1.5, "accuracy": 0.5, "t_end_s": 2.5, "energy_j": {"cpu": 30.0, "gpu:0": None}},
                       {"epoch": 2, "epoch_seconds": 1.0, "includes_tracing": False, "samples_per_s": 1000.0,
                        "loss": float("nan"), "accuracy": 0.7, "t_end_s": 3.5}],
            "samples": [{"t_s": 0.5, "cpu_percent": 40.0, "ram_used_mib": 2048.0, "gpus": [gpu]},
                        {"t_s": 1.0, "cpu_percent": None, "ram_used_mib": 2048.0, "gpus": []}]}
    return RunRecord.model_validate({**data, **over})


def test_samples_become_mlflows_system_metrics_by_its_own_names_and_units():
    points = mlflow_log.system_points(_record())
    by_key = {(p.key, p.step): p for p in points}
    assert by_key["system/cpu_utilization_percentage", 0].value == 40.0
    assert ("system/cpu_utilization_percentage", 1) not in by_key, "a missing reading is no point, never a zero"
    assert by_key["system/system_memory_usage_megabytes", 0].value == pytest.approx(2048 * 2**20 / 1e6)
    assert by_key["system/system_memory_usage_percentage", 1].value == pytest.approx(25.0)
    assert by_key["system/gpu_0_utilization_percentage", 0].value == 87.0
    assert by_key["system/gpu_0_memory_usage_megabytes", 0].value == pytest.approx(1024 * 2**20 / 1e6)
    assert by_key["system/gpu_0_memory_usage_percentage", 0].value == pytest.approx(25.0)
    assert by_key["system/gpu_0_power_usage_watts", 0].value == 150.0
    assert by_key["system/gpu_0_power_usage_percentage", 0].value == pytest.approx(50.0)
    # step: the sample's number from 0; timestamp: its wall time, as MLflow's SystemMetricsMonitor logs them
    assert by_key["system/cpu_utilization_percentage", 0].timestamp_ms == 1_700_000_000_500
    assert by_key["system/system_memory_usage_megabytes", 1].timestamp_ms == 1_700_000_001_000


def test_epochs_become_metrics_with_the_epoch_as_step():
    points = mlflow_log.epoch_points(_record())
    by_key = {(p.key, p.step): p.value for p in points}
    assert by_key["epoch_seconds", 1] == 2.0 and by_key["epoch_seconds", 2] == 1.0
    assert by_key["samples_per_s", 2] == 1000.0 and by_key["accuracy", 2] == 0.7
    assert by_key["energy_joules_cpu", 1] == 30.0
    assert ("energy_joules_gpu_0", 1) not in by_key and ("loss", 2) not in by_key, "None and NaN are left out"
    assert mlflow_log.params_of(_record())["model"] == "mlp"


def test_the_engine_and_the_dashboard_form_load_no_mlflow_until_asked():
    code = ("import sys, bench.cli.main, bench.output.mlflow_log, bench.runs.jobs, ui.config_form; "
            "sys.exit('mlflow' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr or "mlflow was imported by merely loading the engine or the form"


# -- a real tracking store ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tracking(tmp_path_factory: pytest.TempPathFactory):
    """A real SQLite-backed MLflow tracking store with the "bench" experiment, its artifacts in a temporary folder."""
    mlflow = pytest.importorskip("mlflow", reason="the MLflow tests need `pip install -r requirements-dev.txt`")
    folder = tmp_path_factory.mktemp("mlflow")
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    client = mlflow.MlflowClient(tracking_uri=uri)
    experiment = client.create_experiment("bench", artifact_location=(folder / "artifacts").as_uri())
    return uri, client, experiment


def _runs(client, experiment: str, where: str = "") -> list:
    return client.search_runs([experiment], filter_string=where, order_by=["attributes.start_time ASC"])


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow  # a CLI process and its worker, run to their end, and MLflow's store
def test_a_cli_run_is_logged_with_params_epoch_and_system_metrics(tracking, tmp_path, main, monkeypatch):
    """Through the entry point, its run replayed (BENCH_WORKER_TARGET): what MLflow is handed, not the training."""
    monkeypatch.setenv("BENCH_WORKER_TARGET", PACED_WORKER_TARGET)
    uri, client, experiment = tracking
    path = tmp_path / "run.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "bench", "run", *TINY, "--device", "cpu", "--cpu-threads", "1",
                          "--json", str(path), "--mlflow", uri], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=240)
    assert out.returncode == 0, out.stderr
    record = json.loads(path.read_text())
    runs = _runs(client, experiment, f"tags.`bench.run_id` = '{record['id']}'")
    assert len(runs) == 1, out.stderr
    run = runs[0]
    assert f"logged to MLflow at {uri}" in out.stderr and run.info.run_id in out.stderr
    assert run.info.status == "FINISHED" and run.data.tags["bench.status"] == "finished"
    params = run.data.params
    assert params["model"] == "mlp" and params["epochs"] == "2" and params["limit_samples"] == "1024"
    assert params["cpu_threads"] == "1" and params["dataset"] == "synthetic-mnist"

    for key in ("epoch_seconds", "samples_per_s", "loss", "accuracy", "achieved_gflops"):
        history = client.get_metric_history(run.info.run_id, key)
        assert sorted(m.step for m in history) == [1, 2], key
        assert [m.value for m in sorted(history, key=lambda m: m.step)] == pytest.approx(
            [e[key] for e in record["epochs"]]), key

    cpu = sorted(client.get_metric_history(run.info.run_id, "system/cpu_utilization_percentage"),
                 key=lambda m: m.step)
    taken = [s for s in record["samples"] if s["cpu_percent"] is not None]
    assert len(cpu) == len(taken) >= 1
    assert [m.value for m in cpu] == pytest.approx([s["cpu_percent"] for s in taken])
    start_ms, end_ms = record["started_at"] * 1000, record["ended_at"] * 1000 + 1000
    assert all(start_ms <= m.timestamp <= end_ms for m in cpu), "each sample at its own wall time"
    assert [m.timestamp for m in cpu] == sorted(m.timestamp for m in cpu)
    memory = client.get_metric_history(run.info.run_id, "system/system_memory_usage_megabytes")
    assert memory and all(m.value > 0 for m in memory)
    gpus = {g["index"] for s in record["samples"] for g in s["gpus"] or []}
    logged = set(run.data.metrics)
    for index in gpus:  # a machine with a GPU: its readings under MLflow's names
        assert f"system/gpu_{index}_utilization_percentage" in logged
    if not gpus:
        assert not any(k.startswith("system/gpu_") for k in logged)

    artifacts = {a.path for a in client.list_artifacts(run.info.run_id, "bench")}
    assert artifacts == {"bench/run.json", "bench/report.html"}

    # read back: the logged record through the checked import, into a store of its own
    monkeypatch.setenv("BENCH_STORE", str(tmp_path / "other" / "runs.sqlite3"))
    imported = main("import", run.info.run_id, "--mlflow", uri)
    assert imported.returncode == 0, imported.stderr
    back = Store().get_run(1)
    assert back is not None and back.label is not None and back.label.startswith("imported: ")
    assert [e.epoch_seconds for e in back.epochs] == [e["epoch_seconds"] for e in record["epochs"]]
    assert main("import", "no-such-run", "--mlflow", uri).returncode == 2


@pytest.mark.slow  # runs worker processes to their end
def test_a_comparison_is_a_parent_run_with_one_child_per_run(tracking, main, monkeypatch):
    uri, client, experiment = tracking
    monkeypatch.setenv("BENCH_WORKER_TARGET", PACED_WORKER_TARGET)
    out = main("compare", "--targets", "cpu/1,cpu", *TINY, "--mlflow", uri)
    assert out.returncode == 0, out.stderr
    parents = _runs(client, experiment, "tags.`bench.kind` = 'comparison'")
    assert len(parents) == 1
    parent = parents[0]
    headline = parent.data.tags["headline"]
    assert headline and headline in out.stdout, "the headline the terminal printed"
    assert parent.data.tags["mlflow.note.content"] == headline
    assert parent.data.params["epochs"] == "2" and "cpu_threads" not in parent.data.params, "shared settings only"
    children = _runs(client, experiment, f"tags.`mlflow.parentRunId` = '{parent.info.run_id}'")
    assert [c.data.tags["bench.vocab.target"] for c in children] == ["cpu/1", "cpu"]
    for child in children:
        assert child.info.status == "FINISHED"
        assert client.get_metric_history(child.info.run_id, "epoch_seconds")
        assert client.get_metric_history(child.info.run_id, "system/cpu_utilization_percentage")
    assert {a.path for a in client.list_artifacts(parent.info.run_id, "bench")} == {"bench/comparison.json"}


@pytest.mark.slow  # runs a worker process to its end
def test_a_server_that_is_down_leaves_the_run_finished_and_says_how_to_send_it_later(tracking, main, monkeypatch):
    uri, client, experiment = tracking
    monkeypatch.setenv("BENCH_WORKER_TARGET", PACED_WORKER_TARGET)
    down = f"http://127.0.0.1:{_closed_port()}"
    out = main("run", *TINY, "--mlflow", down)
    assert out.returncode == 0, out.stderr
    stored = Store().list_runs()
    assert [str(r.status) for r in stored] == ["finished"], "the run is finished and stored"
    run_id = stored[0].id
    assert f"warning: MLflow at {down} did not take it after a retry" in out.stderr
    assert f"export {run_id} --mlflow {down}" in out.stderr

    before = len(_runs(client, experiment))
    sent = main("export", str(run_id), "--mlflow", uri)  # what could not be logged is sent later
    assert sent.returncode == 0, sent.stderr
    runs = _runs(client, experiment)
    assert len(runs) == before + 1
    assert runs[-1].data.tags["bench.run_id"] == str(run_id)
    assert main("export", str(run_id), "--mlflow", down).returncode == 1, "an explicit send that fails says so"


@pytest.mark.slow  # runs worker processes to their end
def test_the_dashboard_logs_each_finished_run_in_the_background(tracking, isolated_store, monkeypatch):
    uri, client, experiment = tracking
    monkeypatch.setenv("BENCH_MLFLOW_URI", uri)
    manager = JobManager(Store(isolated_store), hardware=NO_GPU, worker_target=fake_workers.quick)
    dashboard = mlflow_log.dashboard_log(manager.finished_hooks)
    assert dashboard.uri == uri, "BENCH_MLFLOW_URI is the setting's default"
    assert mlflow_log.dashboard_log(manager.finished_hooks) is dashboard, "one per server"
    held = threading.Event()
    manager.finished_hooks["held"] = lambda record: held.wait(60)  # a hook that hangs: a server that never answers
    try:
        first = manager.submit(TINY_CONFIG)
        second = manager.submit(TINY_CONFIG.replace(epochs=1))
        assert manager.wait(second, timeout_s=60).status == "finished", "a hanging hook delays no run"
        for run_id in (first, second):
            wait_for(lambda: _runs(client, experiment, f"tags.`bench.run_id` = '{run_id}'"), timeout_s=60,
                     what=f"run {run_id} in MLflow")
        assert dashboard.last is not None and "logged as MLflow run" in dashboard.last
    finally:
        held.set()
        manager.shutdown()


def test_mlflow_without_a_uri_needs_bench_mlflow_uri(main, monkeypatch):
    monkeypatch.delenv("BENCH_MLFLOW_URI", raising=False)
    out = main("run", *TINY, "--mlflow")
    assert out.returncode == 2 and "BENCH_MLFLOW_URI" in out.stderr
    out = main("run", *TINY, "--mlflow", "localhost:5000")
    assert out.returncode == 2 and "is not an MLflow tracking URI" in out.stderr


@pytest.mark.slow  # runs worker processes to their end
def test_the_dashboard_logs_a_comparison_as_a_parent_with_its_children(tracking, isolated_store, monkeypatch):
    """A comparison started on the Compare page is logged once its last run ended, as the CLI's --mlflow logs one:
    a parent with a child per run, its headline a tag; its runs are not logged a second time on their own."""
    uri, client, experiment = tracking
    monkeypatch.setenv("BENCH_MLFLOW_URI", uri)
    manager = JobManager(Store(isolated_store), hardware=NO_GPU, worker_target=fake_workers.quick)
    dashboard = mlflow_log.dashboard_log(manager.finished_hooks, manager.group_hooks)
    before = {r.info.run_id for r in _runs(client, experiment)}  # the module's other tests log to the same experiment
    try:
        group_id = manager.groups.submit("compare", [TINY_CONFIG.with_target("cpu/1"), TINY_CONFIG.with_target("cpu")],
                                         targets=["cpu/1", "cpu"])
        run_ids = manager.groups.latest("compare").run_ids
        assert manager.groups.latest("compare").id == group_id
        for run_id in run_ids:
            assert manager.wait(run_id, timeout_s=60).status == "finished"
        wait_for(lambda: dashboard.last is not None and "comparison of runs" in dashboard.last, timeout_s=60,
                 what="the comparison sent to MLflow")  # the parent, then each child: all sent by then
        [parent] = [r for r in _runs(client, experiment, "tags.`bench.kind` = 'comparison'")
                    if r.info.run_id not in before]
        assert parent.data.tags["headline"]
        children = _runs(client, experiment, f"tags.`mlflow.parentRunId` = '{parent.info.run_id}'")
        assert sorted(c.data.tags["bench.run_id"] for c in children) == sorted(str(i) for i in run_ids)
        assert len(_runs(client, experiment)) - len(before) == 3, "the runs are children, not logged again alone"
        assert "logged as MLflow run" in dashboard.last and "with 2 children" in dashboard.last
    finally:
        manager.shutdown()


def test_a_dashboard_group_reaches_mlflow_as_its_document_built_by_the_run_queue(monkeypatch):
    """The run queue hands a group's hook its runs and the document the CLI would write for them (the figures take
    plain typed data, never the queue's RunGroup): a comparison, a sweep, or none for a lesson step."""
    from bench.vocab import records
    from bench.runs import jobs
    from bench.runs.run_state import RunGroup

    runs = [_record(id=1), _record(id=2)]
    comparison = jobs.group_document(RunGroup(id=1, kind="compare", targets=("cpu",), created_at=0.0,
                                              prices={"cpu": 0.5}), runs)
    assert isinstance(comparison, records.Comparison) and [r.id for r in comparison.runs] == [1, 2]
    sweep = jobs.group_document(RunGroup(id=2, kind="sweep", targets=("cpu",), created_at=0.0), runs)
    assert isinstance(sweep, records.Sweep) and [r.run_id for r in sweep.rows] == [1, 2]
    assert jobs.group_document(RunGroup(id=3, kind="lesson", targets=("cpu",), created_at=0.0), runs) is None

    sent: list[tuple[str, str, list]] = []
    monkeypatch.setattr(mlflow_log, "log_group", lambda uri, kind, runs, *, headline, document: sent.append(
        (kind, headline, json.loads(document())["schema"])) or mlflow_log.Outcome(uri=uri, run_ids=("p",)))
    alone: list[int | None] = []
    monkeypatch.setattr(mlflow_log, "log_run", lambda uri, run: alone.append(run.id) or mlflow_log.Outcome(
        uri=uri, run_ids=("r",)))
    log = mlflow_log.DashboardLog(uri="http://127.0.0.1:1")
    log.group(runs, comparison)
    log.group(runs, sweep)
    log.group(runs, None)
    assert [(kind, schema) for kind, _, schema in sent] == [("comparison", "bench.comparison/1"),
                                                             ("sweep", "bench.sweep/1")]
    assert sent[1][1].startswith("sweep of 2 point(s)") and alone == [1, 2]
