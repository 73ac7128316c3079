"""The overhead pass's numbers: targets, the arithmetic of its figures, the plan of what to run, and the result.

Pure: nothing here measures, imports a framework or starts a process (the publisher's cadence is read from
ui.live_feed, its one home). Every figure compares two sides measured in
the same pass, alternating, because a shared machine drifts (see docs/PERFORMANCE-METHOD.md).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from bench.analysis import metrics
from bench.vocab.readings import epochs_of
from ui import live_feed

SCHEMA = "bench.overhead/1"
# The Train page's live panel has no timed rerun (since 2026-11-26): one publisher per server (ui.live_feed) looks at
# the current run every TICK_S and gives a live run's charts their new points every CHART_S, once for every viewer,
# and the browsers take each change from a server-sent-events stream. The server's CPU while a page watches is
# therefore counted per second of watching, not per refresh.
PUBLISH_TICK_S = live_feed.TICK_S  # how often the publisher looks at the run (the header's words)
PUBLISH_CHART_S = live_feed.CHART_S  # how often a live run's charts get their new points

# name -> (target, unit, what it is). Every target is an upper bound.
TARGETS: dict[str, tuple[float, str, str]] = {
    "engine_vs_bare_ratio": (1.03, "x", "steady epoch, our worker via JobManager / a bare model.fit script"),
    "watched_vs_bare_ratio": (1.05, "x", "steady epoch, started and watched live in Chromium / bare script"),
    "sampling_ratio": (1.02, "x", "steady epoch, our worker sampling every 0.5 s / the same with the sampler off"),
    "page_ready_s": (2.0, "s", "`streamlit run` started to the Train page rendered in Chromium"),
    "first_batch_s": (8.0, "s", "Start clicked to the first finished batch shown (cold worker)"),
    "first_batch_warm_s": (1.5, "s", "Start clicked to the first finished batch shown (pre-started worker ready)"),
    "watch_cores": (0.10, "cores", "server plus Chromium CPU while one page watches a live run"),
    "rerun_ms": (50.0, "ms", "server cost of the live panel while a run streams: the worse of its CPU per second "
                             "watched and the publisher's wall time per change"),
    "memory_growth_mb": (50.0, "MB", "server memory growth over a 30-minute run sampled every 0.5 s"),
}
FIGURES = tuple(TARGETS)
# page_ready's steps, seconds from the server's Popen (dashboard.page_ready): its health check answered, Chromium's
# DOMContentLoaded of Streamlit's front end, the front end's WebSocket open, the first message the server sent on it
# (the script run has begun drawing), the Train page's heading and Start button shown
PAGE_MARKS = ("healthy_s", "front_end_s", "socket_open_s", "first_message_s", "ready_s")


# -- arithmetic -----------------------------------------------------------------------------------------------------
def median(values: Sequence[float | None]) -> float | None:
    """Median of the finite values, or None when there are none."""
    vals = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)]
    return statistics.median(vals) if vals else None


def steady_times(epochs: Sequence[Mapping[str, Any]]) -> list[float]:
    """Training seconds of the steady epochs (the tracing epoch dropped), as metrics.steady_epoch_times."""
    return metrics.steady_epoch_times(epochs_of(epochs))


def pooled_median(runs: Sequence[Mapping[str, Any]]) -> float | None:
    """Median over every steady epoch of every run (each run a dict with ``epochs``)."""
    return median([t for run in runs for t in steady_times(run.get("epochs") or [])])


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or denominator is None or denominator <= 0:
        return None
    return numerator / denominator


def ratio_of_medians(ours: Sequence[Mapping[str, Any]], base: Sequence[Mapping[str, Any]]) -> float | None:
    """Pooled median steady epoch of ``ours`` / of ``base``: the headline ratio."""
    return ratio(pooled_median(ours), pooled_median(base))


def min_ratio(ours: Sequence[Mapping[str, Any]], base: Sequence[Mapping[str, Any]]) -> float | None:
    """Fastest steady epoch of ``ours`` / of ``base``: the least disturbed pair, a cross-check on a shared machine."""
    a = [t for run in ours for t in steady_times(run.get("epochs") or [])]
    b = [t for run in base for t in steady_times(run.get("epochs") or [])]
    return ratio(min(a), min(b)) if a and b else None


def paired_ratio(ours: Sequence[Mapping[str, Any]], base: Sequence[Mapping[str, Any]]) -> float | None:
    """Median over rounds of (this round's run / this round's base run), a cross-check robust to slow drift."""
    base_by_round = {r["round"]: median(steady_times(r.get("epochs") or [])) for r in base}
    ratios = [ratio(median(steady_times(r.get("epochs") or [])), base_by_round.get(r["round"])) for r in ours]
    return median(ratios)


def spread(runs: Sequence[Mapping[str, Any]]) -> float | None:
    """(max - min) / median of the per-run steady medians: how far identical runs differ here (the noise floor)."""
    meds = [m for m in (median(steady_times(r.get("epochs") or [])) for r in runs) if m is not None]
    if len(meds) < 2:
        return None
    return (max(meds) - min(meds)) / statistics.median(meds)


def cpu_ms_per_s(cpu_s: float, window_s: float) -> float | None:
    """CPU milliseconds per second of a window (the server's, while a page watches a run or nobody does)."""
    return cpu_s * 1000.0 / window_s if window_s > 0 else None


def verdict(name: str, value: float | None) -> str:
    """'pass', 'miss' or 'not measured' for one figure against its target."""
    if value is None:
        return "not measured"
    return "pass" if value <= TARGETS[name][0] else "miss"


def schedule(kinds: Sequence[str], rounds: int) -> list[tuple[int, str]]:
    """(round, kind) in run order: every round runs each kind once, the order rotated by one each round."""
    out = []
    for r in range(rounds):
        k = r % len(kinds)
        out += [(r + 1, kind) for kind in list(kinds[k:]) + list(kinds[:k])]
    return out


# -- the plan -------------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Plan:
    """How much to measure. The workload is the dashboard's default run with a larger sample limit."""

    quick: bool
    rounds: int
    epochs: int
    limit_samples: int
    cpu_threads: int | None  # None = all cores, as a user's default run
    page_starts: int
    memory_real_s: float  # real seconds over which the 30-minute run is replayed
    render_repeats: int
    with_unwatched: bool  # also a server run nobody watches (separates watching from the server's own work)
    browser: bool = True
    prestart_runs: int = 2  # Start-to-first-batch with the dashboard's pre-started worker
    # watch_cores' window: one page watches a replayed run (benchmarks.standins.STEADY_WORKER) held live this long,
    # whatever the training's speed (a real quick run ends before the page has drawn it)
    watch_window_s: float = 20.0
    # the smallest configuration (--smoke, the test suite's smoke run): every side replayed by the stand-in worker,
    # no framework; its figures say the harness works, not what the dashboard costs, and never reach the doc
    replayed: bool = False

    def config(self) -> Any:
        """The RunConfig every path trains (the Train page's defaults, with Epochs and Training samples set)."""
        from bench.vocab.config import RunConfig

        return RunConfig(epochs=self.epochs, limit_samples=self.limit_samples, cpu_threads=self.cpu_threads)

    def kinds(self) -> list[str]:
        kinds = ["bare", "engine", "sampling_off", "sampling_0.1"]
        if self.browser:
            kinds.append("watched")
            if self.with_unwatched:
                kinds.append("server_unwatched")
        return kinds


def plan_for(quick: bool = False, *, rounds: int | None = None, browser: bool = True, smoke: bool = False) -> Plan:
    """--quick: ~4 minutes, 3 rounds of 3 epochs on 12,000 samples, a 10 s watched window; full: ~12 minutes, 4 rounds
    of 6 on 40,000, a 20 s window; --smoke: every side replayed (no framework), one round of 3 one-second epochs,
    a 3 s watched window, no pre-started worker: about a minute, for the test suite."""
    if smoke:
        return Plan(quick=True, rounds=rounds or 1, epochs=3, limit_samples=12000, cpu_threads=None, page_starts=1,
                    memory_real_s=1.0, render_repeats=1, with_unwatched=False, browser=browser, prestart_runs=0,
                    watch_window_s=3.0, replayed=True)
    if quick:
        return Plan(quick=True, rounds=rounds or 3, epochs=3, limit_samples=12000, cpu_threads=None, page_starts=1,
                    memory_real_s=6.0, render_repeats=3, with_unwatched=False, browser=browser, prestart_runs=1,
                    watch_window_s=10.0)
    return Plan(quick=False, rounds=rounds or 4, epochs=6, limit_samples=40000, cpu_threads=None, page_starts=3,
                memory_real_s=20.0, render_repeats=10, with_unwatched=True, browser=browser)


# -- the result -----------------------------------------------------------------------------------------------------
SHORT_WATCH_WINDOW_S = 10.0  # below this a watched run's steady window holds too few refreshes for watch_cores


def _short_window_note(watched: list[dict[str, Any]], window_run: Mapping[str, Any] | None) -> list[str]:
    window = window_run.get("window_s") if window_run else median([r.get("window_s") for r in watched])
    if window is None or window >= SHORT_WATCH_WINDOW_S:
        return []
    which = "The watched window" if window_run else "The watched runs' steady windows"
    return [(f"{which} lasted {window:.1f} s{'' if window_run else ' (median)'}, a few of the live panel's updates "
            f"(its header's words every {PUBLISH_TICK_S:g} s, its charts' new points every {PUBLISH_CHART_S:g} s): "
            f"`watch_cores` says little from so short a window; "
            f"benchmarks/watch_cost.py watches one replayed run over longer windows (docs/LIVE-PANEL.md).")]


def _window_share(window_run: Mapping[str, Any] | None) -> float | None:
    """Server plus Chromium CPU over the watched window, in cores; None when no window was watched."""
    if not window_run or not window_run.get("window_s"):
        return None
    return float(window_run["side_cpu_s"]) / float(window_run["window_s"])


# Other work beside the pass, in cores (overhead.OtherLoad, per run), above which its wall-time figures are unreliable
BUSY_CORES = 0.25
WALL_FIGURES = ("engine_vs_bare_ratio", "watched_vs_bare_ratio", "sampling_ratio", "page_ready_s", "first_batch_s",
                "first_batch_warm_s")
CPU_FIGURES = ("watch_cores", "memory_growth_mb")


def load_notes(runs: Sequence[Mapping[str, Any]], logical_cores: int | None) -> list[str]:
    """What other work on the machine makes unreliable: a note when the median run had more than BUSY_CORES of it."""
    other = [r["other_cores"] for r in runs if isinstance(r.get("other_cores"), (int, float))]
    busy = median(other)
    if busy is None or busy <= BUSY_CORES:
        return []
    cores = f" of {logical_cores}" if logical_cores else ""
    return [(f"Other work shared the machine: {busy:.2f} cores{cores} (median over the runs, {min(other):.2f} to "
            f"{max(other):.2f}) were busy with processes that are not this pass's. The wall-time figures "
            f"({', '.join(f'`{n}`' for n in WALL_FIGURES)}, and the publisher's wall time per change inside "
            f"`rerun_ms`) are unreliable here: they measure how the pass shared the cores with that work as much as "
            f"our code. The CPU-time figures ({', '.join(f'`{n}`' for n in CPU_FIGURES)}, the server's CPU per second "
            f"watched inside `rerun_ms` and the CPU table) count only the CPU our side spent, and hold better; take "
            f"the wall-time figures again on a quiet machine.")]


def result_from(plan: Plan, config: dict[str, Any], machine_info: dict[str, Any], runs: list[dict[str, Any]],
                extra: dict[str, Any], memory: list[dict[str, Any]], render: dict[str, Any] | None) -> dict[str, Any]:
    """Turn raw measurements into the result: flat figures, their details, verdicts, the raw runs."""
    by = {kind: [r for r in runs if r["kind"] == kind] for kind in {r["kind"] for r in runs}}
    window_run = extra.get("watch_window")
    bare, engine, off = by.get("bare", []), by.get("engine", []), by.get("sampling_off", [])
    fast, watched, unwatched = by.get("sampling_0.1", []), by.get("watched", []), by.get("server_unwatched", [])

    def server_ms_per_s(rows: list[dict[str, Any]]) -> float | None:
        return median([cpu_ms_per_s(r["server_cpu_s"], r["window_s"]) for r in rows])

    def side_share(rows: list[dict[str, Any]]) -> float | None:
        """CPU used beside the worker (our process, or the server and Chromium), in cores, over the steady window."""
        return median([r["side_cpu_s"] / r["window_s"] for r in rows
                       if r.get("side_cpu_s") is not None and r.get("window_s")])

    threads = config.get("cpu_threads") or machine_info.get("logical_cores") or 1
    shares = {kind: side_share(rows) for kind, rows in by.items() if kind != "bare"}
    gross = server_ms_per_s(watched)
    base = server_ms_per_s(unwatched)
    # the live panel's server work per change, done once by the publisher for every viewer (benchmarks.render_cost)
    rendered = render or {}
    publish_ms = median(rendered.get("publish_ms") or [])
    rerun = max([v for v in (gross, publish_ms) if v is not None], default=None)
    stream_mem = [m for m in memory if not m.get("tracemalloc")]
    mem_growth = max((m["peak_growth_mb"] for m in stream_mem), default=None)
    figures = {
        "engine_vs_bare_ratio": ratio_of_medians(engine, bare),
        "watched_vs_bare_ratio": ratio_of_medians(watched, bare),
        "sampling_ratio": ratio_of_medians(engine, off),
        "page_ready_s": median(extra.get("page_ready_s") or []),
        "first_batch_s": median([r.get("first_batch_s") for r in watched]),
        "first_batch_warm_s": median(extra.get("first_batch_prestarted_runs_s") or []),
        "watch_cores": _window_share(window_run) if window_run else shares.get("watched"),
        "rerun_ms": rerun,
        "memory_growth_mb": mem_growth,
    }
    details = {
        "bare_median_s": pooled_median(bare), "engine_median_s": pooled_median(engine),
        "watched_median_s": pooled_median(watched), "sampling_off_median_s": pooled_median(off),
        "sampling_0_1_median_s": pooled_median(fast), "server_unwatched_median_s": pooled_median(unwatched),
        "engine_vs_bare_paired": paired_ratio(engine, bare), "watched_vs_bare_paired": paired_ratio(watched, bare),
        "engine_vs_bare_min": min_ratio(engine, bare), "watched_vs_bare_min": min_ratio(watched, bare),
        "sampling_min": min_ratio(engine, off),
        "load_1m_median": median([r.get("load_1m") for r in runs]),
        "sampling_paired": paired_ratio(engine, off) if off else None,
        "sampling_0_1_ratio": ratio_of_medians(fast, off),
        "sampling_0_1_paired": paired_ratio(fast, off) if off else None,
        "unwatched_vs_bare_ratio": ratio_of_medians(unwatched, bare),
        "watched_vs_unwatched_ratio": ratio_of_medians(watched, unwatched),
        "bare_spread": spread(bare), "engine_spread": spread(engine),
        "page_ready_runs_s": extra.get("page_ready_s") or [],
        "server_healthy_runs_s": extra.get("server_healthy_s") or [],
        "page_marks": {key: median([m.get(key) for m in extra.get("page_marks") or []]) for key in PAGE_MARKS},
        "first_batch_runs_s": [r.get("first_batch_s") for r in watched],
        "first_batch_prestarted_s": median(extra.get("first_batch_prestarted_runs_s") or []),
        "first_batch_prestarted_runs_s": extra.get("first_batch_prestarted_runs_s") or [],
        "server_cpu_ms_per_s_watched": gross, "server_cpu_ms_per_s_unwatched": base,
        "server_cpu_ms_per_s_watching_adds": (gross - base) if gross is not None and base is not None else None,
        "page_profile_ms_per_s": extra.get("page_profile_ms_per_s"),
        "page_profile_chromium_cpu_share": extra.get("page_profile_chromium_cpu_share"),
        "watch_chromium_cpu_share": median([r["chromium_cpu_s"] / r["window_s"]
                                            for r in ([window_run] if window_run else watched) if r["window_s"]]),
        "watch_server_cpu_share": median([r["server_cpu_s"] / r["window_s"]
                                          for r in ([window_run] if window_run else watched) if r["window_s"]]),
        "watch_window_s": window_run.get("window_s") if window_run else None,
        "watched_runs_cpu_cores": shares.get("watched"),
        # the publisher's work per change, once for all viewers (no viewer's session reruns for it)
        "publish_wall_ms": publish_ms,
        "publish_first_wall_ms": median(rendered.get("publish_first_ms") or []),
        "publish_changes_timed": len(rendered.get("publish_ms") or []),
        "publish_builds": rendered.get("publish_builds"),
        "publish_event_bytes": rendered.get("event_bytes"),
        "publish_first_event_bytes": rendered.get("first_event_bytes"),
        "snapshot_wall_ms": median(rendered.get("snapshot_ms") or []),
        "snapshot_bytes": rendered.get("snapshot_bytes"),
        # the whole Train page in AppTest: a viewer's rerun, now only when the run's state changes
        "train_page_rerun_wall_ms": median(rendered.get("page_ms") or []),
        "train_page_first_run_wall_ms": median(rendered.get("page_first_ms") or []),
        "render": render, "memory": memory,
        "memory_retained_mb": max((m["retained_growth_mb"] for m in stream_mem), default=None),
        "memory_drift_after_run_mb": max((m["drift_after_run_mb"] for m in stream_mem), default=None),
        "memory_traced_peak_mb": next((m["traced_peak_growth_mb"] for m in memory if m.get("tracemalloc")), None),
        "server_rss_start_mb": extra.get("server_rss_start_mb"), "server_rss_end_mb": extra.get("server_rss_end_mb"),
        "startup_wall_s": {kind: median([r["wall_s"] - sum(e["epoch_seconds"] for e in r["epochs"]) for r in rows])
                           for kind, rows in by.items()},
        "side_cpu_cores": shares,
        "training_threads": threads,
        "expected_ratio_from_cpu": {kind: (1 + share / threads if share is not None else None)
                                    for kind, share in shares.items()},
        "notes": (extra.get("notes") or []) + [
            f"Server run #{r['run_id']} trained a different config than the bare side: {r['config_diff']}."
            for r in watched + unwatched if not r.get("config_matches", True)] + _short_window_note(watched, window_run)
        + load_notes(runs, machine_info.get("logical_cores")),
        "other_cores_median": median([r.get("other_cores") for r in runs]),
    }
    result: dict[str, Any] = {
        "schema": SCHEMA,
        "date": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "quick": plan.quick,
        "replayed": plan.replayed,
        "machine": machine_info,
        "plan": dataclasses.asdict(plan),
        "config": config,
        **figures,
        "sampling_ratio_0_1": details["sampling_0_1_ratio"],
        "figures": {name: {"value": value, "target": TARGETS[name][0], "unit": TARGETS[name][1],
                           "verdict": verdict(name, value), "machine": machine_info.get("label")}
                    for name, value in figures.items()},
        "details": details,
        "runs": runs,
    }
    return result


