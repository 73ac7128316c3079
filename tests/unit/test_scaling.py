"""Data-parallel settings and scaling figures: `devices` checked once by RunConfig.validate, and a sweep's speed-up
over one device and scaling efficiency (throughput with N / (N x throughput with 1)) computed from its rows."""

from __future__ import annotations

import pytest

from bench.analysis import sweeps
from bench.analysis.sweeps import SweepRow
from bench.vocab.config import ConfigError, RunConfig
from bench.hardware import devices
from bench.vocab.records import RunRecord
from tests.unit.test_config import TWO_GPUS


def row(size: str, count: int, rate: float | None, batch: int = 256, steps: int = 1) -> SweepRow:
    return SweepRow(size=size, batch_size=batch, steps_per_execution=steps, target="gpus", devices=count,
                    samples_per_s=rate, per_device_batch_size=batch // count)


def test_efficiency_is_throughput_over_n_times_one_device() -> None:
    rows = sweeps.with_scaling([row("s", 1, 1000.0), row("s", 2, 1900.0), row("s", 4, 2000.0),
                                row("xl", 1, 100.0), row("xl", 4, 390.0)])
    got = {(r.size, r.devices): (r.speedup_over_one_device, r.scaling_efficiency) for r in rows}
    assert got[("s", 1)] == (1.0, 1.0)
    assert got[("s", 2)] == pytest.approx((1.9, 0.95))
    assert got[("s", 4)] == pytest.approx((2.0, 0.5))
    assert got[("xl", 4)] == pytest.approx((3.9, 0.975))


def test_the_diagnosis_names_the_exchange_and_the_knob_only_where_scaling_falls_short() -> None:
    rows = {(r.size, r.devices): r for r in sweeps.with_scaling(
        [row("s", 1, 1000.0), row("s", 4, 2000.0), row("xl", 1, 100.0), row("xl", 4, 390.0)])}
    note = rows[("s", 4)].scaling_diagnosis
    assert note is not None and "exchange between devices" in note and "50%" in note
    assert "64 samples a step" in note and "larger per-device batch" in note
    assert rows[("xl", 4)].scaling_diagnosis is None, "97 % of 4x is no exchange-bound verdict"
    assert rows[("s", 1)].scaling_diagnosis is None
    summary = sweeps.exchange_bound_summary(list(rows.values()))
    assert summary is not None and "s on gpus x 4: 50%" in summary and "xl" not in summary
    assert sweeps.exchange_bound_summary([rows[("xl", 4)]]) is None


def test_no_one_device_row_or_no_throughput_gives_no_figure() -> None:
    rows = sweeps.with_scaling([row("s", 2, 1900.0), row("m", 1, None), row("m", 2, 500.0)])
    assert all(r.scaling_efficiency is None and r.scaling_diagnosis is None for r in rows)


def test_a_record_counts_the_replicas_its_worker_reported() -> None:
    def run(info: dict, config: dict) -> RunRecord:
        return RunRecord.model_validate({"status": "finished", "info": info, "config": config})

    assert sweeps.device_count(run({"replicas": 4}, {"devices": 2})) == 4
    assert sweeps.device_count(run({}, {"devices": 2})) == 2
    assert sweeps.device_count(run({}, {})) == 1, "records made before the setting: one device"


@pytest.mark.parametrize(("changes", "says"), [
    ({"devices": 0}, "devices must be a whole number from 1"),
    ({"devices": 2, "batch_size": 127}, "does not split evenly over 2 devices; pick a multiple of 2"),
    ({"devices": 2, "backend": "torch"}, "Keras has no data-parallel distribution under torch"),
    ({"devices": 2, "device": "gpu:0"}, "to train on 2 GPUs pick the target 'gpus' with devices 2"),
    ({"devices": 3, "device": "gpus", "batch_size": 96}, "devices 3 is more than the 2 GPU(s) this machine has"),
])
def test_bad_device_counts_say_what_to_do(changes: dict, says: str) -> None:
    hw = TWO_GPUS
    with pytest.raises(ConfigError) as caught:
        RunConfig(**changes).validate(hw)
    assert any(says in e for e in caught.value.errors), caught.value.errors


def test_more_logical_cpu_devices_than_cores_is_refused() -> None:
    cores = devices.all_cores()
    with pytest.raises(ConfigError, match=f"more than the {cores} CPU core"):
        RunConfig(devices=cores + 1, batch_size=(cores + 1) * 8).validate(devices.discover())
    assert RunConfig(devices=2, device="gpus").validate(TWO_GPUS).device_count(TWO_GPUS) == 2
    assert RunConfig(device="gpus").device_count(TWO_GPUS) == 2, "gpus alone: every GPU"


def test_speedup_and_scaling_lines_never_join_points_of_different_settings() -> None:
    """A sweep over sizes and device counts on two targets: the CPU-vs-GPU speed-up chart draws one line per device
    count (not one zig-zag through x1 and x2 at each size), and the scaling chart names steps per execution where
    they vary."""
    from bench.output import charts

    def point(size: str, params: int, target: str, devices: int, seconds: float) -> SweepRow:
        return SweepRow(size=size, params=params, batch_size=256, target=target, devices=devices,
                        steady_epoch_seconds=seconds)

    rows = [point(size, params, target, n, seconds * (1 if target == "cpu" else 0.5) / n)
            for size, params, seconds in (("xs", 25_000, 1.0), ("s", 200_000, 2.0))
            for target in ("cpu", "gpus") for n in (1, 2)]
    pairs = sweeps.sweep_speedups(rows, "cpu", "gpus")
    assert sorted((p.size, p.devices) for p in pairs) == [("s", 1), ("s", 2), ("xs", 1), ("xs", 2)]
    fig = charts.sweep_speedup_figure(pairs, "gpus vs cpu")
    assert sorted(t.name for t in fig.data) == ["gpus vs cpu · devices 1", "gpus vs cpu · devices 2"]
    assert all(list(t.x) == [25_000, 200_000] for t in fig.data)
    one = charts.sweep_speedup_figure([p for p in pairs if p.devices == 1], "gpus vs cpu")
    assert [t.name for t in one.data] == ["gpus vs cpu"]  # nothing varies: the plain label

    scaled = sweeps.with_scaling([row("s", n, 1000.0 * n ** 0.5, steps=k) for k in (1, 8) for n in (1, 2)])
    names = sorted(t.name for t in charts.scaling_figure(scaled).data if t.name)
    assert names == ["s · steps/call 1", "s · steps/call 8"]
