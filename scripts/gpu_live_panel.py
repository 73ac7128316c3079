"""The Train page's live panel during a real training run, through Streamlit's AppTest (the `live` step of
`make gpu-verify`):

    PYTHONPATH=. python3 scripts/gpu_live_panel.py OUT.json [--device gpu:0] [--epochs 3] [--limit 30000]

It opens pages/train.py as a browser session would, picks the device, presses Start and redraws the page every half
second until the run ends, noting what the tiles said while the run was live (GPU and CPU utilization, samples/s,
epoch time), the status line, the charts and any exception. The record is JSON; scripts/gpu_verify.py reads it.

While a run is live the page's header and charts are one element (``bench_live_view``, ui.live.live_view) that a
browser feeds from the live stream (ui.live_feed's publisher): the live tiles and status line are read from that
element's ``header`` data (the words the stream publishes), and its charts are those of the publisher's snapshot for
the element's variant (what a viewer joining then draws). Once the run has ended the header is Streamlit's own
elements again (metrics, status markdown). In the record, ``redraws``/``redraws_live`` count the page's reruns here
(all of them / those while the run was live), ``tiles_live`` each live rerun's tile values, ``charts_max`` the most
charts the page showed at one rerun (the element's plus any st.plotly_chart).
Where Streamlit is not installed (a GPU machine without it: carry it as wheels, docs/GPU.md) it says so, writes
nothing and exits 0; where the device is not offered on this machine it exits 2.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import scratch
from bench.hardware import devices  # run from the checkout: `PYTHONPATH=. python3 scripts/gpu_live_panel.py` (make does)

ROOT = Path(__file__).resolve().parents[1]
TILES = ("Last epoch", "Samples/s", "CPU", "GPU")
REDRAW_S = 0.5


def _stream_charts(variant: str) -> int:
    """How many charts the live element draws: those of the publisher's snapshot for its variant (ui.live_feed)."""
    from ui import live_feed

    publisher = live_feed.installed()
    if publisher is None:
        return 0
    _seq, event = publisher.snapshot(variant)
    return len(json.loads(event.decode().removeprefix("data: "))["charts"])


def _page_state(at: Any) -> dict[str, Any]:
    """What one redraw of the page shows: the tiles' values, the status line, the charts, exceptions."""
    tiles = {m.label: m.value for m in at.metric if m.label in TILES}
    status = next((m.value for m in at.markdown if "Run #" in m.value), None)
    charts = len(at.get("plotly_chart"))
    for element in at.get("bidi_component"):  # the live panel's one element (ui.live.live_view): its data
        if element.proto.component_name == "bench_live_view":
            view = json.loads(element.proto.json)
            header = view.get("header")  # the live header's words, while a run is live
            if header:
                tiles.update({t["label"]: t["value"] for t in header["tiles"] if t["label"] in TILES})
                status = "".join(text for text, _bold in header["status"]["parts"])
            charts += _stream_charts(view.get("variant") or "plain")
    return {"tiles": tiles, "status": status, "charts": charts,
            "exceptions": [str(e.value)[:400] for e in at.exception]}


def watch(device: str, epochs: int, limit: int, timeout_s: float) -> dict[str, Any]:
    """Start a run on ``device`` from the Train page and redraw the page until it ends (or ``timeout_s``)."""
    from streamlit.testing.v1 import AppTest  # only here: the kit runs without Streamlit on a bare GPU machine

    from ui.common import get_manager

    offered = devices.offered_devices(devices.discover())
    if device not in offered:
        raise ValueError(f"{device} is not offered on this machine (the Train page offers {', '.join(offered)})")
    at = AppTest.from_file(str(ROOT / "pages" / "train.py"), default_timeout=120).run()
    at.radio(key="cfg_device").set_value(device).run()
    at.number_input(key="cfg_epochs").set_value(epochs).run()
    at.number_input(key="cfg_limit").set_value(limit).run()
    started = time.monotonic()
    at.button(key="start_run").click().run()
    manager = get_manager()
    snap = manager.current()
    if snap is None:
        return {"device": device, "error": "Start queued no run", "page": _page_state(at)}
    redraws: list[dict[str, Any]] = []
    while time.monotonic() - started < timeout_s:
        live = manager.snapshot(snap.id)
        active = bool(live and live.active)
        at.run()
        redraws.append({"t_s": round(time.monotonic() - started, 2), "active": active, **_page_state(at)})
        if not active:
            break
        time.sleep(REDRAW_S)
    else:
        manager.stop(snap.id)
    final = manager.wait(snap.id, timeout_s=120)
    during = [r for r in redraws if r["active"]]
    return {"device": device, "run_id": snap.id, "status": str(final.status),
            "placement": final.info.placement, "epochs_done": len(final.epochs),
            "seconds": round(time.monotonic() - started, 1), "redraws": len(redraws), "redraws_live": len(during),
            "tiles_live": {name: [r["tiles"].get(name) for r in during] for name in TILES},
            "charts_max": max((r["charts"] for r in redraws), default=0),
            "exceptions": sorted({e for r in redraws for e in r["exceptions"]})}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="the JSON record to write")
    parser.add_argument("--device", default="gpu:0")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--limit", type=int, default=30000, help="training samples")
    parser.add_argument("--timeout", type=float, default=400, help="seconds before the run is stopped")
    args = parser.parse_args(argv)
    if importlib.util.find_spec("streamlit") is None:
        print("live: skipped: Streamlit is not installed here (carry it as wheels, docs/GPU.md)", flush=True)
        return 0
    # a store of its own, and no pre-started worker beside the run
    os.environ.setdefault("BENCH_STORE", str(scratch("bench-live-") / "runs.sqlite3"))
    os.environ.setdefault("BENCH_PRESTART", "0")
    try:
        record = watch(args.device, args.epochs, args.limit, args.timeout)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    Path(args.out).write_text(json.dumps(record, indent=2), encoding="utf-8")
    live = record.get("tiles_live", {})
    print(f"live: run #{record.get('run_id')} {record.get('status')} on {record.get('placement')}; "
          f"{record.get('redraws_live', 0)} redraws while live; GPU tile {live.get('GPU')}; "
          f"exceptions: {len(record.get('exceptions', []))}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
