"""What BenchCallback costs a script's training: ``python -m benchmarks.callback_cost`` from the checkout.

The same small model (an MLP on MNIST-shaped random data) is trained in this one process with and without
``bench.integrations.keras.BenchCallback``, the two alternating (without, with, without, ...) for ``--repeats``
rounds, so drift on a shared machine hits both alike. Each fit's epochs are timed by one plain callback (epoch start
to epoch end, the same in both arms, placed after BenchCallback so its epoch-end work is inside the time); the first
epoch of every fit holds the tracing and is left out. The figure is the median steady epoch with the callback against
the median without: their difference as a share of the epoch without (target: at most 1 %). The callback writes to a
store in a temporary folder. docs/CALLBACK.md holds the figures measured.

On a shared machine whose load moves epochs by tens of percent, that difference is noise; so the callback's own work
is measured as well, directly: the CPU seconds (and the wall seconds) spent inside its hooks on the training thread
(the part a fit waits for; the wait for an epoch's last step, which ends the epoch with or without the callback, is
taken before the clock starts), and the CPU seconds of its threads (supervisor, sampler, store keeper: psutil's per-thread times), each per steady
epoch and as a share of it. The arm without the callback runs a callback with the same hooks doing nothing, timed
alike: what the timing itself costs (a thread-CPU clock read is a system call in a VM) is taken off the hooks' CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import scratch

TARGET_SHARE = 0.01  # the callback may cost at most 1 % of the steady epoch
THREADS = ("bench-callback-supervisor", "bench-sampler", "bench-store-keeper")  # the callback's threads


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.callback_cost", description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=5, help="rounds of (without, with) (default 5)")
    p.add_argument("--epochs", type=int, default=6, help="epochs per fit; the first is left out (default 6)")
    p.add_argument("--samples", type=int, default=20000, help="training samples (default 20000)")
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--hidden", type=int, default=256, help="width of the two hidden Dense layers (default 256)")
    p.add_argument("--sample-interval", dest="sample_interval_s", type=float, default=None,
                   help="the callback's sample_interval_s (default: the callback's own, 1 s; bench run samples every "
                        "0.5 s)")
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

    class EmptyHooks(keras.callbacks.Callback):
        """The same hooks doing nothing: the without arm's reference for the wall time a hook call takes here."""

        async_safe = True

        def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
            pass

        def on_train_batch_begin(self, batch: int, logs: dict | None = None) -> None:
            pass

        def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
            pass

        def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
            pass

    rng = np.random.default_rng(0)
    x = rng.random((args.samples, 28, 28, 1), dtype="float32")
    y = rng.integers(0, 10, args.samples)
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((28, 28, 1)), keras.layers.Flatten(),
                              keras.layers.Dense(args.hidden, activation="relu"),
                              keras.layers.Dense(args.hidden, activation="relu"), keras.layers.Dense(10)])
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    store = Store(scratch("bench-callback-cost-") / "runs.sqlite3")
    steady: dict[str, list[float]] = {"without": [], "with": []}
    run_ids = []
    inline_s = inline_cpu_s = thread_cpu_s = with_total_s = empty_inline_s = empty_inline_cpu_s = 0.0
    for _ in range(args.repeats):
        for arm in ("without", "with"):
            timer = EpochTimer()
            hooks = _Instrumented(BenchCallback(batch_size=args.batch_size, store=store,
                                                sample_interval_s=args.sample_interval_s) if arm == "with"
                                  else EmptyHooks())
            model.fit(x, y, batch_size=args.batch_size, epochs=args.epochs, callbacks=[hooks.callback, timer],
                      verbose=0)
            steady[arm].extend(timer.seconds[1:])
            if arm == "with":
                run_ids.append(hooks.callback.run_id)
                inline_s += hooks.inline_s
                inline_cpu_s += hooks.inline_cpu_s
                thread_cpu_s += hooks.thread_cpu_s
                with_total_s += sum(timer.seconds[1:])
            else:
                empty_inline_s += hooks.inline_s
                empty_inline_cpu_s += hooks.inline_cpu_s
    without, with_ = statistics.median(steady["without"]), statistics.median(steady["with"])
    epochs_with = args.repeats * (args.epochs - 1)
    stored = [store.get_run(i, with_samples=True) for i in run_ids if i is not None]
    return {
        "backend": keras.config.backend(), "machine": platform.platform(), "cpus": os.cpu_count(),
        "python": sys.version.split()[0], "repeats": args.repeats, "epochs": args.epochs, "samples": args.samples,
        "batch_size": args.batch_size, "hidden": args.hidden, "sample_interval_s": args.sample_interval_s,
        "params": int(model.count_params()),
        "steady_epoch_s_without": without, "steady_epoch_s_with": with_,
        "cost_s": with_ - without, "cost_share": (with_ - without) / without, "target_share": TARGET_SHARE,
        # the bound the target is judged on: every CPU second of the callback's threads counted as taken from the
        # training, beside the time inside its hooks (the epoch difference above is noise on a loaded machine)
        # (the hooks' CPU net of what the same timing costs around hooks that do nothing)
        "within_target": (max(0.0, inline_cpu_s - empty_inline_cpu_s) + thread_cpu_s) / with_total_s <= TARGET_SHARE,
        "empty_hooks_inline_cpu_s_per_epoch": empty_inline_cpu_s / epochs_with,
        "net_inline_cpu_share": max(0.0, inline_cpu_s - empty_inline_cpu_s) / with_total_s,
        "inline_cpu_s_per_epoch": inline_cpu_s / epochs_with, "inline_cpu_share": inline_cpu_s / with_total_s,
        "empty_hooks_inline_s_per_epoch": empty_inline_s / epochs_with,
        "epochs_without": steady["without"], "epochs_with": steady["with"],
        "inline_s_per_epoch": inline_s / epochs_with, "inline_share": inline_s / with_total_s,
        "thread_cpu_s_per_epoch": thread_cpu_s / epochs_with, "thread_cpu_share": thread_cpu_s / with_total_s,
        "runs_stored": [{"id": r.id, "status": str(r.status), "epochs": len(r.epochs), "samples": len(r.samples)}
                        for r in stored if r is not None],
    }


