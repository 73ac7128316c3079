"""The machine gallery's arithmetic (bench.analysis.machines) and its bundle record: a figure measured at a size,
read between two measured sizes, or refused outside the measured range (never extrapolated); rankings by time and
cost; unequal bundles flagged; a bad bundle refused naming its field."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from bench.vocab import records
from bench.vocab.config import RunConfig
from bench.analysis import machines as M
from bench.analysis.run_summary import RunSummary
from bench.vocab.errors import RecordError
from bench.vocab.record_types import CpuSpec, Fingerprint
from bench.vocab.run_info import RunInfo

ROOT = Path(__file__).resolve().parents[2]


def _run(model: str, size: str | None, batch: int, target: str, samples_per_s: float, *, flops: float | None = None,
         backend: str = "tensorflow", energy: float | None = None, run_id: int = 1) -> records.RunRecord:
    device, _, threads = target.partition("/")
    config = {"model": model, "size": size or "s", "batch_size": batch, "device": device, "backend": backend,
              "dataset": "synthetic-mnist", "cpu_threads": int(threads) if threads else None}
    return records.RunRecord.model_validate(records.run_record(
        id=run_id, status="finished", config=RunConfig.model_validate(config), hardware=None, info=RunInfo(flops_per_sample=flops, n_train=10000),
        created_at=None, started_at=None, ended_at=None, error=None, store_error=None, epochs=[], samples=[],
        summary=RunSummary(steady_samples_per_s=samples_per_s, steady_epoch_seconds=10000 / samples_per_s,
                           energy_j_per_1000_samples={"cpu" if device == "cpu" else target: energy})))


def _flops(size: str) -> float:
    value = M.model_flops("mlp", size, "synthetic-mnist")
    assert value is not None
    return value


def _machine(key: str, runs: list[records.RunRecord], *, backend: str = "tensorflow", label: str | None = None,
             prices: dict[str, float] | None = None) -> M.GalleryEntry:
    doc = records.bundle_record(machine=Fingerprint(cpu=CpuSpec(model="Test CPU", logical_cores=4), backend=backend,
                                                    framework_version="3.15.1"),
                                suite_version="1", suite_variant="quick", runs=runs, label=label, prices=prices)
    return M.GalleryEntry(key, "store", records.load_bundle(json.loads(records.json_text(doc))))


@pytest.fixture
def laptop() -> M.GalleryEntry:
    return _machine("laptop", [
        _run("mlp", "xs", 128, "cpu", 40000, flops=_flops("xs"), run_id=1),
        _run("mlp", "m", 128, "cpu", 10000, flops=_flops("m"), run_id=2),
        _run("seed-mnist-dense", None, 32, "cpu", 20000, run_id=3),
    ], label="laptop", prices={"cpu": 0.10})


@pytest.fixture
def gpu_box() -> M.GalleryEntry:
    return _machine("gpu", [
        _run("mlp", "xs", 128, "gpu:0", 80000, flops=_flops("xs"), backend="jax", energy=2.0, run_id=1),
        _run("mlp", "s", 128, "gpu:0", 70000, flops=_flops("s"), backend="jax", energy=2.5, run_id=2),
        _run("mlp", "m", 128, "gpu:0", 60000, flops=_flops("m"), backend="jax", energy=3.0, run_id=3),
    ], backend="jax", label="gpu box", prices={"gpu:0": 3.60})


def test_a_measured_size_is_measured(laptop: M.GalleryEntry) -> None:
    row = M.estimate(laptop, "cpu", "mlp", "xs", 128, price_per_hour=0.10)
    assert row.how == M.MEASURED
    assert row.seconds_per_1k == pytest.approx(1000 / 40000)
    assert row.cost_per_1k == pytest.approx(1000 / 40000 * 0.10 / 3600)
    assert row.energy_j_per_1k is None and row.energy_note  # no reading: said why, never a zero


def test_a_size_between_two_measured_sizes_is_interpolated_in_log_flops(laptop: M.GalleryEntry) -> None:
    row = M.estimate(laptop, "cpu", "mlp", "s", 128)
    assert row.how == M.INTERPOLATED
    assert "between xs and m" in row.note
    share = (math.log(_flops("s")) - math.log(_flops("xs"))) / (math.log(_flops("m")) - math.log(_flops("xs")))
    expected = math.exp(math.log(1000 / 40000) + share * (math.log(1000 / 10000) - math.log(1000 / 40000)))
    assert row.seconds_per_1k == pytest.approx(expected)
    assert 1000 / 40000 < row.seconds_per_1k < 1000 / 10000


@pytest.mark.parametrize("size, side", [("l", "above the largest"), ("xl", "above the largest")])
def test_a_size_outside_the_measured_range_is_refused_not_extrapolated(laptop: M.GalleryEntry, size: str, side: str) -> None:
    row = M.estimate(laptop, "cpu", "mlp", size, 128)
    assert row.how == M.NOT_MEASURED
    assert row.seconds_per_1k is None and row.cost_per_1k is None
    assert side in row.note and "never extrapolated" in row.note


def test_an_unmeasured_batch_size_is_refused_with_the_measured_ones(laptop: M.GalleryEntry) -> None:
    row = M.estimate(laptop, "cpu", "mlp", "s", 256)
    assert row.how == M.NOT_MEASURED
    assert "batch 256" in row.note and "128" in row.note


def test_ranking_by_time_and_cost_with_speedup_and_flags(laptop: M.GalleryEntry, gpu_box: M.GalleryEntry) -> None:
    gallery = [laptop, gpu_box]
    ranked = M.ranking(gallery, "mlp", "s", 128, prices=M.prices_of(gallery), baseline=("laptop", "cpu"))
    assert [(r.machine, r.how) for r in ranked.by_time] == [("gpu", M.MEASURED), ("laptop", M.INTERPOLATED)]
    assert ranked.by_time[1].speedup == pytest.approx(1.0)
    assert ranked.by_time[0].speedup == pytest.approx(ranked.by_time[1].seconds_per_1k / (1000 / 70000))
    assert "backend jax (baseline tensorflow)" in ranked.by_time[0].flags
    assert ranked.by_time[1].flags == ()
    # the laptop costs 0.10/h, the GPU box 3.60/h: cheaper per 1,000 samples on the laptop despite being slower
    assert [r.machine for r in ranked.by_cost] == ["laptop", "gpu"]
    assert ranked.unranked == ()


def test_prices_entered_replace_the_bundles(laptop: M.GalleryEntry, gpu_box: M.GalleryEntry) -> None:
    prices = M.prices_of([laptop, gpu_box], {("gpu", "gpu:0"): 0.01})
    assert prices[("gpu", "gpu:0")] == 0.01 and prices[("laptop", "cpu")] == 0.10


def test_workload_rows_and_interpolated_energy(laptop: M.GalleryEntry, gpu_box: M.GalleryEntry) -> None:
    rows = M.workload_rows([laptop, gpu_box], "mlp/xs/b128", prices={}, baseline=("gpu", "gpu:0"))
    assert {(r.machine, r.target) for r in rows} == {("laptop", "cpu"), ("gpu", "gpu:0")}
    assert next(r for r in rows if r.machine == "laptop").speedup == pytest.approx(0.5)
    assert 2.0 < (M.estimate(gpu_box, "gpu:0", "mlp", "s", 128).energy_j_per_1k or 0) <= 2.5


def test_energy_is_the_targets_own_device_and_a_missing_one_says_why() -> None:
    summary = RunSummary(energy_j_per_1000_samples={"cpu": None, "gpu:0": 12.0, "gpu:1": 8.0},
                         energy_estimated=("gpu:1",), energy_reasons={"cpu": "RAPL not readable here"})
    assert M.target_energy(summary, RunInfo(), "gpu:0") == (12.0, None)
    assert M.target_energy(summary, RunInfo(), "gpu:1") == (8.0, "integrated from power samples (gpu:1)")
    assert M.target_energy(summary, RunInfo(), "gpus") == (20.0, "integrated from power samples (gpu:1)")
    assert M.target_energy(summary, RunInfo(), "cpu/1") == (None, "cpu: RAPL not readable here")
    assert M.target_energy(RunSummary(energy_j_per_1000_samples={"cpu": 3.0}), RunInfo(), "cpu") == (3.0, None)
    # a summary without per-device figures: no figure, never a zero, and why (one figure for the whole run where a
    # map belongs is refused on import: tests/unit/test_hostile_records.py)
    assert M.target_energy(RunSummary(), RunInfo(), "cpu") == (None, "no energy reading in this run")
    assert M.target_energy(RunSummary(), RunInfo(energy_reasons={"gpu": "no NVML"}), "gpu:0") == (None, "gpu:0: no NVML")


def test_rows_unequal_to_a_baseline_without_a_figure_are_still_flagged(laptop: M.GalleryEntry, gpu_box: M.GalleryEntry) -> None:
    ranked = M.ranking([laptop, gpu_box], "mlp", "xs", 128, prices={}, baseline=("laptop", "cpu"))
    gpu = next(r for r in ranked.by_time if r.machine == "gpu")
    assert "backend jax (baseline tensorflow)" in gpu.flags  # the laptop measured xs: its own row's traits
    other = _machine("other", [_run("mlp", "l", 128, "cpu", 900, flops=_flops("l"))])
    ranked = M.ranking([other, gpu_box], "mlp", "xs", 128, prices={}, baseline=("other", "cpu"))
    gpu = next(r for r in ranked.by_time if r.machine == "gpu")
    assert gpu.speedup is None  # the baseline has no figure for xs (only l was measured there)
    assert "backend jax (baseline tensorflow)" in gpu.flags  # but its machine's traits still flag the difference
    # the optimizer differs between one machine's workloads (a seed preset's article): not taken from another one
    sgd = _machine("sgd", [_run("seed-mnist-dense", None, 32, "cpu", 20000, run_id=1)])
    sgd = M.GalleryEntry("sgd", "store", records.load_bundle({**sgd.bundle.to_dict(), "runs": [
        {**sgd.bundle.runs[0].to_dict(), "config": {**sgd.bundle.runs[0].config.to_dict(), "optimizer": "sgd"}}]}))
    ranked = M.ranking([other, gpu_box, sgd], "mlp", "xs", 128, prices={}, baseline=("sgd", "cpu"))
    assert not any("optimizer" in f for r in ranked.by_time for f in r.flags), ranked.by_time


def test_a_speedup_over_a_baseline_read_between_sizes_says_so(laptop: M.GalleryEntry, gpu_box: M.GalleryEntry) -> None:
    ranked = M.ranking([laptop, gpu_box], "mlp", "s", 128, prices={}, baseline=("laptop", "cpu"))
    gpu = next(r for r in ranked.by_time if r.machine == "gpu")
    laptop_row = next(r for r in ranked.by_time if r.machine == "laptop")
    assert laptop_row.how == M.INTERPOLATED and M.BASELINE_READ_BETWEEN not in laptop_row.flags
    assert gpu.speedup is not None and M.BASELINE_READ_BETWEEN in gpu.flags


def test_a_preset_is_measured_or_not(laptop: M.GalleryEntry, gpu_box: M.GalleryEntry) -> None:
    ranked = M.ranking([laptop, gpu_box], "seed-mnist-dense", None, 32, prices={})
    assert [r.machine for r in ranked.by_time] == ["laptop"]
    assert "was not measured" in ranked.unranked[0].note


def test_the_batch_offered_first_is_the_one_most_machine_targets_measured(laptop: M.GalleryEntry, gpu_box: M.GalleryEntry) -> None:
    other = _machine("other", [_run("mlp", "xs", 32, "cpu", 30000, flops=_flops("xs")),
                               _run("mlp", "xs", 32, "gpu:0", 90000, flops=_flops("xs"), run_id=2)])
    assert M.usual_batch([laptop, other], "mlp") == 32  # two targets measured it at 32, one at 128
    assert M.usual_batch([laptop, gpu_box, other], "mlp") == 128  # two at each: the larger
    assert M.usual_batch([laptop, gpu_box], "cnn") is None


def test_the_shipped_h100_bundle_loads_and_ranks() -> None:
    bundle = records.load_bundle(json.loads((ROOT / "docs/results/bundle-h100.json").read_text()))
    h100 = M.GalleryEntry("shipped:h100", "shipped", bundle)
    assert "H100" in h100.name and "docs/results" in (bundle.notes or "")
    row = M.estimate(h100, "gpu:0", "mlp", "s", 2048)  # measured at xs and m at batch 2048: s is read between
    assert row.how == M.INTERPOLATED


@pytest.mark.parametrize("change, field", [
    ({"schema": "bench.run/1"}, "schema"),
    ({"machine": "laptop"}, "machine"),
    # the machine's every part is typed: a GPU that is no JSON object, a CPU's cores as text, a version as a number
    ({"machine": {"cpu": {"model": "x"}, "gpus": ["x", 5]}}, r"machine\.gpus\[0\]"),
    ({"machine": {"cpu": {"model": "x", "logical_cores": "8"}}}, r"machine\.cpu\.logical_cores"),
    ({"machine": {"cpu": {"model": "x"}, "gpus": [{"name": "g", "mem_total_mib": 1e308}]}},
     r"machine\.gpus\[0\]\.mem_total_mib"),
    ({"machine": {"cpu": {"model": "x"}, "framework_version": 3.15}}, r"machine\.framework_version"),
    ({"machine": {"gpus": []}}, r"machine\.cpu is missing"),
    ({"suite": None}, "suite"),
    ({"runs": []}, "runs"),
    ({"prices": {"cpu": -1}}, "prices"),
])
def test_a_bad_bundle_is_refused_naming_its_field(laptop: M.GalleryEntry, change: dict[str, Any], field: str) -> None:
    doc = laptop.bundle.to_dict() | change
    with pytest.raises(RecordError, match=field):
        records.load_bundle(doc)


def test_a_rows_words_are_the_same_on_the_page_and_in_the_report() -> None:
    """The Machines page and the HTML report say of a row what the row says of itself (one home for the words)."""
    from bench.output import gallery

    missing = M.Row(machine="a", machine_name="laptop", target="cpu", how=M.INTERPOLATED, note="between xs and m",
                    energy_note="no RAPL counter readable")
    integrated = M.Row(machine="b", machine_name="box", target="gpu:0", how=M.MEASURED, note="measured at m",
                       energy_j_per_1k=12.5, energy_note="integrated from power", price_per_hour=2.0)
    assert (missing.how_text, missing.energy_why, missing.energy_beside, missing.cost_why) == (
        "read between sizes", "no RAPL counter readable", None, "no price entered")
    assert (integrated.how_text, integrated.energy_beside, integrated.cost_why) == (
        "measured", "integrated from power", M.NOT_MEASURED)
    table = gallery._table([missing, integrated])
    for words in ("read between sizes", "no RAPL counter readable", "no price entered", "integrated from power",
                  missing.speedup_why):
        assert table.count(words) == 1, words  # said once, under the table, not in a cell


def test_the_html_report_draws_the_ranking_and_says_each_reason_once_per_table() -> None:
    """The report holds the ranking chart (plotly.js inlined: nothing fetched) above its tables, and a missing
    figure is a "—" in its cell with its reason said once under each table, never in every cell."""
    from bench.output import gallery

    machines, problems = gallery.shipped_machines()
    assert not problems and len(machines) >= 2
    base = (machines[0].key, "cpu")
    ranked = M.ranking(machines, "mlp", "s", 2048, prices={}, baseline=base)
    workloads = {w: M.workload_rows(machines, w, prices={}, baseline=base) for w in M.workloads_of(machines)}
    page = gallery.to_html(machines, ranked, workloads, baseline=base)
    assert "Plotly.newPlot" in page and "<script src" not in page
    assert page.index("Plotly.newPlot") < page.index("<h3>By time</h3>")
    rapl = "RAPL not readable here"
    tables_with_rapl = sum(any(r.energy_note and rapl in r.energy_note and r.energy_j_per_1k is None for r in rows)
                           for rows in (ranked.by_time, *workloads.values()))
    assert tables_with_rapl >= 2 and page.count(rapl) == tables_with_rapl
    assert "— (" not in page and "backend jax (baseline tensorflow)</td>" not in page
