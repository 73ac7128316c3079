"""Append-only live charts: a components-v2 element that draws a Plotly figure once per viewer and then appends.

The server builds the whole figure (bench.output.charts) once per chart refresh for every viewer of a run; this module
turns it into what one viewer's browser lacks: the points of each trace past the last x that browser holds, and the
layout keys that changed (an epoch mark, a title). The browser calls ``Plotly.newPlot`` once and
``Plotly.extendTraces`` / ``Plotly.relayout`` after, keeping the viewer's zoom, and thins its oldest points itself.
A new trace layout (a run, a GPU line appearing) draws the figure again. A browser that missed a message (a page
left and opened again, a rerun it never drew) asks for the whole figure through the component's state.

Plotly.js and the element's code are static files (ui/live_routes.py), fetched once per browser, never sent inside a
message.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

import plotly.graph_objects as go

from ui import static_files, v2_component
from ui.shared_cache import SharedCache

COMPONENT_NAME = "bench_live_chart"
CONFIG = {"displaylogo": False, "responsive": True}


@dataclass(frozen=True)
class Prepared:
    """A figure as plain JSON data, split into what only grows (per-trace arrays as long as x) and the rest."""

    data: list[dict[str, Any]]
    layout: dict[str, Any]
    signature: str  # hash of the traces without their growing arrays, and of the scope (the run)
    arrays: list[dict[str, list[Any]]]  # per trace: dotted attribute path -> values, one per point
    layout_hashes: dict[str, str]


@dataclass
class Held:
    """What one viewer's chart holds, as far as the server knows, and the last deltas sent to it."""

    seq: int  # the latest message's sequence number
    base: int  # the sequence number of the last whole figure sent
    signature: str
    last_x: list[Any]
    layout_hashes: dict[str, str]
    recent: list[dict[str, Any]] = field(default_factory=list)  # the last RECENT deltas, oldest first
    resync_seen: Any = None
    acked: bool = False  # the browser said it drew the whole figure ``base`` (until then every message is whole)


RECENT = 10  # deltas repeated in every message: a browser that skipped a few catches up without the whole figure


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


def full_message(prep: Prepared, seq: int) -> dict[str, Any]:
    return {"op": "full", "seq": seq, "sig": prep.signature, "figure": {"data": prep.data, "layout": prep.layout},
            "config": CONFIG}


def extend_message(held: Held) -> dict[str, Any]:
    return {"op": "extend", "seq": held.seq, "base": held.base, "deltas": list(held.recent)}


def _whole(prep: Prepared, held: Held | None, resync: Any, last_x: list[Any]) -> tuple[dict[str, Any], Held]:
    seq = (held.seq + 1) if held else 1
    return full_message(prep, seq), Held(seq=seq, base=seq, signature=prep.signature, last_x=last_x,
                                         layout_hashes=dict(prep.layout_hashes), resync_seen=resync)


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


def diff(prep: Prepared, held: Held | None, *, resync: Any = None, ack: Any = None) -> tuple[dict[str, Any], Held]:
    """The message that brings a viewer holding ``held`` to ``prep``, and what it holds after.

    A first view, a changed trace layout or a resync request (a new ``resync`` value from the browser) gives the
    whole figure, and so does every message until the browser acknowledges one (``ack``: the sequence number of
    the whole figure it drew; a browser mounts the element only once its code has loaded, and sees only the latest
    message then). After that a delta (the points past each trace's last held x, the changed layout keys) is added
    to the last RECENT deltas, all of which the message carries. With nothing new the message is the previous one
    again, which the browser does not even run.
    """
    last_x = _last_x(prep)
    if held is None or held.signature != prep.signature or (resync is not None and resync != held.resync_seen):
        return _whole(prep, held, resync, last_x)
    if not held.acked:
        if isinstance(ack, dict) and ack.get("seq") == held.base:
            held = dataclasses.replace(held, acked=True)
        else:
            unchanged = last_x == held.last_x and prep.layout_hashes == held.layout_hashes
            if unchanged:
                return full_message(prep, held.seq), held
            return _whole(prep, held, held.resync_seen, last_x)
    groups = _groups(prep, held.last_x)
    changed = {k: prep.layout[k] for k, h in prep.layout_hashes.items() if held.layout_hashes.get(k) != h}
    if not groups and not changed:
        return extend_message(held), held
    seq = held.seq + 1
    delta = {"seq": seq, "prev": held.seq, "groups": groups, "layout": changed or None}
    kept = [x if x is not None else (held.last_x[i] if i < len(held.last_x) else None) for i, x in enumerate(last_x)]
    after = dataclasses.replace(held, seq=seq, last_x=kept, layout_hashes=dict(prep.layout_hashes),
                                recent=[*held.recent, delta][-RECENT:])
    return extend_message(after), after


# -- shared preparation: one per figure, whatever the number of viewers ------------------------------------------------
_PREPARED_MAX = 24
_PREPARED: SharedCache[Prepared] = SharedCache(_PREPARED_MAX)


def prepared(key: tuple[Any, ...], fig: go.Figure, scope: Any = None) -> Prepared:
    """``prepare(fig)`` once per cache key (the figure's own cache key): every viewer's diff starts from it."""
    return _PREPARED.get(key, lambda: prepare(fig, scope))


# -- the Streamlit element ------------------------------------------------------------------------------------------
def _component() -> Any:
    return v2_component.component(COMPONENT_NAME, "live_chart")


def _held_key(key: str) -> str:
    return f"_live_chart_held_{key}"


def live_chart(prep: Prepared, *, key: str) -> None:
    """Draw ``prep`` for this viewer: the whole figure until the browser has drawn it, what is new after."""
    import streamlit as st

    state = st.session_state
    shown: Any = state.get(key)  # the element's state from the browser: {"ack": ..., "resync": ...}
    resync = shown.get("resync") if hasattr(shown, "get") else None
    ack = shown.get("ack") if hasattr(shown, "get") else None
    message, held = diff(prep, state.get(_held_key(key)), resync=resync, ack=ack)
    state[_held_key(key)] = held
    message.update(name=key, script=static_files.static_url("live.js"), plotly=static_files.static_url("plotly.min.js"))
    _component()(key=key, data=message, on_resync_change=lambda: None, on_ack_change=lambda: None)


def forget(key: str) -> None:
    """This viewer's chart ``key`` is no longer shown: the next live chart under that key starts whole."""
    import streamlit as st

    st.session_state.pop(_held_key(key), None)
