"""Real-browser fixtures: a `streamlit run` server on a free localhost port and Debian's Chromium via Playwright."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("BENCH_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout_s: float = 60.0) -> float:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return time.monotonic() - t0
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"{url} did not answer within {timeout_s} s")


class Server:
    def __init__(self, tmp: Path, env: dict[str, str] | None = None):
        self.port = free_port()
        self.url = f"http://localhost:{self.port}"
        self.log = tmp / "streamlit.log"
        full_env = {**os.environ, "BENCH_STORE": str(tmp / "runs.sqlite3"), "PYTHONPATH": str(ROOT),
                    "BENCH_UPLOAD_DIR": str(tmp / "uploads"), "BENCH_PRESTART": "1", **(env or {})}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.port", str(self.port),
             "--server.headless", "true", "--server.address", "localhost"],
            cwd=ROOT, env=full_env, stdout=self.log.open("w"), stderr=subprocess.STDOUT,
        )
        self.ready_s = wait_http(self.url + "/_stcore/health")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(tmp_path_factory.mktemp("server"))
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Chromium not found at {CHROMIUM}: install Debian's chromium package (bash .ci/run does)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (python) is not installed")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser, server):
    context = browser.new_context(viewport={"width": 1400, "height": 1300})
    pg = context.new_page()
    pg.set_default_timeout(30_000)
    yield pg
    context.close()


def screenshot(page, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
