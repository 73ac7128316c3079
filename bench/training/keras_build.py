"""A ModelPlan (bench.training.models) made into Keras 3 objects: the model, its loss and its accuracy metric.

Keras is imported lazily, inside the training worker, so the Streamlit server can import bench.training.models (parameter
counts, FLOPs) without loading a framework. Only Keras 3 APIs are used, so the models build on any backend.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bench.training.models import ModelError, ModelPlan

if TYPE_CHECKING:  # pragma: no cover - only for type checkers
    import keras

_CHANNELS_LAST_KINDS = frozenset({"Conv2D", "MaxPooling2D", "GlobalAveragePooling2D"})


def build(plan: ModelPlan) -> keras.Model:
    """Build the uncompiled Keras 3 model of `plan` (imports Keras lazily; works on any Keras backend).

    The model starts with `keras.Input(shape=plan.input_shape)`, so its weights exist at once and
    `count_params()` equals `plan.params`. Image layers are forced to channels_last to match the plan's shapes.
    """
    import keras

    inputs = keras.Input(shape=plan.input_shape, dtype=plan.input_dtype, name="inputs")
    x = inputs
    for index, spec in enumerate(plan.layers):
        kwargs = spec.kwargs
        if spec.kind in _CHANNELS_LAST_KINDS:
            kwargs["data_format"] = "channels_last"
        layer_class = getattr(keras.layers, spec.kind)
        x = layer_class(name=f"{spec.kind.lower()}_{index}", **kwargs)(x)
    return keras.Model(inputs=inputs, outputs=x, name=plan.name)


def build_loss(plan: ModelPlan) -> keras.losses.Loss:
    """The Keras loss object matching `plan.loss` and `plan.from_logits` (imports Keras lazily)."""
    import keras

    classes = {
        "sparse_categorical_crossentropy": keras.losses.SparseCategoricalCrossentropy,
        "categorical_crossentropy": keras.losses.CategoricalCrossentropy,
        "binary_crossentropy": keras.losses.BinaryCrossentropy,
    }
    if plan.loss not in classes:
        raise ModelError(f"Unknown loss {plan.loss!r}; use one of {', '.join(classes)}.")
    return classes[plan.loss](from_logits=plan.from_logits)


def build_metrics(plan: ModelPlan) -> list[keras.metrics.Metric]:
    """An accuracy metric that reads this plan's outputs correctly, named "accuracy" (imports Keras lazily).

    Binary logits are thresholded at 0 (not 0.5), one-hot labels use CategoricalAccuracy, int labels
    SparseCategoricalAccuracy, so `history.history["accuracy"]` means the same thing for every plan.
    """
    import keras

    if plan.loss == "binary_crossentropy":
        return [keras.metrics.BinaryAccuracy(name="accuracy", threshold=0.0 if plan.from_logits else 0.5)]
    if plan.loss == "categorical_crossentropy":
        return [keras.metrics.CategoricalAccuracy(name="accuracy")]
    return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
