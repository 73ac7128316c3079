"""Achieved GFLOP/s against the device's measured matmul peak, in words, for the Train and Compare pages.

The share of the peak is shown only when it can be true: a peak flagged for a new probe (a run beat it) or one below
the achieved figure reads "peak being re-measured", never a share above 100 %; a device never probed reads "peak not
measured yet". Where the peak came from (sizes, repeats, date, the machine's other CPU use) is said beside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


from bench.analysis import compare
from bench.analysis.run_summary import Run
from bench.hardware import peak_cache
from bench.hardware.peak_cache import PeakEntry
from bench.vocab.readings import Epoch
from bench.vocab.config import RunConfig
from bench.vocab.run_info import RunInfo
from bench.vocab.target import of_config

# plain words: the line is drawn escaped (it names the run's target), and as text by the live view, where every
# viewer reads it (a student on /watch as well as the presenter): it says what is missing, not what to press; the
# System page's Measure peak, a Sweep or `python -m bench.hardware.probe` measures it (docs/MEASUREMENTS.md)
NOT_MEASURED = "peak not measured on this machine yet, so no share of it is shown"


def peak_of(config: RunConfig) -> PeakEntry | None:
    """The cached best peak of a run's target (bench.hardware.peak_cache.lookup), or None: never measured, several
    GPUs, or a malformed config."""
    target = of_config(config)
    if target is None or target.kind == "gpus":
        return None
    try:
        return peak_cache.lookup(target.device, cpu_threads=target.cpu_threads, backend=config.backend)
    except (ValueError, OSError):
        return None


def peak_text(achieved: float | None, peak: PeakEntry | None, *, what: str = "Last epoch") -> str:
    """'<what>: <achieved> GFLOP/s, <share> of the measured matmul peak of <peak> GFLOP/s (<where it came from>)', or
    the figure with 'peak not measured yet' / 'peak being re-measured' where no share can be true; '—' for the figure
    when it is unknown."""
    figure = f"{achieved:,.1f} GFLOP/s" if achieved is not None else "— GFLOP/s"
    if peak is None or not peak_cache.is_plausible(peak):
        return f"{what}: {figure}; {NOT_MEASURED}."
    value = peak.peak_gflops
    source = peak_cache.describe(peak)
    if peak.stale or (achieved is not None and achieved > value):
        return (f"{what}: {figure}; peak being re-measured: a run achieved more than the {value:,.1f} GFLOP/s "
                f"measured ({source}), so no share is shown until the next probe.")
    if achieved is None:
        return f"{what}: {figure}; measured matmul peak {value:,.1f} GFLOP/s ({source})."
    return f"{what}: {figure}, {achieved / value:.0%} of the measured matmul peak of {value:,.1f} GFLOP/s ({source})."


def epoch_line(epochs: Sequence[Epoch], info: RunInfo, config: RunConfig) -> str | None:
    """The peak line of a live run's latest epoch; None before the first epoch."""
    if not epochs:
        return None
    return peak_text(compare.epoch_gflops(epochs[-1], info), peak_of(config), what=f"Epoch {epochs[-1].epoch}")


def record_line(record: Run) -> str:
    """The peak line of a run record: its steady achieved GFLOP/s against its target's peak."""
    return peak_text(compare.achieved_gflops(record), peak_of(record.config),
                     what=f"#{record.id} {compare.target(record)}, steady")
