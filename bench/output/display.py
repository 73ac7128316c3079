"""Text for people: short device names and table cells where a missing reading reads "—", never "None" or 0."""

from __future__ import annotations

import datetime
import math
import re
from typing import Any

MISSING = "—"

# One pattern per way a framework names where a variable lives: TensorFlow "/job:.../device:GPU:0", JAX "TFRT_CPU_0",
# "cuda:0", "CudaDevice(id=0)", torch "cpu" / "cuda:0".
_DEVICE_PATTERNS = (
    re.compile(r"device:(?P<kind>[A-Za-z_]+):(?P<index>\d+)"),
    re.compile(r"^TFRT_(?P<kind>[A-Za-z]+)_(?P<index>\d+)$"),
    re.compile(r"^(?P<kind>[A-Za-z]+)Device\(id=(?P<index>\d+)\)$"),
    re.compile(r"^(?P<kind>[A-Za-z]+):(?P<index>\d+)$"),
    re.compile(r"^(?P<kind>cpu|gpu|cuda|tpu)$", re.IGNORECASE),
)
_KINDS = {"cuda": "GPU", "rocm": "GPU", "metal": "GPU"}


def _short_one(raw: str) -> str:
    text = raw.strip()
    for pattern in _DEVICE_PATTERNS:
        match = pattern.search(text)
        if match:
            kind = match.group("kind").lower()
            kind = _KINDS.get(kind, kind.upper())
            index = match.groupdict().get("index")
            return f"{kind}:{index}" if index is not None else kind
    return text


def short_device(raw: Any) -> str:
    """A framework's device name as a short label: "/job:localhost/replica:0/task:0/device:CPU:0" -> "CPU:0",
    "cuda:0" -> "GPU:0"; several devices (comma-separated) each shortened; "—" when there is none; an unknown form
    unchanged."""
    if raw is None or str(raw).strip() == "":
        return MISSING
    return ", ".join(_short_one(part) for part in str(raw).split(",") if part.strip())


def missing(value: Any) -> bool:
    """Whether a reading does not exist: None, NaN or pandas' NA."""
    if value is None:
        return True
    try:
        return bool(value != value) or (isinstance(value, float) and math.isnan(value))
    except (TypeError, ValueError):  # pandas.NA refuses bool()
        return True


def cell(value: Any, fmt: str | None = None) -> str:
    """One table cell: "—" for a reading that does not exist, else the value (through ``fmt``, e.g. "{:,.0f}")."""
    if missing(value):
        return MISSING
    return fmt.format(value) if fmt else str(value)


def when(epoch_s: Any) -> str:
    """A moment (seconds since 1970, UTC) as "2026-11-24 14:02" in this machine's time zone; "—" when it is missing
    or no date (not finite, or outside the years 1970..9999)."""
    if isinstance(epoch_s, bool) or not isinstance(epoch_s, (int, float)) or not math.isfinite(epoch_s):
        return MISSING
    try:
        return datetime.datetime.fromtimestamp(epoch_s).strftime("%Y-%m-%d %H:%M")
    except (OverflowError, OSError, ValueError):
        return MISSING


def cost(value: float | None) -> str:
    """A price in the CLI's tables: three significant figures, or scientific below 0.001; an em dash when unknown."""
    return "—" if value is None else f"{value:.3g}" if value >= 0.001 else f"{value:.2e}"


def imported(info: Any) -> str | None:
    """Where an imported run came from, in words ("imported from file run-7.json, run #7 there"), for every place a
    stored run shows; None for a run measured here. ``info``: a run's RunInfo (``imported``, ``source_id`` and the
    kept key ``imported_from``)."""
    if not getattr(info, "imported", None):
        return None
    where = imported_from(info)
    source_id = getattr(info, "source_id", None)
    text = "imported" + (f" from {where}" if where else "")
    return text + (f", run #{source_id} there" if isinstance(source_id, int) and not isinstance(source_id, bool)
                   else "")


def imported_from(info: Any) -> str | None:
    """The ``imported_from`` a run's info keeps among the keys its type does not declare (the store sets it from its
    import columns), or None."""
    for extra in (getattr(info, "extra", None), getattr(info, "model_extra", None)):
        where = extra.get("imported_from") if isinstance(extra, dict) else None
        if isinstance(where, str) and where:
            return where
    return None
