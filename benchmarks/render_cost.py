"""The Streamlit side of the overhead pass: AppTest wall time of the Train page and of the live panel with a
30-minute run in the manager. Run as its own helper subprocess (benchmarks.common.run_child), so the process that
drives the pass never imports Streamlit.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import ROOT, wait_for
from benchmarks.memory import figure_timings
from benchmarks.standins import (SIMULATED_EPOCHS, SIMULATED_INTERVAL_S, SIMULATED_SAMPLES, ReplayedWorker,
                                 replay_sampler)


def child_main(argv: list[str]) -> None:
    """``render SPEC_JSON OUT``: write render_main(**SPEC) as JSON to OUT."""
    kind, spec, out = argv[0], argv[1], argv[2]
    if kind != "render":
        raise SystemExit(f"unknown render-cost child {kind!r}")
    Path(out).write_text(json.dumps(render_main(**json.loads(spec))), encoding="utf-8")


FRAGMENT_SCRIPT = """
from ui import common, live
live.render_run(common.get_manager().current())
"""


def render_main(real_s: float, repeats: int) -> dict[str, Any]:
    """AppTest wall time of the Train page and of the live panel's body, with a live 30-minute run in the manager."""
    sys.path.insert(0, str(ROOT))
    from bench.config import RunConfig
    from bench.runs.jobs import JobManager
    from bench.store import Store

    tmp = Path(tempfile.mkdtemp(prefix="bench-overhead-render-"))
    os.environ["BENCH_STORE"] = str(tmp / "runs.sqlite3")
    count = SIMULATED_SAMPLES
    manager = JobManager(Store(tmp / "runs.sqlite3"), worker_target=ReplayedWorker(real_s=real_s, hold=True),
                         sampler_factory=replay_sampler(count, 32, 2, real_s))
    run_id = manager.submit(RunConfig(epochs=SIMULATED_EPOCHS, sample_interval_s=SIMULATED_INTERVAL_S))
    wait_for(lambda: len(manager.snapshot(run_id).epochs) >= SIMULATED_EPOCHS
             and len(manager.snapshot(run_id).samples) >= count, real_s + 120, "the replayed run")
    from streamlit.testing.v1 import AppTest

    from ui import common

    common.get_manager = lambda: manager  # every page of this process reads the replayed run

    from ui import live_chart

    def timed(at: Any, first: list[float] | None = None) -> list[float]:
        t = time.perf_counter()
        at.run()  # first run: page setup, imports, caches, and the charts' first message with Plotly.js in it
        if at.exception:
            raise RuntimeError(f"AppTest failed: {at.exception}")
        if first is not None:
            first.append((time.perf_counter() - t) * 1000)
        # A real browser says it holds Plotly.js after its first message (ui.live_chart), and no later message
        # carries the 4.6 MB script again; AppTest has no browser to say so, so it is said here, or every timed
        # refresh would pay what a viewer pays once.
        at.session_state[live_chart.PLOTLY_SENT] = True
        out = []
        for _ in range(repeats):
            t = time.perf_counter()
            at.run()
            out.append((time.perf_counter() - t) * 1000)
        return out

    panel_first_ms: list[float] = []
    page_ms = timed(AppTest.from_file(str(ROOT / "pages" / "train.py"), default_timeout=120))
    panel_ms = timed(AppTest.from_string(FRAGMENT_SCRIPT, default_timeout=120), panel_first_ms)
    snap = manager.snapshot(run_id)
    figure_ms = figure_timings(snap, repeats)
    active = snap.active
    manager.stop(run_id)
    manager.wait(run_id, timeout_s=30)
    manager.shutdown()
    shutil.rmtree(tmp, ignore_errors=True)
    return {"page_ms": page_ms, "panel_ms": panel_ms, "panel_first_ms": panel_first_ms, "figure_ms": figure_ms,
            "samples": len(snap.samples),
            "epochs": len(snap.epochs),
            "run_active_while_timed": active, "cores": 32, "gpus": 2}
