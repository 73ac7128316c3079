"""Showing groups of runs (comparisons, sweeps) live, imported results, and the seed articles' reference figures."""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from bench.output import charts, display
from bench.analysis import compare, metrics, references, run_summary, sweeps
from bench.analysis.run_summary import Run
from bench.vocab.run_info import RunInfo
from bench.analysis.sweeps import SweepRow
from bench.runs.jobs import JobManager
from bench.vocab.records import ACTIVE, Comparison, RunRecord, Status
from bench.runs.run_state import RunGroup, RunSnapshot
from ui import live, live_chart, live_feed, peak, present
from ui.safe_text import escape

CHART_CONFIG = {"displaylogo": False}

# Comparisons measured by this project on a GPU machine (docs/GPU.md), shipped so that a machine without a GPU can
# still show one, labelled with the hardware it came from.
BUNDLED_DIR = Path(__file__).resolve().parent.parent / "docs" / "results"
BUNDLED = {
    "CIFAR-10 MLP 3000-1000 (seed preset), H100 vs 16 CPU cores": "h100-seed-cifar10-mlp.json",
    "IMDB text classifier (seed preset), H100 vs 16 CPU cores": "h100-seed-text.json",
    "MNIST dense (seed preset), H100 vs 16 CPU cores": "h100-seed-mnist-dense.json",
    "MLP s (the Train page's default), H100 vs 16 CPU cores": "h100-mlp-s.json",
}


BUNDLED_SWEEPS = {
    "MLP xs..xl at batch 128: H100 and 16 CPU cores": "h100-sweep-sizes.json",
    "MLP xs, m, xl at batch 32, 256 and 2048: H100": "h100-sweep-batch.json",
}


def _present(files: Mapping[str, str]) -> dict[str, Path]:
    """label -> path of the shipped files that exist (an image or copy without docs/ has none)."""
    return {label: BUNDLED_DIR / name for label, name in files.items() if (BUNDLED_DIR / name).is_file()}


def bundled_results() -> dict[str, Path]:
    """The shipped GPU comparisons that are present."""
    return _present(BUNDLED)


def bundled_sweeps() -> dict[str, Path]:
    """The shipped GPU sweeps that are present."""
    return _present(BUNDLED_SWEEPS)


SWEEP_COLUMNS = {  # sweep row key -> (column title, number format); "—" where a reading does not exist
    "run_id": ("run", None), "size": ("size", None), "batch_size": ("batch", None), "target": ("target", None),
    "state": ("state", None), "params": ("parameters", "{:,.0f}"), "steady_epoch_seconds": ("steady epoch s", "{:.3f}"),
    "samples_per_s": ("samples/s", "{:,.0f}"), "achieved_gflops": ("GFLOP/s", "{:,.1f}"),
    "peak_gflops": ("peak GFLOP/s", "{:,.0f}"), "peak_share": ("of peak", None),
    "mean_cpu_percent": ("CPU %", "{:.0f}"),
    "mean_gpu_util_percent": ("GPU %", "{:.0f}"), "sm_active_percent": ("SM active %", "{:.0f}"),
    "tensor_active_percent": ("tensor active %", "{:.0f}"), "steps_per_execution": ("steps/exec", None),
    "diagnosis_kind": ("diagnosis", None), "devices": ("devices", None),
    "scaling_efficiency": ("scaling", "{:.0%}"),
}
SCALING_KEYS = ("devices", "scaling_efficiency")  # shown when a sweep has more than one device count
SWEEP_HELP = {
    "GPU %": "the GPU's utilization as its source reports it (NVML: the share of time any kernel ran, not how much "
             "of the chip worked; the System page says what it means on other GPUs)",
    "SM active %": "NVML GPM: the share of the streaming multiprocessors' time spent working (Hopper and newer)",
    "tensor active %": "NVML GPM: the share of time the tensor cores worked (Hopper and newer)",
    "scaling": "samples/s with N devices over N × samples/s with one device, at the same global batch",
}
GPM_KEYS = ("sm_active_percent", "tensor_active_percent")


