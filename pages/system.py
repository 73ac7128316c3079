"""System: the CPU, RAM, GPUs and framework this server would train on, and what GPU utilization means."""

from __future__ import annotations

import streamlit as st

from ui import common, live

common.page_setup()
hardware = common.get_hardware()
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
