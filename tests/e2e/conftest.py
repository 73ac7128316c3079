"""Real-browser fixtures: a `streamlit run` server on a free localhost port and Debian's Chromium via Playwright.

The servers replay their runs (benchmarks.standins.PacedWorker, through BENCH_WORKER_TARGET): the pages draw, queue,
stop and compare what a worker reports, in seconds, and no spare worker loads a framework beside the browser. Their
sweeps take a replayed matmul peak (benchmarks.standins.replayed_peak, through BENCH_PEAK_TARGET), which the page
names as replayed; the probe itself is tested in tests/unit/test_probe.py and test_cli.py. One
test trains real models through a server as shipped (tests/e2e/test_train_live.py); tests/unit train them too.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil
import pytest

from benchmarks.dashboard import CHROMIUM, CHROMIUM_ARGS, DashboardServer
from benchmarks.standins import HOLD_ENV, PACED_WORKER_TARGET, REPLAYED_PEAK_TARGET
from tests.e2e.steps import ARTIFACTS, keep_failure, new_page

RUNNING: list[Server] = []  # the servers started and not yet stopped: their threads are kept on a test's failure


class Server(DashboardServer):
    """The dashboard on a free port, ready once its health check answers.

    ``training=False`` (the default): runs and peaks are replayed, and no worker is pre-started. ``training=True``: the product
    as a user starts it, the training worker and its pre-started spare."""

    def __init__(self, folder: Path, env: dict[str, str] | None = None, *, training: bool = False):
        self.hold_path = folder / "hold"
        worker = {} if training else {"BENCH_WORKER_TARGET": PACED_WORKER_TARGET, HOLD_ENV: str(self.hold_path),
                                      "BENCH_PEAK_TARGET": REPLAYED_PEAK_TARGET}
        super().__init__(folder, prestart=training, env={**worker, **(env or {})})
        self.log = self.log_path
        RUNNING.append(self)
        self.wait_healthy()

    def stop(self) -> None:
        """Stop the server and every process under it, as Ctrl-C in its terminal would: a child it started late (the
        framework's device probe) is ended with it, not left behind when a test is done before that child is."""
        if self in RUNNING:
            RUNNING.remove(self)
        try:
            under = self.ps.children(recursive=True)
        except psutil.Error:
            under = []
        super().stop()
        for proc in under:
            try:
                proc.terminate()
            except psutil.Error:
                pass
        _, alive = psutil.wait_procs(under, timeout=10)
        for proc in alive:
            try:
                proc.kill()
            except psutil.Error:
                pass

    def dump_threads(self, path: Path) -> str:
        """Every thread's stack in the server process now (py-spy), written to ``path``: where a page that stopped
        changing has its server waiting. What was written, or why nothing was."""
        beside = Path(sys.executable).parent / "py-spy"  # the test's venv, whose bin/ need not be on PATH
        spy = str(beside) if beside.exists() else shutil.which("py-spy")
        if spy is None:
            return "py-spy is not installed (requirements-dev.txt)"
        try:
            out = subprocess.run([spy, "dump", "--pid", str(self.ps.pid)], capture_output=True, text=True,
                                 timeout=60)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"py-spy failed: {exc}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(out.stdout + out.stderr, encoding="utf-8")
        return str(path) if out.returncode == 0 else f"py-spy exited {out.returncode}: {out.stderr.strip()[:300]}"

    @contextmanager
    def holding_last_epoch(self) -> Iterator[None]:
        """Replayed runs wait before their last epoch inside the block, so a test sees them live however slowly this
        machine runs it; leaving the block lets them finish."""
        self.hold_path.touch()
        try:
            yield
        finally:
            self.hold_path.unlink(missing_ok=True)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One server per test module, its runs replayed."""
    srv = Server(tmp_path_factory.mktemp("server"))
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Chromium for one test module; each test opens its own context (pages share nothing)."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Chromium not found at {CHROMIUM}: install Debian's chromium package (bash .ci/run does)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (python) is not installed")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    pg = new_page(browser)
    yield pg
    pg.context.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    """On a browser test's failure, keep a screenshot of each page still open (tests/e2e/steps.keep_failure) and the
    threads of each server still running."""
    outcome: Any = yield
    report = outcome.get_result()
    if report.failed and call.when == "call":
        kept = keep_failure(item.name)
        if kept:
            report.sections.append(("pages kept", "\n".join(str(p) for p in kept)))
        name = item.name.replace("/", "_")
        dumps = [srv.dump_threads(ARTIFACTS / "failures" / f"{name}-server-{n}-threads.txt")
                 for n, srv in enumerate(list(RUNNING))]
        if dumps:
            report.sections.append(("server threads", "\n".join(dumps)))
