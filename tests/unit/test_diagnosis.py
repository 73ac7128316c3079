"""The diagnosis: each verdict reached from records built to show it, and undetermined where evidence is missing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.vocab import records
from bench.vocab.config import RunConfig
from bench.analysis import diagnosis, run_summary, sweeps
from bench.vocab.readings import epochs_of, samples_of
from bench.vocab.run_info import RunInfo


def _epochs(seconds: float, n: int = 4, samples: int = 8000) -> list[dict]:
    """n epochs of ``seconds`` each, back to back from t=0 (epoch 1 includes tracing)."""
    out, t = [], 0.0
    for i in range(n):
        out.append({"epoch": i + 1, "epoch_seconds": seconds, "samples_per_s": samples / seconds, "loss": 1.0,
                    "includes_tracing": i == 0, "t_start_s": t, "t_end_s": t + seconds})
        t += seconds
    return out


def _samples(epochs: list[dict], *, process: float | None, machine: float | None = 50.0,
             gpu: dict | None = None, every: float = 0.1) -> list[dict]:
    end = epochs[-1]["t_end_s"]
    out, t = [], 0.05
    while t < end:
        sample = {"t_s": t, "cpu_percent": machine, "process_cpu_percent": process}
        if gpu is not None:
            sample["gpus"] = [{"index": 0, **gpu}]
        out.append(sample)
        t += every
    return out


def diagnose(epochs: list[dict], samples: list[dict], info=None, config=None, **kwargs) -> dict:
    """diagnosis.diagnose on the dict fixtures above, typed as a record's epochs, samples and config are read back."""
    return diagnosis.diagnose(epochs_of(epochs), samples_of(samples), info,
                              RunConfig.model_validate(config) if config is not None else None, **kwargs)


GPU_CONFIG = {"device": "gpu:0", "batch_size": 128, "steps_per_execution": 1}
CPU_CONFIG = {"device": "cpu", "batch_size": 32, "steps_per_execution": 1}
# the H100's MLP s at batch 128 (docs/results/h100-mlp-s.json): 20,000 samples, 157 steps of 2.25 ms
GPU_INFO = RunInfo(n_train=20000, flops_per_sample=1.2e6, placement="cuda:0")
CPU_INFO = RunInfo(n_train=8000, flops_per_sample=1.2e6, threads=2, placement="/device:CPU:0")


def test_host_bound_gpu_run_as_measured_on_the_h100():
    epochs = _epochs(0.354, samples=20000)
    d = diagnose(epochs, _samples(epochs, process=98, machine=9, gpu={"util_percent": 3.0}), GPU_INFO,
                 GPU_CONFIG, peak_gflops=173_325)
    assert d.kind == "host-bound"
    assert d.verdict.startswith("host-bound: the GPU was busy 3 % of the time, the training process used 98 %")
    assert "more steps per execution" in d.verdict and d.knob in d.verdict
    ev = d.evidence
    assert ev["steps_per_epoch"] == 157 and ev["step_ms"] == pytest.approx(2.25, abs=0.01)
    assert ev["gpu_busy_percent"] == pytest.approx(3.0) and ev["peak_fraction"] < 0.01
    assert ev["compute_ms_at_peak"] < 0.01  # the arithmetic is a tiny part of the step


def test_host_bound_with_steps_per_execution_asks_for_more_of_them():
    epochs = _epochs(0.2, samples=20000)
    d = diagnose(epochs, _samples(epochs, process=100, gpu={"util_percent": 8.0}), GPU_INFO,
                 GPU_CONFIG | {"steps_per_execution": 8})
    assert d.kind == "host-bound" and "more than 8 steps per execution" in d.verdict
    assert "at 8 steps per execution" in d.verdict and d.evidence["steps_per_execution"] == 8


@pytest.mark.parametrize("gpu", [{"util_percent": 95.0, "sm_active_percent": 80.0},
                                 {"util_percent": 95.0, "sm_active_percent": 20.0, "tensor_active_percent": 45.0}])
def test_compute_bound_gpu_from_sm_or_tensor_activity(gpu):
    epochs = _epochs(3.0, samples=20000)
    d = diagnose(epochs, _samples(epochs, process=100, gpu=gpu), GPU_INFO, GPU_CONFIG)
    assert d.kind == "compute-bound" and "SMs were active" in d.verdict
    assert "will not shorten the epoch" in d.knob


