"""Your own model in the dashboard: train any Keras model with one extra callback, then watch it on the Train page.

Run it beside the dashboard (both use the same store: BENCH_STORE, or the default ~/.local/share/bench/runs.sqlite3):

    make run                                   # the dashboard, in one terminal
    python examples/own_model.py               # this script, in another: the Train page shows it live

It trains a small CNN on MNIST-shaped data (random pixels, so it runs offline; put your own arrays in `load_data`),
records the run with BenchCallback (epoch times, CPU/GPU utilization, the model's parameters and FLOPs), and saves the
model as `own_model.keras`: a file the Train page (or `python -m bench run --model-file own_model.keras`) trains,
compares across devices and sweeps over batch size like its own presets.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("KERAS_BACKEND", "jax")  # or tensorflow / torch: whichever you train with

import keras
import numpy as np

from bench.integrations.keras import BenchCallback


def load_data(samples: int) -> tuple[np.ndarray, np.ndarray]:
    """MNIST-shaped images (28x28, one channel) and labels 0..9; replace with your own data."""
    rng = np.random.default_rng(0)
    return rng.random((samples, 28, 28, 1), dtype="float32"), rng.integers(0, 10, samples)


def build_model() -> keras.Model:
    """Any Keras model works with the callback; to upload it on the Train page, use Keras's own layers only."""
    return keras.Sequential([
        keras.Input((28, 28, 1)),
        keras.layers.Conv2D(16, 3, padding="same", activation="relu"),
        keras.layers.MaxPooling2D(2),
        keras.layers.Conv2D(32, 3, padding="same", activation="relu"),
        keras.layers.GlobalAveragePooling2D(),
        keras.layers.Dense(10),
    ], name="own_cnn")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--samples", type=int, default=10000)
    p.add_argument("--save", default="own_model.keras", help="where to save the model ('' to skip)")
    args = p.parse_args()

    x, y = load_data(args.samples)
    model = build_model()
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    bench = BenchCallback(batch_size=args.batch_size, dataset="MNIST-shaped random data")  # the one extra line
    model.fit(x, y, batch_size=args.batch_size, epochs=args.epochs, validation_split=0.1, callbacks=[bench], verbose=2)
    print(f"recorded as run #{bench.run_id}: see the Train page live, then History (python -m bench runs)")
    if args.save:
        model.save(args.save)
        print(f"saved {args.save}: upload it on the Train page, or python -m bench run --model-file {args.save}")


if __name__ == "__main__":
    main()
