"""What watching a live run costs, and nothing else: a dashboard server whose runs are replayed
(benchmarks.standins.PacedWorker, no framework, about 2 % of a core), one long run started from the Train page, and
``--pages`` Chromium pages watching it; the server's and Chromium's CPU over two windows of the run, early and late (the
cost per second must not grow with the run's length), and where the first page's main thread spends its time.

    python -m benchmarks.watch_cost --pages 1 --pages 5 --json out.json
    python -m benchmarks.watch_cost --page compare --pages 1     # a live comparison (cpu/1 then cpu) instead

Used to choose how the live panel is drawn and fed (docs/LIVE-PANEL.md): run it from two checkouts to compare two
ways. On the Train page the header and charts come from the publisher's stream (ui/live_feed.py, ui/static/live.js),
with no timed rerun; each row records what the first page's live element counted: the header's builds and updates,
and the live view's reruns asked for (one per change of the run's state) and the last event applied. Many viewers of
the stream, emulated without a browser each: benchmarks/classroom.py (docs/CLASSROOM.md).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import scratch, wait_for
from benchmarks.dashboard import (
    CHROMIUM,
    CHROMIUM_ARGS,
    DashboardServer,
    _profile_part,
    chromium_cpu_s,
    page_errors,
)
from benchmarks.standins import PACED_WORKER_TARGET

LIVE = ".bench-live-chart"


def _cpu(server: DashboardServer) -> tuple[float, float, float]:
    return time.monotonic(), server.cpu_s(), sum(chromium_cpu_s().values())


def _window(server: DashboardServer, seconds: float) -> dict[str, float]:
    t0, s0, c0 = _cpu(server)
    time.sleep(seconds)
    t1, s1, c1 = _cpu(server)
    wall = t1 - t0
    return {"wall_s": wall, "server_cores": (s1 - s0) / wall, "chromium_cores": (c1 - c0) / wall,
            "total_cores": (s1 - s0 + c1 - c0) / wall}


def _profile(context: Any, page: Any, seconds: float) -> dict[str, float]:
    cdp = context.new_cdp_session(page)
    cdp.send("Profiler.enable")
    cdp.send("Profiler.setSamplingInterval", {"interval": 1000})
    cdp.send("Profiler.start")
    time.sleep(seconds)
    profile = cdp.send("Profiler.stop")["profile"]
    frames = {node["id"]: node["callFrame"] for node in profile["nodes"]}
    totals: dict[str, float] = {}
    for node_id, delta_us in zip(profile["samples"], profile["timeDeltas"]):
        part = _profile_part(frames[node_id])
        if part is not None:
            totals[part] = totals.get(part, 0.0) + delta_us / 1000.0
    return {part: ms / seconds for part, ms in totals.items()}


PAGES = {"train": ("", "Start", 3), "compare": ("compare", "Start comparison", 2)}  # path, button, live charts


def watch(browser: Any, pages: int, window_s: float, folder: Path, page_name: str = "train",
          late_after_s: float = 60.0) -> dict[str, Any]:
    """One server, ``pages`` pages on one live run (Train) or group (Compare): CPU in an early and a late window (the
    late one ``late_after_s`` after the early one began, the run that much longer), then a profile of page 1."""
    path, button, live_charts = PAGES[page_name]
    server = DashboardServer(folder, env={"BENCH_WORKER_TARGET": PACED_WORKER_TARGET})
    contexts = []
    try:
        server.wait_healthy()
        for _ in range(pages):
            context = browser.new_context(viewport={"width": 1400, "height": 1300})
            page = context.new_page()
            page.set_default_timeout(120_000)
            contexts.append((context, page))
        first = contexts[0][1]
        first.goto(f"{server.url}/{path}")
        first.get_by_label("Epochs", exact=True).wait_for()
        for label, value in (("Epochs", 40), ("Training samples (0 = all)", 20000), ("Batch size", 8)):
            box = first.get_by_label(label, exact=True)
            box.fill(str(value))
            box.press("Enter")
            first.wait_for_timeout(400)
        first.get_by_role("button", name=button, exact=True).click()  # 40 epochs of 2.5 s: 100 s live (a run)
        for _, page in contexts[1:]:
            page.goto(f"{server.url}/{path}")
        wait_for(lambda: all(page.locator(LIVE).count() >= live_charts for _, page in contexts), 120,
                 "the live charts on every page", poll_s=0.5)
        time.sleep(min(3.0, window_s))  # settled (the smoke run's windows are short, and so is this)
        early = _window(server, window_s)
        time.sleep(max(0.0, late_after_s - window_s))
        late = _window(server, window_s)
        profile = _profile(*contexts[0], min(window_s, 10))
        header = first.evaluate("""() => { const h = document.querySelector('.bench-live-header');
            return h ? {builds: Number(h.dataset.builds), updates: Number(h.dataset.updates)} : null; }""")
        view = first.evaluate("""() => { const v = document.querySelector('.bench-live-view');
            return v ? {reruns: Number(v.dataset.reruns || 0), seq: Number(v.dataset.seq || 0)} : null; }""")
        return {"page": page_name, "pages": pages, "early": early, "late": late, "profile_ms_per_s": profile,
                "header": header, "view": view}
    finally:
        for context, _ in contexts:
            try:
                context.close()
            except page_errors():
                pass
        server.stop()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.watch_cost", description=__doc__.split("\n\n")[0])
    p.add_argument("--pages", type=int, action="append", help="pages watching (repeat for several passes)")
    p.add_argument("--page", choices=sorted(PAGES), default="train", help="the page watched")
    p.add_argument("--window", type=float, default=20.0, help="seconds per CPU window")
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--late-after", type=float, default=60.0,
                   help="seconds from the early window's start to the late one's (the smoke run: a few)")
    p.add_argument("--json", dest="json_path")
    args = p.parse_args(argv)
    from playwright.sync_api import sync_playwright

    out = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for n in args.pages or [1]:
            for r in range(args.repeats):
                row = watch(browser, n, args.window, scratch("bench-watch-"), args.page,
                            args.late_after)
                out.append(row)
                e, la = row["early"], row["late"]
                print(f"{n} page(s) #{r + 1}: early server {e['server_cores']:.3f} chromium {e['chromium_cores']:.3f}"
                      f" | late server {la['server_cores']:.3f} chromium {la['chromium_cores']:.3f} cores; profile "
                      + ", ".join(f"{k} {v:.0f}" for k, v in sorted(row["profile_ms_per_s"].items())) + " ms/s; "
                      f"header {row['header']}, view {row['view']}", file=sys.stderr, flush=True)
        browser.close()
    for n in sorted({r["pages"] for r in out}):
        rows = [r for r in out if r["pages"] == n]
        med = {w: statistics.median(r[w]["total_cores"] for r in rows) for w in ("early", "late")}
        print(f"{n} page(s): total cores early {med['early']:.3f}, late {med['late']:.3f}")
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(out, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
