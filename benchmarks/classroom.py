"""A class watching one live run: what N viewers cost the server and the run, measured.

    python -m benchmarks.classroom --viewers 1,10,30,100 [--epochs 12] [--limit 20000] [--long-epochs 200]

One pass, one real dashboard server (``streamlit run app.py``, real training in its worker, prestarted as `make run`
does) on this machine:

1. **The presenter**: a real Chromium page opens the Train page from a link with the run's settings; its first load
   gives the list of files a fresh browser fetches (what every emulated viewer fetches too).
2. **Calibration**: during one live run, the server's CPU with K real Chromium pages watching, then with K emulated
   viewers (benchmarks/viewers.py) watching, then with neither: the emulation is trusted as far as the two per-viewer
   costs agree, and the pass says how far that is.
3. **Nobody watching**: the presenter presses Start with only its own page open; the run's steady epoch time is the
   baseline.
4. **Per N**: N emulated viewers load the page and subscribe to the stream, then the presenter presses Start while
   they watch; per N the server's CPU over the run (cores), the run's steady epoch time against the baseline, the
   age of the newest update each viewer holds (p50, p95, sampled twice a second while the run is live), bytes per
   viewer per second, reruns and disconnects.
5. **Length** (``--long-epochs``): with the largest N watching a run of that many short epochs, the server's CPU and the
   bytes per viewer near epoch 5 and near the last epoch: a cost that grew with the run's length would show here.

Writes docs/measurements/classroom.json and prints the table that docs/CLASSROOM.md holds.

    python -m benchmarks.classroom --watchers 1000 [--join-over 20] [--epochs 12]

**The watch page** instead (what the projector's QR code opens): a real Chromium page opens ``/watch`` once (the files
a phone fetches, and their bytes on the wire); a run with nobody watching gives the baseline; then, while a second
run trains (from its second epoch), N emulated watchers (benchmarks/watchers.py: every file as the browser fetched
it, gzip accepted, then the stream) join over ``--join-over`` seconds; the time until the last holds its first
snapshot, the server's CPU while they watch (a window after they joined, the run's own cost with nobody watching
taken from the baseline run's same window), and the run's steady epoch time against the baseline. Writes
docs/measurements/watchers.json.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.common import ROOT, scratch, wait_for
from benchmarks.dashboard import CHROMIUM, CHROMIUM_ARGS, DashboardServer, chromium_cpu_s

TARGETS = {100: {"cores": 0.5, "epoch_ratio": 1.10, "age_p95_s": 2.0},
           30: {"cores": 0.25, "epoch_ratio": 1.05, "age_p95_s": 2.0}}
CALIBRATION_WINDOW_S = 12.0


class Waits:
    """The seconds a watched run waits on the clock: after the viewers joined, the idle window while they watch
    nobody's run, and after the run's end (the reruns that follow it, spread over the class). ``--smoke`` makes them
    short: its figures say the harness works, not what anything costs."""

    joined_s = 2.0
    idle_s = 4.0
    after_end_s = 6.0


def smoke_waits() -> None:
    Waits.joined_s, Waits.idle_s, Waits.after_end_s = 0.0, 0.5, 0.5


@functools.cache
def viewer_log() -> Path:
    """The emulated viewers' stderr, one file a process, in a scratch folder (removed at exit, kept on a failure)."""
    return scratch("classroom-viewers-") / "viewers.log"


def _cpu(proc: Any) -> float:
    t = proc.cpu_times()
    return t.user + t.system


