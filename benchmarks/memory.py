"""Server memory over a 30-minute run, replayed at speed through a real JobManager (its own helper process).

The samples enter through JobManager's own on_sample path (thinning, store flushes) from a replay sampler, the
events through its supervisor from a spawned worker stand-in (benchmarks.standins). Meanwhile the main thread builds
and serialises the Train page's figures from snapshots as fast as it can, as the live panel does per refresh.

Usage (as the harness runs it): ``child_main(["memory", SPEC_JSON, OUT_JSON])``.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.stats import median
from benchmarks.standins import (SIMULATED_EPOCHS, SIMULATED_INTERVAL_S, SIMULATED_SAMPLES, ReplayedWorker,
                                 SamplerChoice, replay_sampler)


def draw(snap: Any) -> int:
    """What the live panel builds per refresh (ui.live.render_run), with Streamlit's serialisation; returns bytes."""
    import plotly.io as pio

    from bench.output import charts

    series = [charts.Series(label=f"#{snap.id}", epochs=snap.epochs, samples=snap.samples)]
    figures = [charts.epoch_time_figure(series), charts.utilization_figure(series)]
    if snap.epochs:
        figures.append(charts.loss_accuracy_figure(snap.epochs))
    snap.summary, snap.eta_s()  # the tiles and the progress bar
    return sum(len(pio.to_json(f, validate=False)) for f in figures)


def figure_timings(snap: Any, repeats: int) -> dict[str, float | None]:
    """Median milliseconds to build and serialise each live figure from this snapshot (where the panel's time goes)."""
    import plotly.io as pio

    from bench.output import charts

    series = [charts.Series(label=f"#{snap.id}", epochs=snap.epochs, samples=snap.samples)]
    no_lines = [charts.Series(label=f"#{snap.id}", samples=snap.samples)]
    builders = {
        "epoch_time_figure": lambda: charts.epoch_time_figure(series),
        "utilization_figure": lambda: charts.utilization_figure(series),
        "utilization_figure_without_epoch_lines": lambda: charts.utilization_figure(no_lines),
        "loss_accuracy_figure": lambda: charts.loss_accuracy_figure(snap.epochs),
    }
    out = {}
    for name, build in builders.items():
        times = []
        for _ in range(max(3, repeats // 2)):
            t = time.perf_counter()
            pio.to_json(build(), validate=False)
            times.append((time.perf_counter() - t) * 1000)
        out[name] = median(times)
    return out


def memory_main(cores: int, gpus: int, real_s: float, after_s: float, trace: bool) -> dict[str, Any]:
    """Replay a 30-minute run (3,600 samples at 0.5 s, 36 epochs) through a real JobManager and redraw its charts.

    After a short warm-up run (imports, plotly's validators, sqlite), the main thread draws the run's figures from
    snapshots while it streams, then redraws the finished run for ``after_s`` more seconds (a browser left open).
    RSS (psutil) is read throughout; with ``trace`` tracemalloc measures Python allocations.
    """
    import gc
    import tracemalloc

    import psutil

    from bench.config import RunConfig
    from bench.runs.jobs import JobManager
    from bench.store import Store

    tmp = Path(tempfile.mkdtemp(prefix="bench-overhead-mem-"))
    proc = psutil.Process()

    def rss_mb() -> float:
        return proc.memory_info().rss / 1e6

    count = SIMULATED_SAMPLES
    worker = ReplayedWorker(real_s=0.5)
    sampler = SamplerChoice(replay_sampler(50, cores, gpus, 0.2))
    manager = JobManager(Store(tmp / "runs.sqlite3"), worker_target=worker, sampler_factory=sampler)
    config = RunConfig(epochs=SIMULATED_EPOCHS, sample_interval_s=SIMULATED_INTERVAL_S)
    # warm-up: a short replayed run, so imports, plotly's validators and sqlite are paid before the baseline
    warm = manager.wait(manager.submit(config.replace(epochs=2)), timeout_s=60)
    draw(warm)
    worker.real_s = real_s
    gc.collect()
    if trace:
        tracemalloc.start()
    rss0 = rss_mb()
    traced0 = tracemalloc.get_traced_memory()[0] if trace else 0
    peak = rss0
    renders = 0
    t0 = time.monotonic()
    sampler.factory = replay_sampler(count, cores, gpus, real_s)  # read when the run starts, after submit
    run_id = manager.submit(config)
    snap = manager.snapshot(run_id)
    while snap.active:
        draw(snap)
        renders += 1
        peak = max(peak, rss_mb())
        snap = manager.snapshot(run_id)
    stream_s = time.monotonic() - t0
    snap = manager.snapshot(run_id)
    payload = draw(snap)
    gc.collect()
    rss_after_run = rss_mb()
    checkpoints = [(0, rss_after_run)]
    after_renders = 0
    t_after = time.monotonic()
    next_check = t_after + after_s / 5
    while time.monotonic() - t_after < after_s:
        draw(manager.snapshot(run_id))
        after_renders += 1
        peak = max(peak, rss_mb())
        if time.monotonic() >= next_check:
            gc.collect()
            checkpoints.append((after_renders, rss_mb()))
            next_check += after_s / 5
    traced = tracemalloc.get_traced_memory() if trace else (0, 0)
    if trace:
        tracemalloc.stop()
    manager.shutdown()
    shutil.rmtree(tmp, ignore_errors=True)
    return {
        "cores": cores, "gpus": gpus, "tracemalloc": trace, "samples_fed": count, "samples_kept": len(snap.samples),
        "epochs": len(snap.epochs), "status": snap.status, "stream_real_s": stream_s, "renders_during_stream": renders,
        "renders_after_run": after_renders, "figure_json_bytes": payload,
        "rss_baseline_mb": rss0, "rss_peak_mb": peak, "rss_after_run_mb": rss_after_run,
        "rss_end_mb": checkpoints[-1][1], "peak_growth_mb": peak - rss0, "retained_growth_mb": rss_after_run - rss0,
        "drift_after_run_mb": checkpoints[-1][1] - checkpoints[0][1],
        "traced_growth_mb": (traced[0] - traced0) / 1e6 if trace else None,
        "traced_peak_growth_mb": (traced[1] - traced0) / 1e6 if trace else None,
    }


def child_main(argv: list[str]) -> None:
    """``memory SPEC_JSON OUT_JSON``: write memory_main(**SPEC) as JSON to OUT."""
    kind, spec, out = argv[0], argv[1], argv[2]
    if kind != "memory":
        raise SystemExit(f"unknown memory child {kind!r}")
    Path(out).write_text(json.dumps(memory_main(**json.loads(spec))), encoding="utf-8")