def text_table(frame: pd.DataFrame, formats: Mapping[str, str | None]) -> tuple[pd.DataFrame, dict[str, Any]]:
    """A frame as text cells ("—" where a reading does not exist: Streamlit prints a missing number as "None")
    and the column settings that right-align the numbers."""
    out = pd.DataFrame({col: [display.cell(v, formats.get(col)) for v in frame[col]] for col in frame.columns},
                       index=frame.index)
    config = {col: st.column_config.TextColumn(col, alignment="right") for col, fmt in formats.items()
              if fmt and col in out.columns}
    return out, config


def sweep_table(rows: Sequence[SweepRow], keys: Sequence[str],
                columns: Mapping[str, Sequence[str]] | None = None) -> None:
    """Sweep rows as a table with titles and units people read, numbers rounded for reading, "—" for a reading
    that does not exist. The GPM columns appear when a row is on a GPU or has a GPM reading. ``columns``: the page's
    own columns beside the rows' (a live point's state, its share of the peak in words), one value per row, placed
    where ``keys`` names them."""
    frame = pd.DataFrame([r.to_dict() for r in rows])
    for name, values in (columns or {}).items():
        frame[name] = list(values)
    gpu = any(sweeps.on_gpu(r) for r in rows) or any(getattr(r, k) is not None for r in rows for k in GPM_KEYS)
    several = len({r.devices for r in rows}) > 1
    keys = [k for k in keys if (k in frame.columns or k not in ("steps_per_execution", "diagnosis_kind"))
            and (gpu or k not in GPM_KEYS) and (several or k not in SCALING_KEYS)]
    frame = frame.reindex(columns=list(keys)).rename(columns={k: SWEEP_COLUMNS[k][0] for k in keys})
    frame, config = text_table(frame, {SWEEP_COLUMNS[k][0]: SWEEP_COLUMNS[k][1] for k in keys})
    for title, text in SWEEP_HELP.items():
        if title in frame.columns:
            config[title] = st.column_config.TextColumn(title, alignment="right", help=text)
    st.dataframe(frame, hide_index=True, width="stretch", column_config=config)


def _steps_text(row: SweepRow) -> str:
    return f"/{row.steps_per_execution} steps" if row.steps_per_execution != 1 else ""


def sweep_charts(rows: Sequence[SweepRow], targets: Sequence[str], *, key: str,
                 cache_key: tuple[Any, ...] | None = None) -> None:
    """Utilization, samples/s, achieved GFLOP/s against the peak, and (two targets) speed-up, each vs parameters.
    With ``cache_key`` (a live sweep's state) every viewer shares one set of figures per state."""
    def figure(name: str, build: Any) -> Any:
        return present.styled(live.cached_figure((name, *cache_key), build) if cache_key is not None else build())

    wide = sweeps.wide_window_rows(rows)
    if wide:
        points = ", ".join(f"{escape(r.size)}/{escape(r.batch_size)}{escape(_steps_text(r))} on {escape(r.target)}"
                           for r in wide)
        st.warning(f"Utilization of {points}: {sweeps.WIDE_WINDOW_NOTE}", icon=":material/timer:")
    left, right = st.columns(2)
    left.plotly_chart(figure("swp_util", lambda: charts.sweep_utilization_figure(rows)), key=f"{key}_util",
                      config=CHART_CONFIG)
    right.plotly_chart(figure("swp_rate", lambda: charts.sweep_throughput_figure(rows)), key=f"{key}_rate",
                       config=CHART_CONFIG)
    left, right = st.columns(2)
    left.plotly_chart(figure("swp_gflops", lambda: charts.sweep_gflops_figure(rows)), key=f"{key}_gflops",
                      config=CHART_CONFIG)
    if len(targets) >= 2:
        pairs = sweeps.sweep_speedups(rows, targets[0], targets[1])
        right.plotly_chart(figure("swp_speedup", lambda: charts.sweep_speedup_figure(
            pairs, f"{targets[1]} vs {targets[0]}")), key=f"{key}_speedup", config=CHART_CONFIG)
    if len({r.devices for r in rows}) > 1:
        scaling_chart(rows, figure, key=key)


