"""bench.output.prometheus and the /metrics route: DCGM's names, units and labels from a scripted NVML, the run's
figures, a figure not measured left out, one reading shared by every scrape, and the setting that turns it off.
The text is read back with prometheus_client's own parser, as a Prometheus server reads it."""

from __future__ import annotations

import dataclasses

import pytest
from prometheus_client.parser import text_string_to_metric_families
from starlette.applications import Starlette
from starlette.testclient import TestClient

from bench.vocab.config import RunConfig
from bench.hardware import devices
from bench.vocab.record_types import GpuSpec
from bench.hardware.monitor import Sampler, nvml
from bench.output import prometheus
from bench.vocab.readings import GpuReading, Sample, epochs_of
from bench.vocab.run_info import RunInfo
from bench.runs.run_state import Progress, RunSnapshot
from tests.fixtures import NO_GPU
from tests.unit import fake_nvml
from tests.fixtures import fresh_nvml  # noqa: F401 - the fixture, used by name

HOPPER = fake_nvml.hopper_with_gpm().gpus[0]
MACHINE = NO_GPU.updated(hostname="node-7", gpus=[GpuSpec(
    index=0, name=HOPPER.name, mem_total_mib=80 * 1024.0, driver="550.54.15", cuda_driver_version="12.4",
    uuid=HOPPER.uuid)], gpu_reason=None)


pytestmark = pytest.mark.usefixtures("fresh_nvml")


def parsed(text: bytes) -> dict[str, list]:
    """Sample name -> its samples, as prometheus_client's parser reads the text."""
    out: dict[str, list] = {}
    for family in text_string_to_metric_families(text.decode()):
        for sample in family.samples:
            out.setdefault(sample.name, []).append(sample)
    return out


def hopper_sample() -> Sample:
    """A sample of the scripted H100, taken by the monitor's own sampler (the second: GPM needs an interval)."""
    nvml.set_module(fake_nvml.hopper_with_gpm())
    sampler = Sampler(0.5)
    sampler.sample_once()
    try:
        return sampler.sample_once()
    finally:
        sampler.stop()


def snapshot(status: str = "running", epochs: tuple[float, ...] = (3.0, 1.2, 0.8, 30.0), **changes) -> RunSnapshot:
    raw = [{"epoch": i + 1, "epoch_seconds": s, "samples_per_s": 1000.0 * (i + 1), "includes_tracing": i == 0}
           for i, s in enumerate(epochs)]
    fields = dict(id=17, config=RunConfig(model="cnn", size="m", device="gpu:0", epochs=6), status=status,
                  created_at=0.0, started_at=0.0, ended_at=None, phase="training", info=RunInfo(),
                  progress=Progress(epoch=len(epochs) + 1, batch=5, batches=10), epochs=epochs_of(raw), samples=(),
                  error=None, store_error=None, hardware={}, queue_position=None)
    return RunSnapshot(**{**fields, **changes})


def test_the_gpu_is_served_under_dcgms_names_units_and_labels() -> None:
    sample = hopper_sample()
    served = parsed(prometheus.exposition(prometheus.Scrape.of(MACHINE, sample)))
    labels = {"gpu": "0", "UUID": HOPPER.uuid, "modelName": "NVIDIA H100 80GB HBM3", "Hostname": "node-7"}

    def one(name: str) -> float:
        [found] = served[name]
        assert found.labels == labels, name
        return found.value

    assert one("DCGM_FI_DEV_GPU_UTIL") == 40.0  # %
    assert one("DCGM_FI_DEV_FB_USED") == 10 * 1024  # MiB
    assert one("DCGM_FI_DEV_POWER_USAGE") == 150.0  # W
    gpu = sample.gpu(0)
    assert gpu is not None and gpu.energy_j is not None
    assert one("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION") == pytest.approx(gpu.energy_j * 1000)  # mJ, as NVML counts
    assert one("DCGM_FI_PROF_SM_ACTIVE") == pytest.approx(0.625)  # ratios 0-1, not percent
    assert one("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE") == pytest.approx(0.18)
    assert one("DCGM_FI_PROF_DRAM_ACTIVE") == pytest.approx(0.44)
    assert one("DCGM_FI_DEV_GPU_TEMP") == 45.0 and one("DCGM_FI_DEV_SM_CLOCK") == 1500.0
    assert served["bench_memory_total_bytes"][0].value == 1024 * 2**20


