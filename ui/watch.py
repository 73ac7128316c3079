"""The watch page: what the projector's QR code links to. The current run's live view alone (its header and charts,
ui/static/live.js, fed by the stream), one click from the full dashboard. A static HTML page served beside
Streamlit's routes (ui/live_routes.py): no Streamlit session per watcher, and what a phone fetches is this page, the
live view's modules and a partial plotly.js (the basic bundle, ui/static/plotly-basic.min.js: scatter and bar, the
only traces the live view draws), each compressed once per process, the modules and plotly kept by the browser."""

from __future__ import annotations

import gzip
import hashlib
import html
import json
from functools import cache

from ui import static_files
from ui.live_messages import NVML_NOTE, RUN_LAYOUT
from ui.static_files import ASSETS_CSS, StaticFile, base_path

PATH = "/watch"

PAGE_CSS = """
:root { color-scheme: light; }
body { margin: 0; font-family: "Source Sans Pro", system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  color: #1f2330; background: #fff; line-height: 1.5; }
.watch-top { display: flex; align-items: baseline; justify-content: space-between; gap: 1rem; flex-wrap: wrap;
  padding: 0.75rem 1rem; border-bottom: 1px solid #e6e8ee; }
.watch-top h1 { font-size: 1.25rem; margin: 0; }
.watch-top a { color: #1f4fd1; font-weight: 600; }
main { padding: 1rem; max-width: 1400px; margin: 0 auto; }
/* Material Symbols is Streamlit's font, not served here: its icon names would show as words ("check_circle") */
.blh-icon, .bls-icon, .blh-help { display: none; }
.bench-live-view[data-state="none"]::before, .bench-live-view:not([data-state])::before {
  content: attr(data-waiting); opacity: 0.7; }
"""


def page_data() -> dict[str, object]:
    """The live view's data on this page: the Train feed, plain charts, drawn from the stream alone."""
    return {"stream": static_files.stream_url(), "feed": "train", "variant": "plain",
            "plotly": static_files.static_url("plotly-basic.min.js"), "layout": RUN_LAYOUT, "presenter": False,
            "nvml_note": NVML_NOTE, "state": "", "seq": -1}


@cache
def page() -> StaticFile:
    """The page, built and compressed once per process."""
    base = base_path()
    data = json.dumps(page_data()).replace("</", "<\\/")
    css = "\n".join((ASSETS_CSS / f"{name}.css").read_text(encoding="utf-8") for name in ("live_header", "live_view"))
    body = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Live run · CPU vs GPU training bench</title>
<link rel="modulepreload" href="{html.escape(static_files.static_url("live.js"))}">
<style>{css}{PAGE_CSS}</style></head>
<body><header class="watch-top"><h1>⚡ Live run</h1><a href="{html.escape(base)}/train">Open the full dashboard</a></header>
<main><div class="bench-live-view" data-waiting="No run is live yet: this page shows it as soon as one starts."></div></main>
<script type="module">
import {{ viewElement }} from "{html.escape(static_files.static_url("live.js"))}";
viewElement({{ data: {data}, parentElement: document.querySelector("main") }});
</script></body></html>
""".encode("utf-8")
    return StaticFile(body, gzip.compress(body, 9), hashlib.blake2b(body, digest_size=8).hexdigest(),
                      "text/html; charset=utf-8")