class Pass:
    def __init__(self, folder: Path, query: str, *, prestart: bool = True, env: dict[str, str] | None = None) -> None:
        from playwright.sync_api import sync_playwright

        self.server = DashboardServer(folder, prestart=prestart, env=env)
        self.server.wait_healthy(120)
        self.query = query
        self._pw = sync_playwright().start()
        self.browser = self._pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        self.files: list[str] = []
        self.presenter = self._open(record=True)
        from bench.store import Store

        self.store = Store(self.server.store_path)

    def _open(self, *, record: bool = False) -> Any:
        context = self.browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        page.set_default_timeout(120_000)
        origin = self.server.url
        if record:
            def seen(request: Any) -> None:
                url = request.url
                if url.startswith(origin) and request.resource_type not in ("websocket", "eventsource") and \
                        "/_stcore/" not in url and "/bench/live" not in url:
                    path = url[len(origin):]
                    if path not in self.files:
                        self.files.append(path)
            page.on("request", seen)
        page.goto(f"{origin}/train?{self.query}")
        page.get_by_role("button", name="Start", exact=True).wait_for()
        page.locator(".bench-live-view").wait_for(state="attached")
        page.wait_for_timeout(1500)  # plotly.js and the element's script arrive after the first draw
        return page

    def close(self) -> None:
        try:
            self.browser.close()
            self._pw.stop()
        finally:
            self.server.stop()

    # -- runs ---------------------------------------------------------------------------------------------------------
    def start_run(self) -> int:
        before = {r.id for r in self.store.list_runs()}
        self.presenter.get_by_role("button", name="Start", exact=True).click()
        return int(wait_for(lambda: max({r.id for r in self.store.list_runs() if r.id is not None} - before,
                                        default=0), 120, "the run to be stored"))

    def run_record(self, run_id: int) -> Any:
        return self.store.get_run(run_id, with_samples=False)

    def wait_epochs(self, run_id: int, n: int, timeout_s: float = 900) -> None:
        def enough() -> bool:
            run = self.run_record(run_id)
            if run is not None and run.status in ("failed", "stopped", "interrupted"):
                raise RuntimeError(f"run #{run_id} ended {run.status}: {run.error}")
            return run is not None and (len(run.epochs) >= n or run.status == "finished")

        wait_for(enough, timeout_s, f"epoch {n} of run #{run_id}", poll_s=0.25)

    def wait_end(self, run_id: int, timeout_s: float = 900) -> Any:
        def ended() -> Any:
            run = self.run_record(run_id)
            return run if run is not None and run.status not in ("queued", "starting", "running") else None

        run = wait_for(ended, timeout_s, f"run #{run_id} to end", poll_s=0.25)
        if run.status != "finished":
            raise RuntimeError(f"run #{run_id} ended {run.status}: {run.error}")
        return run

    def worker_ready(self) -> None:
        wait_for(lambda: self.presenter.get_by_text("Worker ready").count() > 0 or self._reload_presenter(), 300,
                 "the pre-started worker")

    def _reload_presenter(self) -> bool:
        self.presenter.reload()
        self.presenter.get_by_role("button", name="Start", exact=True).wait_for()
        return False


def steady_median(run: Any) -> float | None:
    times = [e.epoch_seconds for e in run.epochs[1:] if e.epoch_seconds]
    return statistics.median(times) if times else None


