"""A ModelPlan (bench.plans.models) made into Keras 3 objects: the model, its loss and its accuracy metric; and a
Keras model read back into the plans' terms (an OwnModel: its parameters and FLOPs by the same convention), for a
user's ``.keras`` file (loaded in safe mode only) and a script's model recorded by bench.integrations.keras.

Keras is imported lazily, inside the training worker, so the Streamlit server can import bench.plans.models (parameter
counts, FLOPs) without loading a framework. Only Keras 3 APIs are used, so the models build on any backend.
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import TYPE_CHECKING, Any, Callable

from bench.plans import models

from bench.plans import model_file
from bench.training import framework, step_flops
from bench.vocab import settings
from bench.plans.models import LayerSpec, ModelError, ModelPlan
from bench.plans.model_file import ModelFileError, OwnModel

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


def build_loss(plan: ModelPlan | OwnModel) -> keras.losses.Loss:
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


def build_metrics(plan: ModelPlan | OwnModel) -> list[keras.metrics.Metric]:
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


# -- a Keras model read back into the plans' terms --------------------------------------------------------------------
def _square(value: Any) -> int | None:
    """A kernel or pool size given as n or (n, n): n; None for anything else."""
    values = tuple(value) if isinstance(value, (list, tuple)) else (value,)
    return int(values[0]) if len(set(values)) == 1 else None


def _dense_spec(layer: Any) -> LayerSpec | None:
    return LayerSpec.of("Dense", units=int(layer.units), activation=_activation(layer),
                        use_bias=bool(getattr(layer, "use_bias", True)))


def _channels_last(layer: Any) -> bool:
    return getattr(layer, "data_format", "channels_last") == "channels_last"


def _conv2d_spec(layer: Any) -> LayerSpec | None:
    k = _square(layer.kernel_size)
    if k is None or _square(layer.strides) != 1 or _square(layer.dilation_rate) != 1 \
            or int(getattr(layer, "groups", 1)) != 1 or not _channels_last(layer):
        return None
    return LayerSpec.of("Conv2D", filters=int(layer.filters), kernel_size=k, padding=layer.padding,
                        activation=_activation(layer), use_bias=bool(layer.use_bias))


def _pool_spec(layer: Any) -> LayerSpec | None:
    pool = _square(layer.pool_size)
    if pool is None or _square(layer.strides) != pool or layer.padding != "valid" or not _channels_last(layer):
        return None
    return LayerSpec.of("MaxPooling2D", pool_size=pool)


def _activation(layer: Any) -> str | None:
    """A layer's activation by name ("relu"; None for linear). Read from the layer, not ``get_config()``: that
    serialises the dtype policy, which under Keras 3 imports TensorFlow even on another backend."""
    name = getattr(getattr(layer, "activation", None), "__name__", None)
    return None if name in (None, "linear") else str(name)


# Keras layer class -> its LayerSpec where the plans have a formula for it (None from the maker: not this variant)
_SPECS: dict[str, Callable[[Any], LayerSpec | None]] = {
    "Dense": _dense_spec,
    "Conv2D": _conv2d_spec,
    "MaxPooling2D": _pool_spec,
    "Flatten": lambda layer: LayerSpec.of("Flatten"),
    "Dropout": lambda layer: LayerSpec.of("Dropout", rate=float(layer.rate)),
    "GlobalAveragePooling2D": lambda layer: LayerSpec.of("GlobalAveragePooling2D") if _channels_last(layer) else None,
    "GlobalAveragePooling1D": lambda layer: LayerSpec.of("GlobalAveragePooling1D") if _channels_last(layer) else None,
    "Embedding": lambda layer: LayerSpec.of("Embedding", input_dim=int(layer.input_dim),
                                            output_dim=int(layer.output_dim)),
}
# layers that do no matrix arithmetic by the FLOP convention and keep the shape: counted 0, as activations are
_NO_FLOPS = frozenset({"InputLayer", "Activation", "ReLU", "Softmax", "LeakyReLU", "ELU", "SpatialDropout1D",
                       "SpatialDropout2D", "GaussianDropout", "GaussianNoise", "AlphaDropout"})


def _layer_specs(model: keras.Model) -> list[LayerSpec | str]:
    """The model's layers in order as the plans' LayerSpecs; a layer without a formula as its class name."""
    found: list[LayerSpec | str] = []
    for layer in model.layers:
        kind = type(layer).__name__
        if kind in _NO_FLOPS:
            continue
        make = _SPECS.get(kind)
        spec = make(layer) if make is not None else None
        if spec is None and make is not None:  # a kind with a formula, in a variant without one
            kind = f"{kind} (this variant)"
        found.append(spec if spec is not None else kind)
    return found


def _label(item: LayerSpec | str) -> str:
    """A layer for the model's one-line description: the spec's label, else its class name (the formulas' remark on a
    variant they do not count belongs to the FLOP reason, not to the layer)."""
    return item.label() if isinstance(item, LayerSpec) else item.removesuffix(" (this variant)")


def _ends_in_probabilities(model: keras.Model) -> bool:
    """Whether the model's output is already softmax / sigmoid (then its loss takes probabilities, not logits)."""
    for layer in reversed(model.layers):
        kind = type(layer).__name__
        if kind == "Softmax":
            return True
        act = _activation(layer)
        if act is not None:
            return act in ("softmax", "sigmoid")
        if kind not in _NO_FLOPS and kind != "Dropout":
            return False
    return False


