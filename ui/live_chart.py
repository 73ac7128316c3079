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


# -- a held figure, grown as a browser grows it -------------------------------------------------------------------
MAX_POINTS = 3000  # per trace, as ui/static/live.js keeps it: past it the oldest two thirds are halved


def apply(figure: dict[str, Any], change: dict[str, Any]) -> None:
    """Apply an increment (``increment``'s or ``grow``'s) to a figure held as JSON data, as the browser applies it:
    every trace's new points appended (capped at MAX_POINTS), layout lists grown, other layout keys replaced."""
    data = figure["data"]
    for group in change.get("groups") or ():
        for j, t in enumerate(group["traces"]):
            trace = data[t]
            for path, per_trace in group["update"].items():
                *parents, last = path.split(".")
                node = trace
                for key in parents:
                    node = node.setdefault(key, {})
                held = node.get(last)
                node[last] = (held if isinstance(held, list) else []) + list(per_trace[j])
            _cap(trace, list(group["update"]))
    layout = figure["layout"]
    layout.update(change.get("layout") or {})
    for key, items in (change.get("append") or {}).items():
        layout[key] = [*layout.get(key, []), *items]


def _cap(trace: dict[str, Any], paths: list[str]) -> None:
    n = len(trace.get("x") or ())
    if n <= MAX_POINTS:
        return
    cut = n * 2 // 3
    for path in ["x", *(p for p in paths if p != "x")]:
        *parents, last = path.split(".")
        node = trace
        for key in parents:
            node = node.get(key, {})
        values = node.get(last)
        if isinstance(values, list) and len(values) == n:
            node[last] = [v for i, v in enumerate(values) if i >= cut or i % 2 == 0]


# -- the Train page's charts, grown from the readings alone -------------------------------------------------------
# Each increment is built from the readings a run added since the last one (its new samples and epochs), never from
# the whole figure: its cost does not grow with the run. What the figure's traces and fixed layout depend on (which
# lines the samples carry, the phases, the right axis' top, the loss axis' ticks) is kept in ``Sent``; when it
# changes, the chart is built and sent whole (a few times a run: the start-up, the first epochs, a new axis top).

@dataclass(frozen=True)
class Sent:
    """What every viewer holds of one chart of a run, enough to build the next increment from new readings."""

    shape: tuple[Any, ...]  # what the traces and the fixed layout were built from; another shape sends it whole
    epochs: int = 0  # epochs sent
    last_t: float | None = None  # the time of the last sample sent
    named: int = 0  # epoch names sent (they alternate between the name rows)
    last_end: float | None = None  # the end of the last epoch sent (where the next one's name starts)
    flags: tuple[Any, ...] = ()  # util: (process, ram, rss, gpu lines, top cores) so far
    templates: tuple[Any, ...] = ()  # util: (an epoch's line, a name in row 0, a name in row 1, the right axis)


def _util_flags(samples: Any, before: tuple[Any, ...] | None) -> tuple[Any, ...]:
    """Which lines the utilization chart draws (bench.output.charts.utilization_figure's rules for one run), from
    ``before`` and the new ``samples`` only: the process' CPU, the machine's and the process' memory, each GPU's
    lines (its utilization, and each GPM metric once a value came), and the process' top in cores."""
    from bench.output import charts

    process, ram, rss, gpus, top = before if before else (False, False, False, frozenset(), 0.0)
    gpus = set(gpus)
    for s in samples:
        process = process or s.carries("process_cpu_percent")
        ram = ram or s.carries("ram_used_mib")
        rss = rss or s.carries("process_rss_mib")
        if s.process_cpu_percent is not None:
            top = max(top, s.process_cpu_percent / 100.0)
        for g in s.gpus or ():
            gpus.add((g.index, 0))
            for m, (key, _, _) in enumerate(charts.GPU_METRICS[1:], start=1):
                if getattr(g, key, None) is not None:
                    gpus.add((g.index, m))
    return process, ram, rss, frozenset(gpus), top


