"""Comparison energy and cost (bench.analysis.compare): hourly prices entered by the user, energy from the run summaries, and
the headline that says them, or says which side was not measured and why."""

from __future__ import annotations

from typing import Any

import pytest

from bench.vocab import records
from bench.analysis import compare, pricing
from bench.vocab.config import ConfigError, RunConfig

RAPL = "RAPL not readable here: /sys/class/powercap is absent"


def run(run_id: int, target: str, times: list[float], energy: dict[str, float | None] | None = None,
        reasons: dict[str, str] | None = None, wall: float | None = None) -> records.RunRecord:
    """A run record: epoch 1 with tracing, then steady epochs of ``times``; energy per steady epoch per device."""
    epochs = [{"epoch": 1, "epoch_seconds": times[0] * 3, "includes_tracing": True, "samples_per_s": 100.0}]
    epochs += [{"epoch": i + 2, "epoch_seconds": t, "includes_tracing": False, "samples_per_s": 100.0}
               for i, t in enumerate(times)]
    summary: dict[str, Any] = {"steady_epoch_seconds": sorted(times)[len(times) // 2],
                               "total_seconds": sum(e["epoch_seconds"] for e in epochs)}
    if energy is not None:
        summary["energy_j_per_epoch"] = energy
        summary["energy_reasons"] = reasons or {}
    out = {"id": run_id, "status": "finished", "config": RunConfig().with_target(target).to_dict(), "hardware": {},
           "epochs": epochs, "samples": [], "summary": summary}
    if wall is not None:
        out.update(started_at=1000.0, ended_at=1000.0 + wall)
    return records.RunRecord.model_validate(out)


CPU = run(1, "cpu", [46.0, 46.0, 46.0], energy={"cpu": 2300.0}, wall=200.0)
GPU = run(2, "gpu:0", [4.0, 4.0, 4.0], energy={"cpu": 40.0, "gpu:0": 160.0}, wall=30.0)


def test_energy_ratio_is_the_baselines_energy_per_steady_epoch_over_the_others():
    cmp = compare.comparison([CPU, GPU])
    assert cmp["energy_j_per_epoch_a"] == 2300.0 and cmp["energy_j_per_epoch_b"] == 200.0, "summed over devices"
    assert cmp["energy_ratio"] == pytest.approx(11.5)
    head = compare.headline(compare.Pair.model_validate(cmp["pairs"][0]))
    assert head.startswith("gpu:0 trains 11.5x faster than cpu (median steady epoch; spread 11.5x–11.5x")
    assert "gpu:0 uses 11.5x less energy per epoch (200 J vs 2.3 kJ per steady epoch)" in head
    assert "not measured" not in head and "costs" not in head, "no price given: no cost"


def test_a_side_not_measured_has_no_ratio_and_the_headline_says_why():
    cpu = run(1, "cpu", [46.0, 46.0], energy={"cpu": None}, reasons={"cpu": RAPL})
    gpu = run(2, "gpu:0", [4.0, 4.0], energy={"cpu": None, "gpu:0": 160.0}, reasons={"cpu": RAPL})
    pair = compare.pairs([cpu, gpu])[0]
    assert pair.energy_ratio is None and pair.energy_j_per_epoch_b is None
    assert pair.energy_missing == {"cpu": RAPL}
    assert compare.headline(pair).endswith(f"; energy not measured on cpu: {RAPL}"), "named once, with its reason"


def test_a_run_without_energy_readings_is_named_by_its_target():
    cmp = compare.comparison([run(1, "cpu/1", [2.0, 2.0]), run(2, "gpu:0", [1.0, 1.0], energy={"gpu:0": 5.0})])
    assert cmp["energy_ratio"] is None
    assert cmp["pairs"][0]["energy_missing"] == {"cpu": "no energy reading in this run"}


def test_cost_per_steady_epoch_and_per_run_come_only_from_prices_given():
    cmp = compare.comparison([CPU, GPU], {"cpu": 0.40, "gpu:0": 2.50})
    assert cmp["cost_per_epoch_a"] == pytest.approx(46.0 * 0.40 / 3600)
    assert cmp["cost_per_epoch_b"] == pytest.approx(4.0 * 2.50 / 3600)
    assert cmp["cost_per_run_a"] == pytest.approx(200.0 * 0.40 / 3600), "the run's wall time, start-up included"
    assert cmp["cost_ratio"] == pytest.approx((46.0 * 0.40) / (4.0 * 2.50))
    head = compare.headline(compare.Pair.model_validate(cmp["pairs"][0]))
    assert f"gpu:0 costs {cmp['cost_ratio']:.1f}x less per epoch" in head
    assert cmp["prices"] == {"cpu": 0.40, "gpu:0": 2.50}
    only_one = compare.comparison([CPU, GPU], {"gpu:0": 2.50})
    assert only_one["cost_ratio"] is None and only_one["cost_per_epoch_a"] is None
    assert only_one["cost_per_epoch_b"] == pytest.approx(4.0 * 2.50 / 3600)
    assert "costs" not in compare.headline(compare.Pair.model_validate(only_one["pairs"][0]))
    none = compare.comparison([CPU, GPU])
    assert none["cost_ratio"] is None and none["cost_per_epoch_a"] is None, "no price is invented"


def test_a_faster_but_dearer_side_is_said_to_cost_more():
    pair = compare.pairs([CPU, GPU], {"cpu": 0.10, "gpu:0": 4.00})[0]
    assert pair.cost_ratio == pytest.approx((46.0 * 0.10) / (4.0 * 4.00))
    assert f"gpu:0 costs {1 / pair.cost_ratio:.1f}x more per epoch" in compare.headline(pair)


def test_sides_within_noise_are_about_as_fast():
    a = run(1, "cpu", [1.00, 1.10, 0.95])
    b = run(2, "cpu/1", [1.02, 0.98, 1.05])
    pair = compare.pairs([a, b])[0]
    assert pair.speedup_min < 1 < pair.speedup_max
    head = compare.headline(pair)
    assert head.startswith("cpu and cpu/1 are about as fast (median steady epoch ratio ")
    assert "faster" not in head
    assert compare.caution(pair) is not None, "the caution still says why"
    # a spread entirely above 1x names the faster side
    clear = compare.pairs([a, run(2, "cpu/1", [1.3, 1.4, 1.35])])[0]
    assert compare.headline(clear).startswith("cpu trains 1.4x faster than cpu/1 (median steady epoch; spread")


def test_the_comparison_record_carries_the_ratios():
    doc = compare.comparison_record([CPU, GPU], {"cpu": 0.40, "gpu:0": 2.50}).to_dict()
    cmp = doc["comparison"]
    assert cmp["energy_ratio"] == pytest.approx(11.5) and cmp["cost_ratio"] == pytest.approx(1.84)
    assert "less energy per epoch" in cmp["pairs"][0]["headline"]
    assert records.load(doc).comparison.pairs[0].cost_ratio == pytest.approx(1.84)


def test_prices_parse_with_errors_that_say_what_to_write():
    assert pricing.parse_prices("cpu=0.40, gpu:0=2.50") == {"cpu": 0.40, "gpu:0": 2.50}
    assert pricing.parse_prices("") == {} and pricing.parse_prices(None) == {}
    with pytest.raises(ConfigError) as bad:
        pricing.parse_prices("gpu0=2,cpu=x,gpu:1=0")
    assert bad.value.errors == [
        "--price: 'gpu0=2' is not TARGET=PRICE; write e.g. cpu=0.40,gpu:0=2.50",
        "--price cpu: 'x' is not a number; give an hourly price such as 0.40, or leave it blank for no price",
        "--price gpu:1: an hourly price must be a finite number from 0.000001 to 1,000,000 (got 0.0); leave a target "
        "out to give it no price"]
    with pytest.raises(ConfigError, match="gpu:0 is not among the targets"):
        pricing.parse_prices("gpu:0=2.5", ["cpu", "cpu/1"])
    assert pricing.price_value("  ", "price of cpu") is None


# -- prices are normal floats from 0.000001 to 1,000,000 an hour, entered or used ---------------------------------------
@pytest.mark.parametrize("price", [5e-324, 1e-7, -1.0, -0.0, 0.0, 1e6 * 1.5, float("inf"), float("nan"), True])
def test_a_price_out_of_bounds_is_no_price_where_it_is_used(price: float) -> None:
    """A loaded comparison, a bundle or a link may carry such a price: no cost is computed from it, so no side is
    cheapest at 0.00 and none "costs -1.0x more"."""
    assert pricing.usable_price(price) is None
    pair = compare.pairs([CPU, GPU], {"cpu": price, "gpu:0": 2.5})[0]
    assert pair.cost_per_epoch_a is None and pair.cost_ratio is None and pair.price_per_hour_a is None
    head = compare.headline(pair)
    assert "costs" not in head and "-1.0x" not in head
    assert compare.comparison([CPU, GPU], {"cpu": price, "gpu:0": 2.5}).get("prices") == {"gpu:0": 2.5}
    assert pricing.run_cost(CPU, price) == (None, None)


def test_negative_prices_on_both_sides_never_say_costs_more() -> None:
    pair = compare.pairs([CPU, GPU], {"cpu": -1.0, "gpu:0": -1.0})[0]
    assert pair.cost_ratio is None and "costs" not in compare.headline(pair)


@pytest.mark.parametrize("price", [1e-6, 0.40, 1e6])
def test_the_bounds_themselves_are_prices(price: float) -> None:
    assert pricing.usable_price(price) == price and pricing.price_value(repr(price), "price") == price


@pytest.mark.parametrize("text", ["5e-324", "1e-7", "1000001", "1e309", "-1", "nan"])
def test_an_entered_price_out_of_bounds_is_refused_with_the_bounds(text: str) -> None:
    with pytest.raises(ConfigError) as refused:
        pricing.price_value(text, "price of cpu")
    said = " ".join(refused.value.errors)
    assert "price of cpu" in said and ("above 0" in said or "from 0.000001 to 1,000,000" in said), said
    with pytest.raises(ConfigError):
        pricing.parse_prices(f"cpu={text}")


def test_the_cli_price_option_refuses_a_subnormal_price(capsys: pytest.CaptureFixture[str]) -> None:
    from bench.cli import main as cli

    with pytest.raises(SystemExit) as done:
        cli.main(["compare", "--targets", "cpu/1,cpu", "--price", "cpu=5e-324"])
    assert done.value.code == 2
    assert "from 0.000001 to 1,000,000" in capsys.readouterr().err


@pytest.mark.parametrize("price", [5e-324, -1.0])
def test_a_machine_priced_out_of_bounds_is_never_ranked_cheapest(price: float) -> None:
    """Machines: a bundle's (or a link's) price out of bounds is no price; the machine is not in the cost ranking."""
    from bench.analysis import machines as M
    from tests.unit.test_machines import _flops, _machine, _run

    cheap = _machine("cheap", [_run("mlp", "xs", 128, "cpu", 40000, flops=_flops("xs"))], prices={"cpu": 1.0})
    odd = _machine("odd", [_run("mlp", "xs", 128, "cpu", 40000, flops=_flops("xs"))], prices={"cpu": 1.0})
    prices = M.prices_of([cheap, odd], {("odd", "cpu"): price})
    assert ("odd", "cpu") not in prices and prices[("cheap", "cpu")] == 1.0
    ranked = M.ranking([cheap, odd], "mlp", "xs", 128, prices=prices)
    assert [r.machine for r in ranked.by_cost] == ["cheap"]
    assert M.cost_per_1k(25.0, price) is None
