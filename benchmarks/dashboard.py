"""The dashboard side of the overhead pass: a real `streamlit run app.py` server and headless Chromium driving it.

Everything a user does is done by clicking: open the Train page, set Epochs and Training samples by their labels,
press Start, watch the run to its end. The figures read back come from the server's own store and from psutil.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.common import ROOT, cpu_seconds, wait_for

if TYPE_CHECKING:
    from bench.vocab.records import RunRecord
    from bench.store import Store

CHROMIUM = os.environ.get("BENCH_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def chromium_cpu_s() -> dict[int, float]:
    """CPU seconds of every Chromium process descending from this one (Playwright's driver starts them)."""
    import psutil

    out = {}
    for child in psutil.Process().children(recursive=True):
        try:
            if "chrom" in child.name().lower():
                out[child.pid] = cpu_seconds(child)
        except psutil.Error:
            continue
    return out


class DashboardServer:
    """A real `streamlit run app.py` on a free localhost port, its store in ``folder``."""

    def __init__(self, folder: Path, *, prestart: bool = False, env: dict[str, str] | None = None):
        import psutil

        self.port = _free_port()
        self.url = f"http://localhost:{self.port}"
        self.store_path = folder / "runs.sqlite3"
        self.log_path = folder / "streamlit.log"
        # prestart off by default: the ratios and cold first batch must not share the CPU with a spare loading
        full_env = {**os.environ, "BENCH_STORE": str(self.store_path), "PYTHONPATH": str(ROOT),
                    "BENCH_UPLOAD_DIR": str(folder / "uploads"), "BENCH_PRESTART": "1" if prestart else "0"}
        full_env.pop("BENCH_PRESENTER_KEY", None)
        full_env.update(env or {})
        self.started = time.monotonic()
        self.healthy_s: float | None = None
        self.page_marks: dict[str, float] = {}  # page_ready: seconds from Popen to each step of the first page
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.port", str(self.port),
             "--server.headless", "true", "--server.address", "localhost"],
            cwd=ROOT, env=full_env, stdout=self.log_path.open("w", encoding="utf-8"), stderr=subprocess.STDOUT)
        self.ps = psutil.Process(self.proc.pid)

    def wait_healthy(self, timeout_s: float = 60.0) -> None:
        def healthy() -> bool:
            if self.proc.poll() is not None:
                raise RuntimeError(f"streamlit exited: {self.log_path.read_text(encoding='utf-8')[-1500:]}")
            try:
                with urllib.request.urlopen(self.url + "/_stcore/health", timeout=2) as r:
                    return r.status == 200
            except OSError:
                return False

        wait_for(healthy, timeout_s, "the streamlit server", poll_s=0.05)

    def cpu_s(self) -> float:
        return cpu_seconds(self.ps)

    def rss_mb(self) -> float:
        return self.ps.memory_info().rss / 1e6

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def browser_unavailable() -> str | None:
    """Why the browser figures cannot be measured here, or None."""
    if not Path(CHROMIUM).exists():
        return f"Chromium not found at {CHROMIUM} (apt-get install chromium, or set BENCH_CHROMIUM)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install -r requirements-dev.txt)"
    if not (ROOT / "app.py").exists():
        return f"the dashboard (app.py) is not beside the engine in {ROOT}"
    return None


# A loaded machine (other jobs beside the pass) can hold a page's first draw for tens of seconds: every page wait is
# given PAGE_WAIT_S and tried again, up to PAGE_TRIES times, on a reloaded page before the pass gives up on it.
PAGE_WAIT_S = 90.0
PAGE_TRIES = 3
RETRIES: list[str] = []  # what was tried again in this process, for the pass's notes


def page_errors() -> tuple[type[BaseException], ...]:
    from playwright.sync_api import Error as PlaywrightError

    return (PlaywrightError, TimeoutError)  # playwright's TimeoutError is one of its Errors


