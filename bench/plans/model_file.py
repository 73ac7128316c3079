"""A model this project did not plan: a user's Keras file (checked within stated caps without a framework, then read
by Keras's own safe mode in a child process under a memory and a time limit) or the model of a script that records
itself, in the plans' terms (OwnModel: its layers, parameters and FLOPs: the compiler's count of the training step
where JAX can lower it, else the plans' formulas, with the source named).

The caps (docs/CALLBACK.md, "Your own model"): a file of at most MODEL_FILE_MAX_MB on disk, at most ARCHIVE_MAX_MEMBERS
members expanding to at most ARCHIVE_MAX_EXPANDED_MB, a config.json of at most CONFIG_MAX_BYTES with no text over
CONFIG_TEXT_MAX characters; a model of at most :func:`max_params` parameters for the device it trains on, counted from
its config on abstract shapes before any weight is allocated; the reading child under CHILD_MEMORY_BASE_MIB plus its
weights' size of address space and MODEL_FILE_CHECK_TIMEOUT_S seconds, one at a time per process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import zipfile
from dataclasses import dataclass, field
from typing import Any

import psutil
import pydantic_core
from pydantic import BaseModel, ConfigDict

from bench.plans.models import LAYER_KINDS, LayerSpec, ModelError, format_flops, measure

MODEL_FILE_MAX_MB = 200  # a .keras file larger than this on disk is refused before anything reads it
MODEL_FILE_SUFFIX = ".keras"
ARCHIVE_MAX_MEMBERS = 64  # Keras writes three (config.json, metadata.json, model.weights.h5), plus assets
ARCHIVE_MAX_EXPANDED_MB = 1024  # what the zip directory says its members expand to, together
CONFIG_MAX_BYTES = 16 * 1024 * 1024  # config.json inflated (MobileNetV2's is 0.16 MB, EfficientNetV2-L's 0.6 MB)
CONFIG_TEXT_MAX = 4096  # the longest name or setting in a config
MODEL_MEMORY_SHARE = 0.5  # of the device's memory, for a model's weights, gradients and optimizer state
TRAINING_COPIES = 4  # weights, gradients, Adam's two moments
MODEL_FILE_CHECK_TIMEOUT_S = 120.0  # the child process that reads a file under Keras's safe mode
CHILD_MEMORY_BASE_MIB = 6144  # the child's address space before its weights: Keras and JAX take about 2 GiB of it
FLOP_SOURCE_COMPILER = "XLA's cost analysis of the training step"
FLOP_SOURCE_FORMULAS = "the plans' formulas"
_MIB = 1024 * 1024
_FLOAT32_BYTES = 4
_READ_CHUNK = 1024 * 1024
_OWN_LAYERS_SHOWN = 12
_ONE_CHILD = threading.BoundedSemaphore(1)  # one reading child at a time in a process: uploads queue, never pile up


class ModelFileError(ModelError):
    """A model file that cannot be trained here: the message says why and what to do; nothing is stored."""


class OwnModel(BaseModel):
    """A model this project did not plan (a user's ``.keras`` file, or the model a script trains), as Keras reports it.

    It carries what a run's record needs of a plan (``params``; ``flops_per_sample``: training FLOPs per sample, from
    ``flops_source``, None with ``flops_reason`` where neither the compiler nor a formula could say; ``describe()``)
    and what compiling it needs (``loss``, ``from_logits``, read by ``keras_build.build_loss`` / ``build_metrics``).

    The child process that reads a file (``keras_build``) hands it back as ``model_dump(mode="json")`` on one line,
    read here with ``model_validate`` (this project's own child: trusted; a key it does not know is refused)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

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
    flops_source: str | None = None  # FLOP_SOURCE_COMPILER or FLOP_SOURCE_FORMULAS; None when not counted

    @property
    def title(self) -> str:
        return self.name

    def describe(self) -> str:
        """One line, e.g. "my_net: Flatten -> Dense 64 relu -> Dense 10 (50,890 params, 305 kFLOP/sample by XLA's
        cost analysis of the training step)"."""
        shown = list(self.layer_labels[:_OWN_LAYERS_SHOWN])
        if len(self.layer_labels) > _OWN_LAYERS_SHOWN:
            shown.append(f"... {len(self.layer_labels) - _OWN_LAYERS_SHOWN} more")
        flops = (f"{format_flops(self.flops_per_sample)}/sample by {self.flops_source or FLOP_SOURCE_FORMULAS}"
                 if self.flops_per_sample is not None else f"FLOPs not counted: {self.flops_reason}")
        return f"{self.name}: {' -> '.join(shown) or 'no layers'} ({self.params:,} params, {flops})"


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
    return model.model_copy(update={"loss": loss, "from_logits": model.from_logits})


def _shape_text(shape: tuple[Any, ...]) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def file_model_name(path: str) -> str:
    """The name a model file's runs go by (their config's ``model``): the file's name."""
    return os.path.basename(str(path)) or str(path)


def check_archive(path: str) -> ArchiveCheck:
    """What can be said of a model file without a framework, reading at most the caps whatever the file holds: it
    exists, is at most MODEL_FILE_MAX_MB on disk, is a zip whose directory lists config.json, at most ARCHIVE_MAX_MEMBERS
    members that expand to at most ARCHIVE_MAX_EXPANDED_MB together (the sizes the directory declares, checked before a
    byte is inflated), and whose config.json inflates to at most CONFIG_MAX_BYTES (read in a bounded loop, so a
    directory that lies about a size still stops there), is JSON nested at most pydantic's 200 levels and holds no text
    over CONFIG_TEXT_MAX characters. What Keras itself refuses (a Lambda layer, a class Keras does not ship) is decided by
    Keras's own safe mode, in the child process :func:`check_model_file` starts.

    Raises:
        ModelFileError: the reason, and what to do.
    """
    name = file_model_name(path)
    if not os.path.isfile(path):
        raise ModelFileError(f"model file {path!r} does not exist; give the path of a .keras file.")
    size = os.path.getsize(path)
    if size > MODEL_FILE_MAX_MB * _MIB:
        raise ModelFileError(f"model file {name!r} is {size / _MIB:.0f} MB; at most {MODEL_FILE_MAX_MB} MB "
                             "is read here: save a smaller model.")
    not_archive = ModelFileError(
        f"{name!r} is not a Keras archive (.keras, from model.save('model.keras')); an .h5 file or SavedModel "
        "folder is not read here: load it in Keras and save it as .keras.")
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
            _check_members(name, members)
            config_info = next((m for m in members if m.filename == "config.json"), None)
            if config_info is None:
                raise not_archive
            text = _read_bounded(archive, config_info, name)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, RuntimeError, NotImplementedError,
            ValueError) as exc:
        if isinstance(exc, ModelFileError):
            raise
        raise not_archive from None
    config = _parse_config(text, name)
    return ArchiveCheck(config=config, config_bytes=len(text), expanded_bytes=sum(m.file_size for m in members),
                        members=len(members), top_class=_top_class(config))