def test_a_figure_not_measured_is_absent_never_zero() -> None:
    nvml.set_module(fake_nvml.older_without_gpm())  # a V100: no GPM (SM, tensor activity)
    sampler = Sampler(0.5)
    sampler.sample_once()
    served = parsed(prometheus.exposition(prometheus.Scrape.of(NO_GPU, sampler.sample_once())))
    sampler.stop()
    assert served["DCGM_FI_DEV_GPU_UTIL"][0].value == 70.0
    assert served["DCGM_FI_DEV_GPU_UTIL"][0].labels["modelName"] == "Tesla V100-SXM2-16GB", \
        "a GPU discovery did not list is labelled with the name its reading carries"
    assert not [n for n in served if n.startswith("DCGM_FI_PROF_")], "no GPM: no SM or tensor activity at all"

    one_gpu_lacks = Sample(t_s=1.0, cpu_percent=None, cpu_per_core=(12.0, None), gpus=(
        GpuReading(index=0, util_percent=50.0, power_w=None), GpuReading(index=1, util_percent=None, power_w=99.0)))
    served = parsed(prometheus.exposition(prometheus.Scrape.of(MACHINE, one_gpu_lacks)))
    assert [s.labels["gpu"] for s in served["DCGM_FI_DEV_GPU_UTIL"]] == ["0"]
    assert [s.labels["gpu"] for s in served["DCGM_FI_DEV_POWER_USAGE"]] == ["1"]
    assert "bench_cpu_utilization_percent" not in served and "DCGM_FI_DEV_FB_USED" not in served
    assert [s.labels for s in served["bench_cpu_core_utilization_percent"]] == [{"core": "0"}]

    other_vendor = Sample(t_s=1.0, gpus=(GpuReading(index=0, util_percent=50.0, source="AMD SMI"),
                                         GpuReading(index=1, util_percent=60.0, source="NVML")))
    served = parsed(prometheus.exposition(prometheus.Scrape.of(MACHINE, other_vendor)))
    assert [s.labels["gpu"] for s in served["DCGM_FI_DEV_GPU_UTIL"]] == ["1"], "DCGM's names are NVIDIA's (NVML's)"


def figures(run: RunSnapshot, worker: Sample | None = None) -> prometheus.RunFigures:
    """The run as the route hands it over (ui.metrics_route.figures_of), with ``worker`` as its own sample."""
    from ui import metrics_route

    return dataclasses.replace(metrics_route.figures_of(run), worker=worker)


