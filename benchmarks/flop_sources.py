"""The two FLOP sources side by side: the plans' formulas (bench.plans.models) and XLA's cost analysis of the training
step (bench.training.step_flops), on every family size and seed preset, and the compiler's count alone on the models
people bring (MobileNetV2, a residual block, an LSTM, attention, a nested model), where no formula exists; and what a
model file's check costs: how long the reading child takes and what the refusing process's memory peaks at for each
hostile file (a zip bomb, an overlong name, a model too large for the device).

    KERAS_BACKEND=jax python -m benchmarks.flop_sources [--json PATH] [--write-doc] [--smoke]

``--write-doc`` rewrites the section between the markers in docs/CALLBACK.md; ``--smoke``: every plan, one model file
(the residual block, built alone), nothing written to docs/ (tests/unit/test_smoke_flops.py holds the agreement's
bounds).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

from benchmarks import hostile_files, model_corpus

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "CALLBACK.md"
BEGIN, END = "<!-- flop-sources:begin -->", "<!-- flop-sources:end -->"
SHAPES = {"mnist": ((28, 28, 1), 10, None), "cifar10": ((32, 32, 3), 10, None), "imdb": ((200,), 2, 10_000)}


def plan_rows() -> list[dict[str, Any]]:
    """Formula and compiler for each family size on MNIST / IMDB shapes and each preset on its own data set."""
    import keras

    from bench.plans import models
    from bench.training import keras_build, step_flops

    cases: list[tuple[str, str | None, str]] = (
        [(f, s, "mnist") for f in ("mlp", "cnn") for s in models.SIZES] + [("text", s, "imdb") for s in models.SIZES]
        + [("seed-cifar10-mlp", None, "cifar10"), ("seed-mnist-dense", None, "mnist"), ("seed-text", None, "imdb")])
    rows = []
    for family, size, data in cases:
        shape, classes, vocab = SHAPES[data]
        plan = models.plan(family, size, shape, classes, vocab)
        with keras.StatelessScope(initialize_variables=False):
            compiled, reason = step_flops.step_flops(keras_build.build(plan), loops_counted=True)  # no RNN
        rows.append({"model": plan.name, "data": data, "params": plan.params, "formula": plan.flops_per_sample,
                     "compiler": compiled, "reason": reason,
                     "ratio": compiled / plan.flops_per_sample if compiled else None})
    return rows


def brought_models(folder: Path, smoke: bool) -> dict[str, tuple[Path, str]]:
    """The models people bring (benchmarks.model_corpus), saved by Keras; in a smoke pass its residual block alone:
    the pass reads one file, and building the whole corpus (MobileNetV2 the most) took most of its time."""
    import keras

    made = model_corpus.saved(keras, folder, ["residual"] if smoke else None)
    return {name: (path, model_corpus.DATASETS[name]) for name, (path, _) in made.items()}


def file_rows(files: dict[str, tuple[Path, str]]) -> list[dict[str, Any]]:
    """Each file checked as the dashboard checks an upload (the reading child): its figures and the time taken."""
    from bench.plans import datasets, model_file

    rows = []
    for name, (path, dataset) in files.items():
        info = datasets.get_info(dataset)
        start = time.monotonic()
        own = model_file.check_model_file(str(path), info.input_shape, info.num_classes, info.vocab_size)
        rows.append({"model": name, "data": dataset, "params": own.params, "compiler": own.flops_per_sample,
                     "reason": own.flops_reason, "check_s": time.monotonic() - start})
    return rows


def hostile_rows(folder: Path) -> list[dict[str, Any]]:
    """The bomb and the overlong name refused by a fresh process, as a dashboard's: the time and its memory's peak."""
    bomb = hostile_files.zip_bomb(folder / "bomb.keras")
    long_name = folder / "long_name.keras"
    with zipfile.ZipFile(long_name, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("config.json", b'{"class_name": "Sequential", "config": {"name": "' + b"n" * (60 << 20)
                         + b'"}}')
    rows = []
    for name, path in (("zip bomb: config.json inflating to 1 GiB", bomb),
                       ("a 60 MB model name", long_name)):
        answer = hostile_files.refused_in_a_process(path, timeout_s=120)
        rows.append({"file": name, "on_disk_mb": path.stat().st_size / 1e6, **answer})
    return rows


def markdown(result: dict[str, Any]) -> str:
    lines = [BEGIN, "", f"Measured by `python -m benchmarks.flop_sources --write-doc` on {result['machine']} "
             f"({result['when']}, Keras {result['keras']} on JAX {result['jax']}).", "",
             "| model | data | parameters | formulas, FLOP/sample | compiler, FLOP/sample | compiler / formulas |",
             "|---|---|---:|---:|---:|---:|"]
    for row in result["plans"]:
        compiled = f"{row['compiler']:,}" if row["compiler"] else f"not counted: {row['reason']}"
        ratio = f"{row['ratio']:.2f}" if row["ratio"] else ""
        lines.append(f"| {row['model']} | {row['data']} | {row['params']:,} | {row['formula']:,} | {compiled} | "
                     f"{ratio} |")
    lines += ["", "Models people bring (no formula exists for them), read as an upload is, by the reading child:", "",
              "| model | data | parameters | compiler, FLOP/sample | check, s |", "|---|---|---:|---:|---:|"]
    for row in result["files"]:
        compiled = f"{row['compiler']:,}" if row["compiler"] else f"not counted: {row['reason']}"
        lines.append(f"| {row['model']} | {row['data']} | {row['params']:,} | {compiled} | {row['check_s']:.1f} |")
    lines += ["", "Hostile files refused by a fresh process doing what the dashboard's server does on an upload:", "",
              "| file | on disk, MB | refused in, s | the process's peak memory (VmHWM), MiB |", "|---|---:|---:|---:|"]
    for row in result["hostile"]:
        lines.append(f"| {row['file']} | {row['on_disk_mb']:.1f} | {row['seconds']:.3f} | {row['peak_mib']:.0f} |")
    lines += ["", END]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--write-doc", action="store_true")
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args(argv)
    if os.environ.get("KERAS_BACKEND") != "jax":
        print("flop_sources: run it with KERAS_BACKEND=jax (the compiler's count lowers the step with JAX)",
              file=sys.stderr)
        return 2
    import jax
    import keras

    with tempfile.TemporaryDirectory() as folder:
        result = {"machine": f"{platform.node() or 'this machine'}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} at the start",
                  "when": time.strftime("%Y-%m-%d"), "keras": keras.__version__, "jax": jax.__version__,
                  "plans": plan_rows(), "files": file_rows(brought_models(Path(folder), args.smoke)),
                  "hostile": hostile_rows(Path(folder))}
    text = markdown(result)
    print(text)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")
    if args.write_doc and not args.smoke:
        doc = DOC.read_text(encoding="utf-8")
        start, end = doc.index(BEGIN), doc.index(END) + len(END)
        DOC.write_text(doc[:start] + text + doc[end:], encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
