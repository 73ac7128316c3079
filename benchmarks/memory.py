"""Server memory over a 30-minute run, replayed at speed through a real JobManager (its own helper process).

The samples enter through JobManager's own on_sample path (thinning, store flushes) from a replay sampler, the
events through its supervisor from a spawned worker stand-in (benchmarks.standins). Meanwhile the main thread does the
live panel's server work from the manager's snapshots as fast as it can: since the panel is fed by one publisher
(ui.live_feed.Publisher, as ui.live.feed makes it), that is one forced publisher refresh per look, each building
those of the Train page's charts whose data changed (ui.live's figures: utilization with every sample, the epoch and
loss charts once an epoch), preparing and diffing them and encoding the event, once for every viewer. Before
2026-11-26 it was each viewer's panel rerun (all three figures built and serialised per refresh).

Usage (as the harness runs it): ``child_main(["memory", SPEC_JSON, OUT_JSON])``.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from benchmarks.common import own_snapshot, scratch
from benchmarks.stats import median
from benchmarks.standins import (SIMULATED_EPOCHS, SIMULATED_INTERVAL_S, SIMULATED_SAMPLES, ReplayedWorker,
                                 SamplerChoice, replay_sampler)


class StepClock:
    """The publisher's clock, moved on by hand: a refresh a chart interval after the last builds the charts."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def live_publisher(current: Callable[[], Any]) -> tuple[Any, StepClock]:
    """The live panel's publisher exactly as ui.live.feed makes it (its header, line, charts and figures, whatever
    they are), reading ``current``, on a clock of its own; made afresh, not installed as the process's publisher."""
    from ui import live

    clock = StepClock()
    return live.make_publisher(SimpleNamespace(current=current, pool=SimpleNamespace(state=lambda: None)), clock=clock), clock


def publish(publisher: Any, clock: StepClock, step_s: float | None = None) -> int:
    """One look as the publisher takes it: ``Publisher.refresh(force=True)`` ``step_s`` after the last (a chart
    interval by default, so a live run's charts whose data changed are built, prepared and diffed). Returns the
    encoded bytes of the events it published for the plain variant (0 when nothing changed)."""
    from ui import live_feed

    clock.t += live_feed.CHART_S if step_s is None else step_s
    seq = publisher.seq
    publisher.refresh(force=True)
    return sum(len(data) for _n, data in publisher.since(seq, "plain") or [])


def snapshot_bytes(publisher: Any, variant: str = "plain") -> int:
    """The encoded bytes of the snapshot a viewer joining now gets (every chart whole), encoded once per change."""
    return len(publisher.snapshot(variant)[1])


def figure_timings(snap: Any, repeats: int) -> dict[str, float | None]:
    """Median milliseconds to build each live figure from this snapshot and serialise it as the publisher does
    (ui.live_chart.prepare: Plotly's JSON, split for diffing): where the publisher's time per change goes."""
    from bench.output import charts
    from ui import live_chart

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
            live_chart.prepare(build(), scope=(snap.id, snap.created_at))
            times.append((time.perf_counter() - t) * 1000)
        out[name] = median(times)
    return out