class _Instrumented:
    """A callback whose per-epoch and per-batch hooks are timed over the steady epochs (the first, with its tracing,
    left out as in the figures): wall and CPU seconds inside them on the training thread, and the CPU seconds of the
    callback's threads between the first epoch's end and fit's end (before the run is closed)."""

    HOOKS = ("on_epoch_begin", "on_train_batch_begin", "on_train_batch_end", "on_epoch_end")

    def __init__(self, callback: Any) -> None:
        self.callback = callback
        self.inline_s = self.inline_cpu_s = self.thread_cpu_s = 0.0
        self._epoch = 0
        for name in self.HOOKS:
            setattr(callback, name, self._timed(name, getattr(callback, name)))
        train_end = callback.on_train_end

        def on_train_end(logs: dict | None = None) -> None:
            self.thread_cpu_s += _thread_cpu_s(THREADS)
            train_end(logs)

        callback.on_train_end = on_train_end

    def _timed(self, name: str, hook: Any) -> Any:
        def timed(*a: Any, **k: Any) -> None:
            logs = k.get("logs", a[1] if len(a) > 1 else None)
            steps = int((self.callback.params or {}).get("steps") or 0)
            if name == "on_train_batch_end" and logs and "loss" in logs and a[0] + 1 >= steps:
                float(logs["loss"])  # the wait for the epoch's last step, which ends an epoch in either arm
            t0, c0 = time.perf_counter(), time.thread_time()
            hook(*a, **k)
            if self._epoch > 0:
                self.inline_s += time.perf_counter() - t0
                self.inline_cpu_s += time.thread_time() - c0
            if name == "on_epoch_end":
                if self._epoch == 0:
                    self.thread_cpu_s = -_thread_cpu_s(THREADS)
                self._epoch += 1
        return timed


def _thread_cpu_s(names: tuple[str, ...]) -> float:
    """CPU seconds (user + system) used so far by this process's live threads named ``names``."""
    import threading

    import psutil

    ids = {t.native_id for t in threading.enumerate() if t.name in names and t.native_id is not None}
    return sum(t.user_time + t.system_time for t in psutil.Process().threads() if t.id in ids)


def report(result: dict[str, Any]) -> str:
    return (f"{result['backend']}, {result['cpus']} CPUs, MLP {result['params']:,} params, "
            f"{result['samples']} samples, batch {result['batch_size']}, samples every "
            f"{result['sample_interval_s']:g} s, {result['repeats']} x (without, with) x "
            f"{result['epochs'] - 1} steady epochs\n"
            f"median steady epoch without the callback: {result['steady_epoch_s_without']:.4f} s\n"
            f"median steady epoch with the callback:    {result['steady_epoch_s_with']:.4f} s\n"
            f"difference: {result['cost_s'] * 1000:+.1f} ms = {result['cost_share'] * 100:+.2f} % of the steady "
            f"epoch\n"
            f"the callback's own work per steady epoch: {result['inline_cpu_s_per_epoch'] * 1000:.2f} ms CPU inside "
            f"its hooks on the training thread, timing included (empty hooks, timed alike: "
            f"{result['empty_hooks_inline_cpu_s_per_epoch'] * 1000:.2f} ms; net "
            f"{result['net_inline_cpu_share'] * 100:.3f} % of the epoch); wall time inside them "
            f"{result['inline_s_per_epoch'] * 1000:.2f} ms (empty hooks: "
            f"{result['empty_hooks_inline_s_per_epoch'] * 1000:.2f} ms: preemption and GIL waits included); "
            f"{result['thread_cpu_s_per_epoch'] * 1000:.2f} ms CPU in its threads "
            f"({result['thread_cpu_share'] * 100:.3f} % of one core); CPU together "
            f"{(result['net_inline_cpu_share'] + result['thread_cpu_share']) * 100:.2f} % (target at most "
            f"{result['target_share'] * 100:.0f} %: {'met' if result['within_target'] else 'NOT met'})\n"
            f"runs stored: {result['runs_stored']}")


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    if args.backend:
        os.environ["KERAS_BACKEND"] = args.backend
    else:
        from bench.vocab import settings

        os.environ.setdefault("KERAS_BACKEND", settings.default_backend())
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if args.sample_interval_s is None:
        from bench.integrations import keras as integration  # after KERAS_BACKEND is set: it imports Keras

        args.sample_interval_s = integration.DEFAULT_SAMPLE_INTERVAL_S
    result = measure(args)
    print(report(result))
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
