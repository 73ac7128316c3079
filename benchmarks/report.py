"""docs/PERFORMANCE.md, written from a result of the overhead pass: its figures, their verdicts, a diagnosis of each
miss and the raw runs. Every number comes from the result; how the figures are measured and what would close a miss
are hand-written in docs/PERFORMANCE-METHOD.md, which the generated doc links to.

A result measured before the live panel was fed by one publisher (2026-11-26; docs/overhead.json is one) timed the
panel as it was then, each viewer's session rerunning it every second; it holds that panel's keys
(``rerun_panel_wall_ms``, ``rerun_server_cpu_ms_per_tick``, ...), and is rendered as what it measured, in the past
tense and under a note that says so, never as a measure of the publisher.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchmarks.common import ROOT
from benchmarks.stats import FIGURES, TARGETS, median, verdict

DEFAULT_REPORT = ROOT / "docs" / "PERFORMANCE.md"
METHOD = "PERFORMANCE-METHOD.md"  # beside the report
CLASSROOM = "CLASSROOM.md"  # the publisher with many viewers (benchmarks.classroom), beside the report
PUBLISHER_SINCE = "2026-11-26"

# a result measured before the publisher: its keys -> the names the report reads today, where they mean the same
# (the server's CPU per refresh was per second: the panel reran once a second)
LEGACY_KEYS = {
    "rerun_server_cpu_ms_per_tick": "server_cpu_ms_per_s_watched",
    "rerun_server_cpu_ms_per_tick_unwatched": "server_cpu_ms_per_s_unwatched",
    "rerun_server_cpu_ms_per_tick_net": "server_cpu_ms_per_s_watching_adds",
    "rerun_chromium_cpu_share": "watch_chromium_cpu_share",
    "rerun_server_cpu_share": "watch_server_cpu_share",
    "rerun_page_wall_ms": "train_page_rerun_wall_ms",
}
LEGACY_WHAT = {"rerun_ms": "server cost of one live-panel refresh while a run streams (worst of CPU and wall), "
                           "each viewer's panel rerunning every second as it did then"}

SIDE_LABELS = {
    "engine": "our worker via JobManager, sampling every 0.5 s (this process: supervisor, sampler)",
    "sampling_off": "the same, sampler off",
    "sampling_0.1": "the same, sampling every 0.1 s",
    "watched": "started from the server, one Chromium page watching (server + Chromium)",
    "server_unwatched": "started from the server, nobody watching (server)",
}


# -- numbers as text ------------------------------------------------------------------------------------------------
def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "—"
    if unit == "x":
        return f"{value:.3f}"
    if unit == "s":
        return f"{value:.2f} s"
    if unit == "ms":
        return f"{value:.0f} ms"
    if not unit:
        return f"{value:.2f}"
    if unit == "cores":
        return f"{value:.2f} cores"
    return f"{value:.1f} {unit}"


def _pct(value: float | None) -> str:
    """A signed change: +2.1 %."""
    return "—" if value is None else f"{value * 100:+.1f} %"


def _share(value: float | None) -> str:
    """A plain share: 27 % (of a core, of a median)."""
    return "—" if value is None else f"{value * 100:.0f} %"


def _seconds(values: Any) -> str:
    return ", ".join(f"{s:.2f} s" for s in values or [] if s)


def _bytes(value: Any) -> str:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "—"
    return f"{value / 1e6:.2f} MB" if value >= 1e6 else f"{value / 1e3:.1f} kB"


# -- which panel a result measured ----------------------------------------------------------------------------------
def measured_before_publisher(details: Mapping[str, Any]) -> bool:
    """Whether a result's details come from the panel before the publisher (each viewer's rerun every second)."""
    return "rerun_panel_wall_ms" in details or "rerun_server_cpu_ms_per_tick" in details


def details_of(result: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
    """A result's details under today's names, and whether it was measured before the publisher (its own names
    mapped where they mean the same; what only that panel had, its rerun's wall time, keeps its name)."""
    d = dict(result.get("details") or {})
    legacy = measured_before_publisher(d)
    if legacy:
        for old, new in LEGACY_KEYS.items():
            if old in d and new not in d:
                d[new] = d[old]
    return d, legacy


# -- pieces of the report -------------------------------------------------------------------------------------------
def figure_lines(result: Mapping[str, Any]) -> list[str]:
    """The table rows: figure, measured, target, verdict."""
    _, legacy = details_of(result)
    lines = ["| figure | measured | target | result | what |", "|---|---|---|---|---|"]
    for name, (target, unit, what) in TARGETS.items():
        what = LEGACY_WHAT.get(name, what) if legacy else what
        value = result.get(name)
        lines.append(f"| `{name}` | {_fmt(value, unit)} | ≤ {_fmt(target, unit)} | {verdict(name, value)} | {what} |")
    return lines


def noise_note(value: float | None, bare_spread: float | None) -> str:
    """Whether a ratio's excess over 1 stands out from the spread of identical bare runs."""
    if value is None or bare_spread is None:
        return ""
    if value - 1 <= bare_spread:
        return (f" The excess ({_pct(value - 1)}) is within the spread of identical bare runs ({_share(bare_spread)}): "
                "this pass cannot tell it from the machine's noise.")
    return f" The excess ({_pct(value - 1)}) is larger than the spread of identical bare runs ({_share(bare_spread)})."


def cpu_table(d: Mapping[str, Any]) -> list[str]:
    """CPU used beside the worker per side: a cross-check that does not depend on the machine's other jobs."""
    shares = d.get("side_cpu_cores") or {}
    expected = d.get("expected_ratio_from_cpu") or {}
    rows = [k for k in SIDE_LABELS if shares.get(k) is not None]
    if not rows:
        return []
    out = ["", f"CPU used beside the training worker over the steady epochs, in cores (psutil user+system time over "
           f"wall time). Training keeps {d.get('training_threads')} threads busy, so a side that takes c cores from "
           f"them should slow it by about c/{d.get('training_threads')}: a cross-check that other jobs on the machine "
           "do not disturb (they change wall times, not how much CPU our side spends).", "",
           "| side | CPU beside the worker | slowdown it implies |", "|---|---|---|"]
    for k in rows:
        out.append(f"| {SIDE_LABELS[k]} | {shares[k]:.3f} cores | {_pct((expected.get(k) or 1) - 1)} |")
    return out


def cpu_note(kind: str, d: Mapping[str, Any]) -> str:
    share = (d.get("side_cpu_cores") or {}).get(kind)
    expected = (d.get("expected_ratio_from_cpu") or {}).get(kind)
    if share is None or expected is None:
        return ""
    return (f" Our side used {share:.3f} cores beside the worker ({SIDE_LABELS[kind]}), which implies about "
            f"{_pct(expected - 1)} on {d.get('training_threads')} busy training threads.")


# -- a miss: why (the measured numbers) and a diagnosis (which of them dominates) ----------------------------------
def diagnose(name: str, r: Mapping[str, Any]) -> tuple[str, str]:
    """(why it missed, what the numbers point at) for a missed figure, from the measured details only."""
    d, legacy = details_of(r)
    if name in ("engine_vs_bare_ratio", "watched_vs_bare_ratio", "sampling_ratio"):
        why, diagnosis = _diagnose_ratio(name, r, d)
        kind = {"engine_vs_bare_ratio": "engine", "watched_vs_bare_ratio": "watched", "sampling_ratio": "engine"}[name]
        profiled = profile_note(d) if name == "watched_vs_bare_ratio" else ""
        return why + noise_note(r.get(name), d.get("bare_spread")) + cpu_note(kind, d) + profiled, diagnosis
    if name in ("page_ready_s", "first_batch_s"):
        return _diagnose_latency(name, d, legacy)
    if name == "first_batch_warm_s":
        shown = ("the page's next refresh showing it (the panel then reran every second)" if legacy else
                 "the page's redraw after the click, or the stream's next update, showing it")
        return (f"with the pre-started worker ready, Start-to-first-batch measured "
                f"{_seconds(d.get('first_batch_prestarted_runs_s'))} (cold: {_seconds(d.get('first_batch_runs_s'))}).",
                f"what remains after the framework import is building the data and model, tracing the first step and "
                f"{shown}.")
    if name == "watch_cores":
        chromium, server = d.get("watch_chromium_cpu_share"), d.get("watch_server_cpu_share")
        why = f"while one page watched a run the server used {_share(server)} of a core and Chromium {_share(chromium)}."
        part = ("the browser drawing the page" if (chromium or 0) >= (server or 0) else
                "the server's refreshes" if legacy else "the server")
        return why + profile_note(d), f"most of it is {part}."
    return _diagnose_server(name, r, d, legacy)


# the watching page's profile, by benchmarks.dashboard.PROFILE_PARTS
PROFILE_NAMES = {"streamlit": "Streamlit's front end (React, its styles, its elements)",
                 "native": "the renderer's style, layout and paint",
                 "plotly": "the live elements' code and Plotly drawing the header and charts",
                 "dom": "DOM calls from both", "gc": "garbage collection"}


def profile_note(d: Mapping[str, Any]) -> str:
    """Where the watching page's main thread went (one profiled run), largest first; '' when not profiled."""
    parts = d.get("page_profile_ms_per_s") or {}
    if not parts:
        return ""
    ranked = sorted(parts.items(), key=lambda kv: -kv[1])
    share = d.get("page_profile_chromium_cpu_share")
    return (" One more watched run, profiled with V8's sampling profiler"
            + (f" (Chromium {_share(share)} of a core while profiled)" if share is not None else "")
            + ", spent per second of watching: " + "; ".join(f"{PROFILE_NAMES.get(k, k)} {v:.0f} ms" for k, v in ranked)
            + ".")


def _diagnose_ratio(name: str, r: Mapping[str, Any], d: Mapping[str, Any]) -> tuple[str, str]:
    if name == "engine_vs_bare_ratio":
        why = (f"our steady epoch took {_pct((r.get(name) or 1) - 1)} against the bare script; sampling_ratio "
               f"measured {_fmt(r.get('sampling_ratio'), 'x')}, and identical bare runs spread "
               f"{_share(d.get('bare_spread'))} from each other here (paired per-round ratio "
               f"{_fmt(d.get('engine_vs_bare_paired'), 'x')}).")
        excess, sampler = (r.get(name) or 1) - 1, (r.get("sampling_ratio") or 1) - 1
        implied = (d.get("expected_ratio_from_cpu") or {}).get("engine")
        if implied is not None and implied <= TARGETS[name][0]:
            diagnosis = (f"by the CPU our side spends, the engine should cost about {_pct(implied - 1)}, inside the "
                         "target, so the measured excess is most likely other jobs on this machine; a quieter machine "
                         "or more rounds would show it.")
        elif excess > 0 and sampler >= 0.5 * excess:
            diagnosis = "the sampler is most of it."
        else:
            diagnosis = ("the sampler is not most of it: the rest of what runs beside the worker is, or the machine's "
                         "noise, which more rounds on a quieter machine would resolve.")
    elif name == "watched_vs_bare_ratio":
        cores = (r.get("machine") or {}).get("logical_cores")
        threads = (r.get("config") or {}).get("cpu_threads")
        uses = "all of which the training also uses" if not threads else f"of which the training uses {threads}"
        chromium, server = d.get("watch_chromium_cpu_share"), d.get("watch_server_cpu_share")
        why = (f"while the page was watched the server used {_share(server)} of a core and "
               f"Chromium {_share(chromium)} of a core on a machine with {cores} cores, {uses}, "
               "and a training step waits for its slowest thread, so a thread that loses its core stalls the step "
               "(the wall-time cost can exceed the CPU share)")
        if d.get("unwatched_vs_bare_ratio") is not None:
            why += (f"; the same run started from the server but not watched measured "
                    f"{_fmt(d.get('unwatched_vs_bare_ratio'), 'x')} of bare")
        why += "."
        diagnosis = "the watcher and the trainer share the cores"
        if chromium is not None and server is not None:
            diagnosis += (", and most of the watcher's CPU is the browser drawing the page" if chromium >= server
                          else ", and most of the watcher's CPU is the server")
        diagnosis += "."
    else:
        why = (f"sampling every 0.5 s measured {_pct((r.get(name) or 1) - 1)} (paired {_fmt(d.get('sampling_paired'), 'x')}),"
               f" every 0.1 s {_pct((d.get('sampling_0_1_ratio') or 1) - 1)}.")
        shares = d.get("side_cpu_cores") or {}
        on, off = shares.get("engine"), shares.get("sampling_off")
        if on is not None and off is not None and (on - off) / (d.get("training_threads") or 1) < TARGETS[name][0] - 1:
            diagnosis = (f"the sampler itself costs {on - off:.3f} cores (our process with it minus without it), about "
                         f"{_pct((on - off) / (d.get('training_threads') or 1))}, inside the target, so the measured "
                         "excess is most likely other jobs on this machine; a quieter machine or more rounds would "
                         "show it.")
        else:
            diagnosis = "the sampler's own CPU accounts for the excess."
    return why, diagnosis


PAGE_STEP_SCRIPT = "app.py and the Train page run, drawn (first message to Start shown)"


def page_steps(marks: Mapping[str, Any]) -> list[tuple[str, float]]:
    """page_ready's median marks (stats.PAGE_MARKS) as consecutive steps, (what, seconds); [] when not measured."""
    keys = ("healthy_s", "front_end_s", "socket_open_s", "first_message_s", "ready_s")
    if any(marks.get(k) is None for k in keys):
        return []
    names = ("Streamlit server start (interpreter, Streamlit's import, its component scan) to health",
             "Chromium loading Streamlit's front end (health to DOMContentLoaded)",
             "front end to WebSocket open", "WebSocket open to the server's first message (session, script start)",
             PAGE_STEP_SCRIPT)
    points = [0.0] + [float(marks[k]) for k in keys]
    return [(name, points[i + 1] - points[i]) for i, name in enumerate(names)]


def _diagnose_latency(name: str, d: Mapping[str, Any], legacy: bool = False) -> tuple[str, str]:
    if name == "page_ready_s":
        ready, healthy = d.get("page_ready_runs_s") or [], d.get("server_healthy_runs_s") or []
        why = (f"server starts measured {', '.join(f'{s:.2f} s' for s in ready)}; the server answered its health "
               f"check after {', '.join(f'{s:.2f} s' for s in healthy)} (interpreter and Streamlit start).")
        steps = page_steps(d.get("page_marks") or {})
        if steps:
            why += " Medians, step by step: " + "; ".join(f"{what} {sec:.2f} s" for what, sec in steps) + "."
            ours = dict(steps).get(PAGE_STEP_SCRIPT)
            streamlit_s = sum(sec for what, sec in steps if what != PAGE_STEP_SCRIPT)
            diagnosis = (f"Streamlit's own start and front end take {streamlit_s:.2f} s of it before any of the "
                         f"dashboard's code runs; the first run of app.py and the Train page, with Chromium drawing "
                         f"it, takes {ours:.2f} s." if ours is not None else "")
        elif (median(healthy) or 0.0) >= 0.5 * (median(ready) or 0.0):
            diagnosis = ("most of it is the server process starting (the interpreter and Streamlit's import), paid "
                         "once per server start.")
        else:
            diagnosis = ("most of it comes after the server answered: Chromium loading Streamlit's front end and the "
                         "first run of app.py and the Train page.")
        return why, diagnosis
    startup = (d.get("startup_wall_s") or {}).get("bare")
    why = (f"Start-to-first-batch measured {_seconds(d.get('first_batch_runs_s'))}; "
           "these are cold starts (the measuring server runs with BENCH_PRESTART=0), so each run pays a spawned "
           "interpreter importing TensorFlow, the data generation and the first traced step, and "
           + ("the panel showed it at its next 1 s refresh (it then reran every second)" if legacy else
              "the live view shows it once the publisher has looked at the run again (every 1 s) and the stream "
              "has brought it")
           + (f" (a bare script's wall time beyond its training epochs, i.e. start-up, validation and exit, was "
              f"{startup:.1f} s here)" if startup is not None else "") + ".")
    warm = d.get("first_batch_prestarted_s")
    diagnosis = ((f"the dashboard's pre-started worker (on by default: after a run it keeps the next worker with the "
                  f"framework loaded) brings it to {warm:.2f} s; a cold start stays bound by the TensorFlow import.")
                 if warm is not None else "the dashboard's pre-started worker (on by default) was not measured in "
                                          "this pass; a cold start stays bound by the TensorFlow import.")
    return why, diagnosis


def _diagnose_server(name: str, r: Mapping[str, Any], d: Mapping[str, Any], legacy: bool = False) -> tuple[str, str]:
    if name == "rerun_ms":
        return _diagnose_rerun_before_publisher(d) if legacy else _diagnose_rerun(d)
    after = ("while the finished run was redrawn" if legacy else
             "while the publisher kept looking at the finished run and handing joiners its snapshot")
    why = (f"peak RSS growth {_fmt(r.get(name), 'MB')}, retained after the run {_fmt(d.get('memory_retained_mb'), 'MB')}, "
           f"and {_fmt(d.get('memory_drift_after_run_mb'), 'MB')} more {after}.")
    drift = d.get("memory_drift_after_run_mb")
    kept = ("memory keeps growing while the finished run is redrawn: something is kept per redraw." if legacy else
            "memory keeps growing while the publisher looks at the finished run: something is kept per look.")
    diagnosis = (kept
                 if drift is not None and drift > 1.0 else
                 "memory stops growing once the run ends: what grows is what a run keeps in memory while it streams.")
    return why, diagnosis


def _figure_split(render: Mapping[str, Any], legacy: bool) -> tuple[str, float | None]:
    """Where the chart building goes (each figure built and serialised), and what the epoch lines add."""
    figs = render.get("figure_ms") or {}
    util, bare_util = figs.get("utilization_figure"), figs.get("utilization_figure_without_epoch_lines")
    lines_ms = util - bare_util if util is not None and bare_util is not None else None
    if not figs:
        return "", lines_ms
    if legacy:
        return (f" Of the panel, building and serialising the utilization chart took {_fmt(util, 'ms')} "
                f"({_fmt(bare_util, 'ms')} without its {render.get('epochs')} epoch lines), the "
                f"epoch chart {_fmt(figs.get('epoch_time_figure'), 'ms')}, loss/accuracy "
                f"{_fmt(figs.get('loss_accuracy_figure'), 'ms')}."), lines_ms
    return (f" Of a change's work, building and serialising the utilization chart took {_fmt(util, 'ms')} "
            f"({_fmt(bare_util, 'ms')} without its {render.get('epochs')} epoch lines); the epoch chart "
            f"({_fmt(figs.get('epoch_time_figure'), 'ms')}) and loss/accuracy "
            f"({_fmt(figs.get('loss_accuracy_figure'), 'ms')}) are built only when an epoch ends."), lines_ms


def _diagnose_rerun(d: Mapping[str, Any]) -> tuple[str, str]:
    """rerun_ms of a result measured with the publisher: the server's CPU while watched, the publisher's work."""
    split, lines_ms = _figure_split(d.get("render") or {}, legacy=False)
    unwatched = d.get("server_cpu_ms_per_s_unwatched")
    publish, server = d.get("publish_wall_ms"), d.get("server_cpu_ms_per_s_watched")
    why = (f"server CPU {_fmt(server, 'ms')} per second while one page watched"
           + (f" ({_fmt(unwatched, 'ms')} per second of the same run unwatched)" if unwatched is not None else "")
           + f"; the live panel's publisher, with a 30-minute history, {_fmt(publish, 'ms')} of wall time per change, "
           f"done once for every viewer; a viewer's whole Train page rerun {_fmt(d.get('train_page_rerun_wall_ms'), 'ms')}"
           f", which happens only when the run's state changes.{split}")
    parts = []
    if lines_ms is not None and isinstance(publish, (int, float)) and publish > 0 and lines_ms > 0.5 * publish:
        parts.append("the utilization chart's epoch lines are most of the publisher's work per change")
    if publish is not None and server is not None and server > 3 * publish:
        parts.append("the publisher's work is a small part of the server's CPU while watched: the rest is the "
                     "server's other work while a run streams (the run's supervision, measured unwatched, and the "
                     "page's session and stream)")
    else:
        parts.append("the publisher building the charts is a large part of the server's cost while watched")
    return why, "; ".join(parts) + "."


def _diagnose_rerun_before_publisher(d: Mapping[str, Any]) -> tuple[str, str]:
    """rerun_ms of a result measured before the publisher, as that panel was: a rerun per viewer every second."""
    split, lines_ms = _figure_split(d.get("render") or {}, legacy=True)
    unwatched = d.get("server_cpu_ms_per_s_unwatched")
    why = (f"server CPU {_fmt(d.get('server_cpu_ms_per_s_watched'), 'ms')} per refresh while watched"
           + (f", against {_fmt(unwatched, 'ms')} per second of the same run unwatched" if unwatched is not None else "")
           + f", the panel then rerunning every second; AppTest wall time of the live panel with a 30-minute history {_fmt(d.get('rerun_panel_wall_ms'), 'ms')}, "
           f"of the whole Train page {_fmt(d.get('train_page_rerun_wall_ms'), 'ms')}.{split}")
    panel, server = d.get("rerun_panel_wall_ms"), d.get("server_cpu_ms_per_s_watched")
    parts = []
    if lines_ms is not None and isinstance(panel, (int, float)) and panel > 0 and lines_ms > 0.5 * panel:
        parts.append("the utilization chart's epoch lines were most of the panel's own time")
    if panel is not None and server is not None and server > 3 * panel:
        parts.append("that panel's code was a small part of the server's cost per refresh: the rest was Streamlit "
                     "delivering whole figures to the browser every refresh")
    else:
        parts.append("drawing the panel's figures was a large part of the server's cost per refresh")
    return why, "; ".join(parts) + "."


# -- the report -----------------------------------------------------------------------------------------------------
def render_markdown(r: Mapping[str, Any]) -> str:
    """docs/PERFORMANCE.md from a result dict (every number comes from it)."""
    m = r.get("machine") or {}
    c = r.get("config") or {}
    p = r.get("plan") or {}
    d, legacy = details_of(r)
    threads = c.get("cpu_threads") or f"all {m.get('logical_cores')}"
    gpu = ", ".join(m.get("gpus") or []) or f"none ({m.get('gpu_reason') or 'no GPU found'})"
    runs = r.get("runs") or []
    counts = {k: sum(1 for x in runs if x["kind"] == k) for k in dict.fromkeys(x["kind"] for x in runs)}
    out = [
        "# Performance: what the dashboard costs a training run",
        "",
        "Written by `python -m bench overhead --write-doc` from the numbers it measured; do not edit by hand. Rerun it "
        "to refresh (`--quick` for a short pass); `--from-json PATH` renders it again from a result saved with "
        f"`--json PATH`, which also holds the raw per-run times. How each figure is measured, and what would close a "
        f"miss: [{METHOD}]({METHOD}).",
        "",
        f"- **Machine**: {m.get('cpu_model')} · {m.get('logical_cores')} logical cores "
        f"({m.get('physical_cores') or '?'} physical) · {m.get('ram_total_gib') or '?'} GiB RAM · GPU: {gpu}",
        f"- **Software**: {m.get('framework')} · Python {m.get('python')} · {m.get('platform')}",
        f"- **Date**: {r.get('date')} · {'quick' if r.get('quick') else 'full'} pass, "
        f"{(r.get('duration_s') or 0) / 60:.1f} minutes; the machine is shared with other jobs, so every comparison "
        "alternates its two sides within one pass",
        f"- **Workload** (every side): {c.get('model')} {c.get('size')} on {c.get('dataset')}, "
        f"{c.get('limit_samples'):,} training samples, batch {c.get('batch_size')}, {c.get('epochs')} epochs "
        f"(steady = epochs 2..{c.get('epochs')}), {threads} CPU threads, {c.get('precision')}, "
        f"jit_compile={c.get('jit_compile')}, {c.get('optimizer')}, seed {c.get('seed')}; "
        f"{p.get('rounds')} rounds, runs per side: " + ", ".join(f"{k} {v}" for k, v in counts.items()),
        "",
        *([before_publisher_note(r), ""] if legacy else []),
        *figure_lines(r),
        "",
        f"Also measured: sampling every 0.1 s / off = {_fmt(d.get('sampling_0_1_ratio'), 'x')}; "
        f"the same run started from the server but not watched / bare = {_fmt(d.get('unwatched_vs_bare_ratio'), 'x')}; "
        f"paired per-round ratios (engine {_fmt(d.get('engine_vs_bare_paired'), 'x')}, watched "
        f"{_fmt(d.get('watched_vs_bare_paired'), 'x')}, sampling {_fmt(d.get('sampling_paired'), 'x')}); "
        f"fastest-epoch ratios (engine {_fmt(d.get('engine_vs_bare_min'), 'x')}, watched "
        f"{_fmt(d.get('watched_vs_bare_min'), 'x')}, sampling {_fmt(d.get('sampling_min'), 'x')}); "
        f"noise floor: identical bare runs spread {_share(d.get('bare_spread'))} (max-min over median); "
        f"median 1-minute load average at the end of a run {_fmt(d.get('load_1m_median'), '')} on "
        f"{m.get('logical_cores')} cores (other jobs included).",
    ]
    noisy = [n for n in ("engine_vs_bare_ratio", "watched_vs_bare_ratio", "sampling_ratio")
             if r.get(n) is not None and d.get("bare_spread") is not None and abs(r[n] - 1) <= d["bare_spread"]]
    if noisy:
        out += ["", f"Within the noise: {', '.join(f'`{n}`' for n in noisy)} differ from 1 by less than identical bare "
                f"runs differ from each other here ({_share(d.get('bare_spread'))}), so their pass/miss says little "
                "about our code; the CPU table below is the steadier cross-check."]
    out += cpu_table(d)
    for note in d.get("notes") or []:
        out += ["", f"> {note}"]
    misses = [n for n in FIGURES if verdict(n, r.get(n)) == "miss"]
    out += ["", "## Misses: why, and what would close them", ""]
    if not misses:
        out.append("None: every measured figure met its target on this machine.")
    for name in misses:
        why, diagnosis = diagnose(name, r)
        out += [f"- **`{name}`** {_fmt(r.get(name), TARGETS[name][1])} > {_fmt(TARGETS[name][0], TARGETS[name][1])}. "
                f"Why: {why} Diagnosis: {diagnosis} What would close it: [{METHOD}]({METHOD}#{name})."]
    out += detail_lines(r)
    out += ["", "## Raw runs", "", "Steady epoch = median of epochs 2..N of that run; wall = the whole run from "
            "submit (or process start) to its end, start-up and validation included; load = the machine's 1-minute "
            "load average when the run ended.", "",
            "| round | side | steady epoch | epoch seconds | wall | load (1 min) |", "|---|---|---|---|---|---|"]
    for x in runs:
        secs = ", ".join(f"{e['epoch_seconds']:.2f}" for e in x.get("epochs") or [])
        out.append(f"| {x['round']} | {x['kind']} | {_fmt(x.get('steady_median_s'), 's')} | {secs} | "
                   f"{_fmt(x.get('wall_s'), 's')} | {_fmt(x.get('load_1m'), '')} |")
    return "\n".join(out) + "\n"


def before_publisher_note(r: Mapping[str, Any]) -> str:
    """What a result measured before the publisher measured, said above its figures."""
    return (f"> Measured on {str(r.get('date') or '?')[:10]}, before the live panel was fed by one publisher "
            f"({PUBLISHER_SINCE}). Then each watching session reran the Train page's live panel every second, and a "
            "viewer's first chart messages carried plotly.js (4.6 MB). Since then one publisher per server computes each change of the live run once for every viewer "
            "and streams it to the browsers, and plotly.js is a static file each browser fetches once. So "
            "`watched_vs_bare_ratio`, `watch_cores`, `rerun_ms`, the page profile and the memory replay below describe "
            "that earlier panel; they have not been measured again with the publisher. The publisher with one and "
            f"with many viewers: [{CLASSROOM}]({CLASSROOM}).")


def _watch_line(d: Mapping[str, Any]) -> list[str]:
    """The watch_cores bullet of "Measured in detail", for a pass that watched a held window (none before)."""
    window = d.get("watch_window_s")
    if window is None:
        return []
    return [f"- **`watch_cores`**: one Chromium page watched a replayed run held live for {window:.1f} s: the server "
            f"used {_share(d.get('watch_server_cpu_share'))} of a core and Chromium "
            f"{_share(d.get('watch_chromium_cpu_share'))}; over the watched real runs' own steady windows the two "
            f"took {_fmt(d.get('watched_runs_cpu_cores'), 'cores')}."]


def _rerun_line(d: Mapping[str, Any], legacy: bool) -> str:
    """The rerun_ms bullet of "Measured in detail"."""
    unwatched = d.get("server_cpu_ms_per_s_unwatched")
    cpu = (f"- **`rerun_ms`**: (1) server CPU while one Chromium page watched: "
           f"{_fmt(d.get('server_cpu_ms_per_s_watched'), 'ms')} per {'refresh' if legacy else 'second'}"
           + (" (the panel then reran once a second)" if legacy else "")
           + (f"; the same run unwatched cost the server {_fmt(unwatched, 'ms')} per second (supervisor, sampler, "
              f"store), so watching adds {_fmt(d.get('server_cpu_ms_per_s_watching_adds'), 'ms')}"
              if unwatched is not None else "") + ". ")
    shares = (f"Chromium meanwhile used {_share(d.get('watch_chromium_cpu_share'))} of a core, the server "
              f"{_share(d.get('watch_server_cpu_share'))}.")
    if legacy:
        first_ms = d.get("rerun_panel_first_wall_ms")  # measured once the harness timed a viewer holding Plotly.js
        return (cpu + "(2) AppTest wall time of the live panel's body with a live run holding a 30-minute history"
                + (", for a viewer whose browser held Plotly.js (then every viewer after its first message)"
                   if first_ms else "")
                + f": {_fmt(d.get('rerun_panel_wall_ms'), 'ms')} median; the whole Train page "
                f"{_fmt(d.get('train_page_rerun_wall_ms'), 'ms')}"
                + (f"; a viewer's first refresh, whose chart messages then carried Plotly.js (4.6 MB), "
                   f"{_fmt(first_ms, 'ms')}" if first_ms else "")
                + ". " + shares)
    builds, timed = d.get("publish_builds"), d.get("publish_changes_timed")
    return (cpu + "(2) The live panel's publisher, with a live run holding a 30-minute history: "
            f"{_fmt(d.get('publish_wall_ms'), 'ms')} median per change"
            + (f" ({builds} of {timed} timed changes built a chart)" if builds is not None and timed else "")
            + ", the header's words, the sidebar's line and the charts whose data changed built, diffed and encoded "
            "once for every viewer, no viewer's session rerunning for it; each change an event of "
            f"{_bytes(d.get('publish_event_bytes'))} to every viewer. Its first publish of the run (every chart whole) "
            f"{_fmt(d.get('publish_first_wall_ms'), 'ms')}, an event of {_bytes(d.get('publish_first_event_bytes'))}; "
            f"a joining viewer's snapshot {_bytes(d.get('snapshot_bytes'))}, encoded in "
            f"{_fmt(d.get('snapshot_wall_ms'), 'ms')} once per change whoever joins. A viewer's whole Train page rerun "
            f"(AppTest), which happens only when the run's state changes, {_fmt(d.get('train_page_rerun_wall_ms'), 'ms')}"
            f" median, its first run {_fmt(d.get('train_page_first_run_wall_ms'), 'ms')}. plotly.js is a static file "
            "each browser fetches once; no event carries it. " + shares)


def _memory_table(mem: list[Mapping[str, Any]], legacy: bool) -> list[str]:
    if not mem:
        return []
    if legacy:
        out = ["", "| memory replay | samples kept | redraws (during + after) | peak growth | retained after the run | "
               "growth while redrawn after | tracemalloc peak |", "|---|---|---|---|---|---|---|"]
    else:
        out = ["", "| memory replay | samples kept | publisher's chart builds + looks after the run | events while it "
               "streamed, median (max) | the ended run's snapshot | peak growth | retained after the run | growth "
               "while looked at after | tracemalloc peak |", "|---|---|---|---|---|---|---|---|---|"]
    for x in mem:
        published = ("" if legacy else
                     f"{_bytes(x.get('event_bytes_median'))} ({_bytes(x.get('event_bytes_max'))}) | "
                     f"{_bytes(x.get('snapshot_bytes'))} | ")
        out.append(f"| {x['cores']} cores, {x['gpus']} GPUs{' (tracemalloc on)' if x['tracemalloc'] else ''} | "
                   f"{x['samples_kept']:,} | {x['renders_during_stream']} + {x['renders_after_run']} | {published}"
                   f"{_fmt(x['peak_growth_mb'], 'MB')} | {_fmt(x['retained_growth_mb'], 'MB')} | "
                   f"{_fmt(x['drift_after_run_mb'], 'MB')} | {_fmt(x.get('traced_peak_growth_mb'), 'MB')} |")
    return out


def detail_lines(r: Mapping[str, Any]) -> list[str]:
    """The per-figure measurements behind the table (how they are taken: docs/PERFORMANCE-METHOD.md)."""
    d, legacy = details_of(r)
    p = r.get("plan") or {}
    prestarted = _seconds(d.get("first_batch_prestarted_runs_s")) or "not measured"
    if d.get("first_batch_prestarted_s") is not None:
        prestarted += f", median {d['first_batch_prestarted_s']:.2f} s"
    out = [
        "",
        "## Measured in detail",
        "",
        f"How each figure is measured: [{METHOD}]({METHOD}#how-the-overhead-is-measured).",
        "",
        f"- **`page_ready_s`**: server starts: {_seconds(d.get('page_ready_runs_s')) or '—'}"
        + "".join(f"; {what} {sec:.2f} s" for what, sec in page_steps(d.get("page_marks") or {})) + ".",
        f"- **`first_batch_s`**: cold starts (BENCH_PRESTART=0): {_seconds(d.get('first_batch_runs_s')) or '—'}. "
        f"With the dashboard's default pre-started worker (a second server, BENCH_PRESTART=1): {prestarted}.",
        _rerun_line(d, legacy),
        *_watch_line(d),
        f"- **`memory_growth_mb`**: a 30-minute run replayed in {(p.get('memory_real_s') or 0):.0f} s"
        + ("" if legacy else ", published as fast as the publisher can while it streams (each replayed event spans "
                             "more samples than one real chart interval)")
        + "; the figure is the worst of the machines replayed in the table below. Streamlit's own per-session state "
        f"is not in it; the real server's RSS went from {_fmt(d.get('server_rss_start_mb'), 'MB')} to "
        f"{_fmt(d.get('server_rss_end_mb'), 'MB')} over this pass's server runs.",
    ]
    return out + _memory_table(d.get("memory") or [], legacy)


def write_outputs(result: Mapping[str, Any], *, report_path: str | Path | None = None,
                  json_path: str | Path | None = None) -> None:
    """The result as JSON to ``json_path`` and as markdown to ``report_path``, each only when given."""
    if json_path:
        path = Path(json_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result, indent=2, default=str), encoding="utf-8")
    if report_path:
        path = Path(report_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render_markdown(result), encoding="utf-8")


def summary_lines(result: Mapping[str, Any]) -> list[str]:
    """One terminal line per figure."""
    lines = []
    for name, (target, unit, _) in TARGETS.items():
        value = result.get(name)
        lines.append(f"{name:<22} {_fmt(value, unit):>10}  target ≤ {_fmt(target, unit):<8} {verdict(name, value)}")
    return lines
