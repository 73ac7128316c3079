"""What the devices really did, beside a run's epoch times: a throttle note, an energy line and the GPU readings'
source.

The sentences are built by plain functions (:func:`throttle_text`, :func:`energy_text`, :func:`source_text`) so they
are tested without Streamlit. The run's header (ui.live.header_data, drawn by the live stream in every state) shows the
throttle note and the energy line; :func:`source_line` draws the source under an ended run.
"""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from bench.analysis.run_summary import RunSummary
from bench.hardware.monitor import sources
from bench.vocab.readings import Epoch, Sample
from bench.runs.run_state import RunSnapshot
from ui.safe_text import escape

__all__ = ["energy_text", "source_line", "source_text", "throttle_text"]


def _device_label(device: str) -> str:
    return "CPU" if device == "cpu" else device.replace("gpu:", "GPU ")


def throttle_text(epochs: Sequence[Epoch]) -> str | None:
    """"GPU clocks were held back in epochs 2, 3 (power cap, thermal slowdown) ..." or None when no epoch was."""
    held = [e for e in epochs if e.throttle_reasons]
    if not held:
        return None
    reasons = sorted({r for e in held for r in e.throttle_reasons or ()})
    numbers = ", ".join(str(e.epoch) for e in held)
    word = "epoch" if len(held) == 1 else "epochs"
    return (f"GPU clocks were held back in {word} {numbers} ({', '.join(reasons)}): those epoch times are slower "
            f"than this GPU runs when it is not limited.")


def energy_text(summary: RunSummary | None) -> str | None:
    """One line per device: joules per steady epoch and per 1,000 samples, "not measured: <reason>" otherwise.
    None for a summary without energy figures (a record from a version that did not keep them)."""
    if summary is None or summary.energy_j_per_epoch is None:
        return None
    per_1000 = summary.energy_j_per_1000_samples or {}
    reasons = summary.energy_reasons
    estimated = set(summary.energy_estimated)
    parts = []
    for device, joules in summary.energy_j_per_epoch.items():
        label = _device_label(device)
        if joules is None:
            parts.append(f"{label}: not measured: {reasons.get(device) or 'no reading'}")
            continue
        rate = per_1000.get(device)
        rate_text = f", {rate:,.1f} J per 1,000 samples" if rate is not None else ""
        note = " (estimated from power samples)" if device in estimated else ""
        parts.append(f"{label}: {joules:,.1f} J per epoch{rate_text}{note}")
    return "Energy (median of the steady epochs) · " + " · ".join(parts) if parts else None


def source_text(samples: Sequence[Sample]) -> str | None:
    """Where the run's GPU readings came from and what its "utilization" means there, with the figures that source
    cannot give ("not measured here") and why; None for a run without GPU readings or from before sources."""
    names = list(dict.fromkeys(g.source for s in samples for g in s.gpus or () if g.source))
    parts = []
    for name in names:
        info = sources.info_of(name)
        if info is None:
            parts.append(f"GPU readings from {name}.")
            continue
        gaps = sorted(field for field in info.not_measured if field in _FIGURES)
        missing = f" Not measured here: {', '.join(_FIGURES[f] for f in gaps)}." if gaps else ""
        parts.append(f"GPU readings from {name}: utilization is {info.utilization}{missing}")
    return " ".join(parts) or None


_FIGURES = {"power_w": "power", "energy_j": "an energy counter", "temp_c": "temperature", "sm_clock_mhz": "clock",
            "mem_total_mib": "a memory total", "sm_active_percent": "SM activity",
            "tensor_active_percent": "tensor activity", "throttle_reasons": "clock-limit reasons"}


def source_line(snap: RunSnapshot) -> None:
    """The GPU readings' source, as a caption (only where it is not NVML, the source the pages explain at length)."""
    text = source_text(snap.samples)
    if text and "GPU readings from NVML" not in text:
        st.caption(escape(text, limit=1200))


