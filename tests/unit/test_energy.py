"""Energy: RAPL package joules from a fake powercap tree (readable, wrapping, root-only, absent), each epoch's joules
per device from the counters around it (or power integrated, marked as an estimate), the epoch's throttle reasons, the
summary's energy keys, and the supervisor settling an epoch once a sample lies after its end."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from bench.vocab.record_types import RecordedHardware
from bench.hardware import energy
from bench.analysis import run_summary
from bench.vocab.config import RunConfig
from bench.hardware.monitor import Sampler, nvml
from bench.hardware.monitor.rapl import RaplReader
from bench.vocab.readings import epochs_of, samples_of
from bench.vocab.run_info import RunInfo
from bench.runs.run_state import RunState
from bench.runs.run_writer import RunWriter
from bench.runs.recorder import Recorder
from bench.runs import events
from tests.fixtures import fresh_nvml  # noqa: F401 - the fixture, used by name

try:
    from tests.unit import fake_nvml
except ImportError:  # tests/unit is not a package on sys.path
    import fake_nvml  # type: ignore[no-redef]


pytestmark = pytest.mark.usefixtures("fresh_nvml")


def powercap(root: Path, packages: dict[str, tuple[int, int]], extra: tuple[str, ...] = ()) -> Path:
    """A fake /sys/class/powercap: ``intel-rapl:N`` -> (energy_uj, max_energy_range_uj); ``extra`` other domains."""
    for name, (energy_uj, span) in packages.items():
        domain = root / name
        domain.mkdir(parents=True)
        (domain / "name").write_text(f"package-{name.split(':')[1]}\n")
        (domain / "energy_uj").write_text(f"{energy_uj}\n")
        (domain / "max_energy_range_uj").write_text(f"{span}\n")
    for name in extra:  # a core subdomain or psys: never summed as a package
        (root / name).mkdir(parents=True)
        (root / name / "name").write_text("core\n" if name.count(":") == 2 else "psys\n")
        (root / name / "energy_uj").write_text("999999999\n")
    return root


def set_uj(root: Path, name: str, value: int) -> None:
    (root / name / "energy_uj").write_text(f"{value}\n")


# -- RAPL --------------------------------------------------------------------------------------------------------------
def test_rapl_sums_packages_and_survives_a_wrap(tmp_path: Path) -> None:
    packages = {"intel-rapl:0": (1_000_000, 10_000_000), "intel-rapl:1": (5_000, 10_000_000)}
    root = powercap(tmp_path / "powercap", packages, extra=("intel-rapl:0:0", "intel-rapl:2"))
    reader = RaplReader(root)
    assert reader.readable and reader.reason is None
    assert reader.read_j() == 0.0
    set_uj(root, "intel-rapl:0", 3_000_000)  # +2 J
    set_uj(root, "intel-rapl:1", 1_005_000)  # +1 J
    assert reader.read_j() == pytest.approx(3.0)
    set_uj(root, "intel-rapl:0", 500_000)  # wrapped: 7 J to the top of the range, then 0.5 J
    assert reader.read_j() == pytest.approx(3.0 + 7.0 + 0.5)


def test_rapl_absent_tree_gives_none_with_reason(tmp_path: Path) -> None:
    reader = RaplReader(tmp_path / "nowhere")
    assert reader.read_j() is None
    assert reader.reason is not None and reader.reason.startswith("RAPL not readable here")
    assert "is absent" in reader.reason


def test_rapl_without_a_package_domain(tmp_path: Path) -> None:
    root = tmp_path / "powercap"
    root.mkdir()
    (root / "dtpm").mkdir()
    reader = RaplReader(root)
    assert reader.read_j() is None and "no intel-rapl package domain" in (reader.reason or "")


def test_rapl_root_only_counter_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = powercap(tmp_path / "powercap", {"intel-rapl:0": (1, 10)})
    original = Path.read_text

    def denied(self: Path, *args: object, **kwargs: object) -> str:
        if self.name == "energy_uj":
            raise PermissionError(13, "Permission denied", str(self))
        return original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "read_text", denied)  # chmod 000 does not stop a test run as root
    reader = RaplReader(root)
    assert reader.read_j() is None
    assert "readable only by root" in (reader.reason or "") and "intel-rapl:0/energy_uj" in (reader.reason or "")


def test_this_machine_answers_a_number_or_a_reason() -> None:
    reader = RaplReader()
    value = reader.read_j()
    assert (value is not None) == (reader.reason is None)


def test_sampler_puts_cpu_energy_in_each_sample(tmp_path: Path) -> None:
    root = powercap(tmp_path / "powercap", {"intel-rapl:0": (0, 10**12)})
    sampler = Sampler(0.1, monitor_gpus=False, powercap_root=root)
    assert "cpu" not in sampler.energy_reasons
    assert sampler.sample_once().cpu_energy_j == 0.0
    set_uj(root, "intel-rapl:0", 2_500_000)
    assert sampler.sample_once().to_dict()["cpu_energy_j"] == pytest.approx(2.5)
    unreadable = Sampler(0.1, monitor_gpus=False, powercap_root=tmp_path / "none")
    assert unreadable.sample_once().cpu_energy_j is None
    assert unreadable.energy_reasons["cpu"].startswith("RAPL not readable here")


# -- an epoch's joules -------------------------------------------------------------------------------------------------
def gpu_sample(t_s: float, *, energy_j: float | None = None, power_w: float | None = None, cpu_j: float | None = None,
               reasons: list[str] | None = None, index: int = 0) -> dict:
    return {"t_s": t_s, "cpu_energy_j": cpu_j,
            "gpus": [{"index": index, "energy_j": energy_j, "power_w": power_w, "throttle_reasons": reasons}]}


def test_counter_is_interpolated_at_the_epoch_ends() -> None:
    # counters grow 100 J/s on the GPU and 20 J/s on the CPU; the epoch runs 1.25 s .. 3.5 s between samples
    samples = samples_of(gpu_sample(t, energy_j=1000 + 100 * t, cpu_j=20 * t) for t in (0.0, 1.0, 2.0, 3.0, 4.0))
    joules, estimated = energy.epoch_energy(samples, 1.25, 3.5, ["cpu", "gpu:0"])
    assert joules == {"cpu": pytest.approx(45.0), "gpu:0": pytest.approx(225.0)}
    assert estimated == []


def test_epoch_shorter_than_the_sampling_interval_still_gets_joules() -> None:
    samples = samples_of([gpu_sample(0.0, energy_j=0.0), gpu_sample(1.0, energy_j=300.0)])
    joules, _ = energy.epoch_energy(samples, 0.4, 0.5, ["gpu:0"])
    assert joules["gpu:0"] == pytest.approx(30.0)


def test_without_the_counter_power_is_integrated_and_marked() -> None:
    # power rises linearly 100 W -> 300 W over 0..2 s: 0.5..1.5 s holds 150..250 W, 200 J
    samples = samples_of(gpu_sample(t, power_w=100 + 100 * t) for t in (0.0, 1.0, 2.0))
    joules, estimated = energy.epoch_energy(samples, 0.5, 1.5, ["cpu", "gpu:0"])
    assert joules == {"cpu": None, "gpu:0": pytest.approx(200.0)}
    assert estimated == ["gpu:0"]


def test_old_samples_power_watts_is_integrated_too() -> None:
    samples = samples_of({"t_s": t, "gpus": [{"index": 0, "power_watts": 50.0}]} for t in (0.0, 2.0))
    assert energy.epoch_energy(samples, 0.0, 2.0, ["gpu:0"]) == ({"gpu:0": pytest.approx(100.0)}, ["gpu:0"])


@pytest.mark.parametrize(("start", "end"), [(-0.5, 1.0), (1.0, 2.5), (None, 1.0)])
def test_an_end_outside_the_samples_gives_none(start: float | None, end: float) -> None:
    samples = samples_of(gpu_sample(t, energy_j=10 * t, power_w=100.0, cpu_j=t) for t in (0.0, 1.0, 2.0))
    joules, estimated = energy.epoch_energy(samples, start, end, ["cpu", "gpu:0"])
    assert joules == {"cpu": None, "gpu:0": None} and estimated == []


def test_a_counter_that_went_back_gives_none() -> None:
    samples = samples_of([gpu_sample(0.0, energy_j=5000.0), gpu_sample(1.0, energy_j=10.0)])
    assert energy.epoch_energy(samples, 0.0, 1.0, ["gpu:0"])[0] == {"gpu:0": None}


def test_devices_used() -> None:
    samples = samples_of([{"t_s": 0, "gpus": [{"index": 0}, {"index": 1}]}])
    assert energy.devices_used("cpu", samples) == ["cpu"]
    assert energy.devices_used(RunConfig(device="gpu:1").device, samples) == ["cpu", "gpu:1"]
    assert energy.devices_used("gpus", samples) == ["cpu", "gpu:0", "gpu:1"]


def test_epoch_throttle_reasons() -> None:
    samples = samples_of([gpu_sample(0.0, reasons=["thermal slowdown"]), gpu_sample(1.0, reasons=[]),
                          gpu_sample(2.0, reasons=["power cap"]), gpu_sample(3.0, reasons=["hardware slowdown"]),
                          gpu_sample(2.5, reasons=["power cap"], index=1)])
    assert energy.epoch_throttle_reasons(samples, 0.5, 1.5, ["cpu", "gpu:0"]) == ["power cap"]  # 1.0 and 2.0
    assert energy.epoch_throttle_reasons(samples, 0.9, 1.1, ["cpu", "gpu:0"]) == ["power cap"]
    assert energy.epoch_throttle_reasons(samples, 0.0, 0.0, ["cpu", "gpu:0"]) == ["thermal slowdown"]
    assert energy.epoch_throttle_reasons(samples, 0.5, 1.5, ["cpu"]) is None, "no GPU used"
    unknown = samples_of(gpu_sample(t) for t in (0.0, 1.0))
    assert energy.epoch_throttle_reasons(unknown, 0.0, 1.0, ["cpu", "gpu:0"]) is None


# -- the summary -------------------------------------------------------------------------------------------------------
def epoch(n: int, joules: dict, *, seconds: float = 2.0, rate: float = 500.0, gflops: float | None = None,
          estimated: list[str] | None = None) -> dict:
    return {"epoch": n, "epoch_seconds": seconds, "includes_tracing": n == 1, "samples_per_s": rate,
            "t_start_s": 2.0 * n, "t_end_s": 2.0 * n + seconds, "energy_j": joules,
            "energy_estimated": estimated or [], "achieved_gflops": gflops, "throttle_reasons": []}


def test_summary_energy_per_steady_epoch_and_per_1000_samples() -> None:
    epochs = [epoch(1, {"cpu": 900.0, "gpu:0": 5000.0}, gflops=1.0),
              epoch(2, {"cpu": 100.0, "gpu:0": 400.0}, gflops=10.0),
              epoch(3, {"cpu": 120.0, "gpu:0": 600.0}, gflops=30.0),
              epoch(4, {"cpu": 140.0, "gpu:0": None}, gflops=20.0, estimated=["gpu:0"])]
    samples = [{"t_s": t, "gpus": [{"index": 0, "sm_active_percent": 60.0, "tensor_active_percent": None,
                                    "throttle_reasons": ["power cap"] if t == 6.5 else []},
                                   {"index": 1, "sm_active_percent": 0.0, "throttle_reasons": ["thermal slowdown"]}]}
               for t in (4.5, 6.5, 8.5)]
    summary = run_summary.summarize(epochs_of(epochs), samples_of(samples), config=RunConfig(device="gpu:0"))
    assert summary.energy_j_per_epoch == {"cpu": 120.0, "gpu:0": 500.0}, "median over epochs 2..4, None left out"
    # each steady epoch trains 500 samples/s x 2 s = 1,000 samples
    assert summary.energy_j_per_1000_samples == {"cpu": pytest.approx(120.0), "gpu:0": pytest.approx(500.0)}
    assert summary.energy_reasons == {}
    assert summary.energy_estimated == ("gpu:0",)
    assert summary.achieved_gflops == 20.0
    assert summary.sm_active_percent == 60.0, "GPU 1 was not used by this run"
    assert summary.tensor_active_percent is None
    assert summary.throttle_reasons == ("power cap",)


def test_the_live_headers_energy_is_the_summarys_energy() -> None:
    """The live header reads run_summary.energy_summary alone (not the whole summary, at every refresh): it must give
    what the summary's energy keys give, for a measured run, an unmeasured one and an all-GPUs run."""
    from bench.vocab.config import RunConfig
    from bench.runs.run_state import RunSnapshot

    epochs = [epoch(1, {"cpu": 900.0, "gpu:0": 5000.0}), epoch(2, {"cpu": 100.0, "gpu:0": None}),
              epoch(3, {"cpu": 120.0, "gpu:1": 700.0}, estimated=["gpu:1"])]
    samples = [{"t_s": 4.5, "gpus": [{"index": 0}, {"index": 1}]}]
    keys = ("energy_j_per_epoch", "energy_j_per_1000_samples", "energy_estimated", "energy_reasons")
    for config, info in ((RunConfig(device="gpu:0"), RunInfo()), (RunConfig(device="gpus"), RunInfo()),
                         (RunConfig(), RunInfo(energy_reasons={"cpu": "RAPL not readable"}))):
        run = epochs if info == RunInfo() else [epoch(1, {"cpu": None}), epoch(2, {"cpu": None})]
        snap = RunSnapshot(id=1, config=config, status="running", created_at=0.0, started_at=0.0, ended_at=None,
                           phase="training", info=info, progress=None, epochs=epochs_of(run),
                           samples=samples_of(samples), error=None,
                           store_error=None, hardware=RecordedHardware(), queue_position=None)
        assert {k: getattr(snap.energy(), k) for k in keys} == {k: getattr(snap.summary, k) for k in keys}
        assert snap.energy().energy_j_per_epoch, "every device the run used has an entry"


