"""The live run panel: progress, metric tiles and the side-by-side charts of the current run.

The page holds one element (``live_view``) that takes the run's header (in every state: queued, live, ended, failed)
and the charts' new points from the stream of ui.live_feed, computed once for every viewer; the panel's fragment has
no timer and reruns only when the run's state changes (the element asks for it), for the Stop button and, once the
run has ended, its messages (Streamlit's own elements). The words and figures come from the functions here.
No thread ever calls st.*.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Callable

import plotly.graph_objects as go
import streamlit as st

from bench.output import charts, display, report
from bench.analysis import metrics
from bench.runs.jobs import JobManager, RunSnapshot
from bench.hardware.monitor import sources
from bench.vocab.readings import Sample
from bench.vocab.records import Status
from bench.vocab.safe_text import isolated
from ui import cluster, common, gpu_truth, live_chart, live_feed, machine, peak, present, static_files, v2_component
from ui.live_messages import NVML_NOTE, RUN_LAYOUT
from ui.safe_text import escape
from ui.shared_cache import SharedCache

# A live group's figures on the Sweep page are cached under a key that changes at most this often (chart_state).
CHART_REFRESH_S = 2.0
# After Start on a ready pre-started worker the page waits up to this long for the first finished batch before it
# redraws (bench.runs.jobs.JobManager.wait_first_batch): about 0.7 s on a 2-core machine for the default run, whose data
# and model the worker built ahead. A run it did not build ahead shows its phases after this wait.
FIRST_BATCH_WAIT_S = 1.2


def gpu_note(samples: Sequence[Sample]) -> str:
    """What "GPU %" means for the GPU that was read: NVML's words, or the words of the source that gave the latest
    reading (AMD SMI, the amdgpu driver, Apple's statistics: bench.hardware.monitor.sources)."""
    names = [g.source for s in samples[-1:] for g in s.gpus or () if g.source]
    info = sources.info_of(names[0]) if names else None
    if info is None or info.vendor == "nvidia":
        return NVML_NOTE
    return f"GPU % is {info.name}'s utilization: {info.utilization}"


STATUS_ICON = {Status.QUEUED: ":material/schedule:", Status.STARTING: ":material/rocket_launch:",
               Status.RUNNING: ":material/directions_run:", Status.FINISHED: ":material/check_circle:",
               Status.STOPPED: ":material/stop_circle:", Status.FAILED: ":material/error:",
               Status.INTERRUPTED: ":material/warning:"}


def status_parts(snap: RunSnapshot) -> list[tuple[str, bool]]:
    """The status line as runs of text, each bold or not: "Run #3 **running** · mlp s · ... · trained on **CPU:0**"."""
    # outside words (the label's names, a device, a node, an owner, a file) isolated: none reorders the line's rest
    parts = [(f"Run #{snap.id} ", False), (str(snap.status), True), (f" · {isolated(snap.config.label())}", False)]
    where = snap.info.placement
    if where:  # the full name: History
        parts += [(" · trained on ", False), (isolated(display.short_device(where)), True)]
    node = cluster.where_text(snap)
    if node:  # a run on a Ray cluster: which node holds it
        parts += [(" · on ", False), (isolated(node), True)]
    if snap.owner:
        parts.append((f" · run by {isolated(snap.owner)} (shown from the store)", False))
    origin = display.imported(snap.info)
    if origin:  # a stored run measured elsewhere never reads as this machine's
        parts += [(" · ", False), (f"{isolated(origin)}: not measured here", True)]
    return parts


def status_line(snap: RunSnapshot) -> str:
    """:func:`status_parts` as markdown, each part escaped (a run's label, device and owner may be an imported
    record's words); the live view draws the parts as text."""
    icon = STATUS_ICON.get(Status(snap.status), "")
    return f"{icon} " + "".join(_markdown_part(text, bold) for text, bold in status_parts(snap))


def _markdown_part(text: str, bold: bool) -> str:
    """One part of the status line, escaped, bold or not, with the spaces at its ends kept (escape trims them)."""
    shown = escape(text, limit=300)
    lead = " " if text[:1].isspace() else ""
    trail = " " if text[-1:].isspace() else ""
    return lead + (f"**{shown}**" if bold and shown else shown) + trail


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
        {"label": "GPU", "value": gpu_text, "note": None, "help": gpu_note(snap.samples)},
    ]


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
    done = len(snap.epochs)
    if not snap.active:
        return snap.fraction_done(), f"{snap.status.capitalize()} after {done} of {total} epochs"
    if not prog:  # another process's run, read back from the store: its epochs are all there is
        return snap.fraction_done(), f"{done} of {total} epochs done (run by another process)"
    eta = snap.eta_s()
    eta_text = f" · ETA {metrics.format_seconds(eta)}" if eta is not None else ""
    text = f"Epoch {snap.current_epoch()}/{total} · batch {prog.batch}/{max(prog.batches, 1)}{eta_text}"
    return snap.fraction_done(), text


