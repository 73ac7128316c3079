"""Tests for bench.analysis.compare's target handling and for reference_pairs, the ratio of this tool's own runs."""

from __future__ import annotations

from typing import Any

import pytest

from bench.analysis import compare, sweeps
from bench.hardware import devices
from bench.hardware.peak_cache import PeakEntry
from bench.vocab.config import ConfigError, RunConfig
from bench.vocab.records import RunRecord
from bench.vocab.target import Target


def doc(run_id: int, target: str, total: float | None = None, steady: float | None = None) -> dict[str, Any]:
    return {"id": run_id, "status": "finished", "config": RunConfig().with_target(target).to_dict(),
            "summary": {"total_seconds": total, "steady_epoch_seconds": steady}}


def record(run_id: int, target: str, total: float | None = None, steady: float | None = None) -> RunRecord:
    return RunRecord.model_validate(doc(run_id, target, total, steady))


def of_config(config: dict[str, Any]) -> RunRecord:
    """A run holding only this config (an old or foreign file's, say)."""
    return RunRecord(status="finished", config=RunConfig.model_construct(**config))  # its settings unchecked


# -- parsing targets ------------------------------------------------------------------------------------------------
def test_parse_targets_gives_targets_parsed_once():
    assert compare.parse_targets("cpu/1, cpu,gpu:0") == [Target("cpu", threads=1), Target("cpu"), Target("gpu", 0)]
    assert compare.parse_targets(["gpus", Target.parse("cpu/2")]) == [Target("gpus"), Target("cpu", threads=2)]
    with pytest.raises(ConfigError, match="at least one target"):
        compare.parse_targets(" , ")
    with pytest.raises(ConfigError, match="target 'tpu' is not one of the forms"):
        compare.parse_targets("cpu,tpu")


def test_target_configs_change_device_and_threads_only():
    base = RunConfig(epochs=2, size="xs", limit_samples=256)
    configs = compare.target_configs(base, compare.parse_targets("cpu/1,cpu"), devices.discover())
    assert [c.target() for c in configs] == [Target.parse("cpu/1"), Target.parse("cpu")]
    assert {c.replace(cpu_threads=None) for c in configs} == {base}


def test_a_records_target_as_text():
    assert compare.target(record(1, "cpu/2")) == "cpu/2"
    assert compare.target(record(1, "gpus")) == "gpus"
    assert compare.target(of_config({"device": "cpu", "cpu_threads": 3, "retired_field": True})) == "cpu/3"
    assert compare.target(of_config({"device": "tpu"})) == "tpu", "a malformed device is shown as stored"
    assert compare.target_of(of_config({"device": "tpu"})) is None
    assert compare.target_of(record(1, "gpu:1")) == Target.parse("gpu:1")


def test_comparison_pairs_name_targets_as_text():
    pairs = compare.comparison([record(1, "cpu/1"), record(2, "gpu:0")])["pairs"]
    assert (pairs[0]["baseline_target"], pairs[0]["target"]) == ("cpu/1", "gpu:0")


def test_sweep_targets_put_a_cpu_first_and_speedups_take_targets():
    rows = [sweeps.SweepRow(target=t, size="s", batch_size=128, params=10, steady_epoch_seconds=s)
            for t, s in (("gpu:0", 0.5), ("cpu", 2.0), ("gpus", 0.4), ("cpu/1", 8.0))]
    assert sweeps.sweep_targets(rows) == ["cpu", "cpu/1", "gpu:0", "gpus"]
    by_text = sweeps.sweep_speedups(rows, "cpu", "gpu:0")
    by_target = sweeps.sweep_speedups(rows, Target.parse("cpu"), Target.parse("gpu:0"))
    assert by_text == by_target == [sweeps.SweepSpeedup(size="s", batch_size=128, steps_per_execution=1, devices=1,
                                                        params=10, speedup=4.0)]