def _readers(flags: tuple[Any, ...]) -> list[tuple[str, int | None, float]]:
    """The utilization chart's traces in their order: (reading, GPU index or None, divisor)."""
    from bench.output import charts

    process, ram, rss, gpus, _ = flags
    out: list[tuple[str, int | None, float]] = [("cpu_percent", None, 1.0)]
    if process:
        out.append(("process_cpu_percent", None, 100.0))
    for index, m in sorted(gpus):
        out.append((charts.GPU_METRICS[m][0], index, 1.0))
    if ram or rss:
        out += [(key, None, charts.MIB_PER_GIB) for key, held in (("ram_used_mib", ram), ("process_rss_mib", rss))
                if held]
    return out


def _value(sample: Any, key: str, index: int | None, scale: float) -> float | None:
    source = sample.gpu(index) if index is not None else sample
    value = getattr(source, key, None) if source is not None else None
    return None if value is None else value / scale


def _new_samples(samples: Any, last_t: float | None) -> list[Any]:
    """The samples after ``last_t``, found from the end (the live list is thinned at its old end, never its new)."""
    i = len(samples)
    while i > 0 and (last_t is None or samples[i - 1].t_s > last_t):
        i -= 1
    return list(samples[i:])


def _util_shape(snap: Any, flags: tuple[Any, ...], waiting: bool) -> tuple[Any, ...]:
    import math

    phases = snap.info.phases or ()
    has_epoch = any(e.t_end_s is not None for e in snap.epochs[:1])
    t_max = snap.samples[-1].t_s if snap.samples else 0.0
    # before the first epoch ends, the last phase's band reaches the newest sample: the chart goes whole (the right
    # axis' top is not in the shape: a new top is a layout change, _cores_axis)
    return (len(phases), has_epoch, waiting, _readers(flags) if not waiting else None,
            None if has_epoch or not phases else t_max)


def _cores_top(flags: tuple[Any, ...]) -> int | None:
    """The right axis' top in cores (bench.output.charts.utilization_figure's rule), None without that axis."""
    import math

    return max(1, math.ceil(flags[4] * 1.1)) if flags[0] else None


def _cores_axis(template: tuple[str, dict[str, Any]] | None, top: int) -> dict[str, Any] | None:
    """The right axis (as the variant styled it) with the top ``top`` cores, as the figure would be built with it."""
    from bench.output import chart_style, charts

    if template is None:
        return None
    key, axis = template
    step = max(1, int(chart_style.nice_step(top, 4)))
    return {key: {**axis, "range": [0, top * charts.UTIL_TOP / 100], "tickvals": list(range(0, top + 1, step))}}


def _util_templates(layout: dict[str, Any], named: int) -> tuple[Any, ...]:
    """The layout items a new epoch copies: its dotted line (the last one drawn) and its name in each row (the
    last two names drawn: epoch names come after the phases' and alternate rows), styled as the variant styled
    them."""
    lines = [s for s in layout.get("shapes") or () if s.get("type") == "line"]
    names = (layout.get("annotations") or [])[-named:] if named else []
    by_row: list[Any] = [None, None]
    for k, ann in enumerate(names):
        by_row[k % 2] = ann
    cores = next(((key, axis) for key, axis in layout.items() if key.startswith("yaxis") and isinstance(axis, dict)
                  and (axis.get("title") or {}).get("text") == "cores"), None)
    return (lines[-1] if lines else None, *by_row, cores)


def start(name: str, snap: Any, layout: dict[str, Any]) -> Sent:
    """What viewers hold of chart ``name`` once it was sent whole for ``snap`` (``layout``: the figure's layout as
    sent, for the templates of the marks to come)."""
    from bench.output import charts, chart_style

    ends = [e for e in snap.epochs if e.t_end_s is not None]
    last_t = snap.samples[-1].t_s if snap.samples else None
    last_end = ends[-1].t_end_s if ends else None
    if name == "util":
        flags = _util_flags(snap.samples, None)
        named = sum(1 for e in ends if charts.named_epoch(e.epoch))
        return Sent(shape=_util_shape(snap, flags, not snap.samples), epochs=len(snap.epochs), last_t=last_t,
                    named=named, last_end=last_end, flags=flags, templates=_util_templates(layout, named))
    if name == "epochs":
        return Sent(shape=(any(e.includes_tracing for e in snap.epochs),), epochs=len(snap.epochs))
    if name == "loss":
        return Sent(shape=(max(1, int(chart_style.nice_step(len(snap.epochs), 8))),), epochs=len(snap.epochs))
    raise KeyError(name)