def test_the_runs_figures_are_labelled_by_run_model_and_target() -> None:
    run = snapshot()
    worker = Sample(t_s=9.0, process_cpu_percent=180.0, process_rss_mib=512.0)
    served = parsed(prometheus.exposition(prometheus.Scrape.of(NO_GPU, worker, [figures(run, worker)])))
    labels = {"run_id": "17", "model": "cnn", "target": "gpu:0"}
    status = {s.labels["status"]: s.value for s in served["bench_run_status"]}
    assert status.pop("running") == 1.0 and set(status.values()) == {0.0} and "finished" in status
    assert all({k: s.labels[k] for k in labels} == labels for s in served["bench_run_status"])
    assert served["bench_run_epoch"][0].labels == labels and served["bench_run_epoch"][0].value == 5
    assert served["bench_run_epochs_planned"][0].value == 6
    assert served["bench_samples_per_second"][0].value == 4000.0  # the last finished epoch's
    assert served["bench_first_epoch_seconds"][0].value == 3.0  # the tracing epoch, apart
    # the histogram holds the steady epochs (1.2, 0.8, 30 s): cumulative buckets, their sum and count
    buckets = {s.labels["le"]: s.value for s in served["bench_epoch_seconds_bucket"]}
    assert (buckets["0.5"], buckets["1.0"], buckets["2.5"], buckets["25.0"], buckets["50.0"], buckets["+Inf"]) == \
        (0, 1, 2, 2, 3, 3)
    assert served["bench_epoch_seconds_count"][0].value == 3 and served["bench_epoch_seconds_sum"][0].value == 32.0
    assert served["bench_worker_cpu_percent"][0].value == 180.0
    assert served["bench_worker_resident_bytes"][0].value == 512 * 2**20

    machine_only = parsed(prometheus.exposition(prometheus.Scrape.of(NO_GPU, worker, [figures(run)])))
    assert "bench_worker_cpu_percent" not in machine_only, "a sample that is not the run's says nothing of its worker"
    ended = parsed(prometheus.exposition(prometheus.Scrape.of(NO_GPU, None,
                                                              [figures(snapshot("finished", epochs=(2.0,)))])))
    assert {s.labels["status"] for s in ended["bench_run_status"] if s.value == 1} == {"finished"}
    assert "bench_epoch_seconds_bucket" not in ended, "no steady epoch yet: no histogram"


def test_every_series_a_full_scrape_serves_is_one_the_module_names() -> None:
    h100 = hopper_sample()
    tpu = GpuReading(index=1, name="TPU v5e chip", util_percent=100.0, mem_used_mib=10035.0, power_w=None,
                     tensor_active_percent=14.0, source="libtpu monitoring (tpumonitoring)")
    mi300 = GpuReading(index=2, name="AMD Instinct MI300X", util_percent=71.0, power_w=612.0, source="AMD SMI")
    sample = h100.updated(process_cpu_percent=50.0, process_rss_mib=10.0, cpu_percent=20.0,
                      cpu_per_core=(20.0,), ram_used_mib=100.0, cpu_energy_j=5.0,
                      gpus=(*(h100.gpus or ()), tpu, mi300))
    served = parsed(prometheus.exposition(prometheus.Scrape.of(MACHINE, sample, [figures(snapshot(), sample)])))
    assert set(served) == prometheus.SERIES


class CountingSampler:
    made = 0

    def __init__(self) -> None:
        CountingSampler.made += 1
        self.taken = 0

    def sample_once(self) -> Sample:
        self.taken += 1
        return Sample(t_s=0.0, cpu_percent=float(self.taken))

    def stop(self) -> None:
        pass


def test_every_scrape_within_a_second_is_handed_one_reading() -> None:
    now = [100.0]
    readers: list[CountingSampler] = []
    exporter = prometheus.Exporter(NO_GPU, None, reader=lambda: readers.append(CountingSampler()) or readers[-1],
                                   clock=lambda: now[0])
    texts = {exporter.text() for _ in range(100)}
    assert len(texts) == 1 and exporter.renders == 1 and readers[0].taken == 1
    assert exporter.fresh() == texts.pop()
    now[0] += prometheus.MAX_AGE_S
    assert exporter.fresh() is None
    assert parsed(exporter.text())["bench_cpu_utilization_percent"][0].value == 2.0
    assert exporter.renders == 2 and len(readers) == 1, "the exporter's sampler is kept between readings"


def test_a_live_run_of_this_process_lends_its_own_latest_sample() -> None:
    now = [0.0]
    readers: list[CountingSampler] = []
    sample = Sample(t_s=4.0, cpu_percent=77.0, process_cpu_percent=99.0)
    from ui import metrics_route

    runs = [snapshot(samples=(Sample(t_s=3.0, cpu_percent=1.0), sample))]
    exporter = prometheus.Exporter(NO_GPU, lambda: [metrics_route.figures_of(runs[-1])],
                                   reader=lambda: readers.append(CountingSampler()) or readers[-1],
                                   clock=lambda: now[0])
    served = parsed(exporter.text())
    assert served["bench_cpu_utilization_percent"][0].value == 77.0 and served["bench_worker_cpu_percent"]
    assert not readers, "the run's sampler read the machine: the exporter took no reading of its own"
    for other in (snapshot("finished", samples=(sample,)), snapshot(samples=(sample,), owner="process 9 on b")):
        runs.append(other)
        now[0] += prometheus.MAX_AGE_S
        served = parsed(exporter.text())
        assert served["bench_cpu_utilization_percent"][0].value != 77.0, other.status
        assert "bench_worker_cpu_percent" not in served
    assert len(readers) == 1 and readers[0].taken == 2


