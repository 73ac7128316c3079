"""What BenchCallback costs a script's training: ``python -m benchmarks.callback_cost`` from the checkout.

The same small model (an MLP on MNIST-shaped random data) is trained in this one process with and without
``bench.integrations.keras.BenchCallback``, the two alternating (without, with, without, ...) for ``--repeats``
rounds, so drift on a shared machine hits both alike. Each fit's epochs are timed by one plain callback (epoch start
to epoch end, the same in both arms, placed after BenchCallback so its epoch-end work is inside the time); the first
epoch of every fit holds the tracing and is left out. The figure is the median steady epoch with the callback against
the median without: their difference as a share of the epoch without (target: at most 1 %). The callback writes to a
store in a temporary folder. docs/CALLBACK.md holds the figures measured.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TARGET_SHARE = 0.01  # the callback may cost at most 1 % of the steady epoch


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.callback_cost", description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=5, help="rounds of (without, with) (default 5)")
    p.add_argument("--epochs", type=int, default=6, help="epochs per fit; the first is left out (default 6)")
    p.add_argument("--samples", type=int, default=20000, help="training samples (default 20000)")
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--hidden", type=int, default=256, help="width of the two hidden Dense layers (default 256)")
    p.add_argument("--backend", default=None, help="Keras backend (default: KERAS_BACKEND, else the project's)")
    p.add_argument("--json", dest="json_path", default=None, help="write the result to this file")
    return p.parse_args(argv)


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Both arms' steady epochs and the callback's cost; imports Keras (set KERAS_BACKEND first)."""
    import keras
    import numpy as np

    from bench.integrations.keras import BenchCallback
    from bench.store import Store

    class EpochTimer(keras.callbacks.Callback):
        async_safe = True  # as BenchCallback: Keras keeps dispatching steps without waiting on each

        def __init__(self) -> None:
            super().__init__()
            self.seconds: list[float] = []
            self._t0 = 0.0

        def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
            self._t0 = time.perf_counter()

        def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
            if logs and "loss" in logs:
                float(logs["loss"])
            self.seconds.append(time.perf_counter() - self._t0)

    rng = np.random.default_rng(0)
    x = rng.random((args.samples, 28, 28, 1), dtype="float32")
    y = rng.integers(0, 10, args.samples)
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((28, 28, 1)), keras.layers.Flatten(),
                              keras.layers.Dense(args.hidden, activation="relu"),
                              keras.layers.Dense(args.hidden, activation="relu"), keras.layers.Dense(10)])
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    store = Store(Path(tempfile.mkdtemp(prefix="bench-callback-cost-")) / "runs.sqlite3")
    steady: dict[str, list[float]] = {"without": [], "with": []}
    run_ids = []
    for _ in range(args.repeats):
        for arm in ("without", "with"):
            timer = EpochTimer()
            callbacks: list[Any] = [timer]
            if arm == "with":
                bench = BenchCallback(batch_size=args.batch_size, store=store)
                callbacks.insert(0, bench)
            model.fit(x, y, batch_size=args.batch_size, epochs=args.epochs, callbacks=callbacks, verbose=0)
            steady[arm].extend(timer.seconds[1:])
            if arm == "with":
                run_ids.append(bench.run_id)
    without, with_ = statistics.median(steady["without"]), statistics.median(steady["with"])
    stored = [store.get_run(i, with_samples=True) for i in run_ids if i is not None]
    return {
        "backend": keras.config.backend(), "machine": platform.platform(), "cpus": os.cpu_count(),
        "python": sys.version.split()[0], "repeats": args.repeats, "epochs": args.epochs, "samples": args.samples,
        "batch_size": args.batch_size, "hidden": args.hidden, "params": int(model.count_params()),
        "steady_epoch_s_without": without, "steady_epoch_s_with": with_,
        "cost_s": with_ - without, "cost_share": (with_ - without) / without,
        "target_share": TARGET_SHARE, "within_target": (with_ - without) / without <= TARGET_SHARE,
        "epochs_without": steady["without"], "epochs_with": steady["with"],
        "runs_stored": [{"id": r.id, "status": str(r.status), "epochs": len(r.epochs), "samples": len(r.samples)}
                        for r in stored if r is not None],
    }


def report(result: dict[str, Any]) -> str:
    return (f"{result['backend']}, {result['cpus']} CPUs, MLP {result['params']:,} params, "
            f"{result['samples']} samples, batch {result['batch_size']}, {result['repeats']} x (without, with) x "
            f"{result['epochs'] - 1} steady epochs\n"
            f"median steady epoch without the callback: {result['steady_epoch_s_without']:.4f} s\n"
            f"median steady epoch with the callback:    {result['steady_epoch_s_with']:.4f} s\n"
            f"cost: {result['cost_s'] * 1000:+.1f} ms = {result['cost_share'] * 100:+.2f} % of the steady epoch "
            f"(target at most {result['target_share'] * 100:.0f} %: "
            f"{'met' if result['within_target'] else 'NOT met'})\n"
            f"runs stored: {result['runs_stored']}")


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    if args.backend:
        os.environ["KERAS_BACKEND"] = args.backend
    else:
        from bench import settings

        os.environ.setdefault("KERAS_BACKEND", settings.default_backend())
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    result = measure(args)
    print(report(result))
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
