"""The bounds of every number a record carries, declared once: a number outside its bounds (or not finite) is
refused on import with its path, so that no page, export or store write meets an Infinity, a NaN, a date past any
calendar or an integer SQLite cannot hold. bench.records applies them. What a user may ask of a run (epochs, batch
size, sampling interval, ...) is another set of limits, declared once in bench.config and read by the forms."""

from __future__ import annotations

import math
from typing import Any

# -- the bounds --------------------------------------------------------
# A number outside its bounds (or not finite) is refused on import with its path, so that no page, export or store
# write meets an Infinity, a NaN, a date past any calendar or an integer SQLite cannot hold.
TIME_MIN_S, TIME_MAX_S = 0.0, 4102444800.0  # wall-clock moments: 1970-01-01 .. 2100-01-01 (UTC)
ID_MAX = 2**63 - 1  # SQLite's largest integer
EPOCH_MAX = 1_000_000
GPU_INDEX_MAX = 1023
_PERCENT = (0.0, 100.0)
_ANY = (-1e15, 1e15)  # a loss, a reading in its own unit: any finite value of sane size
BOUNDS: dict[str, tuple[float, float]] = {
    "created_at": (TIME_MIN_S, TIME_MAX_S), "started_at": (TIME_MIN_S, TIME_MAX_S),
    "ended_at": (TIME_MIN_S, TIME_MAX_S),
    "t_s": (-1e7, 1e9), "t_start_s": (-1e7, 1e9), "t_end_s": (-1e7, 1e9),  # seconds from the worker's start
    "epoch_seconds": (0.0, 1e8),
    "samples_per_s": (0.0, 1e13), "achieved_gflops": (0.0, 1e12),
    "cpu_percent": _PERCENT, "util_percent": _PERCENT, "mem_util_percent": _PERCENT,
    "sm_active_percent": _PERCENT, "sm_occupancy_percent": _PERCENT, "tensor_active_percent": _PERCENT,
    "fp32_active_percent": _PERCENT, "fp16_active_percent": _PERCENT, "dram_active_percent": _PERCENT,
    "process_cpu_percent": (0.0, 100.0 * 65536),  # a process on many cores: 100 % per core
    "process_rss_mib": (0.0, 1e10), "ram_used_mib": (0.0, 1e10), "mem_used_mib": (0.0, 1e10),
    "mem_total_mib": (0.0, 1e10),
    "power_w": (0.0, 1e6), "power_limit_w": (0.0, 1e6), "temp_c": (-273.0, 1000.0), "sm_clock_mhz": (0.0, 1e6),
    "energy_j": (0.0, 1e18), "count": (0.0, 1e12), "id": (-ID_MAX, ID_MAX), "epoch": (1.0, EPOCH_MAX), "gpu_index": (0.0, GPU_INDEX_MAX), "cpu_energy_j": (0.0, 1e18),
}


# what training measured may be NaN or infinite: a run whose loss diverged (exports write it as null)
NON_FINITE_ALLOWED = frozenset({"loss", "val_loss", "accuracy", "val_accuracy"})


def problem(value: Any, key: str) -> str | None:
    """What is wrong with ``value`` as the number field ``key`` (not a number, not finite, outside BOUNDS: any sane
    size where unlisted), or None when it may be held."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return f"must be a number, got {value!r:.60}"
    if key in NON_FINITE_ALLOWED and not math.isfinite(value):
        return None
    low, high = BOUNDS.get(key, _ANY)
    if not math.isfinite(value) or not low <= value <= high:
        return f"must be a finite number from {low:g} to {high:g}, got {value!r:.60}"
    return None


# -- what a user enters where no run config checks it ----------------------------------------------------------------
# (name, unit) -> (low, high): a value must be finite, above low and at most high. The forms and the CLI's parsers
# apply them through entered(); a run's own settings (epochs, batch size, ...) are bench.config's.
# An hourly price is a normal float from PRICE_PER_HOUR_MIN to PRICE_PER_HOUR_MAX wherever it comes from (the CLI,
# the pages, a bundle, a loaded comparison): below, a subnormal such as 5e-324 would count as above zero and rank a
# machine cheapest at 0.00; above, a typo that prints costs of inf. bench.analysis.pricing applies it where prices
# are entered and used.
PRICE_PER_HOUR_MIN = 1e-6
PRICE_PER_HOUR_MAX = 1e6
TIMEOUT_MAX_S = 86400.0  # a day
# a low of 0 is exclusive (above 0); any other low is the least value allowed
ENTERED: dict[str, tuple[float, float, str]] = {
    "price_per_hour": (PRICE_PER_HOUR_MIN, PRICE_PER_HOUR_MAX, "an hourly price"),
    "timeout_s": (0.0, TIMEOUT_MAX_S, "a timeout in seconds"),
    "batch_size": (0.0, 1_000_000.0, "a batch size"),
}


def entered_problem(value: Any, key: str) -> str | None:
    """What is wrong with ``value`` entered as ``key`` of ENTERED (not a number, not finite, outside its bounds),
    naming the bounds; None when it may be used."""
    low, high, what = ENTERED[key]
    if (not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value)
            or not (low < value if low == 0 else low <= value) or not value <= high):
        within = f"above {low:g} and at most {high:g}" if low == 0 else f"from {low:.6f} to {high:,.0f}"
        return f"{what} must be a finite number {within} (got {value!r:.60})"
    return None
