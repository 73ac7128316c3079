"""Append-only live charts: a Plotly figure split into what only grows and the rest, and the increment between two.

The live feed (ui.live_feed) builds a run's figures (bench.output.charts) when what they draw changed, once for every
viewer; this module turns two successive figures into what a browser holding the first lacks: the points of each
trace past its last x, the layout lists that only grew (an epoch's mark and name) as their new items, and the other
layout keys that changed. The browser (ui/static/live.js) appends them to the figure's own data and redraws once,
keeping the viewer's zoom, and thins its oldest points itself. A new trace layout (a run, a GPU line appearing) is
sent whole.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go

CONFIG = {"displaylogo": False, "responsive": True}


@dataclass(frozen=True)
class Prepared:
    """A figure as plain JSON data, split into what only grows (per-trace arrays as long as x) and the rest."""

    data: list[dict[str, Any]]
    layout: dict[str, Any]
    signature: str  # hash of the traces without their growing arrays, and of the scope (the run)
    arrays: list[dict[str, list[Any]]]  # per trace: dotted attribute path -> values, one per point
    layout_hashes: dict[str, str]


def _hash(value: Any) -> str:
    return hashlib.blake2b(json.dumps(value, sort_keys=True, default=str).encode(), digest_size=12).hexdigest()


def _growing(trace: dict[str, Any], n: int, prefix: str = "") -> dict[str, list[Any]]:
    """Every list in ``trace`` (nested dicts included) with one value per point, by dotted path."""
    found: dict[str, list[Any]] = {}
    for name, value in trace.items():
        path = f"{prefix}{name}"
        if isinstance(value, list) and len(value) == n and name != "x":
            found[path] = value
        elif isinstance(value, dict):
            found.update(_growing(value, n, f"{path}."))
    return found


def _strip(trace: dict[str, Any], paths: set[str], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in trace.items():
        path = f"{prefix}{name}"
        if path in paths:
            continue
        out[name] = _strip(value, paths, f"{path}.") if isinstance(value, dict) else value
    return out


def prepare(fig: go.Figure, scope: Any = None) -> Prepared:
    """Split ``fig`` (through Plotly's own JSON encoder, as st.plotly_chart sends it) for diffing."""
    spec = json.loads(fig.to_json())
    data, layout = spec.get("data", []), spec.get("layout", {})
    arrays, stripped = [], []
    for trace in data:
        x = trace.get("x")
        n = len(x) if isinstance(x, list) else -1
        grow = {"x": x, **_growing(trace, n)} if n >= 0 else {}
        arrays.append(grow)
        stripped.append(_strip(trace, set(grow)))
    return Prepared(data=data, layout=layout, signature=_hash([scope, stripped]), arrays=arrays,
                    layout_hashes={k: _hash(v) for k, v in layout.items()})


def _new_from(xs: list[Any], last: Any) -> int:
    """Index of the first point after ``last`` (x only grows along a live trace); 0 when nothing is held."""
    if last is None:
        return 0
    i = len(xs)
    while i > 0 and xs[i - 1] is not None and xs[i - 1] > last:
        i -= 1
    return i


def _groups(prep: Prepared, last_x: list[Any]) -> list[dict[str, Any]]:
    """The points of ``prep`` past each trace's ``last_x``, as Plotly.extendTraces updates: traces whose growing
    arrays have the same paths share one group."""
    groups: dict[tuple[str, ...], dict[str, Any]] = {}
    for i, arrays in enumerate(prep.arrays):
        if not arrays:
            continue
        start = _new_from(arrays["x"], last_x[i] if i < len(last_x) else None)
        if start >= len(arrays["x"]):
            continue
        paths = tuple(sorted(arrays))
        group = groups.setdefault(paths, {"traces": [], "update": {p: [] for p in paths}})
        group["traces"].append(i)
        for p in paths:
            group["update"][p].append(arrays[p][start:])
    return list(groups.values())


def _last_x(prep: Prepared) -> list[Any]:
    return [a["x"][-1] if a.get("x") else None for a in prep.arrays]


def increment(before: Prepared, after: Prepared) -> dict[str, Any] | None:
    """What turns a chart drawn from ``before`` into ``after`` (same traces): the new points (``groups``), layout
    lists that only grew as their new items (``append``: an epoch's mark and name), other changed layout keys
    whole (``layout``); None when nothing changed. Its size does not grow with the run's length."""
    groups = _groups(after, _last_x(before))
    layout: dict[str, Any] = {}
    append: dict[str, Any] = {}
    for key, digest in after.layout_hashes.items():
        if before.layout_hashes.get(key) == digest:
            continue
        old, new = before.layout.get(key), after.layout[key]
        if isinstance(old, list) and isinstance(new, list) and len(new) > len(old) and new[:len(old)] == old:
            append[key] = new[len(old):]
        else:
            layout[key] = new
    if not groups and not layout and not append:
        return None
    return {"groups": groups, "layout": layout or None, "append": append or None}