def own_model(model: keras.Model, name: str | None = None,
              compiler: Callable[[], tuple[int | None, str | None]] | None = None) -> OwnModel:
    """A built Keras model in the plans' terms: its parameter count (Keras's ``count_params``), its training FLOPs per
    sample, its layers in one line, and whether it ends in probabilities.

    FLOPs: the plans' formulas (``model_file.own_flops``) where every layer has one, so a file or a script's model
    made of the presets' layers counts as the presets do; else the compiler's count of its step (``compiler``, or
    ``step_flops.counted`` where this process runs JAX); else None, with both reasons."""
    layers = _layer_specs(model)
    try:  # a subclassed model has no symbolic inputs and outputs
        inputs, outputs = list(model.inputs or []), list(model.outputs or [])
    except (AttributeError, ValueError):
        inputs, outputs = [], []
    input_shape = tuple(model.inputs[0].shape[1:]) if len(inputs) == 1 else ()
    output_units = outputs[0].shape[-1] if len(outputs) == 1 else None
    flops = _formula_flops(inputs, outputs, input_shape, layers)
    source: str | None = model_file.FLOP_SOURCE_FORMULAS
    if flops[0] is None:
        if compiler is None:
            counted = step_flops.counted(model) if step_flops.available() else (None, step_flops.NOT_JAX)
        else:
            counted = compiler()
        flops, source = ((counted, model_file.FLOP_SOURCE_COMPILER) if counted[0] is not None
                         else ((None, f"{flops[1]}; {counted[1]}"), None))
    return OwnModel(name=name or model.name, input_shape=tuple(None if d is None else int(d) for d in input_shape),
                    output_units=None if output_units is None else int(output_units),
                    params=int(model.count_params()), flops_per_sample=flops[0], flops_reason=flops[1],
                    layer_labels=tuple(_label(layer) for layer in layers),
                    from_logits=not _ends_in_probabilities(model), flops_source=source)


def _formula_flops(inputs: list[Any], outputs: list[Any], input_shape: tuple[Any, ...],
                   layers: list[LayerSpec | str]) -> tuple[int | None, str | None]:
    """The plans' formulas over a one-input, one-output chain of layers they know."""
    if len(inputs) == 1 and len(outputs) == 1:
        return model_file.own_flops(input_shape, layers)
    if not inputs:
        return None, "a subclassed model's layers are not a chain this can follow"
    return None, f"the model has {len(inputs)} inputs and {len(outputs)} outputs, not one chain"


def load_file(path: str) -> keras.Model:
    """A user's ``.keras`` file as a Keras model, after ``model_file.check_archive`` (the caps), through
    ``keras.saving.load_model(path, compile=False, safe_mode=True)``: what safe mode refuses is refused.

    Raises:
        ModelFileError: the file is refused or does not load; the message says why and what to do.
    """
    import keras

    archive = model_file.check_archive(path)
    try:
        return keras.saving.load_model(path, compile=False, safe_mode=True)
    except Exception as exc:  # noqa: BLE001 - Keras raises many kinds for a file it cannot read
        raise refusal(model_file.file_model_name(path), archive.top_class, exc) from None


def refusal(name: str, top_class: str | None, exc: BaseException) -> ModelFileError:
    """Keras's own refusal of a file, said for a person: what safe mode refused, and what to do."""
    text = " ".join(str(exc).split())
    if "Lambda" in text and "safe_mode" in text:
        return ModelFileError(f"{name!r} holds a Lambda layer (arbitrary Python code), which Keras's safe mode does "
                              "not load: rebuild that part from Keras layers and save the model again.")
    if "TFSMLayer" in text:
        return ModelFileError(f"{name!r} holds a TFSMLayer (a TensorFlow SavedModel), which Keras's safe mode does "
                              "not load: rebuild that part from Keras layers and save the model again.")
    if "Could not locate" in text or "custom" in text.lower():
        if top_class not in (None, "Functional", "Sequential", "Model"):
            return ModelFileError(
                f"{name!r} is a subclassed model (class {top_class!r}), which only its own code can rebuild and "
                "Keras's safe mode runs no code from a file: write it with keras.Model(inputs, outputs) (the "
                "functional API) or keras.Sequential from Keras's own layers and save that.")
        found = re.search(r"Could not locate \w+ '([^']{1,80})'", text)
        return ModelFileError(f"{name!r} holds a custom object{(' ' + repr(found.group(1))) if found else ''} that "
                              "Keras does not "
                              "ship, and Keras's safe mode runs no code from a file: rebuild that part from Keras's "
                              "own layers and save the model again.")
    return ModelFileError(f"{name!r} does not load in Keras's safe mode: {text[:600]}")


