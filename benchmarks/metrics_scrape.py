"""What a scrape of ``/metrics`` costs the dashboard's server: CPU per scrape, measured from outside.

A real `streamlit run app.py` (benchmarks.dashboard.DashboardServer) is scraped over HTTP as Prometheus scrapes it,
and the server process's CPU time is read from /proc/<pid>/task/*/schedstat (nanoseconds, every thread of the
server; its workers are other processes and are not counted). Each measured window of scrapes has a window of the
same length without scrapes beside it, and what the server spends anyway (its sampler during a run, Streamlit's own
timers) is taken off: cost per scrape = (CPU in the scraping window - CPU in the quiet one) / scrapes.

Two ways of scraping, in two states of the server:

- ``rendered``: one scrape every ``SPACING_S`` (more than ``bench.output.prometheus.MAX_AGE_S``), so each one finds no
  text younger than a second and makes it: a reading (or the live run's latest sample) and the text;
- ``shared``: ``BURST`` scrapes at once from ``CLIENTS`` threads, as a hundred scrapers would: one text, the rest
  handed the same bytes;
- for reference, ``/_stcore/health`` (Streamlit's own, nothing to compute) requested the same way: what any request
  arriving alone costs this server;
- ``idle``: no page opened, no run (the exporter reads the machine itself);
- ``live``: a run started from the Train page in Chromium (a replayed worker, held before its last epoch), the page
  then closed, so only the run's own work and the scrapes load the server.

``--scripted-gpu`` puts the tests' scripted H100 (tests/unit/fake_nvml.py) in the server, for a machine without a GPU;
on a GPU machine leave it out and NVML is read.

    python -m benchmarks.metrics_scrape --scripted-gpu [--scrapes 20] [--rounds 3] [--json PATH] [--write-doc]

``--smoke`` is the smallest pass (the test suite's smoke run): one scrape of each way in each state, one round, and
the live state measured as soon as the run is live (not after the live feed's publisher has stopped); its figures say
the harness works, not what a scrape costs, so it writes no doc and exits 0 whatever they are.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.common import ROOT, scratch, wait_for
from benchmarks.dashboard import DashboardServer, browser_unavailable

SPACING_S = 1.1  # more than MAX_AGE_S: every scrape makes the text afresh
BURST = 100
CLIENTS = 10
TARGET_MS = 5.0
DOC = ROOT / "docs" / "METRICS.md"
BEGIN, END = "<!-- metrics-scrape:begin -->", "<!-- metrics-scrape:end -->"
SCRIPTED_NVML = """\
from bench.hardware.monitor import nvml
from tests.unit import fake_nvml