def test_sweep_row_takes_the_utilization_window_of_its_side():
    summary = {"gpu_util_window": "all samples", "cpu_util_window": "steady epochs"}
    gpu = RunRecord.model_validate({**doc(1, "gpus"), "summary": summary})
    cpu = RunRecord.model_validate({**doc(2, "cpu/1"), "summary": summary})
    assert sweeps.sweep_row(gpu, None).utilization_window == "all samples"
    assert sweeps.sweep_row(cpu, None).utilization_window == "steady epochs"


def _swept(achieved_rate: float, **summary: Any) -> RunRecord:
    """A finished CPU run whose steady rate x FLOPs per sample gives ``achieved_rate`` GFLOP/s."""
    return RunRecord.model_validate({**doc(4, "cpu"), "info": {"flops_per_sample": 1e6, "params": 10},
                         "summary": {"steady_samples_per_s": achieved_rate * 1e3, "steady_epoch_seconds": 1.0,
                                     **summary}})


def test_a_share_of_the_peak_is_shown_only_when_it_holds():
    row = sweeps.sweep_row(_swept(52.55), 105.1)
    assert row.achieved_gflops == pytest.approx(52.55)
    assert row.peak_fraction == pytest.approx(0.5) and row.peak_stale is False
    assert sweeps.peak_share_text(row) == "50%"
    # the case seen on a busy machine: 128.6 GFLOP/s achieved against a cached peak of 105.1
    beaten = sweeps.sweep_row(_swept(128.6), 105.1)
    assert beaten.peak_fraction is None and beaten.peak_stale is True
    assert sweeps.peak_share_text(beaten) == "peak being re-measured"
    assert beaten.peak_gflops == 105.1, "the figure measured is still given, flagged"
    # a peak flagged for a new probe shows no share even for a run below it
    flagged = sweeps.sweep_row(_swept(52.55), PeakEntry(peak_gflops=105.1, stale=True))
    assert flagged.peak_fraction is None and flagged.peak_stale is True
    fresh = sweeps.sweep_row(_swept(52.55), PeakEntry(peak_gflops=210.2, stale=False))
    assert fresh.peak_fraction == pytest.approx(0.25) and fresh.peak_gflops == 210.2
    unknown = sweeps.sweep_row(_swept(52.55), None)
    assert unknown.peak_fraction is None and unknown.peak_stale is False
    assert sweeps.peak_share_text(unknown) == "—"


def test_a_sweep_row_uses_the_summarys_achieved_figure_and_gpu_activity():
    row = sweeps.sweep_row(_swept(10.0, achieved_gflops=12.5, sm_active_percent=61.0, tensor_active_percent=None),
                            25.0)
    assert row.achieved_gflops == 12.5 and row.peak_fraction == pytest.approx(0.5)
    assert row.sm_active_percent == 61.0 and row.tensor_active_percent is None
    assert sweeps.sweep_row(_swept(10.0), 25.0).sm_active_percent is None, "absent in the summary: None"


# -- reference pairs ------------------------------------------------------------------------------------------------
def test_a_cpu_run_and_a_gpu_run_make_one_pair_with_their_ratio():
    gpu, cpu = record(8, "gpu:0", total=40.0, steady=3.0), record(7, "cpu/4", total=485.0, steady=45.0)
    [pair] = compare.reference_pairs([gpu, cpu])
    assert pair.runs == (cpu, gpu), "the CPU run first, whatever the order of the comparison"
    assert pair.targets == ("cpu/4", "gpu:0")
    assert (pair.cpu_seconds, pair.gpu_seconds) == (485.0, 40.0)
    assert pair.ratio == pytest.approx(485.0 / 40.0)
    assert (pair.cpu_steady_seconds, pair.gpu_steady_seconds) == (45.0, 3.0)


def test_all_gpus_count_as_the_gpu_side():
    [pair] = compare.reference_pairs([record(1, "cpu", total=10.0), record(2, "gpus", total=2.0)])
    assert pair.ratio == pytest.approx(5.0)


def test_a_pair_without_a_total_has_no_ratio():
    [pair] = compare.reference_pairs([record(1, "cpu", total=10.0), record(2, "gpu:0", total=None)])
    assert pair.ratio is None and pair.cpu_seconds == 10.0 and pair.gpu_seconds is None