def memory_main(cores: int, gpus: int, real_s: float, after_s: float, trace: bool) -> dict[str, Any]:
    """Replay a 30-minute run (3,600 samples at 0.5 s, 36 epochs) through a real JobManager and publish it live.

    After a short warm-up run (imports, plotly's validators, sqlite), the main thread publishes the run from the
    manager's snapshots while it streams, one forced refresh after another, each building the charts; then, for
    ``after_s`` more seconds, it keeps the publisher looking at the finished run every TICK_S and hands each look's
    joiner a snapshot of both variants (an ended run's charts are not rebuilt: that is all an open page costs now).
    RSS (psutil) is read throughout; with ``trace`` tracemalloc measures Python allocations.

    Result keys whose meaning changed with the publisher (2026-11-26): ``renders_during_stream`` counts the
    publisher's refreshes that built charts while the run streamed (``Publisher.builds``: every viewer's work, done
    once; a refresh builds only the charts whose data changed),
    ``renders_after_run`` its looks at the ended run with a joiner's snapshots; ``snapshot_bytes`` (was
    ``figure_json_bytes``, the three figures' Plotly JSON) is the encoded snapshot of the ended run a viewer joining
    gets, ``event_bytes_median``/``event_bytes_max`` the encoded events published while it streamed (replayed at
    speed, each spans many more samples than one real chart interval; benchmarks.render_cost's ``event_bytes`` is
    one real interval's). The charts are the plain variant's (no viewer asks for the projector view's while it
    streams).
    """
    import gc
    import tracemalloc

    import psutil

    from bench.vocab.config import RunConfig
    from bench.runs.jobs import JobManager
    from bench.store import Store
    from ui import live_feed

    tmp = scratch("bench-overhead-mem-")
    proc = psutil.Process()

    def rss_mb() -> float:
        return proc.memory_info().rss / 1e6

    count = SIMULATED_SAMPLES
    worker = ReplayedWorker(real_s=0.5)
    sampler = SamplerChoice(replay_sampler(50, cores, gpus, 0.2))
    manager = JobManager(Store(tmp / "runs.sqlite3"), worker_target=worker, sampler_factory=sampler)
    config = RunConfig(epochs=SIMULATED_EPOCHS, sample_interval_s=SIMULATED_INTERVAL_S)
    publisher, clock = live_publisher(manager.current)
    # warm-up: a short replayed run, so imports, plotly's validators and sqlite are paid before the baseline
    manager.wait(manager.submit(config.replace(epochs=2)), timeout_s=60)
    publish(publisher, clock)
    snapshot_bytes(publisher)
    worker.real_s = real_s
    gc.collect()
    if trace:
        tracemalloc.start()
    rss0 = rss_mb()
    traced0 = tracemalloc.get_traced_memory()[0] if trace else 0
    peak = rss0
    builds0 = publisher.builds
    events: list[int] = []
    t0 = time.monotonic()
    sampler.factory = replay_sampler(count, cores, gpus, real_s)  # read when the run starts, after submit
    run_id = manager.submit(config)
    snap = own_snapshot(manager, run_id)
    while snap.active:
        sent = publish(publisher, clock)
        if sent:
            events.append(sent)
        peak = max(peak, rss_mb())
        snap = own_snapshot(manager, run_id)
    renders = publisher.builds - builds0
    stream_s = time.monotonic() - t0
    publish(publisher, clock)  # the run's end, as the publisher's next look sees it
    snap = own_snapshot(manager, run_id)
    payload = snapshot_bytes(publisher)
    gc.collect()
    rss_after_run = rss_mb()
    checkpoints = [(0, rss_after_run)]
    after_renders = 0
    t_after = time.monotonic()
    next_check = t_after + after_s / 5
    while time.monotonic() - t_after < after_s:
        publish(publisher, clock, live_feed.TICK_S)
        for variant in live_feed.VARIANTS:
            snapshot_bytes(publisher, variant)
        after_renders += 1
        peak = max(peak, rss_mb())
        if time.monotonic() >= next_check:
            gc.collect()
            checkpoints.append((after_renders, rss_mb()))
            next_check += after_s / 5
        time.sleep(live_feed.TICK_S)
    traced = tracemalloc.get_traced_memory() if trace else (0, 0)
    if trace:
        tracemalloc.stop()
    manager.shutdown()
    shutil.rmtree(tmp, ignore_errors=True)
    return {
        "cores": cores, "gpus": gpus, "tracemalloc": trace, "samples_fed": count, "samples_kept": len(snap.samples),
        "epochs": len(snap.epochs), "status": snap.status, "stream_real_s": stream_s, "renders_during_stream": renders,
        "renders_after_run": after_renders, "snapshot_bytes": payload,
        "event_bytes_median": median(events), "event_bytes_max": max(events, default=None),
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
