"""The Streamlit side of the overhead pass: AppTest wall time of the Train page, and the live panel's server work per
change, with a 30-minute run live in the manager. Run as its own helper subprocess (benchmarks.common.run_child), so
the process that drives the pass never imports Streamlit.

Since 2026-11-26 the live panel has no timed rerun: one publisher (ui.live_feed.Publisher, as ui.live.feed wires it)
computes the live header's words, the sidebar's line and the three charts once per change for every viewer, and the
browsers take them from a server-sent-events stream. So the panel's per-refresh AppTest rerun (``panel_ms``,
``panel_first_ms``: ``ui.live.render_run``, removed) is no longer measured; in its place:

- ``publish_ms``: wall time of each ``Publisher.refresh(force=True)`` a chart interval after the last, each seeing
  one chart interval's samples more of the live run (the last sees the whole 30-minute history): the header's words,
  the sidebar line, the Train page's charts whose data changed built (ui.live's figures, the plain variant: here the
  utilization chart; the epoch and loss charts change once an epoch), prepared and diffed against the last
  published, and the event encoded;
- ``publish_first_ms``: the first refresh, which publishes the run's state with every chart whole;
- ``first_event_bytes``: that first event's encoded size; ``event_bytes``: the median encoded event of the timed
  refreshes (what every viewer is sent per change);
- ``snapshot_ms`` / ``snapshot_bytes``: encoding the snapshot a joining viewer gets (every chart whole), timed once:
  it is encoded once per change, whoever joins;
- ``publish_builds``: how many of the timed refreshes built a chart (each should: a change's work was timed).

``page_ms`` keeps its meaning (the whole Train page rerun in AppTest; its first run now apart in ``page_first_ms``;
no message carries plotly.js any more, so no session flag is set between them). ``figure_ms`` is still each figure
built and serialised, now as the publisher serialises it (ui.live_chart.prepare; it was plotly.io.to_json),
benchmarks.memory.figure_timings.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import ROOT, own_snapshot, scratch, wait_for
from benchmarks.memory import figure_timings, live_publisher, publish, snapshot_bytes
from benchmarks.stats import median
from benchmarks.standins import (SIMULATED_EPOCHS, SIMULATED_INTERVAL_S, SIMULATED_SAMPLES, ReplayedWorker,
                                 replay_sampler)


def child_main(argv: list[str]) -> None:
    """``render SPEC_JSON OUT``: write render_main(**SPEC) as JSON to OUT."""
    kind, spec, out = argv[0], argv[1], argv[2]
    if kind != "render":
        raise SystemExit(f"unknown render-cost child {kind!r}")
    Path(out).write_text(json.dumps(render_main(**json.loads(spec))), encoding="utf-8")


def publish_costs(snap: Any, repeats: int) -> dict[str, Any]:
    """The live panel's server work per change for ``snap`` (a live run), through a publisher of its own: the run
    published first without its last ``repeats`` chart intervals of samples (its state and every chart whole), then
    one chart interval's samples more at each of ``repeats`` refreshes, the last one ``snap`` itself (see the
    module's docstring for each key)."""
    from ui import live_feed

    window = max(1, round(live_feed.CHART_S / SIMULATED_INTERVAL_S))  # the samples of one chart interval
    kept = len(snap.samples)
    steps = [dataclasses.replace(snap, samples=snap.samples[:max(0, kept - window * back)])
             for back in range(repeats, 0, -1)] + [snap]
    box = [steps[0]]
    publisher, clock = live_publisher(lambda: box[0])
    t = time.perf_counter()
    first_bytes = publish(publisher, clock)
    first_ms = (time.perf_counter() - t) * 1000
    builds = publisher.builds
    publish_ms, event_bytes = [], []
    for step in steps[1:]:
        box[0] = step
        t = time.perf_counter()
        event_bytes.append(publish(publisher, clock))
        publish_ms.append((time.perf_counter() - t) * 1000)
    t = time.perf_counter()
    size = snapshot_bytes(publisher)  # encoded once per change; a later joiner before the next change reuses it
    snapshot_ms = [(time.perf_counter() - t) * 1000]
    return {"publish_ms": publish_ms, "publish_first_ms": [first_ms], "first_event_bytes": first_bytes,
            "event_bytes": median(event_bytes), "snapshot_ms": snapshot_ms, "snapshot_bytes": size,
            "publish_builds": publisher.builds - builds}


def render_main(real_s: float, repeats: int) -> dict[str, Any]:
    """AppTest wall time of the Train page, and the live panel's publisher work per change, with a live 30-minute
    run in the manager (keys: the module's docstring)."""
    sys.path.insert(0, str(ROOT))
    from bench.vocab.config import RunConfig
    from bench.runs.jobs import JobManager
    from bench.store import Store

    tmp = scratch("bench-overhead-render-")
    os.environ["BENCH_STORE"] = str(tmp / "runs.sqlite3")
    count = SIMULATED_SAMPLES
    manager = JobManager(Store(tmp / "runs.sqlite3"), worker_target=ReplayedWorker(real_s=real_s, hold=True),
                         sampler_factory=replay_sampler(count, 32, 2, real_s))
    run_id = manager.submit(RunConfig(epochs=SIMULATED_EPOCHS, sample_interval_s=SIMULATED_INTERVAL_S))

    def replayed() -> bool:
        snap = own_snapshot(manager, run_id)
        return len(snap.epochs) >= SIMULATED_EPOCHS and len(snap.samples) >= count

    wait_for(replayed, real_s + 120, "the replayed run")
    from streamlit.testing.v1 import AppTest

    from ui import common

    # every page of this process reads the replayed run: a plain function stands in for st.cache_resource's wrapper
    common.get_manager = lambda: manager  # type: ignore[assignment]

    def timed(at: Any, first: list[float]) -> list[float]:
        t = time.perf_counter()
        at.run()  # first run: page setup, imports, caches, the process's publisher made and the run published
        if at.exception:
            raise RuntimeError(f"AppTest failed: {at.exception}")
        first.append((time.perf_counter() - t) * 1000)
        out = []
        for _ in range(repeats):
            t = time.perf_counter()
            at.run()
            out.append((time.perf_counter() - t) * 1000)
        return out

    page_first_ms: list[float] = []
    page_ms = timed(AppTest.from_file(str(ROOT / "pages" / "train.py"), default_timeout=120), page_first_ms)
    snap = own_snapshot(manager, run_id)
    publishing = publish_costs(snap, repeats)
    figure_ms = figure_timings(snap, repeats)
    active = snap.active
    manager.stop(run_id)
    manager.wait(run_id, timeout_s=30)
    manager.shutdown()
    shutil.rmtree(tmp, ignore_errors=True)
    return {"page_ms": page_ms, "page_first_ms": page_first_ms, **publishing, "figure_ms": figure_ms,
            "samples": len(snap.samples),
            "epochs": len(snap.epochs),
            "run_active_while_timed": active, "cores": 32, "gpus": 2}