def progress_bar(snap: RunSnapshot) -> None:
    frac, text = progress_of(snap)
    st.progress(frac, text=escape(text, limit=300))


def icon_name(status: str) -> str:
    """The Material Symbols name of a status's icon (``:material/check_circle:`` -> ``check_circle``), for the
    browser elements, which draw it with the icon font."""
    icon = STATUS_ICON.get(Status(status), "")
    return icon.strip(":").split("/")[-1] if icon else ""


def variant() -> str:
    """This session's chart variant on a stream: the projector view's styling or the plain one."""
    return "present" if present.is_on() else "plain"


def styled_for(variant: str, figures: dict[str, go.Figure]) -> dict[str, go.Figure]:
    """``figures`` in the variant's look (ui.present.style_figure for the projector view)."""
    if variant == "present":
        return {name: present.style_figure(fig) for name, fig in figures.items()}
    return figures


def header_data(snap: RunSnapshot) -> dict[str, Any]:
    """What the live view's header shows for a live run: the same words as the Streamlit elements of an ended run's
    header."""
    frac, text = progress_of(snap)
    lines = [{"kind": "caption", "text": line} for line in (peak.epoch_line(snap.epochs, snap.info, snap.config),)
             if line]
    throttle = gpu_truth.throttle_text(snap.epochs or [])
    if throttle:
        lines.append({"kind": "warning", "text": throttle})
    energy = gpu_truth.energy_text(snap.energy())
    if energy:
        lines.append({"kind": "caption", "text": energy})
    return {"run": snap.id, "status": {"icon": icon_name(snap.status), "parts": status_parts(snap)},
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


def series_of(snap: RunSnapshot, label: str | None = None) -> charts.Series:
    """A live run as its charts draw it (its epochs and samples as the snapshot holds them, not copied)."""
    return charts.Series(label=label or f"#{snap.id}", epochs=snap.epochs, samples=snap.samples,
                         phases=snap.info.phases)


def run_messages(snap: RunSnapshot) -> None:
    if snap.error:
        # an error may come from an imported record: shown as text, never as markdown
        st.error(f"**{escape(snap.error.error_type)}**: {escape(snap.error.message, limit=600)}\n\n"
                 f"What to do: {escape(snap.error.hint, limit=600)}")
    if snap.store_error:
        st.warning(escape(snap.store_error, limit=600))
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
        steps_text = f" · {escape(steps)} steps per execution" if steps != 1 else ""
        st.success(f"Finished: steady epoch {steady} (first epoch, with tracing: {first}) · "
                   f"trained on {escape(display.short_device(snap.info.placement))} with {escape(snap.info.framework or '?')}{steps_text}")
    if snap.status in (Status.FINISHED, Status.STOPPED):
        verdict = snap.summary.diagnosis
        icons = {"host-bound": ":material/hourglass_top:", "compute-bound": ":material/memory:",
                 "input-bound": ":material/input:", "undetermined": ":material/help:"}
        if verdict is not None:
            st.info(f"**Why this speed**: {escape(verdict.verdict, limit=1000)}",
                    icon=icons.get(verdict.kind, ":material/help:"))
        st.caption("From this run's own readings; the System page explains each verdict and its thresholds.")
    gpu_truth.source_line(snap)  # the throttle note and the energy line are the header's (header_data)


def stop_runs(manager: JobManager, run_ids: tuple[int, ...]) -> None:
    """The Stop buttons' callback (Train's Stop, Compare's Stop comparison)."""
    for run_id in run_ids:
        manager.stop(run_id)


WORKER_READY = "Worker ready: the next run like the last starts without loading the framework."


def sidebar_line(snap: RunSnapshot | None, spare: str | None = None) -> dict[str, Any]:
    """The sidebar's line for the current run ("Run #3: running · epoch 2/10", "No run yet.") and, while no run is
    live and the pre-started worker is ready, a note that says so (the element draws it, the stream updates it)."""
    note = WORKER_READY if (snap is None or not snap.active) and spare == "ready" else None
    if snap is None:
        return {"icon": "", "text": "No run yet.", "note": note}
    text = f"Run #{snap.id}: {snap.status}"
    epoch = snap.current_epoch() if snap.active else None
    if epoch is not None:
        text += f" · epoch {epoch}/{snap.config.epochs}"
    return {"icon": icon_name(snap.status), "text": text, "note": note}


def _run_header(snap: Any) -> dict[str, Any] | None:
    """The Train page's header of the current run in every state (queued, live, ended, failed), drawn by the live
    view alone: a run's end changes its words in place, with no rerun."""
    return header_data(snap)


def _chart_keys(snap: Any) -> dict[str, Any]:
    """The Train page's charts of a run, each with what it is drawn from: time per epoch and loss change once an
    epoch (the loss chart from the first epoch on), utilization with every sample and phase."""
    phases = snap.info.phases
    keys: dict[str, Any] = {"epochs": (len(snap.epochs), snap.status),
                            "util": (len(snap.epochs), len(snap.samples), len(phases or ()), snap.status)}
    if snap.epochs:
        keys["loss"] = (len(snap.epochs), snap.status)
    return keys


def _figures(snap: Any, variant: str, names: set[str]) -> dict[str, go.Figure]:
    """The named charts of a run as the Train page draws them (the projector view's styling for ``present``)."""
    series = [series_of(snap)]
    build = {"epochs": lambda: charts.epoch_time_figure(series),
             # the names for the element's script, which hides those that would touch another at the width drawn,
             # ended or not: the run's end changes no name
             "util": lambda: charts.utilization_figure(series, growing=True),
             "loss": lambda: charts.loss_accuracy_figure(snap.epochs)}
    return styled_for(variant, {name: build[name]() for name in names})


def _grow_start(name: str, snap: Any, layout: dict[str, Any]) -> live_chart.Sent:
    return live_chart.start(name, [series_of(snap)], layout)


def _grow(name: str, snap: Any, sent: live_chart.Sent) -> tuple[dict[str, Any] | None, live_chart.Sent] | None:
    return live_chart.grow(name, [series_of(snap)], sent)


# the Train page's charts grown from a run's new readings (each chart's name is its kind: ui.live_chart.KINDS)
GROW = (_grow_start, _grow)


def make_publisher(manager: Any, *, clock: Callable[[], float] = time.monotonic) -> live_feed.Publisher:
    """A publisher of ``manager``'s current run with the Train page's words and charts (benchmarks make their own,
    on a clock of theirs)."""
    publisher = live_feed.Publisher(manager.current, header=_run_header,
                                    line=lambda snap: sidebar_line(snap, manager.pool.state()), charts=_chart_keys,
                                    figures=_figures, grow=GROW, clock=clock)
    changes = getattr(manager, "changes", None)
    if changes is not None:  # the run's epoch ends, samples, phases and status wake it (bench.runs.jobs)
        changes.add(publisher.poke)
    return publisher


def feed(manager: JobManager) -> live_feed.Publisher:
    """The process's one publisher of the current run (ui.live_feed), made by the first page that draws."""
    return live_feed.install("train", manager, lambda: make_publisher(manager))


def published_state(manager: JobManager) -> tuple[RunSnapshot | None, live_feed.PageState]:
    """The current run and the state the stream has published for it, made the same (:func:`in_step`)."""
    snap = manager.current()
    return snap, in_step(feed(manager), snap)


def in_step(publisher: live_feed.Publisher, snap: Any) -> live_feed.PageState:
    """The state ``publisher`` has published, made ``snap``'s: a page that sees a newer state than the stream has
    sent publishes it first, so its element does not ask for a rerun it already had."""
    state = live_feed.PageState.of(snap)
    return publisher.refresh(force=state.key != publisher.state.key)


def _element_data(publisher: live_feed.Publisher, state: live_feed.PageState, **extra: Any) -> dict[str, Any]:
    return {"state": state.key, "seq": publisher.seq, "stream": static_files.stream_url(),
            "script": static_files.static_url("live.js"), "plotly": static_files.static_url("plotly.min.js"), **extra}


def _machine_note() -> str:
    """What "GPU %" means on this machine's GPU (the source that answers here), for the live element's note."""
    name, measure = machine.utilization_measure(common.get_hardware())
    return NVML_NOTE if name == "NVML" else f"GPU % is {name}'s utilization: {measure}."


def view(publisher: live_feed.Publisher, *, feed: str, key: str, presenter: bool,
         layout: dict[str, Any] | None = None) -> None:
    """A live view element on ``feed``'s stream: its header(s) and charts, fed by the stream; it asks for the
    fragment around it to rerun (with a little random delay, so a class does not rerun at once) only when the state
    changes (a run starts or ends)."""
    chosen = variant()
    publisher.want(chosen)
    live_view_component(key=key, data=_element_data(
        publisher, publisher.state, feed=feed, variant=chosen,
        header=publisher.header.model_dump() if publisher.header is not None else None, presenter=presenter,
        nvml_note=_machine_note(), layout=layout or RUN_LAYOUT), on_changed_change=lambda: None)


def live_view(manager: JobManager, *, presenter: bool) -> None:
    """The Train page's live view: the current run's header in every state and its three charts."""
    view(feed(manager), feed="train", key="live_view", presenter=presenter)


def sidebar_status(manager: JobManager) -> None:
    """The sidebar's line of the current run, kept current by the stream (no rerun, no timer)."""
    publisher = feed(manager)
    snap, state = published_state(manager)
    line = sidebar_line(snap, manager.pool.state())
    # variant(): the page's one stream, at the same address as its live view's
    live_status_component(key="live_status", data=_element_data(publisher, state, line=line, variant=variant(),
                                                                 feed="train"))


def live_view_component(**kwargs: Any) -> Any:
    return v2_component.component("bench_live_view", "live_view", styles=("live_header",))(**kwargs)


def live_status_component(**kwargs: Any) -> Any:
    return v2_component.component("bench_live_status", "live_status")(**kwargs)


def live_panel(manager: JobManager, *, can_control: bool = True) -> None:
    """The current run: its controls (Stop, the queue) and, once it has ended, its header and messages as Streamlit
    elements, above the one live element (ui.live_feed's stream draws the live header and the charts). The fragment
    has no timer: the element reruns it when the run's state changes."""

    @st.fragment
    def _panel() -> None:
        snap, _state = published_state(manager)
        if snap is None:
            st.info("No run yet. Pick the settings above and press **Start**.")
        with st.container():  # one place in the page, with or without a Stop button and a queue line
            if snap is not None and snap.active and can_control and snap.owner is None:
                # The stop is a callback: Streamlit calls it as it applies the click, before the fragment's body.
                st.button("Stop", key="stop_run", type="secondary", icon=":material/stop:", on_click=stop_runs,
                          args=(manager, (snap.id,)),
                          help="Stops after the current batch; the worker is ended if it does not stop in time.")
            queued = [i for i in manager.queued_ids() if snap is None or i != snap.id]
            if queued:
                st.caption(f"{len(queued)} more run(s) queued: {', '.join(f'#{i:d}' for i in queued)}")
        # the run's messages once it has ended (the finished line, the diagnosis, an error): its header is the live
        # view's, in every state. One container whatever it holds, so the live view below keeps its place in the page
        # and Streamlit keeps its element (messages drawn straight into the fragment moved it, and a run's end
        # removed the live header for a moment before drawing it again)
        with st.container():
            if snap is not None and not snap.active:
                run_messages(snap)
            elif snap is not None and snap.store_error:
                st.warning(escape(snap.store_error, limit=600))
        live_view(manager, presenter=can_control)

    _panel()
