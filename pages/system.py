"""System: the CPU, RAM, GPUs and framework this server would train on, and what GPU utilization means."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from bench import probe
from bench.target import Target
from ui import common, live

common.page_setup()
hardware = common.get_hardware()
manager = common.get_manager()
cpu = hardware.cpu

st.title("System")
c1, c2, c3 = st.columns(3)
c1.metric("CPU", f"{cpu.logical_cores} logical cores", help=cpu.model)
c1.caption(cpu.model)
c2.metric("RAM", f"{cpu.ram_total_mib / 1024:.1f} GiB")
c3.metric("GPUs", str(len(hardware.gpus)))

st.subheader("GPUs")
if hardware.gpus:
    st.table([{"index": g.index, "name": g.name,
               "memory (GiB)": round(g.mem_total_mib / 1024, 1) if g.mem_total_mib else None,
               "driver": g.driver, "CUDA (driver)": g.cuda_driver_version} for g in hardware.gpus])
else:
    st.info(f"No GPU is usable here: {hardware.gpu_reason}")

st.subheader("Framework")
cuda = {True: "built with CUDA", False: "built without CUDA", None: "CUDA support unknown"}[hardware.framework_cuda]
st.markdown(f"Keras backend **{hardware.framework}** {hardware.framework_version or '(not installed)'}, {cuda}.")

st.subheader("What “GPU utilization” means")
st.markdown(live.NVML_NOTE + " Time per epoch and samples per second are the honest speed figures; "
            "utilization tells you whether the GPU was kept fed.")

st.subheader("Measured matmul peak")
st.caption("A short float32 matrix-multiply probe per device, in a separate process; the ceiling Sweep compares "
           "achieved training GFLOP/s against. Cached per device and thread count.")

peaks = probe.known_peaks()
if peaks:
    st.table([{"device": p.get("device"), "threads": p.get("threads"), "size": p.get("size"),
               "peak GFLOP/s": round(p.get("peak_gflops", 0.0), 1), "framework": p.get("framework"),
               "measured": pd.to_datetime(p.get("measured_at"), unit="s").strftime("%Y-%m-%d %H:%M")}
              for p in peaks])
choices = common.target_options(hardware)
c1, c2 = st.columns([2, 1])
target = c1.selectbox("Device", choices, index=choices.index("cpu"), key="sys_peak_target")
if c2.button("Measure peak", key="sys_peak", icon=":material/speed:", disabled=not common.can_control()):
    chosen = Target.parse(target)
    busy = [s.id for s in manager.snapshots() if s.active]
    waiting = f", after run(s) {', '.join(f'#{i}' for i in busy)}: a probe never runs beside a run" if busy else ""
    with st.spinner(f"Measuring {target} (a few seconds{waiting})…"):
        try:
            result = manager.queue_peak(chosen.device, cpu_threads=chosen.cpu_threads, refresh=True).result()
            st.success(f"{target}: {result['peak_gflops']:,.1f} GFLOP/s (float32 matmul {result['size']}²)")
        except (ValueError, probe.ProbeError) as exc:
            st.error(f"The probe failed: {exc}")