def test_summary_names_the_reason_energy_is_none() -> None:
    epochs = [epoch(1, {"cpu": None}), epoch(2, {"cpu": None})]
    reason = "RAPL not readable here: /sys/class/powercap is absent."
    summary = run_summary.summarize(epochs_of(epochs), (), info=RunInfo(energy_reasons={"cpu": reason}),
                                    config=RunConfig(device="cpu"))
    assert summary.energy_j_per_epoch == {"cpu": None}
    assert summary.energy_reasons == {"cpu": reason}
    assert summary.sm_active_percent is None and summary.throttle_reasons is None
    gpu_run = run_summary.summarize(epochs_of([epoch(1, {"cpu": None, "gpu:0": None})]), (),
                                    config=RunConfig(device="gpu:0"))
    assert gpu_run.energy_reasons["gpu:0"].startswith("no steady epoch yet")


def test_old_records_summarize_without_the_new_fields() -> None:
    epochs = [{"epoch": 1, "epoch_seconds": 2.0, "includes_tracing": True},
              {"epoch": 2, "epoch_seconds": 1.0, "includes_tracing": False}]
    summary = run_summary.summarize(epochs_of(epochs),
                                    samples_of([{"t_s": 0.5, "gpus": [{"index": 0, "power_watts": 80.0}]}]))
    assert summary.energy_j_per_epoch == {"cpu": None} and summary.achieved_gflops is None


