"""Live charts grown from new readings: a chart is sent whole once, then as what its series added since.

The live feed (ui.live_feed) builds a chart whole (bench.output.charts) only for a new run or group, or when its
traces or fixed layout change; otherwise it sends the increment built here from the readings added since the last
one: each trace's new points, the layout lists that only grow (an epoch's mark and name) as their new items, and the
layout keys that changed (the right axis' new top). The browser (ui/static/live-charts.js) appends them with
Plotly.extendTraces and Plotly.relayout, keeping the viewer's zoom, and thins its oldest points itself.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go

from bench.output import chart_style, charts
from bench.output.charts import Series

CONFIG = {"displaylogo": False, "responsive": True}


@dataclass(frozen=True)
class Prepared:
    """A figure as plain JSON data (Plotly's own encoder, as st.plotly_chart sends it) and its signature."""

    data: list[dict[str, Any]]
    layout: dict[str, Any]
    signature: str  # hash of the traces without their growing arrays, and of the scope (the run)


def _hash(value: Any) -> str:
    return hashlib.blake2b(json.dumps(value, sort_keys=True, default=str).encode(), digest_size=12).hexdigest()


def _growing(trace: dict[str, Any], n: int, prefix: str = "") -> set[str]:
    """The dotted paths of every list in ``trace`` (nested dicts included) with one value per point."""
    found: set[str] = set()
    for name, value in trace.items():
        path = f"{prefix}{name}"
        if isinstance(value, list) and len(value) == n:
            found.add(path)
        elif isinstance(value, dict):
            found |= _growing(value, n, f"{path}.")
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
    """``fig`` as JSON data, signed by its traces without their points: a browser holding a figure of the same
    signature redraws it in place (Plotly.react), keeping the viewer's zoom."""
    spec = json.loads(fig.to_json())
    data, layout = spec.get("data", []), spec.get("layout", {})
    stripped = []
    for trace in data:
        x = trace.get("x")
        stripped.append(_strip(trace, _growing(trace, len(x))) if isinstance(x, list) else trace)
    return Prepared(data=data, layout=layout, signature=_hash([scope, stripped]))


# -- a held figure, grown as a browser grows it -------------------------------------------------------------------
MAX_POINTS = 3000  # per trace, as ui/static/live.js keeps it: past it the oldest two thirds are halved


def apply(figure: dict[str, Any], change: dict[str, Any]) -> None:
    """Apply an increment (``grow``'s) to a figure held as JSON data, as the browser applies it:
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




# -- charts grown from the readings alone ---------------------------------------------------------------------------
# Each increment is built from the readings the series added since the last one (their new samples and epochs),
# never from the whole figure: its cost does not grow with the run. What a figure's traces and fixed layout depend
# on (which lines the samples carry, the phases, the loss axis' ticks, which runs) is kept in ``Sent``; when it
# changes, the chart is built and sent whole (a few times a run: the start-up, the first epochs, a run of a group
# starting). The kinds of chart, each as bench.output.charts builds it: "epochs" (epoch_time_figure: a bar trace per
# series), "util" (utilization_figure: one series with its phases and epochs marked and named, or several overlaid),
# "loss" (loss_accuracy_figure of one series).
KINDS = ("epochs", "util", "loss")


@dataclass(frozen=True)
class Sent:
    """What every viewer holds of one chart, enough to build the next increment from new readings."""

    shape: tuple[Any, ...]  # what the traces and the fixed layout were built from; another shape sends it whole
    epochs: tuple[int, ...] = ()  # per series: epochs sent
    last_t: tuple[float | None, ...] = ()  # per series: the time of the last sample sent
    named: int = 0  # util, one series: epoch names sent (they alternate between the name rows)
    last_end: float | None = None  # util, one series: the end of the last epoch sent (where the next name starts)
    flags: tuple[Any, ...] = ()  # util: per series, (process, ram, rss, gpu lines, top cores) so far; epochs:
    # (whether a bar is hatched,)
    templates: tuple[Any, ...] = ()  # util: (an epoch's line, a name in row 0, a name in row 1, the right axis);
    # epochs: (the title as sent,)


Flags = tuple[bool, bool, bool, frozenset[tuple[int, int]], float]
NO_FLAGS: Flags = (False, False, False, frozenset(), 0.0)


def _util_flags(samples: Sequence[Any], before: Flags) -> Flags:
    """Which lines one series draws on the utilization chart (bench.output.charts.utilization_figure's rules), from
    ``before`` and its new ``samples`` only: the process' CPU, the machine's and the process' memory, each GPU's
    lines (its utilization, and each GPM metric once a value came), and the process' top in cores."""
    process, ram, rss, gpus, top = before
    found = set(gpus)
    for s in samples:
        process = process or s.carries("process_cpu_percent")
        ram = ram or s.carries("ram_used_mib")
        rss = rss or s.carries("process_rss_mib")
        if s.process_cpu_percent is not None:
            top = max(top, s.process_cpu_percent / 100.0)
        for g in s.gpus or ():
            found.add((g.index, 0))
            for m, (key, _, _) in enumerate(charts.GPU_METRICS[1:], start=1):
                if getattr(g, key, None) is not None:
                    found.add((g.index, m))
    return process, ram, rss, frozenset(found), top


def _figure_flags(flags: Sequence[Flags]) -> tuple[bool, bool]:
    """The figure's own: the process' CPU line on every series (and the right axis) when any series carries it,
    the memory row when any carries a memory reading."""
    return any(f[0] for f in flags), any(f[1] or f[2] for f in flags)


def _readers(flags: Sequence[Flags]) -> list[list[tuple[str, int | None, float]]]:
    """Each series' utilization traces in their order: (reading, GPU index or None, divisor)."""
    process, _ = _figure_flags(flags)
    many = len(flags) > 1
    out = []
    for _, ram, rss, gpus, _ in flags:
        mine: list[tuple[str, int | None, float]] = [("cpu_percent", None, 1.0)]
        if process:
            mine.append(("process_cpu_percent", None, 100.0))
        for index, m in sorted(gpus):
            mine.append((charts.GPU_METRICS[m][0], index, 1.0))
        memory = (("process_rss_mib", rss),) if many else (("ram_used_mib", ram), ("process_rss_mib", rss))
        mine += [(key, None, charts.MIB_PER_GIB) for key, held in memory if held]
        out.append(mine)
    return out


def _value(sample: Any, key: str, index: int | None, scale: float) -> float | None:
    source = sample.gpu(index) if index is not None else sample
    value = getattr(source, key, None) if source is not None else None
    return None if value is None else value / scale


def _new_samples(samples: Sequence[Any], last_t: float | None) -> list[Any]:
    """The samples after ``last_t``, found from the end (the live list is thinned at its old end, never its new)."""
    i = len(samples)
    while i > 0 and (last_t is None or samples[i - 1].t_s > last_t):
        i -= 1
    return list(samples[i:])


def _util_shape(series: Sequence[Series], flags: Sequence[Flags], waiting: bool) -> tuple[Any, ...]:
    """What the utilization chart's traces and fixed layout are built from. One series: its phases, and before its
    first epoch ends the newest sample (the last phase's band reaches it); the right axis' top is not in it (a new
    top is a layout change, _cores_axis)."""
    readers = None if waiting else (_figure_flags(flags), _readers(flags))
    if len(series) != 1:
        return (len(series), waiting, readers)
    one = series[0]
    has_epoch = any(e.t_end_s is not None for e in one.epochs[:1])
    t_max = one.samples[-1].t_s if one.samples else 0.0
    return (len(one.phases or ()), has_epoch, waiting, readers, None if has_epoch or not one.phases else t_max)


def _cores_top(flags: Sequence[Flags]) -> int | None:
    """The right axis' top in cores (bench.output.charts.utilization_figure's rule), None without that axis."""
    if not _figure_flags(flags)[0]:
        return None
    return max(1, math.ceil(max(f[4] for f in flags) * 1.1))


def _cores_axis(template: tuple[str, dict[str, Any]] | None, top: int) -> dict[str, Any] | None:
    """The right axis (as the variant styled it) with the top ``top`` cores, as the figure would be built with it."""
    if template is None:
        return None
    key, axis = template
    step = max(1, int(chart_style.nice_step(top, 4)))
    return {key: {**axis, "range": [0, top * charts.UTIL_TOP / 100], "tickvals": list(range(0, top + 1, step))}}


def _util_templates(layout: dict[str, Any], named: int) -> tuple[Any, ...]:
    """The layout items a new epoch copies: its dotted line (the last one drawn) and its name in each row (the
    last two names drawn: epoch names come after the phases' and alternate rows), styled as the variant styled
    them; and the right axis."""
    lines = [s for s in layout.get("shapes") or () if s.get("type") == "line"]
    names = (layout.get("annotations") or [])[-named:] if named else []
    by_row: list[Any] = [None, None]
    for k, ann in enumerate(names):
        by_row[k % 2] = ann
    rows = charts.EPOCH_ROWS
    for k, other in ((1, 0), (0, 1)):  # one row's name drawn: the other's is the same, moved by its rows' ratio
        if by_row[k] is None and by_row[other] is not None and isinstance(by_row[other].get("yshift"), (int, float)):
            by_row[k] = {**by_row[other], "yshift": by_row[other]["yshift"] * rows[k] / rows[other]}
    cores = next(((key, axis) for key, axis in layout.items() if key.startswith("yaxis") and isinstance(axis, dict)
                  and (axis.get("title") or {}).get("text") == "cores"), None)
    return (lines[-1] if lines else None, *by_row, cores)


def _epoch_axis_shape(series: Sequence[Series]) -> tuple[Any, ...]:
    """The bars' chart and the loss chart go whole when their runs or their epoch axis' tick step change
    (charts.epoch_step)."""
    return (len(series), charts.epoch_step(max((len(s.epochs) for s in series), default=0)))


def _tracing(series: Sequence[Series], sent: Sent | None = None) -> bool:
    """Whether an epoch of the series is hatched (the title says so once one is): from the epochs after ``sent``'s
    alone."""
    before = sent.flags[0] if sent is not None else False
    after = sent.epochs if sent is not None else (0,) * len(series)
    return before or any(e.includes_tracing for s, n in zip(series, after) for e in s.epochs[n:])


def start(kind: str, series: Sequence[Series], layout: dict[str, Any]) -> Sent:
    """What viewers hold of a chart of ``kind`` once it was sent whole for ``series`` (``layout``: the figure's
    layout as sent, for the templates of the marks to come)."""
    epochs = tuple(len(s.epochs) for s in series)
    if kind == "util":
        flags = [_util_flags(s.samples, NO_FLAGS) for s in series]
        last_t = tuple(s.samples[-1].t_s if s.samples else None for s in series)
        waiting = not any(s.samples for s in series)
        named, last_end = 0, None
        if len(series) == 1:
            ends = [e for e in series[0].epochs if e.t_end_s is not None]
            named = sum(1 for e in ends if charts.named_epoch(e.epoch))
            last_end = ends[-1].t_end_s if ends else None
        return Sent(shape=_util_shape(series, flags, waiting), epochs=epochs, last_t=last_t, named=named,
                    last_end=last_end, flags=tuple(flags), templates=_util_templates(layout, named))
    if kind == "epochs":
        return Sent(shape=_epoch_axis_shape(series), epochs=epochs, flags=(_tracing(series),),
                    templates=(layout.get("title"),))
    if kind == "loss":
        return Sent(shape=_epoch_axis_shape(series), epochs=epochs)
    raise KeyError(kind)


def grow(kind: str, series: Sequence[Series], sent: Sent) -> tuple[dict[str, Any] | None, Sent] | None:
    """A chart of ``kind``'s increment for the readings ``series`` added since ``sent`` (None in the pair: nothing
    new) and what viewers hold after it; None when the chart must go whole (its traces or fixed layout changed, or
    a mark has no template yet)."""
    if len(series) != len(sent.epochs):
        return None
    if kind == "util":
        return _grow_util(series, sent)
    if kind == "epochs":
        return _grow_epochs(series, sent)
    if kind == "loss":
        return _grow_loss(series, sent)
    return None


def _grown(groups: list[dict[str, Any]], layout: dict[str, Any] | None = None,
           append: dict[str, Any] | None = None) -> dict[str, Any] | None:
    if not groups and not layout and not append:
        return None
    return {"groups": groups, "layout": layout or None, "append": append or None}


def _grow_epochs(series: Sequence[Series], sent: Sent) -> tuple[dict[str, Any] | None, Sent] | None:
    if _epoch_axis_shape(series) != sent.shape:
        return None
    tracing = _tracing(series, sent)
    layout = None
    if tracing and not sent.flags[0]:  # the first hatched bar: the title names the hatching
        (title,) = sent.templates
        if not isinstance(title, dict):
            return None
        layout = {"title": {**title, "text": f"{title.get('text', '')}{charts.HATCHED_NOTE}"}}
    traces: list[int] = []
    update: dict[str, list[Any]] = {"x": [], "y": [], "marker.pattern.shape": [], "customdata": []}
    for i, s in enumerate(series):
        new = list(s.epochs[sent.epochs[i]:])
        if not new:
            continue
        traces.append(i)
        update["x"].append([e.epoch for e in new])
        update["y"].append([e.epoch_seconds for e in new])
        update["marker.pattern.shape"].append(["/" if e.includes_tracing else "" for e in new])
        update["customdata"].append([["includes tracing" if e.includes_tracing else "steady", e.samples_per_s or 0]
                                     for e in new])
    after = Sent(shape=sent.shape, epochs=tuple(len(s.epochs) for s in series), flags=(tracing,),
                 templates=sent.templates)
    return _grown([{"traces": traces, "update": update}] if traces else [], layout), after


def _grow_loss(series: Sequence[Series], sent: Sent) -> tuple[dict[str, Any] | None, Sent] | None:
    if len(series) != 1 or _epoch_axis_shape(series) != sent.shape:
        return None
    new = list(series[0].epochs[sent.epochs[0]:])
    after = Sent(shape=sent.shape, epochs=(len(series[0].epochs),))
    if not new:
        return None, after
    x = [e.epoch for e in new]
    update = {"x": [x, x, x, x], "y": [[getattr(e, key) for e in new]
                                       for key in ("loss", "val_loss", "accuracy", "val_accuracy")]}
    return _grown([{"traces": [0, 1, 2, 3], "update": update}]), after


def _grow_util(series: Sequence[Series], sent: Sent) -> tuple[dict[str, Any] | None, Sent] | None:
    new = [_new_samples(s.samples, sent.last_t[i]) for i, s in enumerate(series)]
    flags = [_util_flags(samples, sent.flags[i]) for i, samples in enumerate(new)]
    waiting = all(t is None for t in sent.last_t) and not any(new)
    if _util_shape(series, flags, waiting) != sent.shape:
        return None
    update: dict[str, list[Any]] = {"x": [], "y": []}
    traces: list[int] = []
    offset = 0
    for readers, samples in zip(_readers(flags), new):
        if samples:
            t = [s.t_s for s in samples]
            for j, (key, index, scale) in enumerate(readers):
                traces.append(offset + j)
                update["x"].append(t)
                update["y"].append([_value(s, key, index, scale) for s in samples])
        offset += len(readers)
    layout = None
    line, *rows, cores = sent.templates
    top = _cores_top(flags)
    if top is not None and top != _cores_top(sent.flags):
        layout = _cores_axis(cores, top)
        if layout is None:
            return None
    shapes, names = [], []
    named, last_end = sent.named, sent.last_end
    if len(series) == 1:  # one run's epochs marked and named (an overlay of several has no marks)
        for e in series[0].epochs[sent.epochs[0]:]:
            if e.t_end_s is None:
                continue
            if line is None:
                return None
            if charts.named_epoch(e.epoch):
                shapes.append({**line, "x0": e.t_end_s, "x1": e.t_end_s})
                template = rows[named % 2]
                if template is None:
                    return None
                begin = e.t_start_s if e.t_start_s is not None else last_end
                names.append({**template, "x": (begin + e.t_end_s) / 2 if begin is not None else e.t_end_s,
                              "text": f"epoch {e.epoch}" + (" (tracing)" if e.includes_tracing else "")})
                named += 1
            last_end = e.t_end_s
    last_t = tuple(samples[-1].t_s if samples else sent.last_t[i] for i, samples in enumerate(new))
    after = Sent(shape=sent.shape, epochs=tuple(len(s.epochs) for s in series), last_t=last_t, named=named,
                 last_end=last_end, flags=tuple(flags), templates=sent.templates)
    append = {k: v for k, v in (("shapes", shapes), ("annotations", names)) if v}
    return _grown([{"traces": traces, "update": update}] if traces else [], layout, append), after
