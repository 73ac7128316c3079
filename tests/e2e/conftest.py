"""Real-browser fixtures: a `streamlit run` server on a free localhost port and Debian's Chromium via Playwright."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.dashboard import CHROMIUM, CHROMIUM_ARGS, DashboardServer

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"


class Server(DashboardServer):
    """The dashboard as a user starts it (pre-started worker on), ready once its health check answers."""

    def __init__(self, tmp: Path, env: dict[str, str] | None = None):
        super().__init__(tmp, prestart=True, env=env)
        self.log = self.log_path
        self.wait_healthy()


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