def scaling_chart(rows: Sequence[SweepRow], figure: Any, *, key: str) -> None:
    """A sweep over device counts: scaling efficiency against N, and where the exchange between devices sets the
    pace, the diagnosis with the knob that tests it."""
    left, right = st.columns(2)
    left.plotly_chart(figure("swp_scaling", lambda: charts.scaling_figure(rows)), key=f"{key}_scaling",
                      config=CHART_CONFIG)
    note = sweeps.exchange_bound_summary(rows)
    with right:
        if note:
            st.info(escape(note, limit=1200), icon=":material/sync_alt:")  # it names the rows' targets
        elif any(r.scaling_efficiency is not None and r.devices > 1 for r in rows):
            st.success("Every point scales to at least "
                       f"{sweeps.EXCHANGE_BOUND_EFFICIENCY:.0%} of N × its one-device throughput.")


def show_shipped_sweep(path: Path, *, key: str) -> None:
    """A `python -m bench sweep --json` file: its table and charts, labelled with the machine it came from."""
    import json

    from bench.vocab import records
    from bench.output import report

    sweep = records.load_json(path.read_text(encoding="utf-8"))
    if not isinstance(sweep, records.Sweep):
        st.error(f"{escape(path.name)} is not a sweep result.")
        return
    rows = list(sweep.rows)
    st.markdown(f"Measured on **{escape(report.hardware_label(sweep.hardware), limit=300)}** (imported, not "
                f"measured here).")
    sweep_table(rows, ["size", "batch_size", "steps_per_execution", "target", "params", "steady_epoch_seconds",
                       "samples_per_s", "achieved_gflops", "peak_gflops", "mean_cpu_percent", "mean_gpu_util_percent",
                       *GPM_KEYS, "diagnosis_kind"])
    sweep_charts(rows, sweeps.sweep_targets(rows), key=key)  # a CPU first: the baseline


def group_runs(manager: JobManager, group: RunGroup) -> list[RunSnapshot]:
    """The runs of a group as they are now (a run deleted meanwhile is left out)."""
    return [s for s in (manager.snapshot(i) for i in group.run_ids) if s is not None]


def run_label(record: RunRecord) -> str:
    """'#12 cpu', for a member of a multi-worker run '#12 cpu · worker 1', and for an imported run
    '#12 cpu (imported)'."""
    return _label(record.id, compare.target(record), record.info) + (" (imported)" if record.info.imported else "")


def snapshot_label(snap: RunSnapshot) -> str:
    """:func:`run_label` of a live run, from its snapshot."""
    return _label(snap.id, str(snap.config.target()), snap.info)


def _label(run_id: Any, target: str, info: RunInfo) -> str:
    member = f" · worker {info.cluster.index}" if info.cluster is not None else ""
    return f"#{run_id} {target}{member}"


def members_side_by_side(record: RunRecord, *, key: str) -> None:
    """A multi-worker run's members (the run and its ``members``): each one's epochs and utilization, overlaid."""
    members = [record, *record.members]
    cluster = record.info.cluster
    workers = ", ".join(escape(w, limit=80) for w in (cluster.workers if cluster else ()))
    st.markdown(f"**Run #{escape(record.id)} trained on {len(members)} workers** ({workers}), one model through "
                f"JAX's distributed runtime: each member's own epochs and utilization, side by side.")
    comparison_charts(members, key=key)