def grow(name: str, snap: Any, sent: Sent) -> tuple[dict[str, Any] | None, Sent] | None:
    """Chart ``name``'s increment for the readings ``snap`` added since ``sent`` and what viewers hold after it;
    None when the chart must go whole (its traces or fixed layout changed, or a mark has no template yet)."""
    if name == "util":
        return _grow_util(snap, sent)
    if name == "epochs":
        return _grow_epochs(snap, sent)
    if name == "loss":
        return _grow_loss(snap, sent)
    return None


def _grow_epochs(snap: Any, sent: Sent) -> tuple[dict[str, Any] | None, Sent] | None:
    new = list(snap.epochs[sent.epochs:])
    if sent.shape != (sent.shape[0] or any(e.includes_tracing for e in new),):
        return None
    if not new:
        return None, sent
    update = {"x": [[e.epoch for e in new]], "y": [[e.epoch_seconds for e in new]],
              "marker.pattern.shape": [["/" if e.includes_tracing else "" for e in new]],
              "customdata": [[["includes tracing" if e.includes_tracing else "steady", e.samples_per_s or 0]
                              for e in new]]}
    return {"groups": [{"traces": [0], "update": update}], "layout": None, "append": None}, \
        Sent(shape=sent.shape, epochs=len(snap.epochs))


def _grow_loss(snap: Any, sent: Sent) -> tuple[dict[str, Any] | None, Sent] | None:
    from bench.output import chart_style

    if sent.shape != (max(1, int(chart_style.nice_step(len(snap.epochs), 8))),):
        return None
    new = list(snap.epochs[sent.epochs:])
    if not new:
        return None, sent
    x = [e.epoch for e in new]
    update = {"x": [x, x, x, x], "y": [[getattr(e, key) for e in new]
                                       for key in ("loss", "val_loss", "accuracy", "val_accuracy")]}
    return {"groups": [{"traces": [0, 1, 2, 3], "update": update}], "layout": None, "append": None}, \
        Sent(shape=sent.shape, epochs=len(snap.epochs))


def _grow_util(snap: Any, sent: Sent) -> tuple[dict[str, Any] | None, Sent] | None:
    from bench.output import charts

    samples = _new_samples(snap.samples, sent.last_t)
    flags = _util_flags(samples, sent.flags if sent.last_t is not None else None)
    waiting = sent.last_t is None and not samples
    if _util_shape(snap, flags, waiting) != sent.shape:
        return None
    update: dict[str, list[Any]] = {"x": [], "y": []}
    traces: list[int] = []
    if samples:
        t = [s.t_s for s in samples]
        for i, (key, index, scale) in enumerate(_readers(flags)):
            traces.append(i)
            update["x"].append(t)
            update["y"].append([_value(s, key, index, scale) for s in samples])
    shapes, names = [], []
    named, last_end = sent.named, sent.last_end
    line, *rows, cores = sent.templates
    layout = None
    top = _cores_top(flags)
    if top is not None and top != _cores_top(sent.flags):
        layout = _cores_axis(cores, top)
        if layout is None:
            return None
    for e in snap.epochs[sent.epochs:]:
        if e.t_end_s is None:
            continue
        if line is None:
            return None
        shapes.append({**line, "x0": e.t_end_s, "x1": e.t_end_s})
        if charts.named_epoch(e.epoch):
            template = rows[named % 2]
            if template is None:
                return None
            begin = e.t_start_s if e.t_start_s is not None else last_end
            names.append({**template, "x": (begin + e.t_end_s) / 2 if begin is not None else e.t_end_s,
                          "text": f"epoch {e.epoch}" + (" (tracing)" if e.includes_tracing else "")})
            named += 1
        last_end = e.t_end_s
    after = Sent(shape=sent.shape, epochs=len(snap.epochs), last_t=samples[-1].t_s if samples else sent.last_t,
                 named=named, last_end=last_end, flags=flags, templates=sent.templates)
    append = {k: v for k, v in (("shapes", shapes), ("annotations", names)) if v}
    if not traces and not append and not layout:
        return None, after
    return {"groups": [{"traces": traces, "update": update}] if traces else [], "layout": layout,
            "append": append or None}, after
