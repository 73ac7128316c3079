"""Cost and energy beside the speed: hourly prices as a user enters them, a run's energy per steady epoch and its cost
per steady epoch and per run. A figure not measured (no price, no energy reading) is None, never a zero."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from bench.analysis import run_summary
from bench.analysis.run_summary import Run
from bench.vocab import limits
from bench.vocab.config import ConfigError
from bench.vocab.target import Target, canonical, text_of_config


PRICE_EXAMPLE = "cpu=0.40,gpu:0=2.50"


def usable_price(value: object) -> float | None:
    """An hourly price as a cost may be computed from it: a finite number within ``bench.vocab.limits``'
    PRICE_PER_HOUR_MIN..MAX (a normal float, never a subnormal or a negative); None otherwise, so that a cost is not
    measured rather than wrong. Every price is used through it (comparisons, machines, entered or read from a file)."""
    return float(value) if limits.entered_problem(value, "price_per_hour") is None else None  # type: ignore[arg-type]


def usable_prices(prices: Mapping[str, object] | None) -> dict[str, float]:
    """Target -> hourly price (each target in its canonical form), the prices :func:`usable_price` refuses left out."""
    out: dict[str, float] = {}
    for name, value in (prices or {}).items():
        price = usable_price(value)
        if price is not None:
            out[canonical(name)] = price
    return out


def price_value(text: str, where: str) -> float | None:
    """One hourly price as entered: blank = no price (None); else a normal number from 0.000001 to 1,000,000 (ConfigError otherwise)."""
    text = str(text).strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        raise ConfigError([f"{where}: {text!r} is not a number; give an hourly price such as 0.40, or leave it "
                           "blank for no price"]) from None
    problem = limits.entered_problem(value, "price_per_hour")
    if problem:
        raise ConfigError([f"{where}: {problem}; leave a target out to give it no price"])
    return value


def parse_prices(text: str | None, targets: Sequence[Target | str] | None = None) -> dict[str, float]:
    """``"cpu=0.40,gpu:0=2.50"`` -> ``{"cpu": 0.4, "gpu:0": 2.5}``: an hourly price per target, entered by the user
    (no price is assumed for a target left out). Every problem is listed in one ConfigError, each saying what to
    write; with ``targets``, a price for a target not among them is one."""
    prices: dict[str, float] = {}
    errors: list[str] = []
    known = {canonical(t) for t in targets} if targets is not None else None
    for part in (text or "").split(","):
        if not part.strip():
            continue
        name, sep, price = part.partition("=")
        try:
            if not sep:
                raise ConfigError([""])
            name_text = str(Target.parse(name.strip()))
        except ConfigError:
            errors.append(f"--price: {part.strip()!r} is not TARGET=PRICE; write e.g. {PRICE_EXAMPLE}")
            continue
        try:
            value = price_value(price, f"--price {name_text}")
        except ConfigError as exc:
            errors.extend(exc.errors)
            continue
        if value is None:
            errors.append(f"--price: {part.strip()!r} has no price; write e.g. {PRICE_EXAMPLE}")
        elif known is not None and name_text not in known:
            errors.append(f"--price: {name_text} is not among the targets ({', '.join(sorted(known))}); price only "
                          "those you compare")
        elif name_text in prices:
            errors.append(f"--price: {name_text} is priced twice; give each target one price")
        else:
            prices[name_text] = value
    if errors:
        raise ConfigError(errors)
    return prices


def energy_per_epoch(run: Run) -> tuple[float | None, dict[str, str]]:
    """(joules per steady epoch summed over the run's devices, {} ) when every device was measured; else
    (None, {device: why not}) naming each unmeasured device (the run's target when the summary says nothing)."""
    summary = run_summary.summary_of(run)
    per_device, reasons = summary.energy_j_per_epoch, summary.energy_reasons
    if not per_device:
        device = text_of_config(run.config).split("/")[0]
        return None, {device: reasons.get(device) or "no energy reading in this run"}
    measured = {d: j for d, j in per_device.items() if j is not None}
    missing = {d: reasons.get(d) or "no energy reading" for d in per_device if d not in measured}
    if missing:
        return None, missing
    return float(sum(measured.values())), {}


def run_cost(run: Run, price_per_hour: float | None) -> tuple[float | None, float | None]:
    """(cost per steady epoch, cost per run) at an hourly price; the run is its wall time from start to end (start-up
    included), else the sum of its epochs. None where the price or the time is missing."""
    price_per_hour = usable_price(price_per_hour)
    if price_per_hour is None:
        return None, None
    summary = run_summary.summary_of(run)
    steady = summary.steady_epoch_seconds
    started, ended = run.started_at, run.ended_at
    run_s = ended - started if started is not None and ended is not None and ended >= started else summary.total_seconds
    return (steady * price_per_hour / 3600 if steady is not None else None,
            run_s * price_per_hour / 3600 if run_s is not None else None)