def test_the_route_serves_the_text_and_the_setting_turns_it_off(monkeypatch) -> None:
    from ui import common, live_routes, metrics_route

    nvml.set_module(fake_nvml.hopper_with_gpm())
    monkeypatch.setattr(common, "get_hardware", lambda: MACHINE)
    monkeypatch.setattr(metrics_route, "_followed", None)
    monkeypatch.setattr(metrics_route, "_held", None)
    client = TestClient(Starlette(routes=live_routes.routes()))
    answer = client.get("/metrics")
    assert answer.status_code == 200 and answer.headers["content-type"] == prometheus.CONTENT_TYPE
    assert "no-store" in answer.headers["cache-control"]
    assert parsed(answer.content)["DCGM_FI_DEV_GPU_UTIL"][0].labels["Hostname"] == "node-7"
    assert "bench_run_status" not in parsed(answer.content), "no page made the job queue yet: the machine alone"
    assert client.post("/metrics").status_code == 405, "read-only"

    class Manager:
        machine = MACHINE
        store = None

        @staticmethod
        def current() -> RunSnapshot:
            return snapshot()

    metrics_route.follow(Manager())  # type: ignore[arg-type]
    assert parsed(client.get("/metrics").content)["bench_run_status"], "a page view hands over the run's source"
    metrics_route.exporter().close()

    monkeypatch.setenv(metrics_route.ENV, "0")
    off = TestClient(Starlette(routes=live_routes.routes())).get("/metrics")
    assert off.status_code == 404 and "BENCH_METRICS=0" in off.text
    monkeypatch.setenv(metrics_route.ENV, "maybe")
    with pytest.raises(ValueError, match="BENCH_METRICS='maybe' must be 1"):
        live_routes.routes()


def test_a_dashboard_whose_runs_go_to_a_cluster_serves_this_host(monkeypatch) -> None:
    """A JobManager with a launcher runs on a ClusterMachine (the nodes as one machine for validation): no hostname,
    GPU UUIDs or memory to scrape, so the route scrapes this host as discovered (it raised AttributeError)."""
    from bench.cluster.launch import ClusterMachine
    from ui import common, live_routes, metrics_route

    nvml.set_module(fake_nvml.hopper_with_gpm())
    monkeypatch.setattr(common, "get_hardware", lambda: MACHINE)
    monkeypatch.setattr(metrics_route, "_followed", None)
    monkeypatch.setattr(metrics_route, "_held", None)

    class Manager:
        machine = ClusterMachine("ray://head:10001", [])
        store = None

        @staticmethod
        def current() -> RunSnapshot:
            return snapshot()

    metrics_route.follow(Manager())  # type: ignore[arg-type]
    answer = TestClient(Starlette(routes=live_routes.routes())).get("/metrics")
    assert answer.status_code == 200
    served = parsed(answer.content)
    assert served["DCGM_FI_DEV_GPU_UTIL"][0].labels["Hostname"] == "node-7" and served["bench_run_status"]
    metrics_route.exporter().close()


