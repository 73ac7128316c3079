"""Models people really bring (STYLE habit 23), each built as its author would write it: one home for the test of
uploads and runs (tests/unit/test_model_corpus.py) and the FLOP sources' benchmark (benchmarks/flop_sources.py).

MobileNetV2 (keras.applications, alpha 0.35, 32x32x3), a ResNet-style functional block with Add, an LSTM text model,
a model with MultiHeadAttention, and a functional model with a Sequential nested in it and a layer shared twice.
Each builder takes the ``keras`` module, so that importing this file loads no framework."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any


def mobilenet_v2(keras: Any) -> Any:
    return keras.applications.MobileNetV2(input_shape=(32, 32, 3), alpha=0.35, weights=None, classes=10)


def residual(keras: Any) -> Any:
    layers = keras.layers
    inputs = keras.Input((32, 32, 3))
    x = layers.Conv2D(16, 3, padding="same", activation="relu")(inputs)
    y = layers.BatchNormalization()(layers.Conv2D(16, 3, padding="same")(x))
    x = layers.GlobalAveragePooling2D()(layers.Activation("relu")(layers.Add()([x, y])))
    return keras.Model(inputs, layers.Dense(10)(x), name="residual")


def lstm_text(keras: Any) -> Any:
    layers = keras.layers
    tokens = keras.Input((200,), dtype="int32")
    x = layers.Embedding(10_000, 16)(tokens)
    return keras.Model(tokens, layers.Dense(1)(layers.LSTM(16)(x)), name="lstm_text")


def attention(keras: Any) -> Any:
    layers = keras.layers
    tokens = keras.Input((200,), dtype="int32")
    x = layers.Embedding(10_000, 16)(tokens)
    x = layers.LayerNormalization()(layers.Add()([x, layers.MultiHeadAttention(2, 8)(x, x)]))
    return keras.Model(tokens, layers.Dense(2)(layers.GlobalAveragePooling1D()(x)), name="attention")


def nested(keras: Any) -> Any:
    layers = keras.layers
    trunk = keras.Sequential([keras.Input((28, 28, 1)), layers.Flatten(), layers.Dense(32, activation="relu")],
                             name="trunk")
    shared = layers.Dense(32, activation="relu", name="shared")
    inputs = keras.Input((28, 28, 1))
    x = shared(shared(trunk(inputs)))  # the same layer twice: its weights once
    return keras.Model(inputs, layers.Dense(10)(x), name="nested")


BUILDERS: dict[str, Callable[[Any], Any]] = {"mobilenet_v2": mobilenet_v2, "residual": residual,
                                             "lstm_text": lstm_text, "attention": attention, "nested": nested}
# the data set each model's input and output fit
DATASETS = {"mobilenet_v2": "synthetic-cifar10", "residual": "synthetic-cifar10", "lstm_text": "synthetic-imdb",
            "attention": "synthetic-imdb", "nested": "synthetic-mnist"}


def saved(keras: Any, folder: Path, names: list[str] | None = None) -> dict[str, tuple[Path, int]]:
    """Each model (``names``, else all) saved as a person would, ``model.save("name.keras")``, with its parameter
    count as Keras reports it."""
    paths = {}
    for name in names or list(BUILDERS):
        model = BUILDERS[name](keras)
        path = folder / f"{name}.keras"
        model.save(path)
        paths[name] = (path, int(model.count_params()))
    return paths