@pytest.mark.parametrize("targets", [("cpu/1", "cpu"), ("gpu:0", "gpu:1"), ("cpu", "gpu:0", "gpus")])
def test_other_groups_make_one_row_per_run_on_its_own_side(targets):
    records = [record(i, t, total=10.0 + i, steady=1.0 + i) for i, t in enumerate(targets)]
    rows = compare.reference_pairs(records)
    assert [r.runs for r in rows] == [(r,) for r in records]
    for row, name in zip(rows, targets):
        on_cpu = Target.parse(name).is_cpu
        total, steady = row.runs[0].summary.total_seconds, row.runs[0].summary.steady_epoch_seconds
        assert row.targets == (name,) and row.ratio is None
        assert (row.cpu_seconds, row.gpu_seconds) == ((total, None) if on_cpu else (None, total))
        assert (row.cpu_steady_seconds, row.gpu_steady_seconds) == ((steady, None) if on_cpu else (None, steady))


def test_a_run_whose_target_is_malformed_stands_alone():
    odd = RunRecord.model_validate({"id": 3, "status": "finished", "config": {"device": "tpu"}, "summary": {"total_seconds": 5.0}})
    rows = compare.reference_pairs([record(1, "cpu", total=10.0), odd])
    assert len(rows) == 2 and rows[1].targets == ("tpu",) and rows[1].ratio is None
    assert compare.reference_pairs([]) == []


# -- headlines never name two sides alike ------------------------------------------------------------------------------
def timed(run_id: int | None, target: str, times: list[float], host: str | None = None) -> RunRecord:
    epochs = [{"epoch": i + 1, "epoch_seconds": t, "includes_tracing": i == 0} for i, t in enumerate(times)]
    return RunRecord.model_validate({**doc(run_id or 0, target), **({"id": run_id} if run_id is not None else {}),
                         "epochs": epochs, "hardware": {"hostname": host} if host else {}, "summary": None})


def test_two_cpu_runs_are_named_by_their_run_numbers() -> None:
    """History's overlay of two CPU runs: not "cpu and cpu are about as fast"."""
    a, b = timed(12, "cpu", [3.0, 1.0, 1.1, 0.95]), timed(13, "cpu", [3.0, 1.02, 0.98, 1.05])
    pair = compare.pairs([a, b])[0]
    assert pair.headline is not None and pair.headline.startswith("cpu (#12) and cpu (#13) are about as fast")
    assert compare.headline(pair).startswith("cpu (#12) and cpu (#13)")
    faster = compare.pairs([a, timed(13, "cpu", [3.0, 0.5, 0.5, 0.5])])[0]
    assert compare.headline(faster).startswith("cpu (#13) trains 2.0x faster than cpu (#12)")


def test_same_targets_and_numbers_are_named_by_their_machines_or_their_places() -> None:
    """A loaded comparison of two machines' runs that both were #1 on their own store."""
    a, b = timed(1, "gpu:0", [3.0, 1.0, 1.0], "laptop"), timed(1, "gpu:0", [3.0, 0.5, 0.5], "server")
    head = compare.pairs([a, b])[0].headline or ""
    assert head.startswith("gpu:0 on server trains 2.0x faster than gpu:0 on laptop"), head
    same = compare.pairs([a, timed(1, "gpu:0", [3.0, 0.5, 0.5], "laptop")])[0]
    assert (same.headline or "").startswith("gpu:0 (the second run) trains 2.0x faster than gpu:0 (the first run)")
    assert compare.side_names(same) == ("gpu:0 (the first run)", "gpu:0 (the second run)")


def test_different_targets_keep_their_plain_names() -> None:
    pair = compare.pairs([timed(1, "cpu", [3.0, 2.0, 2.0]), timed(2, "gpu:0", [3.0, 1.0, 1.0])])[0]
    assert (pair.headline or "").startswith("gpu:0 trains 2.0x faster than cpu (")