def _check_members(name: str, members: list[zipfile.ZipInfo]) -> None:
    """The zip directory within the caps: how many members, and what they say they expand to."""
    if len(members) > ARCHIVE_MAX_MEMBERS:
        raise ModelFileError(f"{name!r} holds {len(members):,} files; a Keras archive holds a few (config.json, "
                             f"metadata.json, model.weights.h5), at most {ARCHIVE_MAX_MEMBERS} are read here: save "
                             "the model again with model.save('model.keras').")
    config = next((m for m in members if m.filename == "config.json"), None)
    if config is not None and config.file_size > CONFIG_MAX_BYTES:
        raise ModelFileError(_config_too_large(name, config.file_size))
    expanded = sum(max(0, m.file_size) for m in members)
    if expanded > ARCHIVE_MAX_EXPANDED_MB * _MIB:
        raise ModelFileError(f"{name!r} expands to {expanded / _MIB:,.0f} MB; at most {ARCHIVE_MAX_EXPANDED_MB:,} MB "
                             "is read here (its weights included): save a smaller model.")


def _config_too_large(name: str, size: int) -> str:
    return (f"{name!r} has a config.json of {size / _MIB:,.1f} MB; a model's config is at most "
            f"{CONFIG_MAX_BYTES / _MIB:.0f} MB here (MobileNetV2's is 0.16 MB): a name or setting in it is far "
            "too long. Save the model again from Keras.")


