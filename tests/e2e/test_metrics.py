"""/metrics of a running dashboard whose server sees a scripted H100 (tests/unit/fake_nvml.py, installed in the server
process by a sitecustomize on its PYTHONPATH): before any page, the machine alone under DCGM's names; while a run
started from the Train page is live, the run's series beside them, in the same scrape, read with prometheus_client's
parser as a Prometheus server reads them. What a scrape costs the server: benchmarks/metrics_scrape.py."""

from __future__ import annotations

import os
import socket
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.conftest import Server
from tests.e2e.steps import open_train, set_number, start_and_wait_running, store_of
from tests.polling import wait_for
from tests.unit import fake_nvml

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
SCRIPTED_NVML = """\
from bench.hardware.monitor import nvml
from tests.unit import fake_nvml

nvml.set_module(fake_nvml.hopper_with_gpm())
"""
H100 = fake_nvml.hopper_with_gpm().gpus[0]
DCGM = {"gpu": "0", "UUID": H100.uuid, "modelName": H100.name, "Hostname": socket.gethostname()}


@pytest.fixture(scope="module")
def gpu_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    shim = tmp_path_factory.mktemp("scripted-nvml")
    (shim / "sitecustomize.py").write_text(SCRIPTED_NVML, encoding="utf-8")
    srv = Server(tmp_path_factory.mktemp("server"), env={"PYTHONPATH": f"{shim}{os.pathsep}{ROOT}"})
    yield srv
    srv.stop()


def scrape(server: Server) -> dict[str, list]:
    """Sample name -> its samples, from one GET /metrics."""
    with urllib.request.urlopen(server.url + "/metrics", timeout=30) as answer:
        assert answer.status == 200 and answer.headers["content-type"].startswith("text/plain; version=")
        text = answer.read().decode()
    out: dict[str, list] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append(sample)
    return out


def dcgm(served: dict[str, list], name: str) -> float:
    [sample] = served[name]
    assert sample.labels == DCGM, name
    return sample.value


def test_a_live_runs_series_and_the_dcgm_named_gpu_in_one_scrape(page, gpu_server) -> None:
    before = scrape(gpu_server)
    assert dcgm(before, "DCGM_FI_DEV_GPU_UTIL") == 40.0 and dcgm(before, "DCGM_FI_DEV_FB_USED") == 10 * 1024
    assert "bench_run_status" not in before, "no page made the job queue yet"

    open_train(page, gpu_server.url)
    set_number(page, "Epochs", 4)
    set_number(page, "Training samples (0 = all)", 20000)
    set_number(page, "Batch size", 40)  # 0.5 s an epoch, replayed; held before the 4th, so it is live below
    with gpu_server.holding_last_epoch():
        run_id = start_and_wait_running(page, store_of(gpu_server))
        labels = {"run_id": str(run_id), "model": "mlp", "target": "cpu"}

        def live_with_steady_epochs() -> dict[str, list] | None:
            served = scrape(gpu_server)
            counts = [s for s in served.get("bench_epoch_seconds_count", []) if s.labels == labels]
            worker = served.get("bench_worker_resident_bytes", [])
            return served if counts and counts[0].value >= 2 and worker else None

        served = wait_for(live_with_steady_epochs, 90, "the run's series with two steady epochs in /metrics")
        running = [s for s in served["bench_run_status"] if s.value == 1]
        assert [(s.labels["status"], {k: s.labels[k] for k in labels}) for s in running] == [("running", labels)]
        assert served["bench_run_epoch"][0].value >= 3 and served["bench_run_epochs_planned"][0].value == 4
        assert served["bench_samples_per_second"][0].value > 0 and served["bench_first_epoch_seconds"][0].value > 0
        buckets = [s for s in served["bench_epoch_seconds_bucket"] if s.labels["le"] == "+Inf"]
        assert buckets[0].value == served["bench_epoch_seconds_count"][0].value
        # the worker's figures come with the run's own sample: the GPU series of the same scrape are the run's sampler's
        assert served["bench_worker_resident_bytes"][0].labels == labels
        assert dcgm(served, "DCGM_FI_DEV_POWER_USAGE") == 150.0
        assert dcgm(served, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION") > dcgm(before, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")
        assert dcgm(served, "DCGM_FI_PROF_SM_ACTIVE") == pytest.approx(0.625)
        assert dcgm(served, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE") == pytest.approx(0.18)
        assert served["bench_cpu_utilization_percent"] and served["bench_memory_used_bytes"]