def test_compute_bound_from_the_share_of_the_measured_peak():
    # the H100's MLP xl at batch 2048: 89 TFLOP/s of a 173 TFLOP/s peak, NVML 18 % busy (short epochs)
    epochs = _epochs(0.149, samples=60000)
    info = RunInfo(n_train=60000, flops_per_sample=89_053e9 / (60000 / 0.149), placement="cuda:0")
    d = diagnose(epochs, _samples(epochs, process=100, gpu={"util_percent": 18.0}, every=0.02), info,
                 GPU_CONFIG | {"batch_size": 2048}, peak_gflops=173_325)
    assert d.kind == "compute-bound" and "51 % of the GPU's measured peak" in d.verdict


def test_a_middling_peak_share_in_short_steps_is_not_compute_bound():
    """MLP s, batch 32, on the 2-core VM: 28 % of the peak at 2.3 ms a step, yet 1.8x faster at 8 steps/exec."""
    epochs = _epochs(0.58)  # 250 steps of 2.32 ms
    info = CPU_INFO.updated(flops_per_sample=1.22e6)
    d = diagnose(epochs, _samples(epochs, process=130, machine=67), info, CPU_CONFIG, peak_gflops=60.8)
    assert 0.25 < d.evidence["peak_fraction"] < 0.45
    assert d.kind == "host-bound"
    long_steps = _epochs(4.0)  # the same share in 16 ms steps: the arithmetic dominates
    info_long = CPU_INFO.updated(flops_per_sample=1.22e6 * 4.0 / 0.58)
    d = diagnose(long_steps, _samples(long_steps, process=130, machine=67), info_long, CPU_CONFIG,
                 peak_gflops=60.8)
    assert d.kind == "compute-bound" and "% of the device's measured peak" in d.verdict


def test_compute_bound_cpu_when_its_threads_are_busy_and_steps_long():
    epochs = _epochs(4.0)  # 2,000 samples/s of a 35 MFLOP model (MLP l): 70 GFLOP/s on 1.9 busy cores
    info = CPU_INFO.updated(flops_per_sample=35e6)
    d = diagnose(epochs, _samples(epochs, process=190, machine=96), info, CPU_CONFIG)
    assert d.kind == "compute-bound" and "1.9 of its 2 threads' cores" in d.verdict


def test_busy_cpu_cores_doing_little_arithmetic_are_host_bound_not_compute_bound():
    """Keras on JAX without XLA on the 2-core VM: 1.1 of 2 cores busy, 25 ms steps, 0.8 GFLOP/s (the kept record).
    The threads were busy dispatching ops one by one; it read compute-bound ('try a faster device')."""
    path = Path(__file__).resolve().parents[2] / "docs/measurements/scaling-jax.json"
    sweep = json.loads(path.read_text(encoding="utf-8"))
    row = next(r for r in sweep["rows"] if r["size"] == "xs" and r["devices"] == 1)
    assert row["achieved_gflops"] < 1.0
    epochs = _epochs(4.0)  # the same 2,000 samples/s with CPU_INFO's 1.2 MFLOP model: 2.4 GFLOP/s on 1.9 cores
    d = diagnose(epochs, _samples(epochs, process=190, machine=96), CPU_INFO, CPU_CONFIG)
    assert d.kind == "host-bound" and "2.4 GFLOP/s" in d.verdict and "jit_compile" in d.knob
    # a measured peak decides instead: 2.4 of 9 GFLOP/s is 27 % of it, in steps of 16 ms
    d = diagnose(epochs, _samples(epochs, process=190, machine=96), CPU_INFO, CPU_CONFIG, peak_gflops=9.0)
    assert d.kind == "compute-bound"


def test_host_bound_cpu_short_steps_on_one_core():
    epochs = _epochs(0.4)  # 250 steps of 1.6 ms
    d = diagnose(epochs, _samples(epochs, process=100, machine=60), CPU_INFO, CPU_CONFIG)
    assert d.kind == "host-bound" and "a step took 1.60 ms" in d.verdict


def test_input_bound_when_neither_gpu_nor_process_is_busy():
    epochs = _epochs(2.0, samples=20000)
    d = diagnose(epochs, _samples(epochs, process=12, gpu={"util_percent": 4.0}), GPU_INFO, GPU_CONFIG)
    assert d.kind == "input-bound" and "both waited" in d.verdict and "synthetic dataset" in d.knob


def test_input_bound_when_the_machines_cpus_are_saturated_feeding_the_gpu():
    epochs = _epochs(2.0, samples=20000)
    d = diagnose(epochs, _samples(epochs, process=50, machine=97, gpu={"util_percent": 6.0}), GPU_INFO,
                 GPU_CONFIG)
    assert d.kind == "input-bound" and "97 % busy" in d.verdict


def test_input_bound_cpu_process_idle():
    epochs = _epochs(3.0)
    d = diagnose(epochs, _samples(epochs, process=20, machine=25), CPU_INFO, CPU_CONFIG)
    assert d.kind == "input-bound"


