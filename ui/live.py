"""The live run panel: progress, metric tiles and the side-by-side charts, redrawn from snapshots in a fragment.

No thread ever calls st.*: the fragment below reruns on a timer, reads an immutable RunSnapshot from the
JobManager and draws it. Every browser session that opens the page sees the same current run.
"""

from __future__ import annotations

import functools
import time
from typing import Any, Callable

import plotly.graph_objects as go
import streamlit as st

from bench.output import charts, display, report
from bench.analysis import metrics
from bench.runs.jobs import JobManager, RunSnapshot
from bench.records import Status
from ui import gpu_truth, live_chart, live_header, peak, present
from ui.safe_text import escape
from ui.shared_cache import SharedCache

REFRESH_S = 1.0
# While a run is live its charts change at most this often; the progress bar and tiles still follow every REFRESH_S.
# Redrawing whole Plotly figures was most of what watching cost (on a 2-core machine Chromium used 0.84 cores with
# three charts redrawn every second, 0.14 with none), so the live epoch and utilization charts only append
# (ui/live_chart.py) and the loss chart changes once an epoch.
CHART_REFRESH_S = 2.0
# After Start on a ready pre-started worker the page waits up to this long for the first finished batch before it
# redraws (bench.runs.jobs.JobManager.wait_first_batch): about 0.7 s on a 2-core machine for the default run, whose data
# and model the worker built ahead. A run it did not build ahead shows its phases after this wait.
FIRST_BATCH_WAIT_S = 1.2
NVML_NOTE = (
    "GPU % is NVML's utilization: the share of time in which at least one kernel ran on the GPU, "
    "not how much of the chip was busy. A GPU can show 100 % while most of its cores idle."
)
STATUS_ICON = {Status.QUEUED: ":material/schedule:", Status.STARTING: ":material/rocket_launch:",
               Status.RUNNING: ":material/directions_run:", Status.FINISHED: ":material/check_circle:",
               Status.STOPPED: ":material/stop_circle:", Status.FAILED: ":material/error:",
               Status.INTERRUPTED: ":material/warning:"}


def _styled(build: Callable[[], Any]) -> Any:
    """A figure from ``build`` in the page's look (the projector view's when it is on)."""
    return present.styled(build())


def status_parts(snap: RunSnapshot) -> list[tuple[str, bool]]:
    """The status line as runs of text, each bold or not: "Run #3 **running** · mlp s · ... · trained on **CPU:0**"."""
    parts = [(f"Run #{snap.id} ", False), (str(snap.status), True), (f" · {snap.config.label()}", False)]
    where = snap.info.get("placement")
    if where:  # the full name: History
        parts += [(" · trained on ", False), (display.short_device(where), True)]
    if snap.owner:
        parts.append((f" · run by {snap.owner} (shown from the store)", False))
    return parts


def status_line(snap: RunSnapshot) -> str:
    icon = STATUS_ICON.get(Status(snap.status), "")
    return f"{icon} " + "".join(f"**{text}**" if bold else text for text, bold in status_parts(snap))


def tile_values(snap: RunSnapshot) -> list[dict[str, str | None]]:
    """The four tiles' words: label, value, the note under it and the help text."""
    last = snap.epochs[-1] if snap.epochs else None
    sample = snap.samples[-1] if snap.samples else None
    steady = metrics.steady_epoch_seconds(snap.epochs)
    cpu = sample.cpu_percent if sample else None
    gpus = (sample.gpus if sample else None) or ()
    utils = [g.util_percent for g in gpus if g.util_percent is not None]
    gpu_text = " / ".join(f"{u:.0f} %" for u in utils) if utils else ("n/a" if not gpus else "—")
    return [
        {"label": "Last epoch", "value": metrics.format_seconds(last.epoch_seconds) if last else "—",
         "note": f"steady median {metrics.format_seconds(steady)}" if steady else "steady time from epoch 2",
         "help": "Training time of the latest epoch (validation excluded). Epoch 1 includes graph tracing."},
        {"label": "Samples/s", "value": f"{last.samples_per_s:,.0f}" if last and last.samples_per_s else "—",
         "note": None, "help": None},
        {"label": "CPU", "value": f"{cpu:.0f} %" if cpu is not None else "—", "note": None,
         "help": "Whole machine, all cores."},
        {"label": "GPU", "value": gpu_text, "note": None, "help": NVML_NOTE},
    ]