nvml.set_module(fake_nvml.hopper_with_gpm())
"""


def server_cpu_ns(pid: int) -> int:
    """CPU time of every thread of process ``pid`` so far, in nanoseconds (schedstat's first field)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended meanwhile
    return total


def scrape(url: str, path: str = "/metrics") -> int:
    with urllib.request.urlopen(url + path, timeout=30) as answer:
        if answer.status != 200:
            raise RuntimeError(f"{path} answered {answer.status}")
        return len(answer.read())


def _window(pid: int, work: Callable[[], None], length_s: float) -> float:
    """Server CPU seconds over ``length_s`` of wall time from now, ``work`` done at its start."""
    start, cpu = time.monotonic(), server_cpu_ns(pid)
    work()
    rest = length_s - (time.monotonic() - start)
    if rest > 0:
        time.sleep(rest)
    return (server_cpu_ns(pid) - cpu) / 1e9


def rendered(url: str, pid: int, scrapes: int, path: str = "/metrics") -> float:
    """Server CPU over a window of ``scrapes`` spaced requests of ``path`` (of /metrics: each one makes the text)."""
    def work() -> None:
        for i in range(scrapes):
            due = start + i * SPACING_S
            time.sleep(max(0.0, due - time.monotonic()))
            scrape(url, path)

    start = time.monotonic() + 0.05
    return _window(pid, work, scrapes * SPACING_S + 0.1)


def shared(url: str, pid: int) -> float:
    """Server CPU over a window in which BURST scrapes arrive together from CLIENTS threads."""
    def work() -> None:
        time.sleep(SPACING_S)  # the last text is older than a second: the burst's first scrape makes it
        left = list(range(BURST))
        lock = threading.Lock()

        def client() -> None:
            while True:
                with lock:
                    if not left:
                        return
                    left.pop()
                scrape(url)

        threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    return _window(pid, work, SPACING_S + 1.5)


def measure(url: str, pid: int, scrapes: int, rounds: int) -> dict[str, Any]:
    """Alternating quiet and scraping windows of the same length; each way's cost per scrape in ms, every round."""
    scrape(url)  # the first scrape imports prometheus_client and makes the exporter: not a scrape's cost
    time.sleep(SPACING_S)
    out: dict[str, Any] = {"rendered_ms": [], "shared_ms": [], "health_ms": [], "quiet_cpu_per_s_ms": []}
    for _ in range(rounds):
        quiet = _window(pid, lambda: None, scrapes * SPACING_S + 0.1)
        busy = rendered(url, pid, scrapes)
        out["rendered_ms"].append(1000 * (busy - quiet) / scrapes)
        health = rendered(url, pid, scrapes, "/_stcore/health")  # any request arriving alone, for reference
        out["health_ms"].append(1000 * (health - quiet) / scrapes)
        quiet_short = _window(pid, lambda: None, SPACING_S + 1.5)
        burst = shared(url, pid)
        out["shared_ms"].append(1000 * (burst - quiet_short) / BURST)
        out["quiet_cpu_per_s_ms"].append(1000 * quiet / (scrapes * SPACING_S + 0.1))
    out["text_bytes"] = scrape(url)
    for key in ("rendered_ms", "shared_ms", "health_ms"):  # pooled: every round's scrapes over every round's CPU
        out[key.replace("_ms", "_pooled_ms")] = statistics.fmean(out[key])
    return out


PUBLISHER_STOP_S = 12.0  # the live feed's publisher stops 10 s after its last viewer left (ui.live_feed.IDLE_STOP_S)


def start_live_run(browser: Any, server: DashboardServer, settle_s: float = PUBLISHER_STOP_S) -> int:
    """Start a replayed run from the Train page, held before its last epoch, then close the page and wait ``settle_s``
    (for the publisher to stop, so that only the run and the scrapes load the server); the run's id."""
    from bench.store import Store
    from benchmarks.dashboard import _open_train, _set_number

    store = Store(server.store_path)
    context, page = _open_train(browser, server.url)
    try:
        _set_number(page, "Epochs", 4)
        _set_number(page, "Training samples (0 = all)", 20000)
        _set_number(page, "Batch size", 40)
        page.get_by_role("button", name="Start", exact=True).click()
        run_id: int = wait_for(lambda: (runs := store.list_runs()) and runs[-1].status == "running" and runs[-1].id,
                               120, "the run to be running")
        wait_for(lambda: epochs_done(store, run_id) >= 3, 120, "three epochs (the run then waits before its last)",
                 0.25)
    finally:
        context.close()
    time.sleep(settle_s)
    return run_id


def epochs_done(store: Any, run_id: int) -> int:
    run = store.get_run(run_id, with_samples=False)
    return len(run.epochs) if run is not None else 0


def run(args: argparse.Namespace) -> dict[str, Any]:
    from benchmarks.standins import HOLD_ENV, PACED_WORKER_TARGET

    folder = scratch("metrics-scrape-")
    hold = folder / "hold"
    env = {"BENCH_WORKER_TARGET": PACED_WORKER_TARGET, HOLD_ENV: str(hold)}
    if args.scripted_gpu:
        shim = folder / "scripted-nvml"
        shim.mkdir()
        (shim / "sitecustomize.py").write_text(SCRIPTED_NVML, encoding="utf-8")
        env["PYTHONPATH"] = f"{shim}{os.pathsep}{ROOT}"
    server = DashboardServer(folder, env=env)
    result: dict[str, Any] = {
        "when": time.strftime("%Y-%m-%d %H:%M"), "host": socket.gethostname(), "cores": os.cpu_count(),
        "machine": platform.platform(), "load_average": os.getloadavg(), "scripted_gpu": args.scripted_gpu,
        "scrapes": args.scrapes, "rounds": args.rounds, "burst": BURST, "clients": CLIENTS, "smoke": args.smoke,
    }
    try:
        server.wait_healthy()
        result["idle"] = measure(server.url, server.proc.pid, args.scrapes, args.rounds)
        why = browser_unavailable()
        if why is not None:
            result["live"] = {"skipped": why}
        else:
            from playwright.sync_api import sync_playwright

            from benchmarks.dashboard import CHROMIUM, CHROMIUM_ARGS

            hold.touch()
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                try:
                    result["live_run"] = start_live_run(browser, server, 0.0 if args.smoke else PUBLISHER_STOP_S)
                finally:
                    browser.close()
            result["live"] = measure(server.url, server.proc.pid, args.scrapes, args.rounds)
            hold.unlink(missing_ok=True)
        result["load_average_after"] = os.getloadavg()
    finally:
        hold.unlink(missing_ok=True)
        server.stop()
    return result


def table(result: dict[str, Any]) -> str:
    """The result as the Markdown block docs/METRICS.md carries."""
    def cell(values: list[float]) -> str:
        return f"{statistics.fmean(values):.2f} ({min(values):.2f} to {max(values):.2f})"

    gpu = "the tests' scripted H100 (tests/unit/fake_nvml.py)" if result["scripted_gpu"] else "NVML"
    lines = [
        f"Measured {result['when']} by `python -m benchmarks.metrics_scrape{' --scripted-gpu' if result['scripted_gpu'] else ''}` "
        f"on {result['host']} ({result['cores']} cores, {result['machine']}), load average "
        f"{result['load_average'][0]:.1f} at the start and {result.get('load_average_after', [float('nan')])[0]:.1f} at "
        f"the end; GPU readings from {gpu}. Server CPU per scrape in ms over {result['rounds']} rounds (every round's "
        f"scrapes over every round's CPU; in brackets the rounds' smallest and largest), the server's own work in a "
        f"quiet window of the same length beside each taken off; target: at most {TARGET_MS:g} ms.",
        "",
        "| server state | made afresh (one scrape every 1.1 s) | shared (100 at once, 10 clients) | for reference: "
        "`/_stcore/health` every 1.1 s | text | server's own CPU |",
        "|---|---|---|---|---|---|",
    ]
    for state, words in (("idle", "no page, no run: the exporter reads the machine"),
                         ("live", "a run live, no page open: its sampler's latest sample")):
        got = result.get(state, {})
        if "skipped" in got:
            lines.append(f"| {words} | not measured: {got['skipped']} | | | | |")
            continue
        lines.append(f"| {words} | {cell(got['rendered_ms'])} | {cell(got['shared_ms'])} | {cell(got['health_ms'])} | "
                     f"{got['text_bytes']:,} bytes | {statistics.median(got['quiet_cpu_per_s_ms']):.1f} ms/s |")
    return "\n".join(lines)


def write_doc(block: str) -> None:
    text = DOC.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        raise RuntimeError(f"{DOC} has no {BEGIN} ... {END} block to write")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    DOC.write_text(f"{head}{BEGIN}\n{block}\n{END}{tail}", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scripted-gpu", action="store_true", help="the tests' scripted H100 instead of NVML")
    parser.add_argument("--scrapes", type=int, default=None, help="scrapes in each made-afresh window (default 20)")
    parser.add_argument("--rounds", type=int, default=None,
                        help="quiet and scraping windows of each way, each state (default 3)")
    parser.add_argument("--json", type=Path, help="write the result here")
    parser.add_argument("--write-doc", action="store_true", help=f"rewrite the measured block of {DOC.name}")
    parser.add_argument("--smoke", action="store_true",
                        help="the smallest pass, for the test suite: one scrape, one round, no doc, exit 0")
    args = parser.parse_args(argv)
    if args.smoke and (args.write_doc or args.scrapes is not None or args.rounds is not None):
        print("error: --smoke is the smallest pass: it takes no --scrapes or --rounds, and its figures are not "
              f"measurements, so it never writes {DOC.name}; leave --smoke out to measure", file=sys.stderr)
        return 2
    args.scrapes = args.scrapes or (1 if args.smoke else 20)
    args.rounds = args.rounds or (1 if args.smoke else 3)
    result = run(args)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    block = table(result)
    print(block)
    if args.write_doc:
        write_doc(block)
    if args.smoke:
        return 0
    worst = max(result[s]["rendered_pooled_ms"] for s in ("idle", "live") if "rendered_pooled_ms" in result.get(s, {}))
    return 0 if worst <= TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