def _read_bounded(archive: zipfile.ZipFile, info: zipfile.ZipInfo, name: str) -> bytes:
    """A member's bytes, never more than CONFIG_MAX_BYTES + 1 inflated, whatever its directory entry says."""
    chunks: list[bytes] = []
    total = 0
    with archive.open(info) as member:
        while total <= CONFIG_MAX_BYTES:
            chunk = member.read(min(_READ_CHUNK, CONFIG_MAX_BYTES + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    if total > CONFIG_MAX_BYTES:
        raise ModelFileError(_config_too_large(name, total))
    return b"".join(chunks)


def _parse_config(text: bytes, name: str) -> Any:
    """config.json parsed by pydantic's JSON parser (nesting past 200 refused), each text in it bounded."""
    try:
        config = pydantic_core.from_json(text)
    except ValueError as exc:
        raise ModelFileError(f"{name!r} has a config.json that is not JSON this reads ({' '.join(str(exc).split())[:200]}):"
                             " save the model again from Keras.") from None
    longest = _longest_text(config)
    if longest > CONFIG_TEXT_MAX:
        raise ModelFileError(f"{name!r} has a name or setting of {longest:,} characters in its config; at most "
                             f"{CONFIG_TEXT_MAX:,} are read here: give the model and its layers shorter names.")
    return config


def _longest_text(node: Any) -> int:
    """The longest string (key or value) anywhere in a parsed JSON document, looked through without recursion."""
    longest, stack = 0, [node]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            longest = max(longest, len(item))
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return longest


def _top_class(config: Any) -> str | None:
    """The saved model's own class ("Functional", "Sequential", or a subclass's name), for messages."""
    return str(config.get("class_name"))[:80] if isinstance(config, dict) and config.get("class_name") else None


@dataclass(frozen=True)
class ArchiveCheck:
    """What :func:`check_archive` read of a file within its caps: its parsed config.json and the sizes."""

    config: Any = field(repr=False)
    config_bytes: int
    expanded_bytes: int
    members: int
    top_class: str | None


def memory_budget_mib(device_memory_mib: float | None = None) -> float:
    """The memory a model file's training may plan for: MODEL_MEMORY_SHARE of the device's memory (a GPU's, as its
    source reports it), or of the RAM available now for the CPU (``device_memory_mib`` None)."""
    if device_memory_mib is None:
        device_memory_mib = psutil.virtual_memory().available / _MIB
    return MODEL_MEMORY_SHARE * float(device_memory_mib)


def max_params(device_memory_mib: float | None = None) -> int:
    """The most parameters a model file may have to train on that device: its weights, their gradients and two
    optimizer slots (Adam's), TRAINING_COPIES float32 copies, within :func:`memory_budget_mib`."""
    return int(memory_budget_mib(device_memory_mib) * _MIB // (TRAINING_COPIES * _FLOAT32_BYTES))


@dataclass(frozen=True)
class _Read:
    """What the reading child said of one file under the parameter bound ``limit``: its model, or its refusal
    (``params`` set where the refusal was the bound's)."""

    limit: int
    model: OwnModel | None = None
    refusal: str | None = None
    params: int | None = None


# One answer per file (path, size, change time): a Compare or a Sweep validates each of its configs, and the bound on
# the CPU follows the RAM available at that moment, so the bound is applied to the answer, not made part of its key
_READS: dict[tuple[Any, ...], _Read] = {}


def check_model_file(path: str, input_shape: tuple[int, ...], num_classes: int, vocab_size: int | None = None,
                     backend: str = "jax", device_memory_mib: float | None = None) -> OwnModel:
    """A model file checked for a data set: :func:`check_archive` (the caps, in this process), then read by Keras's
    own safe mode in a child Python under a memory and a time limit (the calling process, a dashboard's or the CLI's,
    never loads a framework): its parameters counted from the config on abstract shapes and refused over
    :func:`max_params` for ``device_memory_mib`` (None: the CPU's available RAM) before a weight is allocated, its
    training step's FLOPs from the compiler, its weights loaded; then :func:`fit_to_data`. A file is read once (path,
    size, change time): its answer, a model or a refusal, holds for every later check, the bound applied to it again
    (a file refused as too large under a smaller bound is read again under a larger one).

    Raises:
        ModelFileError: the file cannot be trained on this data; the message says why and what to do.
    """
    check_archive(path)
    stat = os.stat(path)
    limit = max_params(device_memory_mib)
    key = (os.path.realpath(path), stat.st_size, stat.st_mtime_ns)
    read = _READS.get(key)
    if read is None or (read.params is not None and limit > read.limit):
        read = _READS[key] = _read_in_child(path, backend, limit)
    params = read.model.params if read.model is not None else read.params
    if params is not None and params > limit:
        raise ModelFileError(too_large(file_model_name(path), params, limit))
    if read.model is None:
        raise ModelFileError(read.refusal or f"{file_model_name(path)!r} cannot be loaded")
    return fit_to_data(read.model, input_shape, num_classes, vocab_size)


def too_large(name: str, params: int, limit: int) -> str:
    """The refusal of a model over the parameter bound ``limit``, with the figures."""
    gib = params * TRAINING_COPIES * _FLOAT32_BYTES / 2**30
    budget = limit * TRAINING_COPIES * _FLOAT32_BYTES / 2**30
    return (f"{name!r} has {params:,} parameters: training it holds about {gib:,.1f} GiB (weights, gradients and "
            f"Adam's two moments in float32), more than the {budget:,.1f} GiB allowed here "
            f"({MODEL_MEMORY_SHARE:.0%} of the device's memory: at most {limit:,} parameters). "
            "Save a smaller model, or train on a device with more memory.")


def reading_backend(backend: str) -> str:
    """The Keras backend a file is read with: JAX where it is installed (its compiler counts the training step's
    FLOPs for any model; what safe mode refuses is the same on every backend), else the run's own."""
    try:
        import importlib.util

        return "jax" if importlib.util.find_spec("jax") is not None else backend
    except (ImportError, ValueError):
        return backend


def child_memory_limit_mib(max_params_allowed: int) -> int:
    """The reading child's address-space limit: CHILD_MEMORY_BASE_MIB, plus room for the largest model allowed,
    its weights read and held once each."""
    return CHILD_MEMORY_BASE_MIB + int(2 * max_params_allowed * _FLOAT32_BYTES / _MIB)


def limit_memory(memory_mib: int) -> None:
    """Cap this process's address space (RLIMIT_AS) at ``memory_mib``: the reading child's first act, before Keras is
    imported, so an allocation past it fails in the child alone (set there, not through subprocess's preexec_fn, which
    is unsafe in a server's threaded process). Where the platform has no such limit, the time limit remains."""
    try:
        import resource

        cap = memory_mib * _MIB
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    except (ImportError, ValueError, OSError):
        pass


def _read_in_child(path: str, backend: str, limit: int) -> _Read:
    """The file read by ``python -m bench.training.keras_build PATH MAX_PARAMS MEMORY_MIB`` on the CPU alone, under
    :func:`child_memory_limit_mib` and MODEL_FILE_CHECK_TIMEOUT_S: its OwnModel, or the reason it could not load.
    A time limit or a lack of memory raises (they are this moment's, not the file's: never kept)."""
    env = {**os.environ, "KERAS_BACKEND": reading_backend(backend), "CUDA_VISIBLE_DEVICES": "",
           "JAX_PLATFORMS": "cpu", "TF_CPP_MIN_LOG_LEVEL": "3", "XLA_PYTHON_CLIENT_PREALLOCATE": "false"}
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    name = file_model_name(path)
    memory = child_memory_limit_mib(limit)
    with _ONE_CHILD:
        try:
            done = subprocess.run([sys.executable, "-m", "bench.training.keras_build", os.path.abspath(path), str(limit),
                                   str(memory)], capture_output=True, text=True, env=env,
                                  timeout=MODEL_FILE_CHECK_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise ModelFileError(f"reading {name!r} took over {MODEL_FILE_CHECK_TIMEOUT_S:.0f} s; "
                                 "try a smaller model file.") from None
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        last = " ".join((done.stderr.strip().splitlines() or ["no answer"])[-1].split())[:400]
        if "MemoryError" in done.stderr or "RESOURCE_EXHAUSTED" in done.stderr or "bad_alloc" in done.stderr:
            raise ModelFileError(f"{name!r} needs more than the {memory:,} MiB its reading is allowed here: "
                                 "save a smaller model.")
        raise ModelFileError(f"{name!r} cannot be loaded: {last}")
    answer = json.loads(lines[-1])
    if "error" in answer:
        params = answer.get("params")
        return _Read(limit, refusal=str(answer["error"]), params=params if isinstance(params, int) else None)
    return _Read(limit, model=OwnModel.model_validate(answer))
