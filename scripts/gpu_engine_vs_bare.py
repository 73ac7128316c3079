"""Engine vs bare model.fit on a GPU, alternating, as `python -m bench overhead` does on the CPU (no browser there).

Usage: python scripts/gpu_engine_vs_bare.py OUT.json [ROUNDS]   (KERAS_BACKEND=jax or torch; a GPU machine; from the
checkout, which holds the harness in benchmarks/)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout: bench/ and benchmarks/

from bench.vocab.config import RunConfig  # noqa: E402
from bench.hardware import devices  # noqa: E402
from bench.runs.jobs import JobManager  # noqa: E402
from bench.vocab.settings import default_backend as backend  # noqa: E402
from benchmarks.common import scratch  # noqa: E402
from bench.store import Store  # noqa: E402
from benchmarks import stats  # noqa: E402
from benchmarks.overhead import bare_run, engine_run, machine  # noqa: E402


def main(out: str, rounds: int = 3) -> None:
    tmp = scratch("gpu-overhead-")
    config = RunConfig(model="mlp", size="s", epochs=6, batch_size=128, limit_samples=40000, device="gpu:0",
                       backend=backend(), jit_compile=backend() == "jax").validate(devices.discover())
    manager = JobManager(Store(tmp / "engine.sqlite3"))
    runs: list[dict] = []
    for rnd, kind in stats.schedule(["bare", "engine"], rounds):
        epochs = bare_run(config, tmp, rnd) if kind == "bare" else engine_run(manager, config)["epochs"]
        runs.append({"round": rnd, "kind": kind, "epochs": epochs})
        print(rnd, kind, [round(e["epoch_seconds"], 4) for e in epochs], flush=True)
    manager.shutdown()
    bare = [r for r in runs if r["kind"] == "bare"]
    engine = [r for r in runs if r["kind"] == "engine"]
    summary = {
        "config": config.to_dict(),
        "machine": machine(),
        "engine_vs_bare_ratio": stats.ratio_of_medians(engine, bare),
        "paired_ratio": stats.paired_ratio(engine, bare),
        "bare_steady_s": stats.pooled_median(bare),
        "engine_steady_s": stats.pooled_median(engine),
        "bare_spread": stats.spread(bare),
        "runs": runs,
    }
    Path(out).write_text(json.dumps(summary, indent=1), encoding="utf-8")
    print({k: v for k, v in summary.items() if k not in ("runs", "machine", "config")})


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 3)
