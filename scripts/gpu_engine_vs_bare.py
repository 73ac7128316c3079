"""Engine vs bare model.fit on a GPU, alternating, as `python -m bench overhead` does on the CPU (no browser there).

Usage: python scripts/gpu_engine_vs_bare.py OUT.json [ROUNDS]   (KERAS_BACKEND=jax or torch; a GPU machine)
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from bench import overhead
from bench.config import RunConfig
from bench.jobs import JobManager
from bench.store import Store
from bench.settings import default_backend as backend


def main(out: str, rounds: int = 3) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="gpu-overhead-"))
    config = RunConfig(model="mlp", size="s", epochs=6, batch_size=128, limit_samples=40000, device="gpu:0",
                       backend=backend(), jit_compile=backend() == "jax").validate()
    (tmp / "config.json").write_text(json.dumps(config.to_dict()))
    manager = JobManager(Store(tmp / "engine.sqlite3"))
    runs: list[dict] = []
    for rnd, kind in overhead.schedule(["bare", "engine"], rounds):
        if kind == "bare":
            result = tmp / f"bare-{rnd}.json"
            overhead._child(["bare", str(tmp / "config.json"), str(result)], timeout_s=600,
                            log_path=tmp / f"bare-{rnd}.log")
            epochs = json.loads(result.read_text())["epochs"]
        else:
            epochs = overhead.engine_run(manager, config)["epochs"]
        runs.append({"round": rnd, "kind": kind, "epochs": epochs})
        print(rnd, kind, [round(e["epoch_seconds"], 4) for e in epochs], flush=True)
    manager.shutdown()
    bare = [r for r in runs if r["kind"] == "bare"]
    engine = [r for r in runs if r["kind"] == "engine"]
    summary = {
        "config": config.to_dict(),
        "machine": overhead.machine(),
        "engine_vs_bare_ratio": overhead.ratio_of_medians(engine, bare),
        "paired_ratio": overhead.paired_ratio(engine, bare),
        "bare_steady_s": overhead.pooled_median(bare),
        "engine_steady_s": overhead.pooled_median(engine),
        "bare_spread": overhead.spread(bare),
        "runs": runs,
    }
    Path(out).write_text(json.dumps(summary, indent=1))
    print({k: v for k, v in summary.items() if k not in ("runs", "machine", "config")})


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 3)