def headline_block(records: Sequence[RunRecord], prices: Mapping[str, float] | None = None) -> None:
    for pair in compare.pairs(records, prices):
        # the engine's sentence names the targets (an imported record's own words): escaped whole, its own
        # words have no markdown
        # the sentence pairs() made names each side apart (its run number or machine where the targets read the same)
        text = escape(pair.headline or compare.headline(pair), limit=1200)
        if pair.speedup_median is not None:
            st.success(f"**{text}**", icon=":material/speed:")
            a, b = pair.first_epoch_seconds_a, pair.first_epoch_seconds_b
            name_a, name_b = compare.side_names(pair)
            st.caption(f"First epoch, with tracing, reported apart: {escape(name_a)} "
                       f"{metrics.format_seconds(a)} · {escape(name_b)} {metrics.format_seconds(b)}. "
                       f"Steady epochs used: {pair.steady_epochs_a:d} and {pair.steady_epochs_b:d}.")
            warning = compare.caution(pair)
            if warning:
                st.warning(warning, icon=":material/warning:")
        else:
            st.info(text)
    ended = [r for r in records if r.status not in ACTIVE and r.epochs]
    if ended:
        st.caption("  \n".join(escape(peak.record_line(r), limit=600) for r in ended))
    diagnosis_block(records)


def diagnosis_block(records: Sequence[RunRecord]) -> None:
    """Why each ended run went at its speed (bench.analysis.diagnosis), beside the headline; explained on the System page."""
    lines = []
    for record in records:
        if record.status not in (Status.FINISHED, Status.STOPPED, Status.INTERRUPTED):
            continue
        lines.append(f"- **{escape(run_label(record), limit=200)}**: "
                     f"{escape(run_summary.diagnosis_of(record).verdict, limit=1000)}")
    if lines:
        st.markdown("**Why this speed** (from each run's own readings; the System page explains the verdicts):\n"
                    + "\n".join(lines))


def comparison_charts(records: Sequence[RunRecord], *, key: str,
                      cache_key: tuple[Any, ...] | None = None) -> None:
    """Epoch times and utilization of several runs. With ``cache_key`` (a live group's state) every viewer's
    rerun shares one pair of figures per state, as the Train page's live charts do."""
    series = [charts.Series.of_record(r, run_label(r)) for r in records]

    def figure(name: str, build: Any) -> Any:
        return present.styled(live.cached_figure((name, *cache_key), build) if cache_key is not None else build())

    left, right = st.columns(2)
    with left:
        st.plotly_chart(figure("cmp_epochs", lambda: charts.epoch_time_figure(series)), key=f"{key}_epochs",
                        config=CHART_CONFIG)
    with right:
        st.plotly_chart(figure("cmp_util", lambda: charts.utilization_figure(series, title="Utilization, overlaid")),
                        key=f"{key}_util", config=CHART_CONFIG)
        st.caption(escape(live.gpu_note([s for r in records for s in r.samples[-1:]])))


def reference_panel(records: Sequence[RunRecord]) -> None:
    """The seed article's published figures beside the user's own, with the hardware each came from."""
    if not records:
        return
    model = records[0].config.model
    refs = references.for_preset(model or "")
    if not refs:
        return
    st.markdown("**What the articles published** (whole `fit` calls, model creation and tracing included; compare "
                "with total time, not steady epochs)")
    rows = [{"source": r.article, "CPU": r.cpu, "GPU": r.gpu,
             "CPU time": metrics.format_seconds(r.cpu_seconds), "GPU time": metrics.format_seconds(r.gpu_seconds),
             "ratio": f"{r.ratio:.1f}x" if r.ratio else "—", "note": r.note} for r in refs]
    rows.extend(own_reference_rows(records))
    # the figures first, so that the ratio is on screen without scrolling the table sideways
    columns = ["source", "CPU time", "GPU time", "ratio", "CPU", "GPU", "note"]
    st.dataframe(pd.DataFrame(rows)[columns], hide_index=True, width="stretch",
                 column_config={"source": st.column_config.TextColumn(width="medium")})