def _blank_page(browser: Any) -> tuple[Any, Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 1300})
    page = context.new_page()
    page.set_default_timeout(PAGE_WAIT_S * 1000)
    return context, page


def _open_train(browser: Any, url: str, opened: tuple[Any, Any] | None = None) -> tuple[Any, Any]:
    """Open the Train page and wait for its heading and Start button; a page that has not drawn them within
    PAGE_WAIT_S is reloaded and waited for again (PAGE_TRIES in all)."""
    context, page = opened or _blank_page(browser)
    for attempt in range(1, PAGE_TRIES + 1):
        try:
            if attempt == 1:
                page.goto(url)
            else:
                page.reload()
            page.get_by_role("heading", name="Train").wait_for()
            page.get_by_role("button", name="Start", exact=True).wait_for()
            return context, page
        except page_errors() as exc:
            if attempt == PAGE_TRIES:
                raise
            RETRIES.append(f"the Train page was not drawn within {PAGE_WAIT_S:.0f} s and was reloaded "
                           f"({type(exc).__name__})")
    raise AssertionError("unreachable")


def compile_sources() -> None:
    """Write the dashboard's bytecode, as any Python does on its first start (and the image at build): this
    machine's environment sets PYTHONDONTWRITEBYTECODE, which would make every measured start compile the
    dashboard's sources again (0.14 s of the 2-core server's first page)."""
    import compileall

    for name in ("app.py", "pages", "ui", "bench"):
        path = ROOT / name
        ok = compileall.compile_file(path, quiet=2) if path.is_file() else compileall.compile_dir(path, quiet=2)
        if not ok:
            raise RuntimeError(f"could not compile {path}")


def page_ready(browser: Any, folder: Path, env: dict[str, str] | None = None) -> tuple[DashboardServer, float]:
    """Start a server and open the Train page; seconds from Popen to the heading and Start button rendered.

    The browser tab is open (blank) before the server starts, as a presenter's is; it asks for the page as soon as
    the server answers its health check."""
    opened = _blank_page(browser)
    server = DashboardServer(folder, env=env)
    marks: dict[str, float] = {}

    def mark(name: str) -> None:
        marks.setdefault(name, time.monotonic() - server.started)

    def on_socket(socket: Any) -> None:
        mark("socket_open_s")
        socket.on("framereceived", lambda _frame: mark("first_message_s"))

    page = opened[1]
    page.on("domcontentloaded", lambda _page: mark("front_end_s"))
    page.on("websocket", on_socket)
    try:
        server.wait_healthy()
        server.healthy_s = time.monotonic() - server.started
        context, _ = _open_train(browser, server.url, opened)
    except BaseException:
        opened[0].close()
        server.stop()
        raise
    seconds = time.monotonic() - server.started
    context.close()
    server.page_marks = {"healthy_s": server.healthy_s, **marks, "ready_s": seconds}
    return server, seconds


def _set_number(page: Any, label: str, value: int) -> None:
    box = page.get_by_label(label, exact=True)
    box.fill(str(value))
    box.press("Enter")
    page.wait_for_timeout(400)


def stored_ids(store: Store) -> set[int]:
    """The ids of the runs in ``store`` (a stored run always has one; RunRecord allows None for one not stored)."""
    return {r.id for r in store.list_runs() if r.id is not None}


