"""System: the CPU, RAM, GPUs and framework this server would train on, what GPU utilization means, and how a run's
diagnosis (host-, compute-, input-bound) is reached."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from bench.analysis import diagnosis
from bench.vocab.target import Target
from ui import cluster, common, live_messages, machine
from ui.safe_text import escape

common.page_setup()
hardware = common.get_hardware()
manager = common.get_manager()
cpu = hardware.cpu

st.title("System")

report = machine.gpu_checklist()
st.subheader("Can this machine train on a GPU?")
st.caption("The same checklist as `python -m bench doctor`: each item with what was found and, where missing, the "
           "command that fixes it.")
(st.success if report.gpu_ready else st.warning)(
    "Yes: a GPU run is possible here." if report.gpu_ready
    else "No GPU run is possible here yet: the items marked missing below say why and what fixes them.",
    icon=":material/check_circle:" if report.gpu_ready else ":material/report:")
for check in report.checks:  # one line each, the fix in full beneath: a table would cut the commands off
    st.markdown(f"{machine.CHECKLIST_ICONS[check.status]} **{escape(check.name)}** ({escape(check.status)}): "
                f"{escape(check.detail, limit=400)}")
    if check.fix:
        st.caption(f"Fix: {check.fix}")

c1, c2, c3 = st.columns(3)
c1.metric("CPU", f"{cpu.logical_cores:d} logical cores", help=escape(cpu.model, limit=200))
c1.caption(escape(cpu.model, limit=200))
c2.metric("RAM", f"{(cpu.ram_total_mib or 0) / 1024:.1f} GiB")
c3.metric("GPUs", str(len(hardware.gpus)))

st.subheader("GPUs")
source_name, measure = machine.utilization_measure(hardware)
if hardware.gpus:
    st.table([{"index": int(g.index or 0), "name": escape(g.name, limit=200),  # a table's cells are markdown
               "memory (GiB)": round(g.mem_total_mib / 1024, 1) if g.mem_total_mib else None,
               "driver": escape(g.driver or ""), "CUDA (driver)": escape(g.cuda_driver_version or ""),
               "readings from": escape(g.source)}
              for g in hardware.gpus])
    gaps = machine.not_measured(hardware)
    if gaps:  # a source other than NVML: what it cannot give, never shown as 0
        st.markdown(f"Readings from **{escape(source_name)}**. Not measured here (shown empty, never 0):\n\n"
                    + "\n".join(f"- **{escape(name)}**: {escape(why, limit=300)}" for name, why in gaps.items()))
else:
    st.info(f"No GPU is usable here: {escape(hardware.gpu_reason, limit=400)}")

st.subheader("Framework")
cuda = {True: "built with CUDA", False: "built without CUDA", None: "CUDA support unknown"}[hardware.framework_cuda]
st.markdown(f"Keras backend **{escape(hardware.framework)}** "
            f"{escape(hardware.framework_version or '(not installed)')}, {cuda}.")

st.subheader("What “GPU utilization” means")
if source_name == "NVML":
    st.markdown(live_messages.NVML_NOTE + " Time per epoch and samples per second are the honest speed figures; "
                "utilization tells you whether the GPU was kept fed.")
else:  # this machine's GPU is read by another source: its own measure, named
    st.markdown(f"On this machine GPU % comes from **{escape(source_name)}**: {escape(measure, limit=600)}. Time per "
                "epoch and samples per second are the honest speed figures; utilization tells you whether the GPU "
                "was kept fed.")

st.subheader("What the GPU really did: activity, power, clocks and energy")
st.markdown("""
Each GPU sample holds more than NVML's utilization; each figure is empty (never 0) where this GPU or driver does not
give it, and the run's summary says why.

| figure | what it measures | what it does not |
|---|---|---|
| **GPU utilization** (NVML) | share of the sample period in which *any* kernel ran | how much of the chip worked: one tiny kernel at a time reads 100 % |
| **SM activity** (GPM, Hopper and newer) | share of the streaming multiprocessors busy, averaged over the period | whether their arithmetic units were used well |
| **SM occupancy** (GPM) | resident warps as a share of the most the SMs can hold | speed by itself: low occupancy can still be fast |
| **tensor activity** (GPM) | share of cycles any tensor core was working | float32 work, which Keras runs on the FP32 pipe unless mixed precision or TF32 is on |
| **FP32 / FP16 pipe activity** (GPM) | share of cycles the non-tensor float32 / float16 pipes were working | tensor-core math |
| **DRAM bandwidth** (GPM) | memory bandwidth used as a share of the theoretical maximum | cache traffic |
| **power** (W) and its **enforced limit** | board power now; a busy GPU draws near its limit, an idle one far below | which part of the chip drew it |
| **SM clock** (MHz) and **clock-event reasons** | the clock now, and why it is held below its maximum: power cap, thermal or hardware slowdown, ... (idle is not a reason) | — |
| **energy** (J per epoch, per 1,000 samples) | GPU: NVML's total energy counter (Volta and newer), differences at the epoch ends; without it, power integrated over the samples (an estimate). CPU: the RAPL package counters in /sys/class/powercap, where readable | anything outside the package (RAM, disks, fans) |

