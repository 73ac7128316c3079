"""What the dashboard costs a training run, measured side by side on this machine: ``python -m bench overhead``
(which hands over to this module's :func:`main`), or ``python -m benchmarks.overhead`` from the checkout.

Every figure compares our path with a minimal one IN THE SAME PASS, alternating the two, because a shared machine
drifts: a bare ``model.fit`` (benchmarks.baseline, on what ``bench.runs.worker.prepare_training`` prepares) against our
worker run through :class:`bench.runs.jobs.JobManager`, against the same run started from a real dashboard server watched
live by headless Chromium (benchmarks.dashboard), and against our worker with the sampler switched off. Beside those:
how long a cold server takes to show the Train page, how long a Start click takes to a first finished batch, what the
live panel costs the server (its CPU while a page watches; benchmarks.render_cost: the publisher's work per change,
done once for every viewer, and a Train page rerun) and how far memory grows over a 30-minute run published live
(benchmarks.memory). How each figure is measured: docs/PERFORMANCE-METHOD.md.

The result goes to the terminal, to a JSON file with ``--json PATH``, and to docs/PERFORMANCE.md only when asked
(``--write-doc``); ``--from-json PATH`` renders the doc from a saved result without measuring. Nothing here imports
TensorFlow or Streamlit in this process: the bare fit, the memory replay and the publisher and AppTest timings each run
in their own.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import platform
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from benchmarks import dashboard
from benchmarks.common import cpu_seconds, run_child, scratch
from benchmarks.dashboard import (
    CHROMIUM,
    CHROMIUM_ARGS,
    DashboardServer,
    browser_unavailable,
    compile_sources,
    page_ready,
    prestarted_first_batches,
    server_run,
    settle,
)
from benchmarks.report import DEFAULT_REPORT, summary_lines, write_outputs
from benchmarks.standins import HOLD_ENV, STEADY_WORKER, STEADY_WORKER_TARGET, SamplerChoice, null_sampler
from benchmarks.stats import Plan, median, plan_for, result_from, schedule, steady_times


def bare_run(config: Any, tmp: Path, rnd: int, kind: str = "bare") -> list[dict[str, Any]]:
    """One bare model.fit of ``config`` in its own process (benchmarks.baseline; ``kind="replayed"``: the stand-in
    worker's epochs instead, for the smallest configuration); its epochs."""
    cfg_path, out = tmp / f"bare-config-{rnd}.json", tmp / f"bare-{rnd}.json"
    cfg_path.write_text(json.dumps(config.to_dict()), encoding="utf-8")
    run_child("benchmarks.baseline", [kind, str(cfg_path), str(out)], timeout_s=900, log_path=tmp / f"bare-{rnd}.log")
    return json.loads(out.read_text(encoding="utf-8"))["epochs"]


# -- the pass -------------------------------------------------------------------------------------------------------
def engine_run(manager: Any, config: Any, timeout_s: float = 900.0) -> dict[str, Any]:
    """One run through ``manager`` (in this process, as the CLI runs it); its epochs and this process's CPU seconds
    (supervisor, sampler, event handling; the worker excluded) from the first epoch to the run's end."""
    import psutil

    me = psutil.Process()
    run_id = manager.submit(config)
    deadline = time.monotonic() + timeout_s
    t_a = cpu_a = None
    while True:
        snap = manager.snapshot(run_id)
        if t_a is None and snap.epochs:
            t_a, cpu_a = time.monotonic(), cpu_seconds(me)
        if not snap.active or time.monotonic() > deadline:
            break
        time.sleep(0.25)
    t_b, cpu_b = time.monotonic(), cpu_seconds(me)
    if snap.status != "finished":
        raise RuntimeError(f"run #{run_id} ended {snap.status}: {snap.error}")
    return {"run_id": run_id, "epochs": [e.to_dict() for e in snap.epochs], "samples": len(snap.samples),
            "window_s": t_b - t_a if t_a is not None else None,
            "side_cpu_s": cpu_b - cpu_a if cpu_a is not None else None}



# -- a busy machine ---------------------------------------------------------------------------------------------------
SERVER_TRIES = 3  # a server run whose page never drew is tried again on a fresh page, this many times in all


def tree_cpu_s() -> float:
    """CPU seconds of this process and every process it started (the training workers, helper Pythons, the server and
    its workers, Chromium), those already ended included: what the pass itself spent."""
    import psutil

    me = psutil.Process()
    t = me.cpu_times()
    total = t.user + t.system + t.children_user + t.children_system
    for child in me.children(recursive=True):
        try:
            c = child.cpu_times()
            total += c.user + c.system + c.children_user + c.children_system
        except psutil.Error:
            continue
    return total


def machine_busy_s() -> float:
    """CPU seconds every core of the machine has spent busy since boot (idle and I/O wait excluded)."""
    import psutil

    t = psutil.cpu_times()
    return sum(t) - t.idle - getattr(t, "iowait", 0.0)


class OtherLoad:
    """CPU the machine spent on work that is not the pass's, over a window: the machine's busy time minus this
    process tree's, in cores. A loaded machine makes wall-time figures unreliable; this says how loaded it was."""

    def __enter__(self) -> OtherLoad:  # noqa: PYI034 - a plain class
        self.t0, self.busy0, self.ours0 = time.monotonic(), machine_busy_s(), tree_cpu_s()
        self.cores: float | None = None
        return self

    def __exit__(self, *exc: object) -> None:
        wall = time.monotonic() - self.t0
        other = (machine_busy_s() - self.busy0) - (tree_cpu_s() - self.ours0)
        self.cores = max(0.0, other) / wall if wall > 0 else None


def with_retries(attempt: Callable[[], dict[str, Any]], what: str, server: Any, notes: list[str],
                 say: Callable[[str], None], tries: int = SERVER_TRIES) -> dict[str, Any] | None:
    """``attempt()``, tried again (after the server's runs have ended) when a page wait or a run timed out; None and a
    note when every try failed, so a loaded machine costs a figure, never the pass."""
    errors: tuple[type[BaseException], ...] = (TimeoutError, RuntimeError, *dashboard.page_errors())
    for n in range(1, tries + 1):
        try:
            return attempt()
        except errors as exc:
            message = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
            say(f"{what}: try {n}/{tries} failed: {type(exc).__name__}: {message}")
            if n == tries:
                notes.append(f"{what} was left out: all {tries} tries failed, the last with {type(exc).__name__}: "
                             f"{message}.")
                return None
            notes.append(f"{what} was tried again after {type(exc).__name__}: {message}.")
            if server is not None:
                try:
                    settle(server)
                except TimeoutError:
                    pass
    return None


def _started(browser: Any, folder: Path, env: dict[str, str]) -> dict[str, Any]:
    server, seconds = page_ready(browser, folder, env=env)
    return {"server": server, "seconds": seconds}


def replay_env(hold: Path) -> dict[str, str]:
    """A server whose runs are replayed by the one-second-an-epoch stand-in, held live while ``hold`` exists."""
    return {"BENCH_WORKER_TARGET": STEADY_WORKER_TARGET, HOLD_ENV: str(hold)}


def watch_window(browser: Any, server: DashboardServer, config: Any, plan: Plan, hold: Path) -> dict[str, Any]:
    """watch_cores' window: one page watches a replayed run (``server`` replays them, held by ``hold``) for
    plan.watch_window_s seconds from its first epoch; the server's and Chromium's CPU over that window. In the smallest
    configuration the page is also profiled over it (where its CPU goes), in place of a profiled run of its own."""
    return server_run(browser, server, config.replace(epochs=2), watch=True, hold=hold, window_s=plan.watch_window_s,
                      profile=plan.replayed)


def keep_profile(extra: dict[str, Any], profiled: dict[str, Any] | None) -> None:
    """Where the watching page's CPU goes, from a profiled watched run, into ``extra``."""
    if profiled is not None and profiled.get("page_profile_ms_per_s") is not None:
        extra["page_profile_ms_per_s"] = profiled["page_profile_ms_per_s"]
        extra["page_profile_chromium_cpu_share"] = profiled["chromium_cpu_s"] / max(profiled["window_s"], 1e-9)


def machine() -> dict[str, Any]:
    """Where the figures come from, as bench.hardware.devices.discover() describes this machine."""
    from bench.hardware import devices

    hw = devices.discover()
    return {
        "cpu_model": hw.cpu.model, "logical_cores": hw.cpu.logical_cores, "physical_cores": hw.cpu.physical_cores,
        "ram_total_gib": round(ram_mib / 1024, 1) if (ram_mib := hw.cpu.ram_total_mib) is not None else None,
        "gpus": [g.name for g in hw.gpus],
        "gpu_reason": hw.gpu_reason, "framework": f"{hw.framework} {hw.framework_version or '?'}",
        "hostname": hw.hostname, "platform": hw.platform or platform.platform(), "python": platform.python_version(),
        "label": hw.description(),
    }


def memory_and_render(plan: Plan, tmp: Path, say: Callable[[str], None],
                      ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The memory replay (benchmarks.memory) and the render timing (benchmarks.render_cost), each in its own process:
    memory over a 30-minute run published live, in each scenario of ``plan``, and the publisher's and the Train page's
    work per change."""
    say("memory: replaying a 30-minute run (3,600 samples, 36 epochs) through JobManager, published live")
    memory: list[dict[str, Any]] = []
    scenarios = ((32, 2, False),) if plan.quick else ((2, 0, False), (32, 2, False), (32, 2, True))
    for cores, gpus, trace in scenarios:
        spec = {"cores": cores, "gpus": gpus, "real_s": plan.memory_real_s, "trace": trace,
                "after_s": 5.0 if trace else plan.memory_real_s}
        out = tmp / f"memory-{cores}-{gpus}-{int(trace)}.json"
        run_child("benchmarks.memory", ["memory", json.dumps(spec), str(out)], timeout_s=900,
                  log_path=tmp / "memory.log")
        memory.append(json.loads(out.read_text(encoding="utf-8")))
        m = memory[-1]
        say(f"memory {cores} cores {gpus} GPUs{' (tracemalloc)' if trace else ''}: peak +{m['peak_growth_mb']:.1f} MB, "
            f"retained +{m['retained_growth_mb']:.1f} MB, the publisher built charts {m['renders_during_stream']} "
            f"times while it streamed")
    say("render: the live panel's publisher and the Train page (AppTest) with a live 30-minute run")
    out = tmp / "render.json"
    run_child("benchmarks.render_cost",
              ["render", json.dumps({"real_s": plan.memory_real_s, "repeats": plan.render_repeats}), str(out)],
              timeout_s=900, log_path=tmp / "render.log")
    render = json.loads(out.read_text(encoding="utf-8"))
    publish_ms, page_ms = median(render.get("publish_ms") or []), median(render.get("page_ms") or [])
    say(f"render: the publisher {publish_ms or 0:.1f} ms per change (once for every viewer), an event of "
        f"{render.get('event_bytes') or 0:,.0f} bytes; the Train page rerun {page_ms or 0:.0f} ms")
    return memory, render


def run_benchmark(plan: Plan, log: Callable[[str], None] = lambda m: print(m, file=sys.stderr)) -> dict[str, Any]:
    """Measure every figure on this machine; returns the result dict (see ``result_from`` for its keys)."""
    from bench.hardware import devices
    from bench.runs.jobs import JobManager, default_sampler
    from bench.store import Store

    t_start = time.monotonic()

    def say(message: str) -> None:
        log(f"[{time.monotonic() - t_start:6.0f} s] {message}")

    config = plan.config().validate(devices.discover())
    tmp = scratch("bench-overhead-")
    runs: list[dict[str, Any]] = []
    extra: dict[str, Any] = {"page_ready_s": [], "notes": []}
    reason = browser_unavailable() if plan.browser else "--no-browser"
    if reason:
        plan = dataclasses.replace(plan, browser=False)
        extra["notes"].append(f"Browser figures not measured: {reason}.")
    if plan.replayed:
        extra["notes"].append("Every side was replayed by a stand-in worker (benchmarks.standins.STEADY_WORKER, one "
                              "second an epoch, no framework): the smallest configuration, which shows the harness "
                              "works; its figures are not what the dashboard costs a training run.")
    hold = tmp / "hold-the-watched-run"
    beside = None
    if plan.replayed:  # the smallest configuration's figures are not costs: its children need not wait their turn
        beside = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memory-render").submit(
            memory_and_render, plan, tmp, say)
        extra["notes"].append("The memory replay and the render timing ran beside the other sides (the smallest "
                              "configuration alone; a real pass runs them after).")
    sampler = SamplerChoice(default_sampler)  # the 'sampling_off' side swaps in the null sampler per run
    manager = JobManager(Store(tmp / "engine.sqlite3"), sampler_factory=sampler,
                         worker_target=STEADY_WORKER if plan.replayed else None)
    playwright: Any = None
    browser: Any = None
    server: Any = None
    try:
        if plan.browser:
            from playwright.sync_api import sync_playwright

            playwright = sync_playwright().start()
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            compile_sources()
            for i in range(plan.page_starts):
                folder = tmp / f"server-{i + 1}"
                folder.mkdir()
                started = with_retries(functools.partial(_started, browser, folder,
                                                         replay_env(hold) if plan.replayed else {}),
                                       f"server start {i + 1}", None, extra["notes"], say)
                if started is None:
                    continue
                server, seconds = started["server"], started["seconds"]
                extra["page_ready_s"].append(seconds)
                extra.setdefault("server_healthy_s", []).append(server.healthy_s)
                extra.setdefault("page_marks", []).append(server.page_marks)
                say(f"page ready after {seconds:.2f} s (server start {i + 1}/{plan.page_starts})")
                if i + 1 < plan.page_starts:
                    server.stop()
            if server is None:
                raise RuntimeError("no dashboard server drew the Train page: " + "; ".join(extra["notes"][-3:]))
            extra["server_rss_start_mb"] = server.rss_mb()
        order = schedule(plan.kinds(), plan.rounds)
        for n, (rnd, kind) in enumerate(order, 1):
            t0 = time.monotonic()
            row: dict[str, Any] = {"round": rnd, "kind": kind}
            with OtherLoad() as load:
                if kind == "bare":
                    row["epochs"] = bare_run(config, tmp, rnd, "replayed" if plan.replayed else "bare")
                elif kind in ("engine", "sampling_off", "sampling_0.1"):
                    cfg = config.replace(sample_interval_s=0.1) if kind == "sampling_0.1" else config
                    sampler.factory = null_sampler if kind == "sampling_off" else default_sampler
                    row.update(engine_run(manager, cfg))
                    sampler.factory = default_sampler
                else:
                    # replayed, the watched run is held before its last epoch until its page showed a batch, so a
                    # loaded machine's slow page still gets a first-batch time (a hold waits between epochs: no
                    # epoch's seconds change)
                    held = hold if plan.replayed and kind == "watched" else None
                    served = with_retries(functools.partial(server_run, browser, server, config,
                                                            watch=kind == "watched", hold=held),
                                          f"round {rnd}'s {kind} run", server, extra["notes"], say)
                    row.update(served or {})
            if "epochs" not in row:
                continue  # every try failed; the note says so
            row["wall_s"] = time.monotonic() - t0
            row["load_1m"] = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
            row["other_cores"] = load.cores
            row["steady_median_s"] = median(steady_times(row["epochs"]))
            runs.append(row)
            secs = ", ".join(f"{e['epoch_seconds']:.2f}" for e in row["epochs"])
            other = f", other work beside it {load.cores:.2f} cores" if load.cores is not None else ""
            say(f"run {n}/{len(order)} round {rnd} {kind:<16} steady median {row['steady_median_s']:.3f} s "
                f"(epochs {secs}) wall {row['wall_s']:.0f} s{other}")
        if server is not None:
            extra["server_rss_end_mb"] = server.rss_mb()
            if not plan.replayed:  # the smallest configuration profiles its watched window instead
                say("where the watching page's CPU goes: one more watched run, profiled (not one of the measured "
                    "sides)")
                keep_profile(extra, with_retries(
                    functools.partial(server_run, browser, server, config, watch=True, profile=True),
                    "the profiled watched run", server, extra["notes"], say, tries=2))
            if not plan.replayed:  # the window's server replays its run; the measured server trains for real
                server.stop()
                server = None
                folder = tmp / "server-watch"
                folder.mkdir()
                server = DashboardServer(folder, env=replay_env(hold))
                server.wait_healthy()
            say(f"watching: one page on a replayed run held live for {plan.watch_window_s:g} s")
            extra["watch_window"] = with_retries(functools.partial(watch_window, browser, server, config, plan, hold),
                                                 "the watched window", server, extra["notes"], say, tries=2)
            if plan.replayed:
                keep_profile(extra, extra["watch_window"])
            server.stop()
            server = None
        if plan.browser and plan.prestart_runs:
            folder = tmp / "server-prestart"
            folder.mkdir()
            server = DashboardServer(folder, prestart=True)
            server.wait_healthy()
            warm = with_retries(lambda: {"times": prestarted_first_batches(
                browser, server, config.replace(epochs=2), plan.prestart_runs, say)},
                "the pre-started worker's first batches", server, extra["notes"], say, tries=2)
            extra["first_batch_prestarted_runs_s"] = warm["times"] if warm else []
        extra["notes"] += dashboard.RETRIES
    finally:
        manager.shutdown()
        if server is not None:
            server.stop()
        if browser is not None:
            browser.close()
        if playwright is not None:
            playwright.stop()

    memory, render = beside.result() if beside is not None else memory_and_render(plan, tmp, say)
    shutil.rmtree(tmp, ignore_errors=True)
    result = result_from(plan, config.to_dict(), machine(), runs, extra, memory, render)
    result["duration_s"] = time.monotonic() - t_start
    return result


# -- the command ----------------------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench overhead",
        description="What the dashboard costs a training run on this machine: our engine, a watched page and the "
                    "sampler against a bare Keras model.fit, page and first-batch latency, the live panel's server "
                    "cost, memory. Prints "
                    "every figure against its target; docs/PERFORMANCE.md is rewritten only when asked (--write-doc).")
    p.add_argument("--quick", action="store_true", help="a short pass (~4 minutes) instead of the full one (~12)")
    p.add_argument("--smoke", action="store_true",
                   help="the smallest configuration (~1 minute): every side replayed by a stand-in worker, no "
                        "framework, one round; shows the harness works, its figures are not the dashboard's cost "
                        "and never go to the doc")
    p.add_argument("--rounds", type=int, default=None, help="alternation rounds (default 3 quick, 4 full; at least 3)")
    p.add_argument("--no-browser", action="store_true", help="skip the figures that need Chromium and a server")
    p.add_argument("--json", dest="json_path", default=None, help="write every figure and raw run time to this file")
    p.add_argument("--write-doc", action="store_true",
                   help="also rewrite the shipped report, docs/PERFORMANCE.md; without it (or --report) no doc is "
                        "written")
    p.add_argument("--report", default=None, help="write the markdown report to this path instead (asks for the doc, "
                                                  "as --write-doc does)")
    p.add_argument("--note", action="append", default=[],
                   help="a sentence for the report's notes, e.g. where the pass ran and what else ran beside it "
                        "(repeat for more)")
    p.add_argument("--from-json", dest="from_json", default=None,
                   help="measure nothing: take the result from this JSON file (one --json wrote), e.g. to render "
                        "the doc again with --write-doc")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """The command; returns the exit status (2: bad options, with a message on stderr)."""
    args = build_parser().parse_args(argv)
    if args.rounds is not None and args.rounds < 3:
        print("error: --rounds must be at least 3: every side needs three runs", file=sys.stderr)
        return 2
    if args.smoke and (args.quick or args.write_doc or args.report or args.rounds is not None):
        print("error: --smoke is the smallest configuration, replayed: it takes no --quick or --rounds, and its "
              "figures never go to a report (leave out --write-doc and --report; --json keeps them)", file=sys.stderr)
        return 2
    if args.from_json:
        if args.quick or args.smoke or args.rounds is not None or args.no_browser:
            print("error: --from-json measures nothing, so --quick, --smoke, --rounds and --no-browser do not apply",
                  file=sys.stderr)
            return 2
        try:
            result = json.loads(Path(args.from_json).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            print(f"error: cannot read a result from {args.from_json}: {exc}", file=sys.stderr)
            return 2
    else:
        result = run_benchmark(plan_for(args.quick, rounds=args.rounds, browser=not args.no_browser,
                                        smoke=args.smoke))
    if args.note:
        result.setdefault("details", {}).setdefault("notes", [])[:0] = args.note
    report = args.report or (DEFAULT_REPORT if args.write_doc else None)
    write_outputs(result, report_path=report, json_path=args.json_path)
    print("\n".join(summary_lines(result)))
    written = [str(p) for p in (report, args.json_path) if p]
    print(f"wrote {' and '.join(written)}" if written else "wrote nothing (--json PATH keeps the result, "
                                                             "--write-doc rewrites docs/PERFORMANCE.md)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
