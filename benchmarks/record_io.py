"""Reads and writes a long run's record the ways the project does: a 5,000-sample run and a 500-epoch run, as JSON in
(an import: text to a checked record), JSON out (an export: a record to text), the store's read (a record's decoded
columns to a checked record) and the trusted read (what the project wrote itself: once typed without checks, now the
same checked read, its row kept so that figures from before line up).

    python -m benchmarks.record_io [--repeats 7] [--json OUT]

Prints min and median milliseconds per operation over the repeats, with the revision measured, so figures taken
before and after a change to the record layer (bench.vocab.records, pydantic models) can be set side by side.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def gpu(rng: random.Random, index: int, i: int) -> dict[str, Any]:
    return {"index": index, "name": "NVIDIA H100 80GB HBM3", "util_percent": float(rng.randint(0, 100)),
            "mem_util_percent": float(rng.randint(0, 100)), "mem_used_mib": rng.uniform(1e3, 8e4),
            "mem_total_mib": 81559.0, "power_w": rng.uniform(60, 700), "temp_c": 50.0, "sm_clock_mhz": 1980.0,
            "power_limit_w": 700.0, "energy_j": 1e6 + i, "sm_active_percent": 40.0, "sm_occupancy_percent": 20.0,
            "tensor_active_percent": 1.0, "fp32_active_percent": 30.0, "fp16_active_percent": 0.0,
            "dram_active_percent": 10.0, "throttle_reasons": [], "source": "NVML"}


def sample(rng: random.Random, i: int, cores: int = 16) -> dict[str, Any]:
    return {"t_s": i * 0.25, "cpu_percent": rng.uniform(0, 100), "process_cpu_percent": rng.uniform(0, 400),
            "process_rss_mib": rng.uniform(500, 4000), "ram_used_mib": rng.uniform(4000, 60000), "cpu_energy_j": None,
            "cpu_per_core": [round(rng.uniform(0, 100), 1) for _ in range(cores)], "gpus": [gpu(rng, 0, i)]}


def epoch(rng: random.Random, n: int) -> dict[str, Any]:
    seconds = rng.uniform(1.0, 2.0)
    return {"epoch": n, "epoch_seconds": seconds, "includes_tracing": n == 1, "samples_per_s": 20000 / seconds,
            "loss": rng.uniform(0.1, 2.0), "accuracy": rng.uniform(0.1, 1.0), "val_loss": rng.uniform(0.1, 2.0),
            "val_accuracy": rng.uniform(0.1, 1.0), "t_start_s": n * 2.0, "t_end_s": n * 2.0 + seconds,
            "achieved_gflops": 120.0, "energy_j": {"cpu": 30.0, "gpu:0": 400.0}, "energy_estimated": [],
            "throttle_reasons": []}


def run_document(samples: int, epochs: int) -> dict[str, Any]:
    """A finished ``bench.run/1`` record with ``samples`` samples and ``epochs`` epochs, as an export writes one."""
    rng = random.Random(0)
    return {
        "schema": "bench.run/1", "id": 7, "status": "finished",
        "config": {"dataset": "synthetic-mnist", "model": "mlp", "size": "s", "epochs": max(1, min(epochs, 1000)),
                   "batch_size": 128, "device": "gpu:0", "cpu_threads": None, "sample_interval_s": 0.25,
                   "limit_samples": 20000, "seed": 42, "optimizer": "adam", "learning_rate": None,
                   "precision": "float32", "jit_compile": False, "steps_per_execution": 1, "npz_path": None,
                   "backend": "tensorflow", "devices": None, "workers": None, "worker_index": None},
        "hardware": {"cpu": {"model": "AMD EPYC", "physical_cores": 16, "logical_cores": 32, "ram_total_mib": 128000.0},
                     "gpus": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "mem_total_mib": 81559.0}],
                     "framework": "keras", "hostname": "h", "platform": "Linux"},
        "info": {"pid": 1234, "framework": "keras 3", "backend": "tensorflow", "placement": "/GPU:0", "params": 100000,
                 "phases": [{"phase": "training", "t_s": 1.0}]},
        "created_at": 1.7e9, "started_at": 1.7e9 + 1, "ended_at": 1.7e9 + 2000, "error": None, "store_error": None,
        "epochs": [epoch(rng, n) for n in range(1, epochs + 1)],
        "samples": [sample(rng, i) for i in range(samples)],
        # a finished run carries its summary (written when it finished): no export computes one
        "summary": {"steady_epoch_seconds": 1.5, "steady_samples_per_s": 13000.0, "first_epoch_seconds": 1.9,
                    "total_seconds": 1.5 * epochs, "epochs_done": epochs, "mean_cpu_percent": 50.0,
                    "mean_gpu_util_percent": 60.0, "steady_samples": samples, "energy_j_per_epoch": {"gpu:0": 400.0},
                    "energy_estimated": [], "energy_reasons": {}, "gpm_reasons": {}, "throttle_reasons": []},
    }


# -- the readers and writers of whichever version this is -------------------------------------------------------------
def operations() -> dict[str, Callable[[Any], Any]]:
    from bench.vocab import records

    run_cls = records.RunRecord

    def export(run: records.RunRecord) -> str:
        return records.json_text(run.to_dict())

    # the store reads what the project wrote itself through the same checked model_validate: there is no separate
    # trusted path any more, so the last two rows time the same reader
    return {"import (JSON text in)": records.load_json, "export (JSON text out)": export,
            "store read (checked, from dicts)": run_cls.model_validate,
            "trusted read (from dicts)": run_cls.model_validate}


def timed(fn: Callable[[Any], Any], arg: Any, repeats: int) -> tuple[float, float]:
    """(min, median) milliseconds of ``fn(arg)`` over ``repeats`` passes."""
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(arg)
        runs.append((time.perf_counter() - start) * 1000)
    return min(runs), statistics.median(runs)


def measure(repeats: int) -> dict[str, dict[str, tuple[float, float]]]:
    ops = operations()
    out: dict[str, dict[str, tuple[float, float]]] = {}
    for name, doc in (("5,000 samples, 10 epochs", run_document(5000, 10)),
                      ("500 epochs, 100 samples", run_document(100, 500))):
        text = json.dumps(doc)
        run = ops["import (JSON text in)"](text)
        args = {"import (JSON text in)": text, "export (JSON text out)": run,
                "store read (checked, from dicts)": json.loads(text), "trusted read (from dicts)": json.loads(text)}
        out[name] = {op: timed(fn, args[op], repeats) for op, fn in ops.items()}
    return out


def revision() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    figures = measure(args.repeats)
    print(f"revision {revision()}, Python {platform.python_version()}, {args.repeats} repeats, ms (min / median)")
    for run, ops in figures.items():
        for op, (low, mid) in ops.items():
            print(f"{run:26} {op:34} {low:8.1f} {mid:8.1f}")
    if args.json:
        args.json.write_text(json.dumps({"revision": revision(), "repeats": args.repeats, "figures": figures},
                                        indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