Power is the plainest busy signal: a GPU that waits on its host draws little, one whose SMs and tensor cores are busy
draws near its limit. An epoch run under a clock-event reason is marked beside its time on Train, as its time is
slower than the GPU runs unlimited. GPM figures come from two GPM samples one sampling interval apart, so the first
sample of a run has none.
""")

st.subheader("Why a run went at its speed: the diagnosis")
st.markdown(f"""
Every ended run gets a one-line verdict on Train and Compare, built from its own readings over its steady epochs
(epoch 1, which includes tracing, is left out), with the knob that would test it:

| verdict | the evidence | the knob that tests it |
|---|---|---|
| **host-bound** | the GPU busy under {diagnosis.GPU_WAITING_PERCENT:.0f} % of the time while the training process used at \
least {diagnosis.ONE_CORE_BUSY_PERCENT:.0f} % of one core; on a CPU, steps under {diagnosis.HOST_STEP_MS:.0f} ms, or \
busy cores training under {diagnosis.CPU_CORE_FLOOR_GFLOPS:.0f} GFLOP/s each where no peak was measured (per-op work, \
e.g. JAX without XLA) | {diagnosis.KNOBS["host-bound"]} |
| **compute-bound** | SM activity ≥ {diagnosis.SM_ACTIVE_COMPUTE_PERCENT:.0f} % or tensor activity ≥ \
{diagnosis.TENSOR_ACTIVE_COMPUTE_PERCENT:.0f} %, or achieved GFLOP/s ≥ {diagnosis.PEAK_FRACTION_ALONE:.0%} of the \
device's measured matmul peak (≥ {diagnosis.PEAK_FRACTION_COMPUTE:.0%} with steps of {diagnosis.HOST_STEP_MS:.0f} ms \
or more); on a CPU, at least {diagnosis.CPU_THREADS_BUSY_SHARE:.0%} of its threads busy with \
steps of {diagnosis.HOST_STEP_MS:.0f} ms or more and at least {diagnosis.CPU_CORE_FLOOR_GFLOPS:.0f} GFLOP/s a busy core | {diagnosis.KNOBS["compute-bound"]} |
| **input-bound** | neither the device nor the training process busy (under {diagnosis.PROCESS_IDLE_PERCENT:.0f} % of \
one core), or the machine's CPUs ≥ {diagnosis.MACHINE_BUSY_PERCENT:.0f} % busy while the GPU waited | \
{diagnosis.KNOBS["input-bound"]} |
| **undetermined** | a reading is missing (no steady epoch, no sample inside the steady epochs, no SM activity for a \
busy GPU) or other work competed for the CPU; the sentence says which | what the sentence names |

Where the thresholds come from: on an NVIDIA H100 every host-bound run (small MLPs, the seed presets) read 2-27 % GPU
busy with the training process at 99-143 % of one core and 1.2-2.3 ms a step whatever the model size; the largest
shares of the matmul peak were 27-35 % (MLP l/xl on 16 CPU cores, 9-76 ms steps) and 51 % (MLP xl at batch 2048 on
the H100), while host-bound points stayed at or below 15.2 % (docs/GPU.md); on the 2-core development VM, MLP s at batch 32
read 28 % of its peak in 2.3 ms steps yet ran 1.8x faster at 8 steps per execution, so a middling share in short
steps counts as host-bound (docs/MEASUREMENTS.md). NVML's “utilization” can show that a GPU *waited*, never that its
arithmetic was the limit, so a busy GPU is called compute-bound only from SM/tensor activity or the peak share; the
SM/tensor thresholds are provisional until measured on a GPU here. The share of the peak is known in a Sweep (it
probes the peak first).
""")

st.subheader("Cluster")
cluster.cluster_panel()

st.subheader("Measured matmul peak")
st.caption("A short float32 matrix-multiply probe per device, in a separate process; the ceiling Sweep compares "
           "achieved training GFLOP/s against. Cached per device and thread count.")

peaks = machine.known_peaks()
if peaks:
    st.table([{"device": escape(p.device or ""), "threads": escape(p.threads or ""), "size": escape(p.size or ""),
               "peak GFLOP/s": round(p.peak_gflops, 1), "framework": escape(p.framework or ""),
               "measured": escape(pd.to_datetime(p.measured_at, unit="s").strftime("%Y-%m-%d %H:%M")
                                  if p.measured_at is not None else "")}
              for p in peaks])
choices = common.target_options(hardware)
c1, c2 = st.columns([2, 1])
target = c1.selectbox("Device", choices, index=choices.index("cpu"), key="sys_peak_target")
if c2.button("Measure peak", key="sys_peak", icon=":material/speed:", disabled=not common.can_control()):
    chosen = Target.parse(target)
    busy = [s.id for s in manager.snapshots() if s.active]
    waiting = f", after run(s) {', '.join(f'#{i:d}' for i in busy)}: a probe never runs beside a run" if busy else ""
    with st.spinner(f"Measuring {escape(target)} (a few seconds{waiting})…"):
        try:
            result = manager.peaks.queue(chosen.device, cpu_threads=chosen.cpu_threads, refresh=True).result()
            st.success(f"{escape(target)}: {result.peak_gflops:,.1f} GFLOP/s "
                       f"(float32 matmul {escape(result.size)}²)")
        except (ValueError, machine.ProbeError) as exc:
            st.error(f"The probe failed: {escape(exc, limit=600)}")