def test_another_vendors_gpu_is_served_under_the_projects_names_with_its_source_never_under_dcgms() -> None:
    """An AMD or Apple GPU, a TPU: its figures under bench_gpu_* labelled with the source that read them (its
    'utilization' means what that source measures), a figure it cannot give absent; never a DCGM (NVIDIA) name."""
    mac = GpuReading(index=0, name="Apple M2 Pro", util_percent=87.0, mem_used_mib=1229.0, power_w=None,
                     source="IOAccelerator (ioreg)")
    served = parsed(prometheus.exposition(prometheus.Scrape.of(NO_GPU, Sample(t_s=1.0, gpus=(mac,)))))
    assert not any(name.startswith("DCGM_") for name in served)
    [util] = served["bench_gpu_utilization_percent"]
    assert util.value == 87.0 and util.labels["source"] == "IOAccelerator (ioreg)" and util.labels["gpu"] == "0"
    assert util.labels["modelName"] == "Apple M2 Pro"
    assert served["bench_gpu_memory_used_bytes"][0].value == 1229.0 * 2**20
    assert "bench_gpu_power_watts" not in served, "not measured by ioreg: absent, never 0"


def test_two_runs_share_each_family_one_line_each() -> None:
    """A dashboard's run and another process's live run in one text: each family once (a name twice is not valid
    Prometheus text), a line per run."""
    text = prometheus.exposition(prometheus.Scrape.of(NO_GPU, None, [figures(snapshot()),
                                                                     figures(snapshot(id=18, epochs=(2.0, 1.0)))]))
    assert text.decode().count("# TYPE bench_run_epoch gauge") == 1
    served = parsed(text)
    assert sorted(s.labels["run_id"] for s in served["bench_run_epoch"]) == ["17", "18"]
    assert {s.labels["run_id"] for s in served["bench_epoch_seconds_count"]} == {"17", "18"}


def test_the_route_serves_the_live_runs_other_processes_write_to_the_store(tmp_path, monkeypatch) -> None:
    """A `bench run` (another process) writing to the dashboard's store is on /metrics beside the dashboard's own
    run; a run this process owns, or one that ended, is not read from the store a second time."""
    import subprocess
    import sys

    from bench.store import Store
    from bench.store.owners import Owners
    from ui import metrics_route

    store = Store(tmp_path / "runs.sqlite3")
    other = subprocess.Popen([sys.executable, "-c", "import signal; signal.pause()"])  # alive until killed below
    try:
        config = RunConfig(model="mlp", epochs=4).to_dict()
        theirs, ended, mine = (store.create_run(config, status="running") for _ in range(3))
        store.update_run(ended, status="finished")
        from bench.store import Owner
        import psutil

        me = Owner.current()
        them = dataclasses.replace(me, pid=other.pid, started=psutil.Process(other.pid).create_time())
        monkeypatch.setattr(Owners, "owner_of", lambda self, run_id: them if run_id in (theirs, ended) else me)

        class Manager:
            machine = NO_GPU

            def __init__(self) -> None:
                self.store = store

            @staticmethod
            def current() -> RunSnapshot:
                return snapshot(id=mine)

        shown = metrics_route.shown_runs(Manager())  # type: ignore[arg-type]
        assert [(r.id, r.status) for r in shown] == [(mine, "running"), (theirs, "running")]
        assert shown[1].worker is None, "another process samples its run: its worker's figures are not ours to show"
        served = parsed(prometheus.exposition(prometheus.Scrape.of(NO_GPU, None, shown)))
        assert {s.labels["run_id"] for s in served["bench_run_epochs_planned"]} == {str(mine), str(theirs)}
    finally:
        other.kill()
        other.wait()


def test_an_on_off_variable_has_one_reading_for_metrics_and_the_pre_started_worker() -> None:
    from bench.vocab import settings
    from ui import metrics_route

    for raw, want in (("", True), ("1", True), (" YES ", True), ("on", True), ("0", False), ("off", False),
                      ("No", False), ("false", False)):
        assert metrics_route.enabled({metrics_route.ENV: raw}) is want, raw
        assert settings.switch("X", not want if raw == "" else True, {"X": raw}) is (not want if raw == "" else want)
    with pytest.raises(ValueError, match=r"^BENCH_METRICS='2' must be 1 \(serve /metrics\) or 0 \(do not\)$"):
        metrics_route.enabled({metrics_route.ENV: "2"})
    with pytest.raises(ValueError, match=r"^X='maybe' must be 1 or 0$"):
        settings.switch("X", True, {"X": "maybe"})
