"""`make gpu-verify`: every GPU claim the product makes, checked on the GPU at hand, in steps of at most 10 minutes.

    python scripts/gpu_verify.py [--out docs/results/verify] [--steps doctor,presets,sweeps,steps,torch,live,claims]
                                 [--doc docs/GPU.md]

Each GPU step runs `scripts/gpu_measure.sh STEP OUT` (records from `python -m bench ... --json`, Keras on the backend
KERAS_BACKEND names: JAX or torch where the GPU machine has no TensorFlow, as docs/GPU.md describes); `live` runs the
Train page in AppTest during a real GPU run (scripts/gpu_live_panel.py; it needs Streamlit, carried as wheels where the
machine lacks it). A step is stopped at 10 minutes, and steps that would start after 30 minutes in all are left for a
later call (`--steps`). The last step reads the records and writes the "Checked on hardware" table of docs/GPU.md:
claim, expected, measured, record file. A claim with no record says "not yet checked on hardware", never a guess. On a
machine without a usable GPU every GPU step prints `skipped: no GPU (why)` and the kit exits 0, so CI runs it and it
cannot rot.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

try:  # run from the checkout: `PYTHONPATH=. python3 scripts/gpu_verify.py` (make does)
    from benchmarks.common import checkout_python_path
    from bench.hardware import doctor
    from bench.hardware.monitor import sources
except ModuleNotFoundError as missing:  # a Python without the project's packages: say what to do, no traceback
    print(f"error: make gpu-verify needs the project's packages ({missing.name} is not installed in "
          f"{sys.executable}): run `make install-dev` first, or on a GPU machine without network install the "
          f"carried wheels as docs/GPU.md says", file=sys.stderr)
    sys.exit(2)

ROOT = Path(__file__).resolve().parents[1]

STEPS = ("doctor", "presets", "sweeps", "steps", "torch", "live", "scaling", "claims")
STEP_LIMIT_S = 600
KIT_LIMIT_S = 1800
BEGIN, END = "<!-- checked-on-hardware:begin -->", "<!-- checked-on-hardware:end -->"
NOT_CHECKED = "not yet checked on hardware"


@dataclass(frozen=True)
class Claim:
    claim: str
    expected: str
    record: str  # the record file (in the output folder) it is read from
    measure: Callable[[Any], tuple[bool, str]]  # the record -> (holds, what was measured)


def _samples(doc: Any) -> list[dict[str, Any]]:
    runs = (doc.get("runs") or []) if isinstance(doc, dict) and "runs" in doc else [doc]
    return [s for r in runs if isinstance(r, dict) for s in r.get("samples") or []]


def _gpu_readings(doc: Any) -> list[dict[str, Any]]:
    return [g for s in _samples(doc) for g in s.get("gpus") or [] if isinstance(g, dict)]


def _gpm(doc: Any) -> tuple[bool, str]:
    values = [g.get("sm_active_percent") for g in _gpu_readings(doc)]
    seen = [v for v in values if v is not None]
    return bool(seen), f"SM active in {len(seen)} of {len(values)} GPU readings (max {max(seen, default=0):.0f} %)"


def _truth(doc: Any) -> tuple[bool, str]:
    readings = _gpu_readings(doc)
    have = {key: sum(g.get(key) is not None for g in readings)
            for key in ("power_w", "sm_clock_mhz", "throttle_reasons")}
    return bool(readings) and all(n == len(readings) for n in have.values()), ", ".join(f"{k} in {n}/{len(readings)}" for k, n in have.items())


def _gpu_power_series(run: dict[str, Any]) -> list[tuple[float, float, float]]:
    """(t_s, power W, counter J) of the training GPU at each sample of a run that has both readings."""
    points = []
    for sample in run.get("samples") or []:
        gpu = (sample.get("gpus") or [{}])[0]
        if gpu.get("power_w") is not None and gpu.get("energy_j") is not None:
            points.append((sample["t_s"], gpu["power_w"], gpu["energy_j"]))
    return points


def _gap(points: list[tuple[float, float, float]]) -> float | None:
    """|counter delta - power integrated (trapezoids)| / counter delta over the points; None without a span."""
    counter = points[-1][2] - points[0][2] if len(points) > 1 else 0.0
    integral = sum((b[0] - a[0]) * (a[1] + b[1]) / 2 for a, b in zip(points, points[1:]))
    return abs(counter - integral) / counter if counter > 0 else None


def _energy(doc: Any) -> tuple[bool, str]:
    """NVML's energy counter (what an epoch's joules are read from) against the sampled power integrated over the
    same span: over each GPU run as a whole, and over each steady epoch that holds three samples or more (an epoch
    shorter than that is read from the counter interpolated between the samples either side, bench.hardware.energy)."""
    runs = (doc.get("runs") or []) if isinstance(doc, dict) and "runs" in doc else [doc]
    run_gaps, epoch_gaps = [], []
    for run in runs:
        points = _gpu_power_series(run)
        if (gap := _gap(points)) is not None:
            run_gaps.append(gap)
        for epoch in run.get("epochs") or []:
            if epoch.get("includes_tracing"):
                continue
            inside = [p for p in points if epoch["t_start_s"] <= p[0] <= epoch["t_end_s"]]
            if len(inside) >= 3 and (gap := _gap(inside)) is not None:
                epoch_gaps.append(gap)
    if not run_gaps:
        return False, "no GPU run with the energy counter and power sampled"
    worst = max(run_gaps + epoch_gaps)
    epochs = (f"; {len(epoch_gaps)} steady epoch(s) with 3+ samples, largest gap {max(epoch_gaps):.1%}" if epoch_gaps
              else "; no steady epoch held 3 samples (each shorter than 3 sampling intervals)")
    return worst <= 0.10, f"whole GPU run(s): largest gap {max(run_gaps):.1%}{epochs}"


def _below_peak(doc: Any) -> tuple[bool, str]:
    rows = [r for r in doc.get("rows") or [] if r.get("achieved_gflops") and r.get("peak_gflops")]
    over = [r for r in rows if r["achieved_gflops"] > r["peak_gflops"]]
    return bool(rows) and not over, f"{len(over)} of {len(rows)} points above their peak"


def _diagnosis(doc: Any) -> tuple[bool, str]:
    kinds = {(r.get("size"), r.get("batch_size")): r.get("diagnosis_kind") for r in doc.get("rows") or []
             if r.get("target") == "gpu:0"}
    small, large = kinds.get(("xs", 32)), kinds.get(("xl", 2048))
    return small == "host-bound" and large == "compute-bound", f"xs@32: {small}; xl@2048: {large}"


def _activity(doc: Any) -> tuple[bool, str]:
    """SM and tensor activity of the sweep's compute-bound point against the diagnosis's provisional thresholds."""
    from bench.analysis.diagnosis import SM_ACTIVE_COMPUTE_PERCENT as SM, TENSOR_ACTIVE_COMPUTE_PERCENT as TENSOR

    row = next((r for r in doc.get("rows") or [] if r.get("target") == "gpu:0" and r.get("size") == "xl"
                and r.get("batch_size") == 2048), None)
    if row is None or row.get("sm_active_percent") is None:
        return False, "no MLP xl at batch 2048 with SM activity in the record"
    sm, tensor = row["sm_active_percent"], row.get("tensor_active_percent") or 0.0
    share = row.get("peak_fraction") or 0.0
    return sm >= SM or tensor >= TENSOR, (f"MLP xl at batch 2048 ({share:.0%} of the peak, {row.get('diagnosis_kind')}): "
                                          f"SM active {sm:.1f} % (threshold {SM:.0f}), tensor {tensor:.1f} % "
                                          f"(threshold {TENSOR:.0f})")


def _overhead(doc: Any) -> tuple[bool, str]:
    """The engine's median steady epoch against a bare model.fit's, alternating (scripts/gpu_engine_vs_bare.py)."""
    ratio, spread = doc["engine_vs_bare_ratio"], doc.get("bare_spread") or 0.0
    bound = 1.0 + max(0.05, spread)
    return ratio <= bound, (f"engine {doc['engine_steady_s']:.3f} s against bare {doc['bare_steady_s']:.3f} s a steady "
                            f"epoch: ratio {ratio:.3f} (paired {doc.get('paired_ratio', float('nan')):.3f}; bound "
                            f"{bound:.3f}, the bare runs' spread {spread:.1%})")


def _steps(doc: Any) -> tuple[bool, str]:
    rows = {r.get("steps_per_execution"): r.get("steady_epoch_seconds") for r in doc.get("rows") or []
            if r.get("target") == "gpu:0" and r.get("size") == "xs"}
    measured = ", ".join(f"{k}: {v:.2f} s" for k, v in sorted(rows.items()) if v)
    return bool(rows.get(32)) and bool(rows.get(1)) and rows[32] < rows[1], f"MLP xs steady epoch by steps {measured}"


def _torch_on(doc: Any, device: str) -> tuple[bool, str]:
    runs = [r for r in doc.get("runs") or [] if (r.get("config") or {}).get("device") == "gpu:0"]
    placed = [str((r.get("info") or {}).get("placement")) for r in runs]
    return any(p.lower().startswith(device) for p in placed), f"placement {placed}"


def _torch(doc: Any) -> tuple[bool, str]:
    runs = [r for r in doc.get("runs") or [] if (r.get("config") or {}).get("device") == "gpu:0"]
    infos = [r.get("info") or {} for r in runs]
    placed = [f"{i.get('backend')}: {i.get('placement')}" for i in infos]
    on_gpu = [i for i in infos if i.get("backend") == "torch"
              and any(w in str(i.get("placement")).lower() for w in ("cuda", "gpu", "mps"))]
    return bool(on_gpu), f"placement {placed}"


def _live(doc: Any) -> tuple[bool, str]:
    """The Train page redrawn during a real GPU run: GPU tiles with a value, charts, no exception."""
    gpu = [v for v in (doc.get("tiles_live") or {}).get("GPU") or [] if isinstance(v, str) and v.endswith("%")]
    placement = str(doc.get("placement"))
    on_gpu = any(word in placement.lower() for word in ("gpu", "cuda", "mps"))
    exceptions = doc.get("exceptions") or []
    holds = (doc.get("status") == "finished" and on_gpu and bool(gpu) and not exceptions
             and (doc.get("charts_max") or 0) > 0)
    return holds, (f"run {doc.get('status')} on {placement}; {doc.get('redraws_live', 0)} redraws while live, GPU "
                   f"tile {', '.join(dict.fromkeys(gpu)) or 'never a value'}; up to {doc.get('charts_max', 0)} "
                   f"charts; {len(exceptions)} exception(s)")


def _scaling(doc: Any) -> tuple[bool, str]:
    rows = [r for r in doc.get("rows") or [] if (r.get("devices") or 1) > 1]
    measured = ", ".join(f"{r.get('size')} x{r.get('devices')}: "
                         + (f"{r['scaling_efficiency']:.0%}" if r.get("scaling_efficiency") is not None else "—")
                         for r in rows)
    return bool(rows) and all(r.get("scaling_efficiency") is not None for r in rows), measured or "no multi-GPU row"


def _source(vendor: str) -> Callable[[Any], tuple[bool, str]]:
    """The source that answered on a ``vendor`` GPU machine, and the figures one reading gave (source_<vendor>.json,
    written by the doctor step)."""
    def measure(doc: Any) -> tuple[bool, str]:
        reading = doc.get("reading") or {}
        given = sorted(k for k, v in reading.items() if v is not None and k not in ("index", "name", "source", "extra"))
        holds = doc.get("vendor") == vendor and reading.get("util_percent") is not None
        return holds, f"{doc.get('source')} answered for {', '.join(doc.get('gpus') or []) or 'no GPU'}; " \
                      f"one reading gave {', '.join(given) or 'nothing'}"
    return measure


def _doctor(doc: Any) -> tuple[bool, str]:
    missing = [c["name"] for c in doc.get("checks") or [] if c.get("status") != "ok"]
    return bool(doc.get("gpu_ready")), f"gpu_ready {doc.get('gpu_ready')}; not ok: {', '.join(missing) or 'none'}"


CLAIMS = (
    # A sweep's JSON keeps its runs' epochs, not their samples: the readings are read from the comparison's record.
    Claim("GPM figures while training on a Hopper GPU", "SM activity non-null", "issue2.json", _gpm),
    Claim("Power, SM clock and throttle reasons sampled", "present in every GPU reading", "issue2.json", _truth),
    Claim("Energy per epoch from NVML's counter", "within 10 % of power integrated over the same samples",
          "issue2.json", _energy),
    Claim("Achieved GFLOP/s never above the measured peak", "no point above its peak", "sweep.json", _below_peak),
    Claim("Diagnosis thresholds (provisional until this row is checked)",
          "MLP xs at batch 32 host-bound, MLP xl at batch 2048 compute-bound", "sweep_batch.json", _diagnosis),
    Claim("SM and tensor activity of a compute-bound run (the diagnosis's provisional thresholds)",
          "MLP xl at batch 2048: SM or tensor activity at or above its threshold", "sweep_batch.json", _activity),
    Claim("The engine's overhead over a bare model.fit on the GPU (MLP s, batch 128, alternating)",
          "median steady epoch within 5 % or the bare runs' spread", "evb_jax.json", _overhead),
    Claim("Steps per execution lift the per-step floor", "MLP xs: 32 steps per call faster than 1",
          "sweep_steps.json", _steps),
    Claim("The torch backend trains on the GPU", "placement on the GPU", "torch_issue2.json", _torch),
    Claim("The Train page's live panel during a real GPU run (AppTest)",
          "GPU tile with a value while live, charts, no exception", "live.json", _live),
    Claim("Data-parallel scaling over GPUs (two or more)", "a scaling efficiency for every device count",
          "sweep_scaling.json", _scaling),
    Claim("`bench doctor` on the GPU machine", "gpu_ready true", "doctor.json", _doctor),
    # one row per vendor: which source answered there, and what one reading gave (docs/GPU.md, "Every accelerator")
    Claim("Apple silicon: the GPU source that answered (IOAccelerator via ioreg, macmon where installed)",
          "a source named, utilization read", "source_apple.json", _source("apple")),
    Claim("AMD: the GPU source that answered (AMD SMI, amdgpu sysfs without it)",
          "a source named, utilization read", "source_amd.json", _source("amd")),
    Claim("Intel GPU: the GPU source that answered (Level Zero Sysman through pyzes)",
          "a source named, utilization read", "source_intel.json", _source("intel")),
    Claim("TPU: the source that answered (libtpu's monitoring SDK)",
          "a source named, utilization read", "source_tpu.json", _source("tpu")),
    Claim("Apple silicon: a gpu:0 run trains on the Mac's GPU through torch (MPS)", "placement mps:0",
          "torch_issue2.json", lambda doc: _torch_on(doc, "mps")),
)


def claim_rows(out: Path) -> list[tuple[str, str, str, str]]:
    """(claim, expected, measured, record) for the table; a claim without its record is not yet checked."""
    rows = []
    for claim in CLAIMS:
        path = out / claim.record
        if not path.is_file():
            rows.append((claim.claim, claim.expected, NOT_CHECKED, "—"))
            continue
        try:
            holds, measured = claim.measure(json.loads(path.read_text(encoding="utf-8")))
        except (ValueError, KeyError, TypeError, ZeroDivisionError) as exc:
            holds, measured = False, f"record unreadable ({type(exc).__name__}: {exc})"
        rows.append((claim.claim, claim.expected, f"{'holds' if holds else 'DOES NOT HOLD'}: {measured}",
                     str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)))
    return rows


def write_table(doc_path: Path, rows: list[tuple[str, str, str, str]], when: str) -> None:
    table = [BEGIN, "", f"Checked by `make gpu-verify` ({when}).", "",
             "| claim | expected | measured | record |", "|---|---|---|---|"]
    table += [f"| {c} | {e} | {m} | {r} |" for c, e, m, r in rows]
    table += ["", END]
    text = doc_path.read_text(encoding="utf-8")
    block = "\n".join(table)
    if BEGIN in text and END in text:
        text = text[:text.index(BEGIN)] + block + text[text.index(END) + len(END):]
    else:
        text = text.rstrip() + "\n\n## Checked on hardware\n\n" + block + "\n"
    doc_path.write_text(text, encoding="utf-8")


def run_step(step: str, out: Path, report: doctor.Report, limit_s: float = STEP_LIMIT_S) -> None:
    if step == "doctor":
        (out / "doctor.json").write_text(json.dumps(report.model_dump(mode="json"), indent=2), encoding="utf-8")
        print(doctor.render(report))
        found = sources.find()
        if found.source is not None and found.source.info.vendor != "nvidia":  # which source answered, and a reading
            info = found.source.info
            collector = found.source.collector([0])
            record = {"vendor": info.vendor, "source": info.name, "gpus": [g.name for g in found.source.gpus()],
                      "reading": collector.collect()[0].to_dict(), "tried": dict(found.tried)}
            collector.close()
            (out / f"source_{info.vendor}.json").write_text(json.dumps(record, indent=2), encoding="utf-8")
            print(f"doctor: GPU readings from {info.name} ({info.vendor})")
        return
    if step == "live":
        command = [sys.executable, str(ROOT / "scripts" / "gpu_live_panel.py"), str(out / "live.json")]
    else:
        command = ["bash", str(ROOT / "scripts" / "gpu_measure.sh"), step, str(out)]
    started = time.monotonic()
    try:
        done = subprocess.run(command, cwd=ROOT, timeout=limit_s, check=False,
                              env={**os.environ, "PYTHONPATH": checkout_python_path()})
    except subprocess.TimeoutExpired:
        print(f"{step}: stopped at its limit of {limit_s:.0f} s; the records it finished are kept", flush=True)
        return
    print(f"{step}: exit {done.returncode} in {time.monotonic() - started:.0f} s", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make gpu-verify", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "results" / "verify"))
    parser.add_argument("--steps", default=",".join(STEPS), help=f"some of {','.join(STEPS)}")
    parser.add_argument("--doc", default=str(ROOT / "docs" / "GPU.md"))
    parser.add_argument("--table-only", action="store_true",
                        help="measure nothing: rewrite the table from the records already in --out (any machine; "
                             "the records name the GPU they were measured on)")
    args = parser.parse_args(argv)
    steps = [s.strip() for s in args.steps.split(",") if s.strip()]
    unknown = [s for s in steps if s not in STEPS]
    if unknown:
        parser.error(f"unknown step(s) {', '.join(unknown)}; the steps are {', '.join(STEPS)}")
    if args.table_only:
        return write_claims(Path(args.out), Path(args.doc))
    report = doctor.diagnose(framework_timeout_s=120)
    why = next((c.detail for c in report.checks if c.status != "ok"), "no usable GPU")
    out = Path(args.out)
    started = time.monotonic()
    for step in steps:
        if step == "claims":
            continue
        if not report.gpu_ready:
            print(f"{step}: skipped: no GPU ({why})", flush=True)
            continue
        left = KIT_LIMIT_S - (time.monotonic() - started)
        if left < 60:
            print(f"{step}: not run: the kit's {KIT_LIMIT_S // 60} minutes are spent (run it with --steps {step})",
                  flush=True)
            continue
        out.mkdir(parents=True, exist_ok=True)
        run_step(step, out, report, min(STEP_LIMIT_S, left))
    if "claims" in steps:
        if not report.gpu_ready:
            print(f"claims: skipped: no GPU ({why}); docs/GPU.md keeps every row {NOT_CHECKED!r}", flush=True)
        else:
            write_claims(out, Path(args.doc))
    return 0


def measured_on(out: Path) -> str:
    """The GPU and the date the records in ``out`` were measured on, from the first record that names them."""
    for path in sorted(out.glob("*.json")):
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            continue
        for run in (doc.get("runs") or []) if isinstance(doc, dict) else []:
            gpus = (run.get("hardware") or {}).get("gpus") or []
            created = run.get("created_at")
            if gpus and gpus[0].get("name") and isinstance(created, (int, float)):
                return f"{gpus[0]['name']}, records of {time.strftime('%Y-%m-%d', time.gmtime(created))}"
    return "no record names its GPU"


def write_claims(out: Path, doc_path: Path) -> int:
    rows = claim_rows(out)
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    write_table(doc_path, rows, f"{measured_on(out)}; table written {when}")
    for claim, _expected, measured, _record in rows:
        print(f"claims: {claim}: {measured}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