def server_run(browser: Any, server: DashboardServer, config: Any, *, watch: bool,
               profile: bool = False, hold: Path | None = None, window_s: float = 0.0) -> dict[str, Any]:
    """Start a run from the Train page by clicking; watch it live to the end (or close the page at once).

    ``profile``: V8's sampling profiler records the watching page over the same window (it costs the page CPU itself,
    so a profiled run is never one of the measured sides).

    ``hold``: the server replays its runs (benchmarks.standins) and was started with BENCH_REPLAY_HOLD naming this
    file: the run is held live before its last epoch for ``window_s`` seconds from its first stored epoch, so the
    window is as long as asked however fast the run or slow the page.

    Returns the run's epochs read from the server's store, the first-batch latency (watched only) and the server's
    and Chromium's CPU seconds over the window from the first stored epoch to the run's end.
    """
    from bench.store import Store

    store = Store(server.store_path)
    before = stored_ids(store)
    context, page = _open_train(browser, server.url)
    if hold is not None:
        hold.touch()
    try:
        _set_number(page, "Epochs", config.epochs)
        _set_number(page, "Training samples (0 = all)", config.limit_samples or 0)
        t_click = time.monotonic()
        page.get_by_role("button", name="Start", exact=True).click()
        run_id = wait_for(lambda: max(stored_ids(store) - before, default=None), 180, "the run to be stored")
        first_batch = None
        if watch:
            first_batch = _first_batch_shown(page, store, run_id, t_click)
        else:
            _shown_or_ended(page, page.get_by_text(f"Run #{run_id}").first, store, run_id, 180,
                            f"run #{run_id} on the page")
            context.close()
            context = None
        wait_for(lambda: (run := store.get_run(run_id, with_samples=False)) is not None and run.epochs, 300, "the first epoch", 0.25)
        profiler = _start_profile(context, page) if watch and profile else None
        t_a, cpu_a, chrome_a, rss_a = time.monotonic(), server.cpu_s(), chromium_cpu_s(), server.rss_mb()
        if hold is not None:
            time.sleep(window_s)
            hold.unlink(missing_ok=True)
        run = wait_for(lambda: _ended(store.get_run(run_id, with_samples=False)), 600, "the run to end", 0.25)
        t_b, cpu_b, chrome_b, rss_b = time.monotonic(), server.cpu_s(), chromium_cpu_s(), server.rss_mb()
        page_profile = _stop_profile(profiler, t_b - t_a) if profiler is not None else None
    finally:
        if hold is not None:
            hold.unlink(missing_ok=True)
        if context is not None:
            context.close()
    if run.status != "finished":
        raise RuntimeError(f"server run #{run_id} ended {run.status}: {run.error}")
    stored = {k: v for k, v in run.config.to_dict().items() if k != "backend"}
    wanted = {k: v for k, v in config.to_dict().items() if k != "backend"}
    chrome_s = sum(chrome_b[p] - chrome_a.get(p, 0.0) for p in chrome_b)
    return {
        "run_id": run_id, "epochs": [e.to_dict() for e in run.epochs], "first_batch_s": first_batch, "window_s": t_b - t_a,
        "server_cpu_s": cpu_b - cpu_a, "chromium_cpu_s": chrome_s, "side_cpu_s": cpu_b - cpu_a + chrome_s,
        "server_rss_mb": [rss_a, rss_b], "page_profile_ms_per_s": page_profile,
        "config_matches": stored == wanted, "config_diff": {k: (stored.get(k), wanted[k]) for k in wanted
                                                             if stored.get(k) != wanted[k]},
    }


def _shown_or_ended(page: Any, locator: Any, store: Any, run_id: int, timeout_s: float, what: str) -> bool:
    """Poll until ``locator`` is on the page (True) or the run has ended in the store without it (False).

    A single Playwright wait raised TimeoutError on a loaded machine; this one also ends when the run does, and only
    a page that shows nothing for ``timeout_s`` while the run is still going raises."""
    def seen() -> str | None:
        try:
            if locator.count() > 0:
                return "shown"
        except page_errors():
            return None
        return "ended" if _ended(store.get_run(run_id, with_samples=False)) else None

    return wait_for(seen, timeout_s, what, poll_s=0.1) == "shown"


def _first_batch_shown(page: Any, store: Any, run_id: int, t_click: float) -> float | None:
    """Seconds from the Start click to the page showing a finished batch; None when the run ended before the page
    showed one (a loaded machine can hold the page's redraw past a short run), which the pass notes."""
    shown = _shown_or_ended(page, page.get_by_text(re.compile(r"batch \d+/\d+")).first, store, run_id, 300,
                            f"run #{run_id}'s first batch on the page")
    if not shown:
        RETRIES.append(f"run #{run_id} ended before the watching page showed a batch: its first-batch time is left "
                       "out")
        return None
    return time.monotonic() - t_click


