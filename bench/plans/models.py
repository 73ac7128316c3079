"""Model families x sizes and the seed-article presets, described as pure data.

A model is first a `ModelPlan`: a frozen description of its layers for one input shape, with its exact parameter
count and its training FLOPs per sample, computed here without importing Keras (the dashboard shows them). Only
`bench.training.keras_build` (`build`, `build_loss`, `build_metrics`) imports Keras, lazily, inside the training worker, so the
Streamlit server can import this module without loading TensorFlow. Only Keras 3 APIs are used, so the built models
run under the TensorFlow, JAX and PyTorch backends alike.

FLOP convention (`ModelPlan.flops_per_sample`, training FLOPs for one sample, forward + backward):
  * forward FLOPs = 2 per multiply-add of a Dense or Conv2D kernel (one multiply + one add)
                  + 1 per bias add (one per output element of a Dense or Conv2D layer)
                  + 1 per input element read by a pooling layer (a compare for max, an add for average);
    activations, dropout, flatten and embedding look-ups count 0 (they move memory, they do no matrix arithmetic);
  * backward = 2 x forward (gradients with respect to the inputs and to the weights), so
    training FLOPs per sample = 3 x forward FLOPs.
Example: input (4,) -> Dense 3 has 12 multiply-adds and 3 bias adds: forward 2*12 + 3 = 27, training 3*27 = 81.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import subprocess
import sys
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "BACKWARD_TO_FORWARD_RATIO",
    "FAMILIES",
    "LAYER_KINDS",
    "MODALITIES",
    "MODELS",
    "PRESETS",
    "SIZES",
    "LayerSpec",
    "ModelError",
    "ModelFileError",
    "OwnModel",
    "check_archive",
    "check_model_file",
    "ModelPlan",
    "Preset",
    "compatible",
    "measure",
    "plan",
]


class ModelError(ValueError):
    """A model, size or input shape that cannot be planned; the message says what fits instead."""


FAMILIES: dict[str, str] = {
    "mlp": "MLP (dense layers)",
    "cnn": "CNN (conv + pooling)",
    "text": "Text (embedding + pooling + dense)",
}
SIZES: tuple[str, ...] = ("xs", "s", "m", "l", "xl")
MODALITIES: tuple[str, ...] = ("image", "text")
BACKWARD_TO_FORWARD_RATIO: int = 2  # backward pass costs 2x the forward pass: training = 3x forward

_SHORT_NAMES: dict[str, str] = {"mlp": "MLP", "cnn": "CNN", "text": "Text"}
_IMAGE_DATASETS_HINT = "image datasets (MNIST, Fashion-MNIST, CIFAR-10 or a synthetic image set)"
_TEXT_DATASETS_HINT = "text datasets (IMDB or a synthetic token set, with a vocabulary size)"

# Hidden Dense widths of the MLP family (Flatten -> Dense(w, relu)... -> Dense(num_classes) logits).
# On MNIST (28, 28, 1) / 10 classes: xs 25,450 params ... xl 36,818,954 params (1,447x).
_MLP_HIDDEN_UNITS: dict[str, tuple[int, ...]] = {
    "xs": (32,),
    "s": (256,),
    "m": (512, 512),
    "l": (2048, 2048),
    "xl": (4096, 4096, 4096),
}
# CNN family: one block per entry (Conv2D(f, 3x3, same, relu) + MaxPooling2D 2x2), then GlobalAveragePooling2D,
# then the Dense(relu) head widths, then Dense(num_classes) logits. On MNIST: xs 1,418 ... xl 1,744,394 params (1,230x).
# A pooling layer is skipped once the feature map is smaller than 2x2. FLOPs count the full 3x3 kernel at every
# output position, border positions included (what the kernels compute with zero padding).
_CNN_FILTERS: dict[str, tuple[int, ...]] = {
    "xs": (8, 16),
    "s": (16, 32),
    "m": (16, 32, 64),
    "l": (48, 96, 192),
    "xl": (128, 256, 512),
}
_CNN_HEAD_UNITS: dict[str, tuple[int, ...]] = {
    "xs": (),
    "s": (32,),
    "m": (64,),
    "l": (192,),
    "xl": (512,),
}
# Text family: Embedding(vocab_size, d) -> GlobalAveragePooling1D -> Dense(relu) widths -> Dense(num_classes) logits.
_TEXT_EMBEDDING_DIM: dict[str, int] = {"xs": 8, "s": 32, "m": 64, "l": 128, "xl": 512}
_TEXT_HIDDEN_UNITS: dict[str, tuple[int, ...]] = {
    "xs": (),
    "s": (32,),
    "m": (128,),
    "l": (512,),
    "xl": (1024, 1024),
}


@dataclass(frozen=True)
class LayerSpec:
    """One layer as data: the Keras 3 layer class name and its constructor arguments.

    `kind` is a key of `LAYER_KINDS` and also the name of the class in `keras.layers`; `options` holds the keyword
    arguments as sorted (name, value) pairs so the spec stays hashable. Build the Keras layer with
    `getattr(keras.layers, spec.kind)(**spec.kwargs)`.
    """

    kind: str
    options: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in LAYER_KINDS:
            raise ModelError(f"Unknown layer kind {self.kind!r}; use one of {', '.join(LAYER_KINDS)}.")

    @classmethod
    def of(cls, kind: str, **kwargs: Any) -> LayerSpec:
        """Make a spec from keyword arguments, e.g. `LayerSpec.of("Dense", units=10, activation="relu")`."""
        return cls(kind, tuple(sorted(kwargs.items())))

    @property
    def kwargs(self) -> dict[str, Any]:
        """The Keras constructor keyword arguments."""
        return dict(self.options)

    @property
    def use_bias(self) -> bool:
        """Whether the layer adds a bias (a Dense or Conv2D does unless its arguments say not: Keras' default)."""
        return bool(self.kwargs.get("use_bias", True))

    def label(self) -> str:
        """Short human label, e.g. "Dense 256 relu", "Conv2D 32 3x3 relu", "MaxPool 2x2"."""
        kw = self.kwargs
        activation = kw.get("activation")
        suffix = f" {activation}" if activation not in (None, "linear") else ""
        if self.kind == "Dense":
            return f"Dense {kw['units']}{suffix}"
        if self.kind == "Conv2D":
            k = kw["kernel_size"]
            return f"Conv2D {kw['filters']} {k}x{k}{suffix}"
        if self.kind == "MaxPooling2D":
            p = kw["pool_size"]
            return f"MaxPool {p}x{p}"
        if self.kind == "Embedding":
            return f"Embedding {kw['input_dim']}x{kw['output_dim']}"
        if self.kind == "Dropout":
            return f"Dropout {kw['rate']:g}"
        return {
            "GlobalAveragePooling2D": "GlobalAvgPool2D",
            "GlobalAveragePooling1D": "GlobalAvgPool1D",
        }.get(self.kind, self.kind)


# Layer kinds this module can count (params, FLOPs) and build; each is a class of keras.layers.
LAYER_KINDS: tuple[str, ...] = (
    "Flatten",
    "Dense",
    "Conv2D",
    "MaxPooling2D",
    "GlobalAveragePooling2D",
    "GlobalAveragePooling1D",
    "Embedding",
    "Dropout",
)


@dataclass(frozen=True)
class Preset:
    """An exact model from a published CPU-vs-GPU article, with the training settings the article used."""

    name: str
    title: str
    dataset: str  # the dataset the article trained on: "cifar10", "mnist" or "imdb"
    description: str
    epochs: int
    batch_size: int
    optimizer: str  # Keras optimizer name: "sgd" or "adam"
    learning_rate: float
    loss: str
    source: str


PRESETS: dict[str, Preset] = {
    "seed-cifar10-mlp": Preset(
        name="seed-cifar10-mlp",
        title="CIFAR-10 MLP (Microsoft Community Hub article)",
        dataset="cifar10",
        description=(
            "Flatten -> Dense 3000 relu -> Dense 1000 relu -> Dense 10 sigmoid on CIFAR-10 with one-hot labels, "
            "SGD, 10 epochs, batch 32. The article reports 8 min 5 s on a CPU against 40 s on a Tesla T4."
        ),
        epochs=10,
        batch_size=32,
        optimizer="sgd",
        learning_rate=0.01,
        loss="categorical_crossentropy",
        source=(
            '"Exploring CPU vs GPU Speed in AI Training: A Demonstration with TensorFlow", '
            "Microsoft Community Hub, December 2023"
        ),
    ),
    "seed-mnist-dense": Preset(
        name="seed-mnist-dense",
        title='MNIST dense network ("ML - How much faster is a GPU?")',
        dataset="mnist",
        description=(
            "Flatten -> Dense 128 relu -> Dense 10 (logits) on MNIST, Adam, sparse categorical cross-entropy, "
            "10 epochs, batch 32. The article reports 1 min 52 s on a laptop CPU against 8.43 s on a Tesla P100."
        ),
        epochs=10,
        batch_size=32,
        optimizer="adam",
        learning_rate=0.001,
        loss="sparse_categorical_crossentropy",
        source='"ML - How much faster is a GPU?"',
    ),
    "seed-text": Preset(
        name="seed-text",
        title="IMDB text classifier (TensorFlow tutorial model)",
        dataset="imdb",
        description=(
            "Embedding 16 -> Dropout 0.2 -> GlobalAveragePooling1D -> Dropout 0.2 -> Dense 1 (logit) on IMDB "
            "reviews, Adam, binary cross-entropy, 10 epochs, batch 32. A model this small barely uses a GPU: "
            "Spheron measured about half the CPU time on an RTX A4000 at ~5% GPU utilisation; another article "
            "reports 198.2 s on a Colab CPU against 14.4 s on its GPU (13.76x)."
        ),
        epochs=10,
        batch_size=32,
        optimizer="adam",
        learning_rate=0.001,
        loss="binary_crossentropy",
        source=(
            'Spheron, "GPU vs. CPU Showdown"; "How GPU can Powerfully Speed Up Training in Deep Learning"; '
            "model from the TensorFlow basic text classification tutorial"
        ),
    ),
}
_PRESET_FAMILY: dict[str, str] = {"seed-cifar10-mlp": "mlp", "seed-mnist-dense": "mlp", "seed-text": "text"}


def family_of(model: str) -> str:
    """The family whose rules a model name follows: a preset's ("seed-text" is a text model), a family its own."""
    return _PRESET_FAMILY.get(model, model)

# Every name `plan()` accepts as `model`: the families first, then the presets.
MODELS: tuple[str, ...] = (*FAMILIES, *PRESETS)


@dataclass(frozen=True)
class ModelPlan:
    """A pure description of one concrete model for one input shape; `build()` turns it into a Keras model.

    Pure data, so the dashboard shows a model's size and cost without importing Keras. `params` is the trainable +
    non-trainable parameter count, exactly what Keras `count_params()` reports. `flops_per_sample` is TRAINING FLOPs
    per sample (forward + backward) by the module docstring's FLOP convention: the figure a run's achieved GFLOP/s is
    computed from.
    """

    name: str  # e.g. "mlp-s" or "seed-cifar10-mlp"
    family: str  # a key of FAMILIES
    size: str | None  # a member of SIZES, None for a preset
    input_shape: tuple[int, ...]  # one sample, without the batch axis: (28, 28, 1) or (sequence_length,)
    num_classes: int
    layers: tuple[LayerSpec, ...]
    loss: str  # "sparse_categorical_crossentropy" | "categorical_crossentropy" | "binary_crossentropy"
    from_logits: bool
    params: int
    flops_per_sample: int  # training FLOPs per sample (forward + backward)
    input_dtype: str = "float32"  # "int32" for token ids
    preset: str | None = None  # the PRESETS key this plan came from, if any
    layer_output_shapes: tuple[tuple[int, ...], ...] = field(default=(), compare=False)

    @property
    def title(self) -> str:
        """Short name for people: "MLP s" or the preset's title."""
        if self.preset is not None:
            return PRESETS[self.preset].title
        return f"{_SHORT_NAMES[self.family]} {self.size}"

    @property
    def forward_flops_per_sample(self) -> int:
        """Forward-pass FLOPs per sample (one third of the training FLOPs)."""
        return self.flops_per_sample // (1 + BACKWARD_TO_FORWARD_RATIO)

    def describe(self) -> str:
        """One line, e.g. "MLP s: Flatten -> Dense 256 relu -> Dense 10 (203,530 params, 1.2 MFLOP/sample)"."""
        chain = " -> ".join(layer.label() for layer in self.layers)
        return f"{self.title}: {chain} ({self.params:,} params, {format_flops(self.flops_per_sample)}/sample)"


def format_flops(flops: int) -> str:
    """Format a FLOP count with an SI prefix: 81 -> "81 FLOP", 1220382 -> "1.2 MFLOP", 220e6 -> "220 MFLOP"."""
    value = float(flops)
    for prefix in ("", "k", "M", "G", "T", "P"):
        if abs(value) < 1000 or prefix == "P":
            text = f"{value:.1f}" if prefix and value < 100 else f"{value:.0f}"
            return f"{text} {prefix}FLOP"
        value /= 1000
    raise AssertionError("unreachable")  # pragma: no cover


def measure(
    input_shape: tuple[int, ...], layers: tuple[LayerSpec, ...]
) -> tuple[int, int, tuple[tuple[int, ...], ...]]:
    """Count parameters and training FLOPs per sample of a layer stack, without Keras.

    Args:
        input_shape: one sample's shape, without the batch axis.
        layers: the stack, applied in order.

    Returns:
        (params, training FLOPs per sample, each layer's output shape without the batch axis).

    Raises:
        ModelError: when a layer does not fit the shape it receives (e.g. Conv2D on a rank-1 input).
    """
    shape = tuple(int(d) for d in input_shape)
    params = 0
    forward_flops = 0
    shapes: list[tuple[int, ...]] = []
    for layer in layers:
        shape, layer_params, layer_flops = _layer_cost(layer, shape)
        params += layer_params
        forward_flops += layer_flops
        shapes.append(shape)
    return params, forward_flops * (1 + BACKWARD_TO_FORWARD_RATIO), tuple(shapes)


def _layer_cost(layer: LayerSpec, shape: tuple[int, ...]) -> tuple[tuple[int, ...], int, int]:
    """Output shape, parameter count and FORWARD FLOPs of one layer on one sample of `shape`."""
    kw = layer.kwargs
    kind = layer.kind
    if kind == "Flatten":
        return (math.prod(shape),), 0, 0
    if kind == "Dropout":
        return shape, 0, 0
    if kind == "Dense":
        units = int(kw["units"])
        fan_in = shape[-1]
        positions = math.prod(shape[:-1])
        use_bias = layer.use_bias
        params = fan_in * units + (units if use_bias else 0)
        flops = 2 * positions * fan_in * units + (positions * units if use_bias else 0)
        return (*shape[:-1], units), params, flops
    if kind == "Conv2D":
        _require_rank(layer, shape, 3)
        height, width, channels = shape
        filters, k = int(kw["filters"]), int(kw["kernel_size"])
        padding = kw.get("padding", "valid")
        if padding == "same":
            out_h, out_w = height, width
        else:
            out_h, out_w = height - k + 1, width - k + 1
        if out_h < 1 or out_w < 1:
            raise ModelError(f"{layer.label()} with padding {padding!r} does not fit an input of {height}x{width}.")
        use_bias = layer.use_bias
        params = k * k * channels * filters + (filters if use_bias else 0)
        outputs = out_h * out_w * filters
        flops = 2 * outputs * k * k * channels + (outputs if use_bias else 0)
        return (out_h, out_w, filters), params, flops
    if kind == "MaxPooling2D":
        _require_rank(layer, shape, 3)
        height, width, channels = shape
        pool = int(kw["pool_size"])
        out_h, out_w = height // pool, width // pool
        if out_h < 1 or out_w < 1:
            raise ModelError(
                f"{layer.label()} does not fit an input of {height}x{width}; it needs at least {pool}x{pool}."
            )
        return (out_h, out_w, channels), 0, out_h * out_w * pool * pool * channels
    if kind == "GlobalAveragePooling2D":
        _require_rank(layer, shape, 3)
        return (shape[2],), 0, math.prod(shape)
    if kind == "GlobalAveragePooling1D":
        _require_rank(layer, shape, 2)
        return (shape[1],), 0, math.prod(shape)
    if kind == "Embedding":
        _require_rank(layer, shape, 1)
        output_dim = int(kw["output_dim"])
        return (shape[0], output_dim), int(kw["input_dim"]) * output_dim, 0
    raise ModelError(f"Unknown layer kind {kind!r}; use one of {', '.join(LAYER_KINDS)}.")  # pragma: no cover


def _require_rank(layer: LayerSpec, shape: tuple[int, ...], rank: int) -> None:
    if len(shape) != rank:
        raise ModelError(f"{layer.label()} needs a rank-{rank} input per sample, got shape {shape}.")


def _dense(units: int, activation: str | None = None) -> LayerSpec:
    return LayerSpec.of("Dense", units=units, activation=activation)


def _check_model_name(model: str) -> None:
    if model not in MODELS:
        raise ModelError(
            f"Unknown model {model!r}. Pick a family ({', '.join(FAMILIES)}) with a size, "
            f"or a preset ({', '.join(PRESETS)})."
        )


def compatible(model: str, modality: str, input_shape: tuple[int, ...] | None = None) -> bool:
    """Whether `model` (a family or preset name) can train on a dataset of `modality` ("image" or "text").

    The "text" family and the "seed-text" preset need token ids ("text"); "mlp", "cnn" and the MLP presets need
    "image" (an MLP on token ids is not allowed: it would treat ids as magnitudes). When `input_shape` is given the
    rank is checked too: "cnn" needs (height, width, channels), text models need (sequence_length,).

    Raises:
        ModelError: for an unknown model name or modality.
    """
    _check_model_name(model)
    if modality not in MODALITIES:
        raise ModelError(f"Unknown modality {modality!r}; use one of {', '.join(MODALITIES)}.")
    family = family_of(model)
    wanted = "text" if family == "text" else "image"
    if modality != wanted:
        return False
    if input_shape is None:
        return True
    rank = len(input_shape)
    if family == "cnn":
        return rank == 3
    if family == "text":
        return rank == 1
    return rank >= 1


def plan(
    model: str,
    size: str | None,
    input_shape: tuple[int, ...],
    num_classes: int,
    vocab_size: int | None = None,
) -> ModelPlan:
    """Describe the concrete model `model`/`size` for samples of `input_shape`, without importing Keras.

    Args:
        model: a family ("mlp", "cnn", "text") or a preset name (see PRESETS).
        size: one of SIZES for a family; ignored for a preset (pass None).
        input_shape: one sample's shape without the batch axis, e.g. (28, 28, 1) or (250,) for token ids.
        num_classes: number of classes (>= 2); the labels are int class ids 0..num_classes-1.
        vocab_size: for text datasets, the number of token ids (ids must lie in 0..vocab_size-1, 0 = padding);
            None for image datasets. Its presence is what makes the input "text".

    Returns:
        The ModelPlan, with exact parameter count and training FLOPs per sample.

    Raises:
        ModelError: unknown model or size (the message lists the allowed values), a bad shape or class count, or a
            model that does not fit the data (the message says which datasets fit).
    """
    if not isinstance(model, str):
        raise ModelError(f"model must be a name string, got {model!r}.")
    _check_model_name(model)
    preset = PRESETS.get(model)
    if preset is None and size not in SIZES:
        raise ModelError(f"Unknown size {size!r} for model {model!r}; pick one of {', '.join(SIZES)}.")
    try:
        shape = tuple(int(d) for d in input_shape)
    except (TypeError, ValueError):
        raise ModelError(f"input_shape must be a tuple of positive ints, got {input_shape!r}.") from None
    if not shape or any(d < 1 for d in shape):
        raise ModelError(f"input_shape must be a non-empty tuple of positive ints, got {input_shape!r}.")
    if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 2:
        raise ModelError(f"num_classes must be an int >= 2, got {num_classes!r}.")
    if vocab_size is not None and (isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < 2):
        raise ModelError(f"vocab_size must be an int >= 2 for text data (or None for image data), got {vocab_size!r}.")

    family = family_of(model)
    modality = "image" if vocab_size is None else "text"
    _check_fit(model, family, modality, shape)

    loss, from_logits = "sparse_categorical_crossentropy", True
    if preset is None:
        assert size is not None
        name = f"{family}-{size}"
        layers = _FAMILY_LAYERS[family](_Data(shape, num_classes, vocab_size), size)
    else:
        name, size, loss = preset.name, None, preset.loss
        layers, from_logits = _PRESET_LAYERS[model](_Data(shape, num_classes, vocab_size))
    params, flops, shapes = measure(shape, layers)
    return ModelPlan(
        name=name,
        family=family,
        size=size,
        input_shape=shape,
        num_classes=num_classes,
        layers=layers,
        loss=loss,
        from_logits=from_logits,
        params=params,
        flops_per_sample=flops,
        input_dtype="int32" if modality == "text" else "float32",
        preset=preset.name if preset is not None else None,
        layer_output_shapes=shapes,
    )


@dataclass(frozen=True)
class _Data:
    """What a model is built for: one sample's shape, the class count, and the vocabulary size of token ids (None for
    images)."""

    shape: tuple[int, ...]
    num_classes: int
    vocab_size: int | None


def _text_layers(data: _Data, size: str) -> tuple[LayerSpec, ...]:
    assert data.vocab_size is not None  # _check_fit: the text family trains on token ids only
    return (
        LayerSpec.of("Embedding", input_dim=data.vocab_size, output_dim=_TEXT_EMBEDDING_DIM[size]),
        LayerSpec.of("GlobalAveragePooling1D"),
        *(_dense(units, "relu") for units in _TEXT_HIDDEN_UNITS[size]),
        _dense(data.num_classes),
    )


def _seed_text_layers(data: _Data) -> tuple[tuple[LayerSpec, ...], bool]:
    if data.num_classes != 2:
        raise ModelError(
            f"Preset 'seed-text' is a binary classifier (one logit); the dataset has {data.num_classes} classes. "
            "Pick a two-class text dataset such as IMDB, or the 'text' family for more classes."
        )
    assert data.vocab_size is not None
    return (
        LayerSpec.of("Embedding", input_dim=data.vocab_size, output_dim=16),
        LayerSpec.of("Dropout", rate=0.2),
        LayerSpec.of("GlobalAveragePooling1D"),
        LayerSpec.of("Dropout", rate=0.2),
        _dense(1),
    ), True


# A family's layers at a size, and a preset's layers with whether its outputs are logits: the cases are data.
_FAMILY_LAYERS: dict[str, Callable[[_Data, str], tuple[LayerSpec, ...]]] = {
    "mlp": lambda data, size: _mlp_layers(_MLP_HIDDEN_UNITS[size], data.num_classes),
    "cnn": lambda data, size: _cnn_layers(data.shape, _CNN_FILTERS[size], _CNN_HEAD_UNITS[size], data.num_classes),
    "text": _text_layers,
}
_PRESET_LAYERS: dict[str, Callable[[_Data], tuple[tuple[LayerSpec, ...], bool]]] = {
    # the article's last layer is a sigmoid over the classes, so its outputs are probabilities, not logits
    "seed-cifar10-mlp": lambda data: ((LayerSpec.of("Flatten"), _dense(3000, "relu"), _dense(1000, "relu"),
                                       _dense(data.num_classes, "sigmoid")), False),
    "seed-mnist-dense": lambda data: (_mlp_layers((128,), data.num_classes), True),
    "seed-text": _seed_text_layers,
}


def _check_fit(model: str, family: str, modality: str, shape: tuple[int, ...]) -> None:
    """Raise ModelError, naming the datasets that fit, when `model` cannot train on this data."""
    if family == "text":
        if modality != "text":
            raise ModelError(
                f"Model {model!r} needs token ids, so it fits only {_TEXT_DATASETS_HINT}; "
                f"for {_IMAGE_DATASETS_HINT} pick 'mlp' or 'cnn'."
            )
        if len(shape) != 1:
            raise ModelError(f"Model {model!r} needs input of shape (sequence_length,), got {shape}.")
        return
    if modality != "image":
        raise ModelError(
            f"Model {model!r} fits only {_IMAGE_DATASETS_HINT}; for {_TEXT_DATASETS_HINT} pick 'text' or 'seed-text'."
        )
    if family == "cnn" and len(shape) != 3:
        raise ModelError(
            f"Model 'cnn' needs images of shape (height, width, channels), got {shape}; it fits "
            f"{_IMAGE_DATASETS_HINT} with a channel axis, e.g. (28, 28, 1). Pick 'mlp' for flat feature vectors."
        )


def _mlp_layers(hidden_units: tuple[int, ...], num_classes: int) -> tuple[LayerSpec, ...]:
    return (LayerSpec.of("Flatten"), *(_dense(units, "relu") for units in hidden_units), _dense(num_classes))


def _cnn_layers(
    shape: tuple[int, ...], filters: tuple[int, ...], head_units: tuple[int, ...], num_classes: int
) -> tuple[LayerSpec, ...]:
    """Conv2D 3x3 same relu blocks, each followed by MaxPool 2x2 while the feature map is at least 2x2."""
    layers: list[LayerSpec] = []
    height, width = shape[0], shape[1]
    for count in filters:
        layers.append(LayerSpec.of("Conv2D", filters=count, kernel_size=3, padding="same", activation="relu"))
        if height >= 2 and width >= 2:
            layers.append(LayerSpec.of("MaxPooling2D", pool_size=2))
            height, width = height // 2, width // 2
    layers.append(LayerSpec.of("GlobalAveragePooling2D"))
    layers.extend(_dense(units, "relu") for units in head_units)
    layers.append(_dense(num_classes))
    return tuple(layers)