def test_undetermined_without_a_steady_epoch():
    epochs = _epochs(1.0, n=1)
    d = diagnose(epochs, _samples(epochs, process=100), CPU_INFO, CPU_CONFIG)
    assert d.kind == "undetermined" and "no steady epoch" in d.verdict
    assert d.missing == ("a steady epoch",)


def test_undetermined_when_no_sample_fell_in_the_steady_epochs():
    epochs = _epochs(0.1)
    samples = [{"t_s": 5.0, "cpu_percent": 50.0, "process_cpu_percent": 100.0}]
    d = diagnose(epochs, samples, CPU_INFO, CPU_CONFIG)
    assert d.kind == "undetermined" and "samples during the steady epochs" in d.missing
    assert "sampling interval" in d.knob


def test_undetermined_from_too_few_steady_samples():
    epochs = _epochs(0.2)
    samples = [s for s in _samples(epochs, process=30, machine=40, every=0.5)]
    d = diagnose(epochs, samples, CPU_INFO, CPU_CONFIG)
    assert d.evidence["steady_samples"] < diagnosis.MIN_STEADY_SAMPLES
    assert d.kind == "undetermined" and "too few" in d.verdict


def test_busy_gpu_without_sm_activity_is_undetermined_not_compute_bound():
    """NVML's utilization only says a kernel ran: high is no proof that the chip's arithmetic was the limit."""
    epochs = _epochs(3.0, samples=20000)
    d = diagnose(epochs, _samples(epochs, process=100, gpu={"util_percent": 92.0}), GPU_INFO, GPU_CONFIG)
    assert d.kind == "undetermined" and "SM activity" in d.missing
    assert "not sampled" in d.verdict


def test_gpu_without_utilization_readings_is_undetermined():
    epochs = _epochs(1.0, samples=20000)
    d = diagnose(epochs, _samples(epochs, process=100, gpu={"util_percent": None}), GPU_INFO, GPU_CONFIG)
    assert d.kind == "undetermined" and "GPU utilization" in d.missing


def test_cpu_contended_by_other_work_is_undetermined():
    epochs = _epochs(0.4)
    d = diagnose(epochs, _samples(epochs, process=95, machine=100), CPU_INFO, CPU_CONFIG)
    assert d.kind == "undetermined" and "other work competed" in d.verdict


def test_summary_keeps_the_diagnosis_and_records_without_one_still_get_it():
    epochs = _epochs(0.4)
    samples = _samples(epochs, process=100, machine=60)
    summary = run_summary.summarize(epochs_of(epochs), samples_of(samples), info=CPU_INFO,
                                    config=RunConfig.model_validate(CPU_CONFIG))
    assert summary.diagnosis is not None and summary.diagnosis.kind == "host-bound"
    assert set(summary.to_dict()["diagnosis"]) >= {"verdict", "evidence"}
    old = records.run_record(id=1, status="finished", config=RunConfig.model_validate(CPU_CONFIG), hardware=None, info=CPU_INFO,
                             created_at=None,
                             started_at=None, ended_at=None, error=None, store_error=None, epochs=epochs,
                             samples=samples, summary=run_summary.RunSummary.model_validate({"steady_epoch_seconds": 0.4}))
    assert "diagnosis" not in old["summary"]  # kept as it was written
    assert old["summary"] == {"steady_epoch_seconds": 0.4}
    assert run_summary.diagnosis_of(records.RunRecord.model_validate(old)).kind == "host-bound"


def test_a_sweep_row_carries_steps_per_execution_and_the_verdict():
    epochs = _epochs(0.4)
    record = records.run_record(id=1, status="finished", config=RunConfig.model_validate(CPU_CONFIG | {"size": "xs"}),
                                hardware=None,
                                info=CPU_INFO.updated(params=100), created_at=None, started_at=None, ended_at=None,
                                error=None, store_error=None, epochs=epochs,
                                samples=_samples(epochs, process=100, machine=60))
    row = sweeps.sweep_row(records.RunRecord.model_validate(record), None)
    assert row.steps_per_execution == 1 and row.diagnosis_kind == "host-bound"
    del record["config"]["steps_per_execution"]  # a record from before the setting
    assert "steps_per_execution" not in records.RunRecord.model_validate(record).to_dict()["config"]
    assert sweeps.sweep_row(records.RunRecord.model_validate(record), None).steps_per_execution == 1


def test_thresholds_are_ordered_sensibly():
    assert diagnosis.PROCESS_IDLE_PERCENT < diagnosis.ONE_CORE_BUSY_PERCENT < 100
    assert 0 < diagnosis.PEAK_FRACTION_COMPUTE < 1
    assert diagnosis.GPU_WAITING_PERCENT > 27  # every host-bound H100 run read at most 27 % (docs/GPU.md)