class Emulated:
    """N emulated viewers in their own process (benchmarks/viewers.py)."""

    def __init__(self, url: str, n: int, files: list[str], query: str, join_over_s: float = 0.0) -> None:
        import psutil

        self.proc = subprocess.Popen([sys.executable, "-m", "benchmarks.viewers", url, str(n), json.dumps(files),
                                      query, str(join_over_s)], cwd=ROOT, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=viewer_log().open("a"), text=True,
                                     env={**os.environ, "PYTHONPATH": str(ROOT)})
        self.ps = psutil.Process(self.proc.pid)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the emulated viewers ended before they were ready")
        self.ready = json.loads(line)["ready"]
        self.cpu0 = _cpu(self.ps)

    def bytes(self) -> int:
        """Bytes the viewers received so far (websocket and stream), as their process last reported."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("bytes\n")
        self.proc.stdin.flush()
        return int(json.loads(self.proc.stdout.readline())["bytes"])

    def stop(self) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        cpu = _cpu(self.ps) - self.cpu0
        self.proc.stdin.write("stop\n")
        self.proc.stdin.flush()
        out = self.proc.stdout.readline()
        self.proc.wait(timeout=60)
        return {**json.loads(out), "emulator_cpu_s": round(cpu, 2)}


def calibrate(p: Pass, k: int, epochs: int) -> dict[str, Any]:
    """The emulated viewer against the browser, during one run (of ``epochs``, long enough; stopped after): the server
    CPU of K Chromium pages joining and then watching for a window, against K emulated viewers doing the same, and
    the websocket and stream bytes each receives while watching."""
    p.presenter.goto(f"{p.server.url}/train?{p.query.replace('epochs=', 'old=')}&epochs={epochs}")
    p.presenter.get_by_role("button", name="Start", exact=True).wait_for()
    run_id = p.start_run()
    p.wait_epochs(run_id, 2)
    out: dict[str, Any] = {"k": k, "run_id": run_id, "window_s": CALIBRATION_WINDOW_S}

    def cores_over(seconds: float) -> float:
        a, t0 = p.server.cpu_s(), time.monotonic()
        time.sleep(seconds)
        return (p.server.cpu_s() - a) / (time.monotonic() - t0)

    out["alone_before_cores"] = round(cores_over(CALIBRATION_WINDOW_S), 4)
    background = out["alone_before_cores"]  # the run's own cost on the server, taken out of each join below
    a, t0 = p.server.cpu_s(), time.monotonic()
    pages = [p._open() for _ in range(k)]
    out["browser_join_cpu_s_each"] = round((p.server.cpu_s() - a - background * (time.monotonic() - t0)) / k, 3)
    bytes_seen = [_count_bytes(page) for page in pages]
    before = [read() for read in bytes_seen]
    time.sleep(2)
    chrome0 = sum(chromium_cpu_s().values())
    out["with_browsers_cores"] = round(cores_over(CALIBRATION_WINDOW_S), 4)
    out["chromium_cores"] = round((sum(chromium_cpu_s().values()) - chrome0) / CALIBRATION_WINDOW_S, 3)
    out["browser_bytes_per_s_each"] = round(sum(read() - b for read, b in zip(bytes_seen, before)) / k /
                                            (CALIBRATION_WINDOW_S + 2))
    for page in pages:
        page.context.close()
    a, t0 = p.server.cpu_s(), time.monotonic()
    emulated = Emulated(p.server.url, k, p.files, p.query)
    out["emulated_join_cpu_s_each"] = round((p.server.cpu_s() - a - background * (time.monotonic() - t0)) / k, 3)
    time.sleep(2)
    b0 = emulated.bytes()
    out["with_emulated_cores"] = round(cores_over(CALIBRATION_WINDOW_S), 4)
    out["emulated_bytes_per_s_each"] = round((emulated.bytes() - b0) / k / CALIBRATION_WINDOW_S)
    out["emulated_summary"] = emulated.stop()
    out["alone_after_cores"] = round(cores_over(CALIBRATION_WINDOW_S), 4)
    live = p.run_record(run_id)
    if live is None or live.status != "running":
        raise RuntimeError(f"the calibration run #{run_id} ended before its windows did: give it more epochs")
    p.presenter.get_by_role("button", name="Stop").click()
    wait_for(lambda: (r := p.run_record(run_id)) is not None and r.status not in ("running", "starting"), 120,
             "the calibration run to stop", poll_s=0.25)
    p.presenter.goto(f"{p.server.url}/train?{p.query}")
    p.presenter.get_by_role("button", name="Start", exact=True).wait_for()
    alone = (out["alone_before_cores"] + out["alone_after_cores"]) / 2
    out["per_browser_watching_cores"] = round((out["with_browsers_cores"] - alone) / k, 4)
    out["per_emulated_watching_cores"] = round((out["with_emulated_cores"] - alone) / k, 4)
    return out


def _count_bytes(page: Any) -> Callable[[], int]:
    """Bytes the page has received over its websocket and its stream since this call, as a function to read."""
    frames = {"bytes": 0}

    def frame(payload: Any) -> None:
        frames["bytes"] += len(payload)

    page.on("websocket", lambda ws: ws.on("framereceived", frame))
    stream0 = int(page.evaluate("() => (window.__benchFeed || {}).bytes || 0"))
    return lambda: frames["bytes"] + int(page.evaluate("() => (window.__benchFeed || {}).bytes || 0")) - stream0


def watched_run(p: Pass, n: int, *, long_epochs: int | None = None) -> dict[str, Any]:
    """N emulated viewers present, the presenter presses Start, the run to its end."""
    rss_before = p.server.rss_mb()
    emulated = Emulated(p.server.url, n, p.files, p.query) if n else None
    time.sleep(Waits.joined_s)
    rss_joined = p.server.rss_mb()
    idle_a, t_idle = p.server.cpu_s(), time.monotonic()
    time.sleep(Waits.idle_s)
    idle = (p.server.cpu_s() - idle_a) / (time.monotonic() - t_idle)
    cpu_a, t_a = p.server.cpu_s(), time.monotonic()
    run_id = p.start_run()
    timeline: list[tuple[float, float, int]] = []  # (t, server cpu s, epochs)
    while True:
        run = p.run_record(run_id)
        timeline.append((time.monotonic() - t_a, p.server.cpu_s() - cpu_a, len(run.epochs) if run else 0))
        if run is not None and run.status not in ("queued", "starting", "running"):
            break
        time.sleep(0.5)
    run = p.wait_end(run_id)
    cpu_b, t_b = p.server.cpu_s(), time.monotonic()
    time.sleep(Waits.after_end_s)  # the reruns that follow the end, spread over the class
    summary = emulated.stop() if emulated else {}
    first = next((t for t, _c, e in timeline if e >= 1), 0.0)
    steady_cpu = [(t, c) for t, c, e in timeline if e >= 1]
    steady_cores = ((steady_cpu[-1][1] - steady_cpu[0][1]) / (steady_cpu[-1][0] - steady_cpu[0][0])
                    if len(steady_cpu) > 2 and steady_cpu[-1][0] > steady_cpu[0][0] else None)
    out = {"viewers": n, "run_id": run_id, "epochs": len(run.epochs), "steady_epoch_s": steady_median(run),
           "run_s": round(t_b - t_a, 1), "server_cores_run": round((cpu_b - cpu_a) / (t_b - t_a), 4),
           "server_cores_training": round(steady_cores, 4) if steady_cores is not None else None,
           "server_cores_idle_watching": round(idle, 4), "first_epoch_at_s": round(first, 1),
           "server_rss_mb": [round(rss_before), round(rss_joined)], **summary}
    if summary and out["run_s"]:
        out["bytes_per_viewer_s"] = round((summary["bytes_ws"] + summary["bytes_stream"]) / max(1, n) / out["run_s"])
    if long_epochs:
        out["length"] = _by_length(timeline, long_epochs)
    return out


def _by_length(timeline: list[tuple[float, float, int]], epochs: int) -> dict[str, Any]:
    """Server cores between epochs 3 and 10 against the last ten epochs of a long run."""
    def cores(lo: int, hi: int) -> float | None:
        points = [(t, c) for t, c, e in timeline if lo <= e <= hi]
        if len(points) < 2 or points[-1][0] <= points[0][0]:
            return None
        return round((points[-1][1] - points[0][1]) / (points[-1][0] - points[0][0]), 4)

    return {"early_epochs": "3-10", "early_cores": cores(3, 10),
            "late_epochs": f"{epochs - 10}-{epochs}", "late_cores": cores(epochs - 10, epochs)}


def _median_pass(passes: list[dict[str, Any]]) -> dict[str, Any]:
    """One row per class size: the median of each figure over its passes (and their spread for the epoch time)."""
    row = dict(passes[-1])
    for key in ("steady_epoch_s", "server_cores_run", "server_cores_training", "age_p50_s", "age_p95_s",
                "delay_p95_s", "bytes_per_viewer_s"):
        values = [p[key] for p in passes if p.get(key) is not None]
        row[key] = statistics.median(values) if values else None
    row["steady_epoch_s_all"] = [p["steady_epoch_s"] for p in passes]
    row["disconnects"] = sum(p.get("disconnects", 0) for p in passes)
    row["reruns"] = sum(p.get("reruns", 0) for p in passes)
    return row


def watch_files(p: Pass) -> tuple[list[str], int]:
    """The files a fresh Chromium fetches for the watch page (paths, in order) and their bytes on the wire."""
    context = p.browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    origin = p.server.url
    files: list[str] = []
    page.on("request", lambda r: files.append(r.url[len(origin):]) if r.url.startswith(origin)
            and r.resource_type not in ("eventsource",) and "/bench/live" not in r.url else None)
    page.goto(f"{origin}/watch")
    page.locator(".bench-live-chart .main-svg").first.wait_for(timeout=120_000)
    page.wait_for_timeout(1000)
    wire = int(page.evaluate("""() => performance.getEntriesByType('navigation')[0].transferSize +
        performance.getEntriesByType('resource').filter((r) => !r.name.includes('/bench/live'))
        .reduce((s, r) => s + r.transferSize, 0)"""))
    context.close()
    return list(dict.fromkeys(files)), wire


class Watchers(Emulated):
    """N emulated watchers of the watch page in their own process (benchmarks/watchers.py)."""

    def __init__(self, url: str, n: int, files: list[str], join_over_s: float) -> None:  # noqa: D107
        import psutil

        self.proc = subprocess.Popen([sys.executable, "-m", "benchmarks.watchers", url, str(n), json.dumps(files),
                                      str(join_over_s)], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=viewer_log().open("a"), text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
        self.ps = psutil.Process(self.proc.pid)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the emulated watchers ended before they were ready")
        self.joined = json.loads(line)
        self.ready = self.joined["ready"]
        self.cpu0 = _cpu(self.ps)


WATCH_WINDOW_S = 15.0


def watch_run(p: Pass, n: int, join_over_s: float) -> dict[str, Any]:
    """A run from its second epoch: a Chromium page loads the watch page (the files a phone fetches with a run live,
    and their bytes), N watchers join (n=0: nobody), then a window watching; the run to its end."""
    run_id = p.start_run()
    p.wait_epochs(run_id, 2)
    files, wire = watch_files(p) if n else ([], None)
    cpu_a, t_a = p.server.cpu_s(), time.monotonic()
    watchers = Watchers(p.server.url, n, files, join_over_s) if n else None
    join_s = time.monotonic() - t_a
    join_cores = (p.server.cpu_s() - cpu_a) / join_s if n else None
    time.sleep(2)
    cpu_w, t_w = p.server.cpu_s(), time.monotonic()
    time.sleep(WATCH_WINDOW_S)
    window_cores = (p.server.cpu_s() - cpu_w) / (time.monotonic() - t_w)
    live = p.run_record(run_id)
    still_live = live is not None and live.status == "running"
    run = p.wait_end(run_id)
    summary = watchers.stop() if watchers else {}
    return {"watchers": n, "run_id": run_id, "epochs": len(run.epochs), "steady_epoch_s": steady_median(run),
            "joined": watchers.joined if watchers else None, "join_wall_s": round(join_s, 2),
            "server_cores_joining": round(join_cores, 4) if join_cores is not None else None,
            "server_cores_window": round(window_cores, 4), "window_while_live": still_live, "files": files,
            "first_load_files_wire_bytes": wire, **summary}


def _pass(folder: Path, query: str, paced: bool) -> Pass:
    """The pass's server: training as shipped (its pre-started worker), or, ``paced``, its runs replayed with no
    framework (benchmarks.standins): the viewers' cost to the server and what they receive, not a run's slowdown."""
    if not paced:
        return Pass(folder, query)
    from benchmarks.standins import PACED_WORKER_TARGET

    return Pass(folder, query, prestart=False, env={"BENCH_WORKER_TARGET": PACED_WORKER_TARGET})


def watchers_main(args: Any) -> None:
    query = f"epochs={args.epochs}&limit_samples={args.limit}&size={args.size}"
    folder = scratch("classroom-watch-")
    p = _pass(folder, query, args.paced)
    result: dict[str, Any] = {"machine": {"cores": os.cpu_count(), "load_avg_at_start": os.getloadavg()},
                              "config": query, "paced": args.paced}
    try:
        if not args.paced:
            p.worker_ready()
        result["baseline"] = watch_run(p, 0, 0)
        print(json.dumps(result["baseline"]), flush=True)
        result["watched"] = watch_run(p, args.watchers, args.join_over)
        print(json.dumps(result["watched"]), flush=True)
        result["baseline_after"] = watch_run(p, 0, 0)
        print(json.dumps(result["baseline_after"]), flush=True)
    finally:
        p.close()
        result["load_avg_at_end"] = os.getloadavg()
        out = Path(args.out).with_name("watchers.json")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1), encoding="utf-8")
    base = statistics.median(b["steady_epoch_s"] for b in (result["baseline"], result["baseline_after"])
                             if b["steady_epoch_s"])
    w = result["watched"]
    alone = statistics.median([result["baseline"]["server_cores_window"], result["baseline_after"]["server_cores_window"]])
    print(f"| watchers | joined (last snapshot) | first load, files on the wire | server cores watching (less the run "
          f"alone) | epoch vs nobody |\n|---|---|---|---|---|\n| {w['watchers']} | {w['joined']['joined_s']} s "
          f"(p50 {w['joined']['joined_p50_s']} s, {w['joined']['failed']} failed) | {w['first_load_files_wire_bytes']:,} B | "
          f"{w['server_cores_window'] - alone:.3f} ({w['server_cores_window']:.3f} - {alone:.3f}) | "
          f"{(w['steady_epoch_s'] or 0) / base:.2f}x |")


def table(result: dict[str, Any]) -> str:
    base = result["baseline"]["steady_epoch_s"]
    rows = ["| viewers | server cores (whole run) | server cores (training) | epoch vs nobody | newest update age "
            "p50 / p95 | update delay p95 | bytes/viewer/s | reruns | disconnects |",
            "|---|---|---|---|---|---|---|---|---|"]
    for r in result["runs"]:
        ratio = r["steady_epoch_s"] / base if base and r["steady_epoch_s"] else None
        each = [t / base for t in r.get("steady_epoch_s_all") or [] if t and base]
        spread = f" ({min(each):.2f}-{max(each):.2f})" if len(each) > 1 else ""
        rows.append(f"| {r['viewers']} | {r['server_cores_run']:.3f} | {r['server_cores_training'] or 0:.3f} | "
                    f"{ratio:.2f}x{spread} | {r.get('age_p50_s')} / {r.get('age_p95_s')} s | {r.get('delay_p95_s')} s | "
                    f"{r.get('bytes_per_viewer_s', '—')} | {r.get('reruns', '—')} | {r.get('disconnects', '—')} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--viewers", default="1,10,30,100")
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--limit", type=int, default=20000)
    parser.add_argument("--size", default="s")
    parser.add_argument("--calibrate", type=int, default=3, help="real Chromium pages against as many emulated")
    parser.add_argument("--long-epochs", type=int, default=0, help="a run this long watched by the largest class")
    parser.add_argument("--long-limit", type=int, default=4096)
    parser.add_argument("--repeat", type=int, default=1, help="the sequence nobody, N..., nobody this many times")
    parser.add_argument("--out", default=str(ROOT / "docs" / "measurements" / "classroom.json"))
    parser.add_argument("--watchers", type=int, default=0, help="the watch page: this many watchers join a live run")
    parser.add_argument("--join-over", type=float, default=20.0, help="--watchers: the seconds they join over")
    parser.add_argument("--paced", action="store_true",
                        help="runs replayed, no framework: the viewers' cost, not a run's slowdown")
    parser.add_argument("--smoke", action="store_true",
                        help="the smoke run: one class of one viewer, runs of 2 paced epochs, no calibration, short "
                             "waits (its figures say the harness works)")
    args = parser.parse_args(argv)
    if args.smoke:
        args.viewers, args.epochs, args.limit, args.size, args.calibrate, args.paced = "1", 2, 512, "xs", 0, True
        smoke_waits()
        if Path(args.out) == ROOT / "docs" / "measurements" / "classroom.json":  # a smoke pass never reaches docs/
            args.out = str(scratch("classroom-smoke-") / "classroom.json")
    if args.watchers:
        watchers_main(args)
        return
    counts = [int(n) for n in args.viewers.split(",") if n.strip()]
    query = f"epochs={args.epochs}&limit_samples={args.limit}&size={args.size}"
    folder = scratch("classroom-")
    started = time.time()
    p = _pass(folder, query, args.paced)
    result: dict[str, Any] = {"machine": {"cores": os.cpu_count(), "load_avg_at_start": os.getloadavg()},
                              "config": query, "files_per_browser": p.files, "paced": args.paced}
    try:
        if not args.paced:
            p.worker_ready()
        if args.calibrate:
            result["calibration"] = calibrate(p, args.calibrate, 400)
            print(json.dumps(result["calibration"]), flush=True)
        result["baselines"], result["passes"] = [], []
        for _ in range(args.repeat):  # nobody, each class, nobody again: the machine's drift shows in the baselines
            result["baselines"].append(watched_run(p, 0))
            print(json.dumps(result["baselines"][-1]), flush=True)
            for n in counts:
                r = watched_run(p, n)
                result["passes"].append(r)
                print(json.dumps(r), flush=True)
        result["baselines"].append(watched_run(p, 0))
        result["baseline"] = {"steady_epoch_s": statistics.median(
            b["steady_epoch_s"] for b in result["baselines"] if b["steady_epoch_s"])}
        result["runs"] = [_median_pass([r for r in result["passes"] if r["viewers"] == n]) for n in counts]
        if args.long_epochs:
            p.presenter.goto(f"{p.server.url}/train?epochs={args.long_epochs}&limit_samples={args.long_limit}&size={args.size}")
            p.presenter.get_by_role("button", name="Start", exact=True).wait_for()
            result["length"] = watched_run(p, max(counts), long_epochs=args.long_epochs)
            print(json.dumps(result["length"]), flush=True)
    finally:
        p.close()
        result["seconds"] = round(time.time() - started)
        result["load_avg_at_end"] = os.getloadavg()
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=1), encoding="utf-8")
    if "runs" in result:
        print(table(result))


if __name__ == "__main__":
    main()