def metric_tiles(snap: RunSnapshot) -> None:
    for column, tile in zip(st.columns(4), tile_values(snap)):
        column.metric(str(tile["label"]), str(tile["value"]), help=tile["help"])
        if tile["note"]:
            column.caption(tile["note"])
    peak.render_epoch(snap)


# what a starting run waits for, by the phase its worker reports (bench.runs.worker.prepare_training, the supervisor)
STARTING = {"starting worker": "Starting the worker", "loading data": "Building the data",
            "building model": "Building the model", "training": "Tracing the first step"}


def starting_text(phase: str) -> str:
    """The progress bar's text before the first batch: what the run is waiting for."""
    if phase.startswith("importing "):
        return f"Loading the framework ({phase.split(' ', 1)[1]})"
    return STARTING.get(phase, phase.capitalize())


def progress_of(snap: RunSnapshot) -> tuple[float, str]:
    """The progress bar's fraction and text: queued, starting, epochs and batches with the ETA, or how it ended."""
    prog = snap.progress
    total = snap.config.epochs
    if snap.status == Status.QUEUED:
        return 0.0, f"Queued (position {(snap.queue_position or 0) + 1})"
    if not prog and snap.active and snap.owner is None:
        return 0.0, f"{starting_text(snap.phase)}…"
    if not prog:  # a run read back from the store (ended, or another process's): its epochs are all there is
        done = len(snap.epochs)
        text = (f"{done} of {total} epochs done (run by another process)" if snap.active
                else f"{snap.status.capitalize()} after {done} of {total} epochs")
        return (1.0 if snap.status == Status.FINISHED else min(1.0, done / max(total, 1))), text
    done = len(snap.epochs)
    batches = max(prog.get("batches") or 1, 1)
    in_epoch = prog["batch"] / batches if prog.get("epoch") == done + 1 else 0.0
    frac = min(1.0, (done + in_epoch) / total) if snap.active else (1.0 if snap.status == Status.FINISHED else done / total)
    eta = snap.eta_s()
    eta_text = f" · ETA {metrics.format_seconds(eta)}" if eta is not None else ""
    text = f"Epoch {min(prog['epoch'], total)}/{total} · batch {prog['batch']}/{batches}{eta_text}"
    if not snap.active:
        text = f"{snap.status.capitalize()} after {done} of {total} epochs"
    return frac, text


def progress_bar(snap: RunSnapshot) -> None:
    frac, text = progress_of(snap)
    st.progress(frac, text=text)


def header_data(snap: RunSnapshot) -> dict[str, Any]:
    """What ui.live_header draws for a live run: the same words as the Streamlit elements of an ended run's header."""
    icon = STATUS_ICON.get(Status(snap.status), "")
    frac, text = progress_of(snap)
    lines = [{"kind": "caption", "text": line} for line in (peak.epoch_line(snap.epochs, snap.info, snap.config),)
             if line]
    throttle = gpu_truth.throttle_text(snap.epochs or [])
    if throttle:
        lines.append({"kind": "warning", "text": throttle})
    energy = gpu_truth.energy_text(snap.energy())
    if energy:
        lines.append({"kind": "caption", "text": energy})
    return {"run": snap.id, "status": {"icon": icon.strip(":").split("/")[-1] if icon else "",
                                       "parts": status_parts(snap)},
            "progress": {"fraction": frac, "text": text}, "tiles": tile_values(snap), "lines": lines,
            "primary": st.get_option("theme.primaryColor") or "#1f4fd1"}


def status_data(snap: RunSnapshot) -> dict[str, Any]:
    """:func:`header_data` without the tiles and the lines under them: one run's status line and progress bar in a
    live group (Compare, the lesson)."""
    return header_data(snap) | {"tiles": [], "lines": []}