def own_reference_rows(records: Sequence[RunRecord]) -> list[dict[str, str]]:
    """This tool's runs as rows of the reference table (total time, as the articles timed it): a CPU run and a GPU run
    make one row with both times and their ratio, anything else one row per run (compare.reference_pairs)."""
    def machine(rec: Run) -> tuple[str, str]:
        hw = rec.hardware
        return (hw.cpu.model or "" if hw.cpu else "", ", ".join(g.name or "" for g in hw.gpus) or "none")

    def size(rec: Run) -> str:
        return f"{rec.info.n_train or '?'} samples, {rec.config.epochs} epochs"

    rows = []
    for pair in compare.reference_pairs(records):
        first, last = pair.runs[0], pair.runs[-1]
        runs = " and ".join(f"#{r.id}" for r in pair.runs)
        if len(pair.runs) == 2:
            note = (f"steady epoch {metrics.format_seconds(pair.cpu_steady_seconds)} on the CPU, "
                    f"{metrics.format_seconds(pair.gpu_steady_seconds)} on the GPU")
        else:
            cpu_steady, gpu_steady = pair.cpu_steady_seconds, pair.gpu_steady_seconds  # one side has no run
            note = f"steady epoch {metrics.format_seconds(cpu_steady if cpu_steady is not None else gpu_steady)}"
        rows.append({"source": f"this tool, run{'s' if len(pair.runs) == 2 else ''} {runs} ({size(first)})",
                     "CPU": f"{pair.targets[0]} · {machine(first)[0]}", "GPU": machine(last)[1],
                     "CPU time": metrics.format_seconds(pair.cpu_seconds),
                     "GPU time": metrics.format_seconds(pair.gpu_seconds),
                     "ratio": f"{pair.ratio:.1f}x" if pair.ratio else "—", "note": note})
    return rows


def show_comparison(records: Sequence[RunRecord], *, key: str,
                    cache_key: tuple[Any, ...] | None = None, prices: Mapping[str, float] | None = None) -> None:
    origins = [f"{run_label(r)}: {display.imported(r.info)}" for r in records if r.info.imported]
    if origins:  # an imported run is never shown as a measurement of this machine
        st.caption("Not measured here: " + escape("; ".join(origins), limit=600))
    headline_block(records, prices)
    comparison_charts(records, key=key, cache_key=cache_key)
    reference_panel(records)


def group_chart_state(group: RunGroup, runs: Sequence[RunSnapshot]) -> tuple[Any, ...]:
    """The key a live group's figures are cached under: its id and each run's chart state (live.chart_state)."""
    return ("group", group.id, *(live.chart_state(snap) for snap in runs))


def export_buttons(records: Sequence[RunRecord], *, key: str, name: str | None = None) -> None:
    """JSON, HTML report and (for one run) CSV downloads; files are built only when a button is clicked."""
    from bench.output import report

    records = list(records)
    export = records[0] if len(records) == 1 else report.comparison_record(records)
    ids = [str(r.id) for r in records]
    name = name or (f"run-{ids[0]}" if len(records) == 1 else "comparison-" + "-".join(ids))
    cols = st.columns(3)
    cols[0].download_button("JSON", lambda: report.to_json(export), f"{name}.json", "application/json",
                            icon=":material/download:", key=f"{key}_json", on_click="ignore")
    cols[1].download_button("HTML report", lambda: report.to_html(export), f"{name}.html", "text/html",
                            icon=":material/download:", key=f"{key}_html", on_click="ignore")
    if len(records) == 1:
        cols[2].download_button("CSV (zip)", lambda: report.to_csv_zip(records[0]), f"{name}.zip", "application/zip",
                                icon=":material/download:", key=f"{key}_csv", on_click="ignore")


def group_status(runs: Sequence[RunSnapshot]) -> None:
    """One line per run of a group (from :func:`group_runs`) once it has ended: its status, its progress, its error,
    in the words of the live lines its stream showed (ui.live.status_data)."""
    for snap in runs:
        st.markdown(live.status_line(snap))
        live.progress_bar(snap)
        if snap.error:
            st.error(f"{escape(snap.error.headline, limit=600)} — {escape(snap.error.hint, limit=600)}")


