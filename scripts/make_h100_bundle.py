"""Build docs/results/bundle-h100.json, the shipped H100 machine bundle, from the H100 records beside it.

The records (docs/results/h100-*.json) were measured with `bench compare` and `bench sweep` on an H100 VM (JAX backend,
XLA on; docs/GPU.md), before `bench suite` existed. This script gathers their finished runs into one
``bench.bundle/1`` document, with the machine from h100-devices.json and h100-log-presets.txt, and says so in its
label, notes and suite version ("records", not a suite version): the Machines page flags it as unequal beside the
figures it affects. Run from the checkout: ``.venv/bin/python scripts/make_h100_bundle.py``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.vocab import records
from bench.vocab.record_types import Fingerprint
from bench.output import report

RESULTS = ROOT / "docs" / "results"
SOURCES = ("h100-seed-cifar10-mlp.json", "h100-seed-mnist-dense.json", "h100-seed-text.json", "h100-mlp-s.json",
           "h100-sweep-sizes.json", "h100-sweep-batch.json")


def main() -> int:
    devices = json.loads((RESULTS / "h100-devices.json").read_text())
    runs: list[records.RunRecord] = []
    peaks: dict[str, float | None] = {}
    for name in SOURCES:
        doc = json.loads((RESULTS / name).read_text())
        for run in doc.get("runs") or []:
            if run.get("status") == "finished":
                runs.append(records.RunRecord.model_validate({**run, "samples": run.get("samples") or [],
                                                         "label": f"{name} run {run.get('id')}"}))
        peaks.update({k: v for k, v in (doc.get("peaks_gflops") or {}).items() if v})
    cpu = devices["cpu"]
    machine = Fingerprint.model_validate({
        "cpu": {k: cpu[k] for k in ("model", "physical_cores", "logical_cores", "ram_total_mib")},
        "gpus": [{k: g[k] for k in ("name", "mem_total_mib", "driver", "cuda_driver_version")}
                 for g in devices["gpus"]],
        "gpu_reason": devices.get("gpu_reason"),
        "os": devices.get("platform"),
        "python": "3.12.3",  # h100-log-presets.txt
        "framework": "keras",
        "framework_version": "3.15.1",  # h100-log-presets.txt
        "backend": devices["framework"],
        "backend_version": devices["framework_version"],
        "backend_cuda": devices["framework_cuda"],
    })
    doc = records.bundle_record(
        machine=machine, suite_version="records", suite_variant="h100-results", runs=runs,
        label="H100 cloud VM (NVIDIA H100 80GB + 16-core Xeon), from docs/results records",
        notes=("Assembled by scripts/make_h100_bundle.py from docs/results/h100-*.json: runs measured with bench "
               "compare and bench sweep on an H100 VM (JAX backend, XLA on, docs/GPU.md), not by bench suite. It "
               "holds the seed presets, MLP s at batch 128 (CPU and GPU), MLP xs..xl at batch 128 (CPU and GPU) "
               "and MLP xs, m, xl at batch 32, 256 and 2048 (GPU only); no CNN or text size. Epochs held more "
               "samples than the quick suite's."),
        created_at=max(float(r.ended_at or 0) for r in runs) or None, peaks_gflops=peaks)
    records.load_bundle(json.loads(records.json_text(doc)))  # the one validator accepts what it ships
    out = RESULTS / "bundle-h100.json"
    report.write_file(out, records.json_text(doc))
    print(f"wrote {out}: {len(runs)} runs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
