"""The FLOPs of a Keras model's training step as the compiler counts them: the step (forward, loss, gradients of the
loss with respect to every trainable weight) lowered by JAX on abstract shapes and read by XLA's cost analysis
(``jax.jit(step).lower(...).cost_analysis()``), for any model Keras builds: BatchNormalization, depthwise convolutions,
recurrent layers, attention. Nothing is allocated: the weights are ``jax.ShapeDtypeStruct``s, so a model is counted
from its config alone (``counted_from_config``, inside a ``keras.StatelessScope`` that leaves its variables
uninitialized).

The lowered program is read, not the compiled one: what the compiler later rewrites for one platform (the CPU turns a
depthwise convolution's gradient into a dense one, three times the arithmetic) is the platform's cost, not the model's.
A loop (``stablehlo.while``) is counted once by the analysis, not once per iteration, so recurrent layers are unrolled
for the count (``unroll=True``: the same arithmetic, written out; the loops left are dropout's random numbers); a
model that cannot be rebuilt from its config with its loops unrolled is not counted when its step holds a loop. How the figures compare with the plans' formulas on every preset: docs/CALLBACK.md.

Needs the JAX backend (Keras's backend is fixed per process): ``available()`` says whether this process can count.
"""

from __future__ import annotations

import copy
import math
from typing import Any

COUNT_BATCH = 32  # the step is lowered for this many samples; FLOPs per sample = the step's / COUNT_BATCH
NOT_JAX = "the compiler's count needs the JAX backend (pip install jax)"


def available() -> bool:
    """Whether this process's Keras runs on JAX (the only backend whose lowering is read here)."""
    import keras

    return bool(keras.config.backend() == "jax")


def unrolled(config: Any) -> Any:
    """A Keras config with every recurrent layer's ``unroll`` set: the same arithmetic as a written-out loop, which
    the cost analysis counts in full (a ``while`` loop's body it counts once)."""
    if isinstance(config, dict):
        return {key: (True if key == "unroll" and value is False else unrolled(value)) for key, value in config.items()}
    if isinstance(config, list):
        return [unrolled(item) for item in config]
    return config


def rolled_layers(model: Any) -> list[str]:
    """The model's recurrent layers left rolled (``unroll`` False), nested models and wrappers (Bidirectional,
    TimeDistributed) looked into: their class names."""
    found: list[str] = []
    stack, seen = [model], set()
    while stack:
        layer = stack.pop()
        if id(layer) in seen:
            continue
        seen.add(id(layer))
        if getattr(layer, "unroll", None) is False:
            found.append(type(layer).__name__)
        stack.extend(getattr(layer, "layers", None) or [])
        stack.extend(inner for inner in (getattr(layer, "layer", None), getattr(layer, "forward_layer", None),
                                         getattr(layer, "backward_layer", None)) if inner is not None)
    return found


def uncompiled(config: Any) -> Any:
    """A saved model's config as ``load_model(..., compile=False)`` reads it: without its compile config (the
    optimizer would make variables of its own, which an abstract build cannot hold). A copy; the config is kept."""
    copied = copy.deepcopy(config)
    if isinstance(copied, dict) and "compile_config" in copied:
        copied["compile_config"] = None
    return copied


def counted_from_config(config: Any) -> tuple[int | None, str | None]:
    """Training FLOPs per sample of the model a Keras config describes (safe mode: what it refuses is refused before),
    built on abstract shapes with its recurrent layers unrolled: ``(flops, None)`` or ``(None, why)``. The config is
    not changed (Keras's deserialization takes keys out of what it reads: it reads a copy)."""
    import keras

    if not available():
        return None, NOT_JAX
    with keras.StatelessScope(initialize_variables=False):
        model = keras.saving.deserialize_keras_object(unrolled(uncompiled(config)), safe_mode=True)
        return step_flops(model, loops_counted=True)