# -- the recorder settles each epoch from the samples around it ------------------------------------------------------
def test_the_recorder_settles_an_epoch_once_a_sample_follows_it() -> None:
    fake = fake_nvml.throttling()
    nvml.set_module(fake)
    now = [100.0]
    sampler = Sampler(0.5, clock=lambda: now[0], powercap_root="/nonexistent-powercap")
    sampler.start = lambda: None  # type: ignore[method-assign]  # samples are taken by hand below
    sampler._t0_s = 100.0
    lock = threading.Lock()
    state = RunState(id=1, config=RunConfig(device="gpu:0", epochs=2), created_at=0.0, hardware=RecordedHardware())
    state.info = state.info.updated(flops_per_sample=2e6)
    sup = Recorder(state, lock=lock, writer=RunWriter(None, lock))
    sup.t0_wall = 1000.0

    def take(t_s: float) -> None:
        now[0] = 100.0 + t_s
        state.samples.append(sampler.sample_once())

    for t_s in (0.0, 0.5, 1.0):
        take(t_s)
    sup.apply(events.event(events.EPOCH, epoch=1, epoch_seconds=0.6, includes_tracing=True, samples_per_s=1000.0,
                           started_wall=1000.2, ended_wall=1000.8))
    sup.apply(events.event(events.EPOCH, epoch=2, epoch_seconds=0.3, includes_tracing=False, samples_per_s=2000.0,
                           started_wall=1000.9, ended_wall=1001.2))
    first, second = state.epochs
    assert first.achieved_gflops == pytest.approx(2.0) and second.achieved_gflops == pytest.approx(4.0)
    sup.settle()
    first, second = state.epochs  # epochs are frozen: a settled one is replaced in the run's list
    assert first.joules("gpu:0") is not None and first.throttle_reasons == ("power cap", "thermal slowdown")
    assert second.energy_j == {"cpu": None, "gpu:0": None}, "no sample after its end yet"
    take(1.5)
    sup.settle()
    first, second = state.epochs
    gpu_j = [s.gpus[0].energy_j for s in state.samples]
    t_s = [s.t_s for s in state.samples]
    expected = (gpu_j[3] - gpu_j[2]) / (t_s[3] - t_s[2]) * 0.3  # the counter's slope over 1.0..1.5 s, 0.3 s
    assert second.joules("gpu:0") == pytest.approx(expected)
    assert second.joules("cpu") is None and second.energy_estimated == ()
    assert second.throttle_reasons == ("power cap", "thermal slowdown")
    assert not sup.unsettled
    summary = run_summary.summarize(state.epochs, state.samples, info=state.info, config=state.config)
    assert summary.throttle_reasons == ("power cap", "thermal slowdown")
    assert summary.energy_j_per_epoch["gpu:0"] == pytest.approx(expected)
    assert "no energy reading" in summary.energy_reasons["cpu"]


