"""A model this project did not plan: a user's Keras file (checked without a framework, then loaded in Keras's safe
mode in a child process) or the model of a script that records itself, in the plans' terms (OwnModel: its layers,
parameters and FLOPs by the same convention as the presets')."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import subprocess
import sys
import zipfile
from dataclasses import dataclass, field
from typing import Any

from bench.plans.models import LAYER_KINDS, LayerSpec, ModelError, ModelPlan, format_flops, measure, plan

MODEL_FILE_MAX_MB = 200  # a .keras file larger than this is refused before anything reads it
MODEL_FILE_SUFFIX = ".keras"
MODEL_FILE_CHECK_TIMEOUT_S = 180.0  # the child process that loads a file under Keras's safe mode
_KERAS_MODULES = ("keras",)  # a layer, activation or initializer of Keras itself: its "module" starts with one of these
_OWN_LAYERS_SHOWN = 12


class ModelFileError(ModelError):
    """A model file that cannot be trained here: the message says why and what to do; nothing is stored."""


@dataclass(frozen=True)
class OwnModel:
    """A model this project did not plan (a user's ``.keras`` file, or the model a script trains), as Keras reports it.

    It carries what a run's record needs of a plan (``params``, ``flops_per_sample``: training FLOPs per sample by this
    module's FLOP convention, None with ``flops_reason`` where a layer has no formula here, ``describe()``) and what
    compiling it needs (``loss``, ``from_logits``, read by ``keras_build.build_loss`` / ``build_metrics``)."""

    name: str
    input_shape: tuple[int | None, ...]  # one sample's shape as the model declares it (None: any length)
    output_units: int | None  # the last axis of its output
    params: int
    flops_per_sample: int | None
    flops_reason: str | None
    layer_labels: tuple[str, ...]
    loss: str = "sparse_categorical_crossentropy"
    from_logits: bool = True
    preset: str | None = None  # never a preset: a ModelPlan's field, for the code that reads either

    @property
    def title(self) -> str:
        return self.name

    def describe(self) -> str:
        """One line, e.g. "my_net: Flatten -> Dense 64 relu -> Dense 10 (50,890 params, 305 kFLOP/sample)"."""
        shown = list(self.layer_labels[:_OWN_LAYERS_SHOWN])
        if len(self.layer_labels) > _OWN_LAYERS_SHOWN:
            shown.append(f"... {len(self.layer_labels) - _OWN_LAYERS_SHOWN} more")
        flops = (f"{format_flops(self.flops_per_sample)}/sample" if self.flops_per_sample is not None
                 else f"FLOPs not counted: {self.flops_reason}")
        return f"{self.name}: {' -> '.join(shown) or 'no layers'} ({self.params:,} params, {flops})"

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types, for the child process that reads a file (``keras_build``) to hand it back."""
        return {"name": self.name, "input_shape": list(self.input_shape), "output_units": self.output_units,
                "params": self.params, "flops_per_sample": self.flops_per_sample, "flops_reason": self.flops_reason,
                "layer_labels": list(self.layer_labels), "loss": self.loss, "from_logits": self.from_logits}

    @classmethod
    def of(cls, data: dict[str, Any]) -> OwnModel:
        """What :meth:`to_dict` wrote (this project's own child process: trusted)."""
        return cls(name=str(data["name"]), input_shape=tuple(data["input_shape"]), output_units=data["output_units"],
                   params=int(data["params"]), flops_per_sample=data["flops_per_sample"],
                   flops_reason=data["flops_reason"], layer_labels=tuple(data["layer_labels"]),
                   loss=str(data["loss"]), from_logits=bool(data["from_logits"]))


def own_flops(input_shape: tuple[int | None, ...], layers: list[LayerSpec | str]) -> tuple[int | None, str | None]:
    """Training FLOPs per sample of a layer chain read from Keras, by the same convention (and code) as the plans:
    ``(flops, None)``, or ``(None, why)`` where a layer is not one this module has a formula for (given as its
    class name instead of a LayerSpec) or the input has an open dimension."""
    unknown = [layer for layer in layers if isinstance(layer, str)]
    if unknown:
        kinds = ", ".join(dict.fromkeys(unknown))
        return None, (f"no formula here for {kinds} (formulas: {', '.join(LAYER_KINDS)}; Conv2D at stride 1, "
                      "max pooling at a stride of its size, channels last)")
    if any(d is None for d in input_shape):
        return None, f"the input shape {tuple(input_shape)} has an open dimension"
    specs = [layer for layer in layers if isinstance(layer, LayerSpec)]
    try:
        return measure(tuple(int(d) for d in input_shape if d is not None), tuple(specs))[1], None
    except ModelError as exc:
        return None, str(exc)


def fit_to_data(model: OwnModel, input_shape: tuple[int, ...], num_classes: int,
                vocab_size: int | None = None) -> OwnModel:
    """``model`` once checked against a data set (one sample's ``input_shape``, ``num_classes``), with the loss that
    trains it on that set's integer labels: sparse categorical cross-entropy for ``num_classes`` outputs, binary
    cross-entropy for one output on two classes (logits unless its last layer ends in softmax / sigmoid).

    Raises:
        ModelFileError: the input or output does not fit; the message gives both shapes and what to change.
    """
    declared = tuple(model.input_shape)
    wanted = tuple(int(d) for d in input_shape)
    if len(declared) != len(wanted) or any(d is not None and d != w for d, w in zip(declared, wanted)):
        shown = tuple("None" if d is None else d for d in declared)
        kind = "token ids" if vocab_size is not None else "samples"
        raise ModelFileError(
            f"the model takes inputs of shape {_shape_text(shown)} but this data set's {kind} have shape "
            f"{_shape_text(wanted)}: pick a data set of that shape, or save the model with "
            f"keras.Input(shape={wanted}).")
    units = model.output_units
    if units == num_classes and num_classes >= 2:
        loss = "sparse_categorical_crossentropy"
    elif units == 1 and num_classes == 2:
        loss = "binary_crossentropy"
    else:
        fits = f"{num_classes}" + (" (or 1 for a single logit)" if num_classes == 2 else "")
        raise ModelFileError(
            f"the model's output has {units} unit(s) but this data set has {num_classes} classes: its last layer "
            f"should be Dense({fits}), or pick a data set with {units} classes.")
    return dataclasses.replace(model, loss=loss, from_logits=model.from_logits)


def _shape_text(shape: tuple[Any, ...]) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def file_model_name(path: str) -> str:
    """The name a model file's runs go by (their config's ``model``): the file's name."""
    return os.path.basename(str(path)) or str(path)


def check_archive(path: str) -> None:
    """What can be said of a model file without a framework: it exists, is at most MODEL_FILE_MAX_MB, is a Keras
    archive (a zip holding config.json), and names no Lambda layer and nothing outside Keras (a custom layer,
    activation or function: code the file would need, which safe mode does not run).

    Raises:
        ModelFileError: the reason, and what to do.
    """
    name = file_model_name(path)
    if not os.path.isfile(path):
        raise ModelFileError(f"model file {path!r} does not exist; give the path of a .keras file.")
    size = os.path.getsize(path)
    if size > MODEL_FILE_MAX_MB * 1024 * 1024:
        raise ModelFileError(f"model file {name!r} is {size / 1024 / 1024:.0f} MB; at most {MODEL_FILE_MAX_MB} MB "
                             "is read here: save a smaller model.")
    try:
        with zipfile.ZipFile(path) as archive:
            config = json.loads(archive.read("config.json"))
    except (zipfile.BadZipFile, KeyError, OSError, ValueError, RuntimeError):
        raise ModelFileError(
            f"{name!r} is not a Keras archive (.keras, from model.save('model.keras')); an .h5 file or SavedModel "
            "folder is not read here: load it in Keras and save it as .keras.") from None
    refused = _refused_objects(config)
    if refused:
        raise ModelFileError(f"{name!r} holds {refused[0]}; only Keras's own layers are loaded (safe mode runs no "
                             "code from a file): rebuild that part from Keras layers and save the model again.")


def _refused_objects(node: Any) -> list[str]:
    """The objects of a Keras config that safe loading refuses here: Lambda layers and anything Keras does not ship."""
    found: list[str] = []
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
            continue
        if not isinstance(item, dict):
            continue
        cls_name, module = item.get("class_name"), item.get("module")
        if isinstance(cls_name, str) and "config" in item:
            if cls_name in ("Lambda", "__lambda__"):
                found.append("a Lambda layer (arbitrary Python code)")
            elif not (isinstance(module, str) and module.split(".")[0] in _KERAS_MODULES):
                found.append(f"a custom object {cls_name!r} (module {module!r}), which Keras does not ship")
        stack.extend(item.values())
    return found


_CHECKED: dict[tuple[Any, ...], OwnModel] = {}


def check_model_file(path: str, input_shape: tuple[int, ...], num_classes: int, vocab_size: int | None = None,
                     backend: str = "jax") -> OwnModel:
    """A model file checked for a data set: :func:`check_archive`, then loaded with ``keras.saving.load_model(...,
    safe_mode=True)`` in a child Python (the calling process, a dashboard's or the CLI's, never loads a framework),
    its parameters and FLOPs counted and :func:`fit_to_data` applied. Read once per file (path, size, change time).

    Raises:
        ModelFileError: the file cannot be trained on this data; the message says why and what to do.
    """
    check_archive(path)
    stat = os.stat(path)
    key = (os.path.realpath(path), stat.st_size, stat.st_mtime_ns)
    if key not in _CHECKED:
        _CHECKED[key] = _read_in_child(path, backend)
    return fit_to_data(_CHECKED[key], input_shape, num_classes, vocab_size)


def _read_in_child(path: str, backend: str) -> OwnModel:
    """The file loaded by ``python -m bench.training.keras_build PATH`` on the CPU alone: its OwnModel, or the reason
    it could not load."""
    env = {**os.environ, "KERAS_BACKEND": backend, "CUDA_VISIBLE_DEVICES": "", "JAX_PLATFORMS": "cpu",
           "TF_CPP_MIN_LOG_LEVEL": "3"}
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    try:
        done = subprocess.run([sys.executable, "-m", "bench.training.keras_build", os.path.abspath(path)],
                              capture_output=True, text=True, env=env, timeout=MODEL_FILE_CHECK_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise ModelFileError(f"reading {file_model_name(path)!r} took over {MODEL_FILE_CHECK_TIMEOUT_S:.0f} s; "
                             "try a smaller model file.") from None
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        last = (done.stderr.strip().splitlines() or ["no answer"])[-1]
        raise ModelFileError(f"{file_model_name(path)!r} cannot be loaded: {last}")
    answer = json.loads(lines[-1])
    if "error" in answer:
        raise ModelFileError(str(answer["error"]))
    return OwnModel.of(answer)
