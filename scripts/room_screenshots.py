"""Screenshots of the projector view at 1920x1080, as a room sees it, into docs/screenshots/.

Starts the dashboard (a real `streamlit run`, its own store in a temporary folder), drives Debian's Chromium with
?present=1 and takes: Train mid-run, a finished Compare (cpu/1 vs cpu, tiny config), the lesson's first step after
its live run, and the lesson's utilization step in the dark theme. Run from the repository root:

    python scripts/room_screenshots.py
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import wait_for  # noqa: E402
from benchmarks.dashboard import CHROMIUM, CHROMIUM_ARGS, DashboardServer, browser_unavailable  # noqa: E402

OUT = ROOT / "docs" / "screenshots"
VIEWPORT = {"width": 1920, "height": 1080}
MAX_BYTES = 400_000


def shrink(path: Path) -> None:
    """Keep a PNG under MAX_BYTES: reduce it to a 256-colour palette when it is larger (text stays sharp)."""
    if path.stat().st_size <= MAX_BYTES:
        return
    from PIL import Image

    with Image.open(path) as image:
        image.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)


def shot(page, name: str) -> Path:
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{name}.png"
    page.screenshot(path=str(path))
    shrink(path)
    print(f"{path.relative_to(ROOT)}: {path.stat().st_size / 1000:.0f} kB")
    return path


def scroll_to(page, locator, *, above_px: int = 0) -> None:
    """Scroll so that ``locator`` starts ``above_px`` below the top of the window."""
    locator.first.evaluate("e => e.scrollIntoView({block: 'start'})")
    if above_px:
        page.mouse.move(960, 600)  # the wheel scrolls what is under the pointer: the page, not its header
        page.mouse.wheel(0, -above_px)
    page.wait_for_timeout(500)


def train_mid_run(browser, url: str) -> None:
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.set_default_timeout(90_000)
    page.goto(f"{url}/train?present=1&epochs=8&limit_samples=12000&size=m")
    page.get_by_role("heading", name="Train").wait_for()
    page.get_by_role("button", name="Start", exact=True).click()
    bars = page.locator(".js-plotly-plot").first.locator(".barlayer .point")
    wait_for(lambda: bars.count() >= 3, 240, "three epochs of the run on the chart (the first two are one bar each)")
    page.wait_for_timeout(2500)  # the next chart refresh, so the utilization line is drawn up to now
    scroll_to(page, page.get_by_role("button", name="Stop"), above_px=20)  # progress, tiles and charts in view
    shot(page, "projector-train-mid-run")
    from playwright.sync_api import Error as PlaywrightError

    try:  # free the queue for the comparison; the run may have ended meanwhile
        page.get_by_role("button", name="Stop").click(timeout=5000)
    except PlaywrightError:
        pass
    context.close()


def compare_finished(browser, url: str) -> None:
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.set_default_timeout(90_000)
    page.goto(f"{url}/compare?present=1&epochs=3&limit_samples=4000&targets=cpu/1,cpu")
    page.get_by_role("heading", name="Compare").wait_for()
    page.get_by_role("button", name="Start comparison").click()
    headline = page.get_by_text(re.compile(r"trains \d+\.\dx faster than|are about as fast"))
    wait_for(lambda: headline.count() > 0 and page.get_by_role("button", name="HTML report").count() > 0, 300,
             "the comparison headline")
    page.wait_for_timeout(1500)
    scroll_to(page, headline, above_px=190)  # the two runs' status lines, the headline and the charts
    shot(page, "projector-compare-finished")
    context.close()


def lesson(browser, url: str) -> None:
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.set_default_timeout(90_000)
    page.goto(f"{url}/lesson?present=1")
    page.get_by_role("heading", name=re.compile("A small model")).wait_for()
    page.get_by_role("button", name=re.compile("^Run ")).click()
    done = page.get_by_text(re.compile(r"^Live: cpu vs cpu/1"))
    wait_for(lambda: done.count() > 0, 300, "the lesson step's live result")
    page.mouse.move(960, 20)  # off the button, so its tooltip is not in the picture
    page.wait_for_timeout(1500)
    scroll_to(page, page.get_by_text("Measured on an NVIDIA H100 by this project, not live").last, above_px=170)
    shot(page, "projector-lesson")
    context.close()

    dark = browser.new_context(viewport=VIEWPORT, color_scheme="dark")
    page = dark.new_page()
    page.set_default_timeout(90_000)
    page.goto(f"{url}/lesson?present=1")
    page.get_by_role("heading", name=re.compile("A small model")).wait_for()
    page.get_by_text(re.compile("^4 · What NVML")).click()
    page.get_by_role("heading", name=re.compile("What NVML")).wait_for()
    page.locator(".js-plotly-plot").first.wait_for()
    page.wait_for_timeout(1500)
    shot(page, "projector-lesson-dark")
    dark.close()


def main() -> int:
    reason = browser_unavailable()
    if reason:
        print(f"cannot take screenshots: {reason}", file=sys.stderr)
        return 1
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        server = DashboardServer(Path(tmp), prestart=True)
        try:
            server.wait_healthy()
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                try:
                    train_mid_run(browser, server.url)
                    compare_finished(browser, server.url)
                    lesson(browser, server.url)
                finally:
                    browser.close()
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