def test_a_snapshots_summary_is_computed_once(monkeypatch) -> None:
    """An ended run's panel reads the summary three times a refresh; a snapshot computes it once, a new snapshot
    (the run moved on) afresh."""
    from bench.vocab.config import RunConfig
    from bench.runs.run_state import RunSnapshot

    calls = []
    real = run_summary.summarize
    monkeypatch.setattr(run_summary, "summarize", lambda *a, **k: calls.append(1) or real(*a, **k))
    fields = dict(id=1, config=RunConfig(), status="finished", created_at=0.0, started_at=0.0, ended_at=9.0,
                  phase="finished", info=RunInfo(), progress=None,
                  epochs=epochs_of([epoch(1, {"cpu": 1.0}), epoch(2, {"cpu": 2.0})]), samples=(), error=None,
                  store_error=None, hardware=RecordedHardware(), queue_position=None)
    snap = RunSnapshot(**fields)
    assert snap.summary.epochs_done == 2 and snap.summary is snap.summary
    assert len(calls) == 1
    assert RunSnapshot(**fields).summary == snap.summary and len(calls) == 2


def test_a_snapshots_record_carries_the_summary_it_computed(monkeypatch) -> None:
    """record() hands the snapshot's own summary to the record (the Sweep and Compare panels call it every refresh),
    and it is the summary run_record computes from the record's own fields."""
    from bench.vocab import records
    from bench.vocab.config import RunConfig
    from bench.runs.run_state import RunSnapshot

    snap = RunSnapshot(id=1, config=RunConfig(), status="finished", created_at=0.0, started_at=0.0, ended_at=9.0,
                       phase="finished", info=RunInfo(), progress=None,
                       epochs=epochs_of([epoch(1, {"cpu": 1.0}), epoch(2, {"cpu": 2.0}), epoch(3, {"cpu": 3.0})]),
                       samples=samples_of([{"t_s": 4.5, "cpu_percent": 80.0, "process_cpu_percent": 150.0}]),
                       error=None,
                       store_error=None, hardware=RecordedHardware(), queue_position=None)
    fresh = run_summary.summarize(snap.epochs, snap.samples, info=RunInfo(), config=snap.config).to_dict()
    calls = []
    real = run_summary.summarize
    monkeypatch.setattr(run_summary, "summarize", lambda *a, **k: calls.append(1) or real(*a, **k))
    record = snap.record()
    assert isinstance(record, records.RunRecord) and record.summary is not None
    assert record.summary.to_dict() == fresh
    assert record.to_dict()["summary"] == fresh, "its JSON form writes that summary"
    assert run_summary.summary_of(record) is record.summary
    assert snap.record().summary.to_dict() == snap.summary.to_dict() and len(calls) == 1, \
        "one summary for the snapshot and its records"
