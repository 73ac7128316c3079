"""Sweep: how model size (and batch size) drive speed and utilization, against the device's measured peak."""

from __future__ import annotations

import streamlit as st

from bench.output import charts
from bench.analysis import compare, sweeps
from bench.plans import models
from bench.vocab.config import ConfigError
from ui import cluster, common, config_form, machine, results
from ui.safe_text import escape

common.page_setup()
manager = common.get_manager()
hardware = common.get_hardware()

st.title("Sweep")
st.caption("Short runs over model sizes (and batch sizes, steps per execution) on one or more targets, "
           + ("side by side on the Ray cluster's nodes, each alone on its device." if manager.launcher else
              "queued one after the other."))
common.store_warning()

# Epochs long enough to be sampled: on a 2-core machine the smallest (xs) model's steady epoch at batch 128 takes
# about 0.5 s with 30,000 samples (0.07 s with 4,000), several samples at 0.2 s apart; the mean utilization is then
# over steady epochs, not tracing and start-up.
st.session_state.setdefault("swp_epochs", 3)
st.session_state.setdefault("swp_limit", 30000)
st.session_state.setdefault("swp_interval", 0.2)
base = config_form.config_form(hardware, prefix="swp", with_device=False, with_devices=False,
                               disabled=not common.can_control())
# the two axes every sweep has, wide enough for their chips (five in a row cut the default sizes' third), then the
# optional ones
c1, c4 = st.columns(2)
c2, c3, c5 = st.columns(3)
sizes = c1.multiselect("Sizes", list(models.SIZES), default=["xs", "s", "m"], key="swp_sizes")
batches = c2.multiselect("Batch sizes (empty = the one above)", [32, 64, 128, 256, 512, 1024], key="swp_batches")
steps = c3.multiselect("Steps per execution (empty = the one above)", [1, 2, 4, 8, 16, 32, 64, 128],
                       key="swp_steps_axis", help="Training steps per compiled call (TensorFlow and JAX). More steps per "
                       "call spread the per-step host work over more batches: the test of a host-bound run.")
options = common.target_options(hardware)
targets = c4.multiselect("Targets", options, default=["cpu"], key="swp_targets")
most = machine.most_devices(hardware)
device_counts = c5.multiselect(
    "Devices (data-parallel; empty = one)", [n for n in (1, 2, 4, 8, 16) if n <= most], key="swp_devices_axis",
    help="Train each point on the first N devices of its target at the same global batch: cpu split into N logical "
         "CPU devices, gpus the first N GPUs (TensorFlow's MirroredStrategy, or keras.distribution.DataParallel "
         "under JAX). Shows what N devices buy: throughput with N over N × one device.")

if st.button("Start sweep", type="primary", icon=":material/stacked_line_chart:", key="start_sweep",
             disabled=not common.can_control()):
    try:
        chosen = compare.parse_targets(targets)
        configs = sweeps.sweep_configs(base, sizes, chosen, batches or None, hardware,
                                        steps_per_execution=steps or None, devices=device_counts or None)
        # each target's matmul peak is probed in the queue, before the sweep's runs and never during a run
        peaks = {str(t): next(c for c in configs if c.target() == t) for t in chosen}
        # on a cluster the points run on its nodes: this machine's peaks are not theirs
        manager.groups.submit("sweep", configs, targets=targets, peaks=None if manager.launcher else peaks)
        st.toast(f"Sweep queued: {len(chosen)} peak probe(s), then {len(configs)} runs")
    except ConfigError as exc:
        st.error("This sweep cannot start:\n\n" + "\n".join(f"- {escape(e, limit=400)}" for e in exc.errors))

st.divider()


@st.fragment  # no timer: the sweep's stream shows the live point and reruns this when a point ends
def sweep_panel() -> None:
    publisher, gs = results.live_lines(manager, "sweep")
    results.lines_view(publisher, "sweep")
    if gs is None:
        st.info("No sweep yet: pick sizes and targets, then press **Start sweep**.")
        return
    group, runs = gs.group, list(gs.runs)
    for target, peak in group.peaks.items():
        if peak.error:
            st.warning(f"Peak of {escape(target)} not measured: {escape(peak.error, limit=600)}")
    done = sum(not snap.active for snap in runs)
    st.progress(done / len(runs), text=f"{done} of {len(runs)} points done")
    records = [snap.record() for snap in runs]
    rows = sweeps.with_scaling([sweeps.sweep_row(r, group.peak(compare.target(r)).reference) for r in records])
    page_columns = {"state": [cluster.state_with_where(snap) for snap in runs], "peak_share": [sweeps.peak_share_text(r) for r in rows]}
    results.sweep_table(rows, ["run_id", "size", "batch_size", "steps_per_execution", "target", "devices", "state",
                                "params", "steady_epoch_seconds", "samples_per_s", "scaling_efficiency", "achieved_gflops", "peak_gflops",
                                "peak_share", "mean_cpu_percent", "mean_gpu_util_percent", *results.GPM_KEYS,
                                 "diagnosis_kind"], page_columns)
    for target, peak in group.peaks.items():
        if peak.entry and peak.gflops:
            measured = ("peak being re-measured: a run achieved more than it" if peak.stale
                        else f"{peak.gflops:,.1f} GFLOP/s")
            st.caption(f"Peak of {escape(target)}: {measured} ({escape(machine.peak_source(peak.entry), limit=300)}).")
    finished = [r for r in rows if r.steady_epoch_seconds is not None]
    if not finished:
        return
    state = (*results.group_chart_state(group, runs),
             tuple(sorted((t, p.gflops, p.stale) for t, p in group.peaks.items())))
    results.sweep_charts(finished, list(group.targets), key="swp", cache_key=state)
    cpu_runs = [r for r in records if (t := compare.target_of(r)) is not None and t.is_cpu and r.samples]
    if cpu_runs:
        st.plotly_chart(charts.per_core_heatmap(cpu_runs[-1].samples, title=f"CPU per core, run #{cpu_runs[-1].id}"),
                        key="swp_heat", config=results.CHART_CONFIG)
    st.markdown(
        "**The lesson.** Small models leave a GPU mostly idle: each step is too little work to hide the launch and "
        "copy overheads, so NVML utilization and the speed-up over a CPU stay low. As the model (and the batch) "
        "grows, each step carries more arithmetic, utilization and achieved GFLOP/s climb toward the matmul peak, "
        "and the GPU's lead widens. On a CPU, the per-core heatmap shows whether every core was kept busy.")


sweep_panel()

st.divider()
st.subheader("A sweep measured on an NVIDIA H100")
shipped = results.bundled_sweeps()
if shipped:
    choice = st.selectbox("Measured by this project (docs/GPU.md), shown here without running anything",
                          ["—", *shipped], key="swp_bundled")
    if choice != "—":
        results.show_shipped_sweep(shipped[choice], key="swp_shipped")