@dataclass(frozen=True)
class GroupSnapshot:
    """The latest comparison as its live feed reads it: the group, its runs now, and whether any is live."""

    group: RunGroup
    runs: tuple[RunSnapshot, ...]

    @property
    def id(self) -> int:
        return self.group.id

    @property
    def created_at(self) -> float:
        return self.group.created_at

    @property
    def active(self) -> bool:
        return any(snap.active for snap in self.runs)

    @property
    def status(self) -> str:
        return "live" if self.active else "ended"

    @property
    def stage(self) -> str:
        """How many of its runs have ended: the page's headline (Streamlit's elements) is drawn again at each."""
        return f"{sum(not snap.active for snap in self.runs)}/{len(self.runs)}"


# the live view of a group: a status line and bar per run, and the group's two charts (each a chart kind of
# ui.live_chart, its runs overlaid), grown from the runs' new readings as the Train page's are
GROUP_CHARTS = {"cmp_epochs": "epochs", "cmp_util": "util"}
GROUP_LAYOUT = {"headers": "many", "charts": list(GROUP_CHARTS), "note": "cmp_util", "wide": []}


def group_snapshot(manager: JobManager, kind: str) -> GroupSnapshot | None:
    group = manager.groups.latest(kind)
    return GroupSnapshot(group, tuple(group_runs(manager, group))) if group is not None else None


def _group_header(gs: GroupSnapshot) -> dict[str, Any] | None:
    """While a comparison is live: each run's status line and bar, and each pair's headline so far."""
    if not gs.active:
        return None
    lines = [{"kind": "caption", "text": f"**{pair.headline or compare.headline(pair)}**"}
             for pair in compare.pairs([snap.record() for snap in gs.runs], gs.group.prices)]
    return {"runs": [live.status_data(snap) for snap in gs.runs], "lines": lines}


def _active_lines(gs: GroupSnapshot) -> dict[str, Any] | None:
    """While a sweep or a lesson step is live: the status line and bar of each run that is live now."""
    active = [live.status_data(snap) for snap in gs.runs if snap.active]
    return {"runs": active} if active else None


def _group_chart_keys(gs: GroupSnapshot) -> dict[str, Any]:
    runs = tuple((snap.id, len(snap.epochs), len(snap.samples), str(snap.status)) for snap in gs.runs)
    return {"cmp_epochs": tuple(r[:2] + r[3:] for r in runs), "cmp_util": runs}


def _group_series(gs: GroupSnapshot) -> list[charts.Series]:
    return [live.series_of(snap, snapshot_label(snap)) for snap in gs.runs]


def _group_figures(gs: GroupSnapshot, variant: str, names: set[str]) -> dict[str, Any]:
    series = _group_series(gs)
    build = {"cmp_epochs": lambda: charts.epoch_time_figure(series),
             "cmp_util": lambda: charts.utilization_figure(series, title="Utilization, overlaid")}
    return live.styled_for(variant, {name: build[name]() for name in names})


def _group_start(name: str, gs: GroupSnapshot, layout: dict[str, Any]) -> live_chart.Sent:
    return live_chart.start(GROUP_CHARTS[name], _group_series(gs), layout)


def _group_grow(name: str, gs: GroupSnapshot,
                sent: live_chart.Sent) -> tuple[dict[str, Any] | None, live_chart.Sent] | None:
    return live_chart.grow(GROUP_CHARTS[name], _group_series(gs), sent)


def group_feed(manager: JobManager, kind: str, *, comparison: bool = True) -> live_feed.Publisher:
    """The process's publisher of the latest ``kind`` group: its two charts, grown from its runs' new readings, with
    a comparison's lines and headline so far, or (``comparison`` False: a sweep, a lesson step) the live runs'
    lines."""
    return live_feed.install(kind, manager, lambda: live_feed.Publisher(
        lambda: group_snapshot(manager, kind), header=_group_header if comparison else _active_lines,
        line=lambda gs: None, charts=_group_chart_keys, figures=_group_figures, grow=(_group_start, _group_grow)))


