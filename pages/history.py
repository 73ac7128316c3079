"""History: every stored run; filter, overlay several, export, import, delete with confirmation."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from bench.analysis import compare, metrics, run_summary
from bench.output import display, report
from bench.plans import models
from bench.vocab.errors import RunActiveError, RunUnreadable
from ui import common, results, unreadable_runs
from ui.safe_text import escape

common.page_setup()
manager = common.get_manager()
st.title("History")
st.caption("Every run in the store. Select rows to overlay their charts or export them.")

if manager.store is None:
    st.error(f"The run store could not be opened: only this session's runs exist, in memory. "
             f"{escape(common.store_unavailable(manager), limit=800)}", icon=":material/database:")
    st.stop()

with common.store_errors():
    listing = manager.store.listing()  # the runs, and apart those this version cannot read
runs = listing.runs
if not runs and not listing.unreadable:
    st.info("No runs stored yet. Start one on the Train page, or import a JSON result below.")

rows = []
for run in runs:
    config, info = run.config, run.info
    # an active run (here or in another process) has no stored summary yet: what its epochs say so far
    summary = run_summary.summary_of(run)
    rows.append({
        "id": run.id,
        "status": str(run.status),
        # beside the status, never scrolled out of sight: a run measured elsewhere must not pass as this machine's
        "measured": display.imported(info) or "here",
        "model": config.model if config.model in models.PRESETS else f"{config.model} {config.size or ''}".strip(),
        "dataset": config.dataset,
        "target": compare.target(run),
        "batch": config.batch_size,
        "epochs": f"{len(run.epochs)}/{config.epochs}",
        "steady epoch (s)": metrics.steady_epoch_seconds(run.epochs),
        "samples/s": summary.steady_samples_per_s,
        "mean CPU %": summary.mean_cpu_percent,
        "mean GPU %": summary.mean_gpu_util_percent,
        "workers": info.cluster.size if info.cluster else 1,
        "trained on": display.short_device(info.placement) if info.placement else display.MISSING,
        "device (full name)": info.placement or display.MISSING,
        "when": display.when(run.created_at),
    })
table = pd.DataFrame(rows)

query = st.text_input("Filter (matches any column)", key="hist_filter", placeholder="e.g. finished, cnn, cpu/1")
if query and not table.empty:
    mask = table.astype(str).apply(lambda col: col.str.contains(query, case=False, regex=False)).any(axis=1)
    table = table[mask]

shown, columns = results.text_table(table, {"steady epoch (s)": "{:.3f}", "samples/s": "{:,.0f}",
                                            "mean CPU %": "{:.0f}", "mean GPU %": "{:.0f}"})
columns.update({
    "id": st.column_config.NumberColumn("id", format="%d", width="small"),
    "steady epoch (s)": st.column_config.TextColumn("steady epoch (s)", alignment="right",
                                                    help="median of epochs 2..N (epoch 1 includes tracing)"),
    "mean CPU %": st.column_config.TextColumn("mean CPU %", alignment="right", help="whole machine, steady epochs"),
    "mean GPU %": st.column_config.TextColumn("mean GPU %", alignment="right",
                                              help="NVML utilization, steady epochs; — when no GPU was sampled"),
    "measured": st.column_config.TextColumn(
        "measured", help="'here': a run of this store; 'imported from ...': a run measured elsewhere and imported "
                         "(a file, an upload, an MLflow run), never a measurement of this machine"),
    "trained on": st.column_config.TextColumn(
        "trained on", help="Where the model's weights lived. The framework's full device name is in the hidden "
                           "column 'device (full name)': show it from the table's column menu."),
    "device (full name)": None,  # hidden; the table's toolbar can show it
})
if not table.empty:
    shown["id"] = table["id"]
event = st.dataframe(shown, hide_index=True, width="stretch", on_select="rerun", selection_mode="multi-row",
                     key="hist_table", column_config=columns)
selected_ids = [int(table.iloc[i]["id"]) for i in event.selection.rows] if not table.empty else []
unreadable_runs.show(manager.store, listing.unreadable, key="hist_unreadable")

if selected_ids:
    stored = []
    with common.store_errors():
        for run_id in selected_ids:
            try:
                stored.append(manager.store.get_run(run_id))
            except RunUnreadable as exc:  # its samples, read only now, hold what this version cannot read
                st.error(escape(exc, limit=800))
    records = [run for run in stored if run is not None]  # deleted meanwhile: left out
    st.subheader(f"{len(records)} run(s) selected")
    results.show_comparison(records, key="hist")
    for record in records:
        if record.members:
            results.members_side_by_side(record, key=f"hist_members_{record.id}")
    if records:  # none left when every selected run's samples were unreadable (said above)
        results.export_buttons(records, key="hist")
    if common.can_control():
        with st.popover("Delete", icon=":material/delete:"):
            st.write(f"Delete run(s) {', '.join(f'#{i:d}' for i in selected_ids)} for good?")
            if st.button("Yes, delete", type="primary", key="hist_delete_confirm"):
                refused = []
                for run_id in selected_ids:
                    try:
                        with common.store_errors():
                            manager.delete_run(run_id)
                    except RunActiveError as exc:
                        refused.append(str(exc))
                if refused:
                    st.session_state["hist_refused"] = refused
                st.rerun()
for message in st.session_state.pop("hist_refused", []):
    st.error(escape(message, limit=600))

st.divider()
st.subheader("Import a result")
uploaded = st.file_uploader("A JSON run or comparison (from `python -m bench ... --json` or an export)",
                            type=["json"], key="hist_import", disabled=not common.can_control())
if uploaded is not None and st.button("Import", key="hist_import_go"):
    try:
        with common.store_errors():
            done = report.import_record(manager.store, report.load_record_file(uploaded.getvalue()),
                                        source=f"upload {uploaded.name}")
        ids = ", ".join(f"#{i:d}" for i in done.ids)
        if done.new:
            st.success(f"Imported as {ids}")
        else:
            st.info(f"Already imported as {ids}: nothing changed")
    except report.RecordError as exc:
        st.error(f"Not imported: {escape(exc, limit=600)}")
