"""Why a run went at the speed it did: a one-line verdict from the run's own evidence, and the knob that tests it.

``diagnose`` is a pure function of what a run record holds (epochs, samples, info, config) and, when known, the
device's measured matmul peak. It returns a ``Diagnosis`` (verdict, kind, knob, evidence, missing; in a record's
summary as ``{"verdict", "kind", "knob", "evidence", "missing"}``):

- ``host-bound``: the device waited for per-step host work (Python, the callbacks, moving the batch, launching the
  step). Knob: more steps per execution, or a larger batch; both spread that fixed cost over more samples.
- ``compute-bound``: the device's arithmetic was the limit (SM or tensor activity high, or a large share of the
  measured peak, or every CPU thread busy). Knob: a faster device or lower precision; a larger batch or more steps
  per execution will not shorten the epoch much.
- ``input-bound``: neither the device nor the training process was busy; the steps waited for data. Knob: keep the
  data in memory and prefetch more; the synthetic dataset of the same shapes tests it.
- ``undetermined``: the evidence is missing or contradicts itself; the sentence says what is missing.

The thresholds below are set from runs this project measured; docs/GPU.md, 'The diagnosis thresholds and the
figures that set them', lists each with its runs. NVML's "GPU utilization" is the share of time any kernel ran, not
how much of the chip worked, so it can show that a GPU *waited* (low), never that its arithmetic was the limit
(high); for that the diagnosis needs SM/tensor activity (``sm_active_percent`` / ``tensor_active_percent`` in the GPU
readings, when sampled) or the achieved share of the measured peak.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from bench.vocab.config import RunConfig
from bench.vocab.run_info import RunInfo
from bench.analysis import metrics
from bench.vocab.readings import Epoch, Sample
from bench.vocab.target import of_config, on_gpu
from bench.vocab.record_types import Diagnosis, Kind

# -- thresholds (each with the runs that set it: docs/GPU.md, 'The diagnosis thresholds and the figures that set them')
# NVML busy below this = the GPU sat idle most of the time.
GPU_WAITING_PERCENT = 30.0
# The training process using at least this much of one core = its thread was busy issuing steps.
ONE_CORE_BUSY_PERCENT = 70.0
# Below this share of one core, the training process mostly waited (for data, or the disk): input-bound.
PROCESS_IDLE_PERCENT = 35.0
# Achieved training GFLOP/s at or above this share of the device's matmul peak, with steps of HOST_STEP_MS or more,
# = compute-bound.
PEAK_FRACTION_COMPUTE = 0.25
# At or above this share the run is compute-bound whatever its step time. Between the two a short step is not enough:
# a middling share in short steps can still be host-bound (more steps per execution then shorten the epoch).
PEAK_FRACTION_ALONE = 0.45
# SM activity (share of cycles with a warp resident) and tensor-pipe activity at or above these = compute-bound.
# Provisional (not yet measured on hardware), from NVIDIA's DCGM guidance that SM activity under 50 % leaves most of
# the chip idle.
SM_ACTIVE_COMPUTE_PERCENT = 50.0
TENSOR_ACTIVE_COMPUTE_PERCENT = 30.0
# A CPU run whose process kept this share of its threads busy was limited by its cores' arithmetic.
CPU_THREADS_BUSY_SHARE = 0.5
# A step shorter than this is in the range where per-step host work is the floor.
HOST_STEP_MS = 5.0
# Training GFLOP/s below this per busy core cannot be a CPU limited by its arithmetic, whatever share of its threads the
# process kept busy (busy cores doing little arithmetic are dispatching ops one by one). Applied only where no measured
# peak gives the share.
CPU_CORE_FLOOR_GFLOPS = 5.0
# Utilization read from fewer samples than this inside the steady epochs is not a verdict: a process CPU sample covers
# the interval before it, so one sample can misread a short epoch. The same floor decides whether a utilization mean
# may be called the steady epochs' (metrics.MIN_WINDOW_SAMPLES, its one home).
MIN_STEADY_SAMPLES = metrics.MIN_WINDOW_SAMPLES
# Whole-machine CPU at or above this while the run's own process was not = other work competed for the cores.
MACHINE_BUSY_PERCENT = 90.0

KNOBS = {
    "host-bound": "try a larger batch or more steps per execution",
    "compute-bound": ("try a faster device or mixed_float16 precision; a larger batch or more steps per execution "
                      "will not shorten the epoch much"),
    "input-bound": "keep the data in memory and prefetch more: the synthetic dataset of the same shapes tests it",
    "undetermined": "rerun with at least 3 epochs long enough for several samples each, in a Sweep (it measures the "
                    "peak), then try more steps per execution: if the epoch shortens, the run was host-bound",
}




def _num(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def _gpu_mean(samples: Sequence[Sample], key: str) -> float | None:
    return metrics.mean_or_none(getattr(g, key) for s in samples for g in s.gpus or ())


def _on_gpu(config: RunConfig | None, info: RunInfo) -> bool | None:
    """bench.vocab.target.on_gpu of a run's config (no target when it has none, or names no device this version reads)
    and placement."""
    return on_gpu(of_config(config) if config is not None else None, info.placement)


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.0f} %"


def diagnose(epochs: Sequence[Epoch], samples: Sequence[Sample],
             info: RunInfo | None = None, config: RunConfig | None = None,
             peak_gflops: float | None = None) -> Diagnosis:
    """The verdict for one run (see the module's docstring)."""
    info = info or RunInfo()
    on_gpu = _on_gpu(config, info)
    batch = _num(config.batch_size) if config is not None else None
    spe = config.steps_per_execution if config is not None else 1
    n_train = _num(info.n_train)
    steady_s = metrics.steady_epoch_seconds(epochs)
    steps = math.ceil(n_train / batch) if n_train and batch else None
    step_ms = steady_s / steps * 1000 if steady_s and steps else None
    rate = metrics.steady_samples_per_s(epochs)
    flops = _num(info.flops_per_sample)
    achieved = metrics.achieved_gflops(flops, rate) if flops else None
    peak = _num(peak_gflops)
    fraction = achieved / peak if achieved and peak else None
    compute_ms = flops * batch / (peak * 1e9) * 1000 if flops and batch and peak else None

    steady = metrics.training_windows(epochs, samples)[0]
    gpu_busy = metrics.mean_gpu_util_percent(steady)
    sm = _gpu_mean(steady, "sm_active_percent")
    tensor = _gpu_mean(steady, "tensor_active_percent")
    process = metrics.mean_or_none(s.process_cpu_percent for s in steady)
    machine = metrics.mean_or_none(s.cpu_percent for s in steady)
    threads = _num(info.threads) or (_num(config.cpu_threads) if on_gpu is False and config is not None else None)

    evidence: dict[str, Any] = {
        "device": None if on_gpu is None else ("gpu" if on_gpu else "cpu"),
        "steady_epoch_seconds": steady_s, "steps_per_epoch": steps, "step_ms": step_ms,
        "steps_per_execution": spe, "batch_size": int(batch) if batch else None,
        "steady_samples": len(steady), "gpu_busy_percent": gpu_busy, "sm_active_percent": sm,
        "tensor_active_percent": tensor, "process_cpu_percent": process, "machine_cpu_percent": machine,
        "threads": int(threads) if threads else None, "achieved_gflops": achieved, "peak_gflops": peak,
        "peak_fraction": fraction, "compute_ms_at_peak": compute_ms,
    }
    missing: list[str] = []
    step_text = f"a step took {step_ms:.2f} ms" if step_ms is not None else "the step time is unknown"
    if compute_ms is not None and step_ms is not None:
        step_text += f" (its arithmetic needs {compute_ms:.3f} ms at the device's measured peak)"
    if spe > 1:
        step_text += f" at {spe} steps per execution"

    def result(kind: Kind, because: str, knob: str | None = None) -> Diagnosis:
        knob = knob or KNOBS[kind]
        return Diagnosis(kind=kind, verdict=f"{kind}: {because}: {knob}", knob=knob, evidence=evidence,
                         missing=tuple(missing))

    if steady_s is None:
        missing.append("a steady epoch")
        return result("undetermined", "no steady epoch (the first includes tracing, so at least 2 epochs are needed)")
    if fraction is not None and (fraction >= PEAK_FRACTION_ALONE or (
            fraction >= PEAK_FRACTION_COMPUTE and step_ms is not None and step_ms >= HOST_STEP_MS)):
        return result("compute-bound", f"training reached {achieved:,.0f} GFLOP/s, {fraction * 100:.0f} % of the "
                                       f"{'GPU' if on_gpu else 'device'}'s measured peak, and {step_text}")
    if on_gpu and ((sm is not None and sm >= SM_ACTIVE_COMPUTE_PERCENT)
                   or (tensor is not None and tensor >= TENSOR_ACTIVE_COMPUTE_PERCENT)):
        return result("compute-bound", f"the GPU's SMs were active {_pct(sm)} and its tensor cores {_pct(tensor)} "
                                       f"of the time, and {step_text}")
    if not steady:
        missing.append("samples during the steady epochs")
        return result("undetermined", f"no utilization sample fell inside the steady epochs ({steady_s:.2f} s each, "
                                      "shorter than the sampling interval), so what the device and host did is "
                                      f"unknown; {step_text}",
                      "raise the sample limit (longer epochs) or lower the sampling interval, and run again")
    if len(steady) < MIN_STEADY_SAMPLES:
        missing.append(f"at least {MIN_STEADY_SAMPLES} samples during the steady epochs")
        return result("undetermined", f"only {len(steady)} utilization sample(s) fell inside the steady epochs "
                                      f"({steady_s:.2f} s each), too few to say what the device and host did; "
                                      f"{step_text}",
                      "raise the sample limit (longer epochs) or lower the sampling interval, and run again")
    if on_gpu is None:
        missing.append("the device")
        return result("undetermined", "the record does not say which device trained")
    if on_gpu:
        return _gpu_verdict(result, missing, gpu_busy, sm, process, machine, step_text, spe)
    return _cpu_verdict(result, missing, process, machine, threads, step_ms, step_text, spe,
                        achieved if peak is None else None)


def _host_knob(spe: int) -> str:
    if spe > 1:
        return f"try a larger batch or more than {spe} steps per execution"
    return KNOBS["host-bound"]


def _gpu_verdict(result: Any, missing: list[str], gpu_busy: float | None, sm: float | None, process: float | None,
                 machine: float | None, step_text: str, spe: int) -> Diagnosis:
    if gpu_busy is None:
        missing.append("GPU utilization")
        return result("undetermined", f"no GPU utilization was sampled (NVML absent or the GPU lost); {step_text}")
    if gpu_busy < GPU_WAITING_PERCENT:
        if process is not None and process >= ONE_CORE_BUSY_PERCENT:
            return result("host-bound", f"the GPU was busy {_pct(gpu_busy)} of the time, the training process used "
                                        f"{_pct(process)} of one core, and {step_text}", _host_knob(spe))
        if process is not None and process < PROCESS_IDLE_PERCENT:
            return result("input-bound", f"the GPU was busy {_pct(gpu_busy)} of the time and the training process "
                                         f"used only {_pct(process)} of one core, so both waited; {step_text}")
        if machine is not None and machine >= MACHINE_BUSY_PERCENT:
            return result("input-bound", f"the GPU was busy {_pct(gpu_busy)} of the time while the machine's CPUs "
                                         f"were {_pct(machine)} busy: feeding the steps fell behind; {step_text}")
        if process is None:
            missing.append("process CPU")
        return result("undetermined", f"the GPU was busy only {_pct(gpu_busy)} of the time, but the training process "
                                      f"({_pct(process)} of one core) was neither clearly busy nor idle; {step_text}")
    if sm is None:
        missing.append("SM activity")
    return result("undetermined", f"NVML says a kernel ran {_pct(gpu_busy)} of the time, which does not tell how much "
                                  f"of the chip worked; SM activity was {'not sampled' if sm is None else _pct(sm)} "
                                  f"and no peak share says compute-bound; {step_text}")


def _cpu_verdict(result: Any, missing: list[str], process: float | None, machine: float | None,
                 threads: float | None, step_ms: float | None, step_text: str, spe: int,
                 achieved: float | None = None) -> Diagnosis:
    """The verdict for a CPU run from its process's share of its threads; ``achieved`` (training GFLOP/s, given only
    where no measured peak weighs it) keeps busy cores that did little arithmetic from reading compute-bound."""
    if process is None:
        missing.append("process CPU")
        return result("undetermined", f"the training process's CPU use was not sampled; {step_text}")
    if threads is None:
        missing.append("thread count")
        return result("undetermined", f"the record does not say how many threads the run had; {step_text}")
    share = process / (threads * 100)
    cores = f"the training process kept {process / 100:.1f} of its {threads:.0f} threads' cores busy"
    busy_cores = max(process / 100, 1.0)
    if achieved is not None and share >= CPU_THREADS_BUSY_SHARE and achieved < CPU_CORE_FLOOR_GFLOPS * busy_cores:
        return result("host-bound", f"{cores} ({share * 100:.0f} %) yet trained at {achieved:.1f} GFLOP/s, under "
                                    f"{CPU_CORE_FLOOR_GFLOPS:.0f} GFLOP/s a busy core: the cores ran the framework's "
                                    f"per-step and per-op work, not arithmetic, and {step_text}",
                      f"{_host_knob(spe)}; under JAX, turn XLA on (jit_compile)")
    if share >= CPU_THREADS_BUSY_SHARE and threads >= 2 and (step_ms is None or step_ms >= HOST_STEP_MS):
        return result("compute-bound", f"{cores} ({share * 100:.0f} %) and {step_text}")
    if process < PROCESS_IDLE_PERCENT:
        return result("input-bound", f"the training process used only {_pct(process)} of one core; {step_text}")
    if machine is not None and machine >= MACHINE_BUSY_PERCENT and share < CPU_THREADS_BUSY_SHARE:
        return result("undetermined", f"other work competed for the CPU (machine {_pct(machine)} busy, {cores}); "
                                      f"{step_text}", "run again with the machine otherwise idle")
    if step_ms is not None and step_ms < HOST_STEP_MS:
        return result("host-bound", f"{step_text}, too short for the arithmetic to dominate, and {cores} "
                                    f"({share * 100:.0f} %)", _host_knob(spe))
    if share >= CPU_THREADS_BUSY_SHARE:
        return result("compute-bound", f"{cores} ({share * 100:.0f} %) and {step_text}")
    return result("undetermined", f"{cores} ({share * 100:.0f} %), neither all of them nor one, and {step_text}")
