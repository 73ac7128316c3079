"""How a live element should get its numbers, measured: the browser's and the server's CPU per second for one small
components-v2 element whose text changes every second, fed three ways, with nothing else on the page:

- ``rerun``: a fragment with ``run_every=1`` draws the element with new data (components v2 on a light fragment rerun);
- ``sse``: the element is drawn once and subscribes to a server-sent-events route that ``st.App(..., routes=...)``
  serves beside the pages (no rerun at all while the numbers change);
- ``local``: the element changes its own text every second (no server): the floor of the DOM update itself.

    python -m benchmarks.feed_cost --pages 1 --pages 5 --rounds 3

Each round runs every way once, alternating, each with its own server. Used to choose how the live panel is fed
(docs/PERFORMANCE.md).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import scratch, wait_for
from benchmarks.dashboard import CHROMIUM, CHROMIUM_ARGS, _free_port, chromium_cpu_s

WAYS = ("rerun", "sse", "local")

JS = r"""
export default function (component) {
  const { data, parentElement } = component;
  const root = parentElement.querySelector(".feed");
  if (!root.__built) {
    root.__built = true;
    root.innerHTML = '<p class="s"></p><div class="bar"><div class="fill"></div></div>' +
      '<div class="tiles">' + '<div><p class="l">tile</p><div class="v"></div></div>'.repeat(4) + '</div>';
    root.dataset.updates = "0";
    const show = (n) => {
      root.querySelector(".s").textContent = `Run #1 running · epoch ${n}`;
      root.querySelector(".fill").style.width = `${n % 100}%`;
      root.querySelectorAll(".v").forEach((v, i) => { v.textContent = `${(n * (i + 1)) % 97} %`; });
      root.dataset.updates = String(Number(root.dataset.updates) + 1);
    };
    root.__show = show;
    if (data.way === "sse") {
      const source = new EventSource("/feed/stream");
      source.onmessage = (e) => show(JSON.parse(e.data).n);
    } else if (data.way === "local") {
      let n = 0;
      setInterval(() => show(++n), 1000);
    }
  }
  if (data.way === "rerun") root.__show(data.n);
}
"""

PAGE = '''
import time
import streamlit as st

WAY = {way!r}
comp = st.components.v2.component("feed_cost", html='<div class="feed"></div>', js={js!r},
                                  css=".feed .bar {{ height: 8px; background: #ddd }} .feed .fill {{ height: 8px; "
                                      "background: #1f4fd1 }} .feed .tiles {{ display: grid; grid-template-columns: "
                                      "repeat(4, 1fr) }}", isolate_styles=False)
st.title("Feed")
if WAY == "rerun":
    @st.fragment(run_every=1.0)
    def panel():
        comp(key="feed", data={{"way": WAY, "n": int(time.time())}})
    panel()
else:
    comp(key="feed", data={{"way": WAY}})
'''

SERVE = '''
import asyncio, json, time
import streamlit as st
from starlette.responses import StreamingResponse
from starlette.routing import Route


async def stream(request):
    async def events():
        while True:
            yield f"data: {json.dumps({'n': int(time.time())})}\\n\\n"
            await asyncio.sleep(1.0)
    return StreamingResponse(events(), media_type="text/event-stream")

app = st.App("page.py", routes=[Route("/feed/stream", stream)])
'''


def _server(folder: Path, way: str) -> tuple[subprocess.Popen[bytes], str]:
    (folder / "page.py").write_text(PAGE.format(way=way, js=JS), encoding="utf-8")
    (folder / "serve.py").write_text(SERVE, encoding="utf-8")
    port = _free_port()
    script = "serve.py" if way == "sse" else "page.py"
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", script, "--server.port", str(port),
                             "--server.headless", "true", "--server.address", "localhost",
                             "--runner.postScriptGC", "false", "--browser.gatherUsageStats", "false"],
                            cwd=folder, stdout=(folder / "log").open("w"), stderr=subprocess.STDOUT,
                            env={**os.environ})
    return proc, f"http://localhost:{port}"


def one(browser: Any, way: str, pages: int, window_s: float) -> dict[str, Any]:
    import urllib.request

    import psutil

    folder = scratch(f"feed-{way}-")
    proc, url = _server(folder, way)
    contexts = []
    try:
        def healthy() -> bool:
            try:
                with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                    return r.status == 200
            except OSError:
                return False

        wait_for(healthy, 60, "the server")
        for _ in range(pages):
            context = browser.new_context(viewport={"width": 1200, "height": 900})
            page = context.new_page()
            page.goto(url)
            contexts.append((context, page))
        updates = "() => Number(document.querySelector('.feed')?.dataset.updates || 0)"
        wait_for(lambda: all(int(page.evaluate(updates)) >= 2 for _, page in contexts), 60, "the elements updating")
        server = psutil.Process(proc.pid)
        if window_s:
            time.sleep(2)
        c0, s0, t0 = sum(chromium_cpu_s().values()), sum(server.cpu_times()[:2]), time.monotonic()
        u0 = contexts[0][1].evaluate("() => Number(document.querySelector('.feed').dataset.updates)")
        if window_s:
            time.sleep(window_s)
        else:  # the smoke run's window: until the first page's element has been fed once more
            wait_for(lambda: int(contexts[0][1].evaluate(updates)) > u0, 30, "the element's next update", poll_s=0.1)
        c1, s1, t1 = sum(chromium_cpu_s().values()), sum(server.cpu_times()[:2]), time.monotonic()
        u1 = contexts[0][1].evaluate("() => Number(document.querySelector('.feed').dataset.updates)")
        wall = t1 - t0
        return {"way": way, "pages": pages, "chromium_cores": (c1 - c0) / wall, "server_cores": (s1 - s0) / wall,
                "updates_per_s": (u1 - u0) / wall}
    finally:
        for context, _ in contexts:
            context.close()
        proc.terminate()
        proc.wait(15)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.feed_cost")
    p.add_argument("--pages", type=int, action="append")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--window", type=float, default=20.0,
                   help="seconds per window; 0 (the smoke run): until the element's next update, no settling first")
    p.add_argument("--json", dest="json_path")
    args = p.parse_args(argv)
    from playwright.sync_api import sync_playwright

    rows = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for pages in args.pages or [1]:
            for r in range(args.rounds):
                for way in WAYS[r % 3:] + WAYS[:r % 3]:
                    row = one(browser, way, pages, args.window)
                    row["round"] = r + 1
                    row["load_1m"] = os.getloadavg()[0]
                    rows.append(row)
                    print(f"{pages} page(s) round {r + 1} {way:<6} chromium {row['chromium_cores']:.3f} server "
                          f"{row['server_cores']:.3f} cores, {row['updates_per_s']:.2f} updates/s, load "
                          f"{row['load_1m']:.2f}", file=sys.stderr, flush=True)
        browser.close()
    for pages in sorted({r["pages"] for r in rows}):
        for way in WAYS:
            sel = [r for r in rows if r["pages"] == pages and r["way"] == way]
            ch = [r["chromium_cores"] for r in sel]
            sv = [r["server_cores"] for r in sel]
            print(f"{pages} page(s) {way:<6} chromium median {statistics.median(ch):.3f} ({min(ch):.3f}-{max(ch):.3f})"
                  f" server median {statistics.median(sv):.3f} ({min(sv):.3f}-{max(sv):.3f}) cores")
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