def build_file(path: str, input_shape: tuple[int, ...], num_classes: int,
               vocab_size: int | None = None) -> tuple[keras.Model, OwnModel]:
    """A model file loaded for training on a data set: the uncompiled model and its OwnModel (checked against the data
    by ``model_file.fit_to_data``, which raises ModelFileError when it does not fit). FLOPs the formulas cannot count
    are the compiler's: counted here on JAX, else by the reading child (``model_file.check_model_file``), on JAX."""
    model = load_file(path)
    name = model_file.file_model_name(path)
    own = own_model(model, name)
    if own.flops_per_sample is None and not step_flops.available():
        try:
            checked = model_file.check_model_file(path, input_shape, num_classes, vocab_size, backend="jax")
            if checked.flops_source == model_file.FLOP_SOURCE_COMPILER:
                own = own.model_copy(update={"flops_per_sample": checked.flops_per_sample, "flops_reason": None,
                                             "flops_source": checked.flops_source})
        except ModelError:
            pass  # the formulas' figure, or "not counted", stands
    return model, model_file.fit_to_data(own, input_shape, num_classes, vocab_size)


class TooLarge(ModelFileError):
    """A model over the parameter bound: the refusal, and the count (model_file keeps it to apply another bound)."""

    def __init__(self, message: str, params: int) -> None:
        super().__init__(message)
        self.params = params


def read_checked(path: str, max_params: int) -> OwnModel:
    """What the reading child answers for a file: its config (within the caps) built by Keras's safe mode on abstract
    shapes, nothing allocated; refused when its parameters pass ``max_params``; its training step's FLOPs counted on
    those shapes, and the model described. Its weights are read by the worker that trains it (``load_file``), within
    the archive's caps; building the model twice here would double the check's time (MobileNetV2: 8 s a build).

    Raises:
        ModelFileError: the reason, and what to do.
    """
    import keras

    archive = model_file.check_archive(path)
    name = model_file.file_model_name(path)
    with keras.StatelessScope(initialize_variables=False):
        try:
            abstract = keras.saving.deserialize_keras_object(step_flops.uncompiled(archive.config), safe_mode=True)
            params = sum(math.prod(int(d) for d in v.shape) for v in abstract.weights)
        except Exception as exc:  # noqa: BLE001 - safe mode's refusals and Keras's own errors
            raise refusal(name, archive.top_class, exc) from None
        if params > max_params:
            raise TooLarge(model_file.too_large(name, params, max_params), params)
        loops = bool(step_flops.rolled_layers(abstract))

        def compiler() -> tuple[int | None, str | None]:
            if not step_flops.available():
                return None, step_flops.NOT_JAX
            try:  # the abstract model itself where it has no loop to unroll; else a copy with its loops written out
                return (step_flops.counted_from_config(archive.config) if loops
                        else step_flops.step_flops(abstract, loops_counted=True))
            except Exception as exc:  # noqa: BLE001 - the count is a figure, never a reason to refuse
                return None, f"JAX could not count the step ({' '.join(str(exc).split())[:160]})"

        return own_model(abstract, name, compiler)


def _main(argv: list[str]) -> int:
    """``python -m bench.training.keras_build PATH MAX_PARAMS MEMORY_MIB``: the file's OwnModel as one JSON line, or
    {"error": why}, read under an address-space limit of MEMORY_MIB set before Keras is imported
    (model_file.check_model_file runs this in a child process, so its caller never loads a framework)."""
    path, max_params, memory = argv[0], int(argv[1]), int(argv[2])
    model_file.limit_memory(memory)
    framework.load_keras(settings.env("KERAS_BACKEND") or "tensorflow")
    try:
        print(json.dumps(read_checked(path, max_params).model_dump(mode="json")), flush=True)
    except TooLarge as exc:
        print(json.dumps({"error": str(exc), "params": exc.params}), flush=True)
    except ModelError as exc:
        print(json.dumps({"error": str(exc)}), flush=True)
    except MemoryError:
        print(json.dumps({"error": f"{model_file.file_model_name(path)!r} needs more than the {memory:,} MiB its "
                                   "reading is allowed here: save a smaller model."}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