def counted(model: Any) -> tuple[int | None, str | None]:
    """Training FLOPs per sample of a built model: from its config, unrolled, where Keras can serialize it (every
    functional and Sequential model), else from the model itself."""
    import keras

    if not available():
        return None, NOT_JAX
    if not rolled_layers(model):
        return step_flops(model, loops_counted=True)  # nothing to unroll: the model itself, not a rebuilt copy
    try:
        config = keras.saving.serialize_keras_object(model)
    except Exception:  # noqa: BLE001 - a subclassed model may not serialize; it is counted as it is
        config = None
    if config is not None:
        try:
            return counted_from_config(config)
        except Exception:  # noqa: BLE001 - a config that does not rebuild (custom objects): count the model itself
            pass
    return step_flops(model)


def step_flops(model: Any, *, loops_counted: bool = False) -> tuple[int | None, str | None]:
    """Training FLOPs per sample of a built one-input, one-output model on the JAX backend: its step lowered for
    COUNT_BATCH samples on abstract shapes, read by XLA's cost analysis. ``loops_counted``: the model's recurrent
    layers are unrolled (``counted_from_config``), so a loop left in the step is random-number generation (dropout's
    masks), not the model's arithmetic; otherwise a step holding a loop is not counted."""
    import jax

    try:
        inputs, outputs = list(model.inputs or []), list(model.outputs or [])
    except (AttributeError, ValueError):
        return None, "a subclassed model declares no inputs to lower its step for"
    if len(inputs) != 1 or len(outputs) != 1:
        return None, f"the model has {len(inputs)} inputs and {len(outputs)} outputs; one of each is counted here"
    sample = tuple(inputs[0].shape[1:])
    if any(d is None for d in sample):
        return None, f"the input shape {sample} has an open dimension"
    try:
        lowered = jax.jit(_step(model, int(outputs[0].shape[-1] or 1))).lower(*_abstract(model, sample))
        if not loops_counted and "stablehlo.while" in lowered.as_text():
            return None, "the training step holds a loop the compiler counts once, not once per iteration"
        analysis = lowered.cost_analysis()
    except Exception as exc:  # noqa: BLE001 - a model JAX cannot lower here is not counted, with the reason
        return None, f"JAX could not lower the training step ({' '.join(str(exc).split())[:160]})"
    if isinstance(analysis, list):  # older JAX: one dict per computation
        analysis = analysis[0] if analysis else {}
    flops = (analysis or {}).get("flops")
    if flops is None or not math.isfinite(float(flops)) or float(flops) <= 0:
        return None, "XLA's cost analysis gave no FLOP count for this step"
    return int(round(float(flops) / COUNT_BATCH)), None


def _abstract(model: Any, sample: tuple[int, ...]) -> tuple[Any, ...]:
    """The step's arguments as shapes and dtypes only: the weights, one batch of inputs and integer labels."""
    import jax

    def spec(variable: Any) -> Any:
        return jax.ShapeDtypeStruct(tuple(variable.shape), variable.dtype)

    trainable = [spec(v) for v in model.trainable_variables]
    frozen = [spec(v) for v in model.non_trainable_variables]
    x = jax.ShapeDtypeStruct((COUNT_BATCH, *sample), model.inputs[0].dtype)
    y = jax.ShapeDtypeStruct((COUNT_BATCH,), "int32")
    return trainable, frozen, x, y


def _step(model: Any, units: int) -> Any:
    """The training step as a pure function: the loss (sparse categorical cross-entropy, binary for one output) and
    its gradients with respect to the trainable weights."""
    import jax
    import keras

    loss = (keras.losses.BinaryCrossentropy(from_logits=True) if units == 1
            else keras.losses.SparseCategoricalCrossentropy(from_logits=True))

    def step(trainable: Any, frozen: Any, x: Any, y: Any) -> Any:
        def objective(weights: Any) -> Any:
            out, frozen_after = model.stateless_call(weights, frozen, x, training=True)
            labels = y if units != 1 else keras.ops.cast(keras.ops.expand_dims(y, -1), out.dtype)
            return loss(labels, out), frozen_after

        (value, frozen_after), grads = jax.value_and_grad(objective, has_aux=True)(trainable)
        return value, grads, frozen_after

    return step