def live_lines(manager: JobManager, kind: str) -> tuple[live_feed.Publisher, GroupSnapshot | None]:
    """For a fragment without a timer (Sweep, the lesson): the latest ``kind`` group as the page draws it, in step
    with its stream; draw :func:`lines_view` with the publisher where its live lines and charts belong."""
    publisher = group_feed(manager, kind, comparison=False)
    gs = group_snapshot(manager, kind)
    live.in_step(publisher, gs)
    return publisher, gs


def lines_view(publisher: live_feed.Publisher, kind: str) -> None:
    """The live runs' lines of the group and its two charts, fed by its stream; it reruns the fragment around it
    when a run of the group ends or a new group starts (drawn even with no group yet, to hear of one)."""
    live.view(publisher, feed=kind, key=f"{kind.replace(':', '_')}_lines", presenter=False, layout=GROUP_LAYOUT)


def live_group(manager: JobManager, kind: str) -> None:
    """The latest comparison (shared by every viewer). While it is live, its runs' status lines, the headline so far
    and the two charts come from its stream (ui.live_feed), computed once for every viewer; the fragment has no timer
    and reruns when a run of the group ends (the element asks), drawing the headline, the reference table and the
    exports as Streamlit's elements."""
    publisher = group_feed(manager, kind)

    @st.fragment
    def _panel() -> None:
        gs = group_snapshot(manager, kind)
        live.in_step(publisher, gs)
        if gs is None:
            st.info("No comparison yet: pick a preset or settings and targets, then press **Start comparison**.")
        else:
            if gs.active and common_can_control():
                # A callback, as the Train page's Stop (ui.live.live_panel): it cannot be lost to a rerun.
                st.button("Stop comparison", key=f"stop_{kind}", icon=":material/stop:", on_click=live.stop_runs,
                          args=(manager, tuple(snap.id for snap in gs.runs)))
        with st.container():  # the ended runs' lines and the headline: always here, so the element keeps its place
            if gs is not None:
                records = [snap.record() for snap in gs.runs]
                if not gs.active:  # while live, the lines and the headline so far are the stream's
                    group_status(list(gs.runs))
                    headline_block(records, gs.group.prices)
        live.view(publisher, feed=kind, key=f"{kind}_view", presenter=common_can_control(), layout=GROUP_LAYOUT)
        if gs is not None and not gs.active:
            reference_panel(records)
            export_buttons(records, key=kind)

    _panel()


def common_can_control() -> bool:
    from ui import common

    return common.can_control()


def show_imported(data: bytes, key: str = "imported") -> None:
    """Validate an uploaded JSON result and show it with the hardware it was measured on."""
    from bench.output import report

    try:
        payload = report.load_record_file(data)
    except report.RecordError as exc:
        st.error(f"This file cannot be shown: {escape(exc, limit=600)}")
        return
    runs = list(payload.runs) if isinstance(payload, Comparison) else [payload]
    labels = {report.hardware_label(r.hardware) for r in runs}
    st.markdown(f"Measured on **{escape(' / '.join(sorted(labels)), limit=300)}** (imported, not measured here).")
    if len(runs) >= 2:
        prices = payload.comparison.prices if isinstance(payload, Comparison) and payload.comparison else None
        show_comparison(runs, key=key, prices=prices)
    else:
        rec = runs[0]
        series = [charts.Series.of_record(rec, run_label(rec))]
        left, right = st.columns(2)
        left.plotly_chart(present.styled(charts.epoch_time_figure(series)), key=f"{key}_epochs", config=CHART_CONFIG)
        right.plotly_chart(present.styled(charts.utilization_figure(series)), key=f"{key}_util", config=CHART_CONFIG)