_FIGURES_MAX = 48
_FIGURES: SharedCache[go.Figure] = SharedCache(_FIGURES_MAX)


def cached_figure(key: tuple[Any, ...], build: Callable[[], go.Figure]) -> go.Figure:
    """One figure per run state, built once and shared by every viewer's rerun (epochs and samples only ever grow).

    Five browsers watching one run rerun together: each would otherwise build the same three figures at every chart
    window, and the server fell seconds behind.
    """
    return _FIGURES.get(key, build)


def chart_state(snap: RunSnapshot, now: float | None = None) -> tuple[Any, ...]:
    """The key a run's charts are cached under: the same for CHART_REFRESH_S of wall time while the run is live (so
    every rerun and every viewer in that window re-sends an identical figure), its final size once it has ended."""
    if snap.active:
        return (snap.id, snap.created_at, "live", int((now or time.time()) // CHART_REFRESH_S))
    return (snap.id, snap.created_at, snap.status, len(snap.epochs), len(snap.samples))


def draw_chart(snap: RunSnapshot, fig_key: tuple[Any, ...], fig: go.Figure, *, key: str) -> None:
    """One of a run's charts: an append-only ui.live_chart while the run is live (key ``<key>_live``), a normal
    st.plotly_chart once it has ended (key ``key``)."""
    if snap.active:
        live_chart.live_chart(live_chart.prepared(fig_key, fig, scope=(snap.id, snap.created_at)), key=f"{key}_live")
    else:
        live_chart.forget(f"{key}_live")
        st.plotly_chart(fig, key=key, config={"displaylogo": False})


def series_of(snap: RunSnapshot, label: str | None = None) -> charts.Series:
    """A live run as its charts draw it (its epochs and samples as the snapshot holds them, not copied)."""
    phases = snap.info.get("phases")
    return charts.Series(label=label or f"#{snap.id}", epochs=snap.epochs, samples=snap.samples,
                         phases=phases if isinstance(phases, list) else None)


def run_charts(snap: RunSnapshot, *, key: str) -> None:
    """Time per epoch beside utilization, then loss and accuracy. While the run is live all three are append-only
    charts (ui.live_chart): each viewer's browser draws the figure once and then only appends."""
    series = [series_of(snap)]
    state = chart_state(snap)
    left, right = st.columns(2)
    for column, name, build in ((left, "epochs", lambda: charts.epoch_time_figure(series)),
                                (right, "util", lambda: charts.utilization_figure(series))):
        with column:
            # the projector view's figure is a styled copy, cached apart from the plain one
            fig_key = (name, present.is_on(), *state)
            draw_chart(snap, fig_key, cached_figure(fig_key, functools.partial(_styled, build)),
                       key=f"{key}_{name}")
            if name == "util":
                st.caption(NVML_NOTE)
    if snap.epochs:
        # while live it appends too, at most once per CHART_REFRESH_S like the others (short epochs would redraw it
        # in every watching browser at each epoch's end); once the run has ended, it changes only with the epochs
        loss_key = ("loss", present.is_on(), *(state if snap.active else (snap.id, snap.created_at, snap.status,
                                                                         len(snap.epochs))))
        fig = cached_figure(loss_key, lambda: present.styled(charts.loss_accuracy_figure(snap.epochs)))
        draw_chart(snap, loss_key, fig, key=f"{key}_loss")


def run_messages(snap: RunSnapshot) -> None:
    if snap.error:
        # an error may come from an imported record: shown as text, never as markdown
        st.error(f"**{escape(snap.error.get('error_type'))}**: {escape(snap.error.get('message'), limit=600)}\n\n"
                 f"What to do: {escape(snap.error.get('hint'), limit=600)}")
    if snap.store_error:
        st.warning(snap.store_error)
        if not snap.saved and not snap.active:
            st.download_button("Download this run (JSON)", data=report.to_json(snap.record()),
                               file_name=f"run-{abs(snap.id)}-unsaved.json", mime="application/json",
                               key=f"unsaved_{snap.id}", icon=":material/download:",
                               help="The store does not hold all of this run yet; this file does. "
                                    "History can import it later.")
    if snap.status == Status.FINISHED:
        s = snap.summary
        steady = metrics.format_seconds(s.steady_epoch_seconds)
        first = metrics.format_seconds(s.first_epoch_seconds)
        steps = snap.config.steps_per_execution
        steps_text = f" · {steps} steps per execution" if steps != 1 else ""
        st.success(f"Finished: steady epoch {steady} (first epoch, with tracing: {first}) · "
                   f"trained on {display.short_device(snap.info.get('placement'))} with {snap.info.get('framework', '?')}{steps_text}")
    if snap.status in (Status.FINISHED, Status.STOPPED):
        verdict = snap.summary.diagnosis
        icons = {"host-bound": ":material/hourglass_top:", "compute-bound": ":material/memory:",
                 "input-bound": ":material/input:", "undetermined": ":material/help:"}
        if verdict is not None:
            st.info(f"**Why this speed**: {verdict.verdict}", icon=icons.get(verdict.kind, ":material/help:"))
        st.caption("From this run's own readings; the System page explains each verdict and its thresholds.")
    gpu_truth.render(snap)


def render_header(snap: RunSnapshot) -> None:
    """Status, progress, tiles and the lines under them. While the run is live: one element (ui.live_header), mounted
    once per page and updated in place; once it has ended, Streamlit's own elements and the run's messages."""
    with st.container():
        if snap.active:
            live_header.draw(header_data(snap), key="live_header")
            if snap.store_error:
                st.warning(snap.store_error)
        else:
            st.markdown(status_line(snap))
            progress_bar(snap)
            metric_tiles(snap)
            run_messages(snap)


def render_run(snap: RunSnapshot, *, key: str = "live") -> None:
    # Everything above the charts sits in one container, so the charts keep their place in the page whatever lines
    # appear above them (an epoch's FLOP/s, a warning): a live chart that moved would be mounted afresh and redrawn.
    render_header(snap)
    run_charts(snap, key=key)


def stop_runs(manager: JobManager, run_ids: tuple[int, ...]) -> None:
    """The Stop buttons' callback (Train's Stop, Compare's Stop comparison)."""
    for run_id in run_ids:
        manager.stop(run_id)


def live_panel(manager: JobManager, *, can_control: bool = True,
               pick: Callable[[JobManager], RunSnapshot | None] | None = None) -> None:
    """The current run (or the one ``pick`` returns): its header every REFRESH_S seconds, with its Stop button, and its
    charts every CHART_REFRESH_S (a live chart changes no more often than that; ui.live.chart_state)."""

    def current() -> RunSnapshot | None:
        return pick(manager) if pick else manager.current()

    @st.fragment(run_every=REFRESH_S)
    def _panel() -> None:
        snap = current()
        if snap is None:
            st.info("No run yet. Pick the settings above and press **Start**.")
            return
        with st.container():  # one place in the page, with or without a Stop button and a queue line
            if snap.active and can_control and snap.owner is None:
                # The stop is a callback: Streamlit calls it as it applies the click, before the fragment's body,
                # so a timer rerun that preempts this body (a slow rerun on a loaded machine) cannot lose the click.
                if st.button("Stop", key="stop_run", type="secondary", icon=":material/stop:", on_click=stop_runs,
                             args=(manager, (snap.id,)),
                             help="Stops after the current batch; the worker is ended if it does not stop in time."):
                    snap = manager.snapshot(snap.id) or snap
            queued = [i for i in manager.queued_ids() if i != snap.id]
            if queued:
                st.caption(f"{len(queued)} more run(s) queued: {', '.join(f'#{i}' for i in queued)}")
        render_header(snap)

    @st.fragment(run_every=CHART_REFRESH_S)
    def _charts() -> None:
        snap = current()
        if snap is not None:
            run_charts(snap, key="live")

    _panel()
    _charts()