# where the watching page's main thread spends its time, from V8's sampling profiler (self time per call frame);
# "plotly" is the live elements' code and plotly.js, whatever serves them
PROFILE_PARTS = ("plotly", "streamlit", "dom", "native", "gc")


def _profile_part(frame: dict[str, Any]) -> str | None:
    url, name = frame.get("url") or "", frame.get("functionName") or ""
    if name in ("(idle)", "(root)"):
        return None
    if name == "(program)":
        return "native"  # the renderer's own work outside JavaScript: style, layout, paint
    if name == "(garbage collector)":
        return "gc"
    if not url:
        return "dom"  # built-ins called from JavaScript: getBoundingClientRect, setAttribute, ...
    if "/bench/static/" in url:
        return "plotly"  # the dashboard's static files (ui/static_files.py): plotly.js and the live elements' live.js
    if "/static/" in url:
        return "streamlit"  # Streamlit's front end: React, its styles, the elements
    return "plotly"  # the live elements' components-v2 modules (ui/assets/*.js, loaders of live.js)


def _start_profile(context: Any, page: Any) -> Any:
    cdp = context.new_cdp_session(page)
    cdp.send("Profiler.enable")
    cdp.send("Profiler.setSamplingInterval", {"interval": 1000})
    cdp.send("Profiler.start")
    return cdp


def _stop_profile(cdp: Any, window_s: float) -> dict[str, float] | None:
    """Milliseconds of the page's main thread per second of the window, by PROFILE_PARTS; None if it failed."""
    try:
        profile = cdp.send("Profiler.stop")["profile"]
    except Exception:  # noqa: BLE001 - a profile is a detail; the figures do not depend on it
        return None
    frames = {node["id"]: node["callFrame"] for node in profile["nodes"]}
    totals = dict.fromkeys(PROFILE_PARTS, 0.0)
    for node_id, delta_us in zip(profile["samples"], profile["timeDeltas"]):
        part = _profile_part(frames[node_id])
        if part is not None:
            totals[part] += delta_us / 1000.0
    return {part: ms / max(window_s, 1e-9) for part, ms in totals.items()}


def prestarted_first_batches(browser: Any, server: DashboardServer, config: Any, runs: int,
                             say: Callable[[str], None]) -> list[float | None]:
    """Start click to first batch when the dashboard's pre-started worker takes the run: one cold run first (after
    which the server keeps a spare), then each run waits for the spare to have loaded the framework."""
    from bench.runs.worker import SPARE_READY_LINE

    spare_log = server.store_path.parent / "logs" / "run-spare.log"
    server_run(browser, server, config, watch=False)
    times: list[float | None] = []
    for i in range(runs):
        wait_for(lambda: spare_log.exists() and SPARE_READY_LINE in spare_log.read_text(encoding="utf-8", errors="replace"), 120,
              "the pre-started worker to load the framework", 0.25)
        spare_log.unlink()
        row = server_run(browser, server, config, watch=True)
        times.append(row["first_batch_s"])
        shown = f"{row['first_batch_s']:.2f} s" if row["first_batch_s"] is not None else "not seen on the page"
        say(f"pre-started worker {i + 1}/{runs}: first batch after {shown}")
    return times


def settle(server: DashboardServer, timeout_s: float = 600.0) -> None:
    """Wait until no run of ``server`` is queued or active (after a try that left one going)."""
    from bench.vocab.records import TERMINAL
    from bench.store import Store

    store = Store(server.store_path)
    wait_for(lambda: all(r.status in TERMINAL for r in store.list_runs()), timeout_s, "the server's runs to end", 0.5)


def _ended(run: RunRecord | None) -> RunRecord | None:
    from bench.vocab.records import TERMINAL

    return run if run and run.status in TERMINAL else None
