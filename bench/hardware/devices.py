"""What hardware exists here (CPU via psutil, GPUs via whichever GPU source answers: NVML, AMD SMI or amdgpu sysfs,
Apple's IOAccelerator, libtpu's monitoring SDK for TPUs, Level Zero Sysman for Intel GPUs; the ML framework's CUDA,
ROCm, MPS, TPU or XPU support) and how to target it.

Nothing here imports the ML framework: whether TensorFlow / JAX / PyTorch was built with CUDA is read from files of the
installed package (:func:`framework_has_cuda`), and what the framework itself sees is asked in a subprocess
(:func:`probe_framework`), so the server process never initialises CUDA or grabs GPU memory.

Device names: ``"cpu"`` and ``"gpu:N"`` where N is the source's index (NVML's, what nvidia-smi shows; AMD SMI's;
0 for a Mac's GPU; the PCI bus's order of TPU chips; Sysman's for Intel). A ``gpu:N`` run reaches the vendor's device
through the backend that serves it: CUDA, ROCm (whose torch and JAX builds take the same CUDA_VISIBLE_DEVICES), torch's
MPS on a Mac or torch's XPU on an Intel GPU (:func:`torch_device_env`), JAX's TPU build on a TPU. ``CUDA_VISIBLE_DEVICES`` in
the server's environment is honoured when listing GPUs: unset means every GPU; ``""`` or ``"-1"`` hides all; a comma
list keeps only those entries (NVML indices, or ``GPU-<uuid>`` prefixes), and, as CUDA does, stops at the first entry
that names no GPU. CUDA numbers GPUs fastest-first unless ``CUDA_DEVICE_ORDER=PCI_BUS_ID``, so the worker should select
a GPU by UUID (:func:`cuda_visible_devices_for`), which never depends on that order.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import platform
import re
import socket
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import psutil
from pydantic import BaseModel, ConfigDict, ValidationError

from bench.vocab.limits import Flag, Line
from bench.vocab.record_types import CpuSpec, GpuSpec, RecordedHardware
from bench.vocab import settings
from bench.hardware.monitor import sources
from bench.hardware.monitor.nvidia import cuda_version_text
from bench.hardware.monitor.source_types import SourceGpu, SourceInfo, text as one_line
from bench.vocab.target import Target

__all__ = [
    "Hardware",
    "cuda_visible_devices_for",
    "all_cores",
    "device_choices",
    "offered_devices",
    "discover",
    "framework_gpu_build",
    "framework_has_cuda",
    "gpu_reason",
    "gpu_spec",
    "FrameworkProbe",
    "probe_framework",
    "torch_device_env",
    "visible_gpu_indices",
]

_MIB = 2**20
# Distribution names to ask importlib.metadata for a backend's version, first found wins.
_DISTRIBUTIONS: dict[str, tuple[str, ...]] = {
    "tensorflow": ("tensorflow", "tensorflow-cpu", "tf-nightly", "tensorflow-macos"),
    "jax": ("jax",),
    "torch": ("torch",),
}
_PRETTY = {"tensorflow": "TensorFlow", "jax": "JAX", "torch": "PyTorch"}
_CUDA_FIX = {
    "tensorflow": "install tensorflow[and-cuda] (Linux) to train on the GPU",
    "jax": 'install jax[cuda12] (pip install -U "jax[cuda12]") to train on the GPU',
    "torch": "install a CUDA build of torch (see pytorch.org) to train on the GPU",
}
# The GPU build each vendor's GPU needs, by backend: its name, and the fix where the installed one lacks it
GPU_BUILD = {"nvidia": "CUDA", "amd": "ROCm", "apple": "MPS (Metal)", "intel": "XPU", "tpu": "TPU (libtpu)"}
# how gpu_reason names each vendor's accelerator ("this AMD GPU")
ACCELERATOR = {"amd": "AMD GPU", "apple": "Apple GPU", "intel": "Intel GPU", "tpu": "TPU"}
ROCM_TORCH_INDEX = "https://download.pytorch.org/whl/rocm6.4"
XPU_TORCH_INDEX = "https://download.pytorch.org/whl/xpu"
JAX_TPU_INSTALL = '`pip install -U "jax[tpu]"` (JAX with libtpu)'
BUILD_FIX: dict[tuple[str, str], str] = {
    ("amd", "tensorflow"): "install tensorflow-rocm (`pip install tensorflow-rocm`, with ROCm installed) to train on "
                           "the GPU",
    ("amd", "jax"): "install JAX's ROCm plug-in for the ROCm here (`pip install jax[rocm]`; see JAX's install "
                    "guide) to train on the GPU",
    ("amd", "torch"): f"install torch's ROCm build (`pip install --force-reinstall torch --index-url "
                      f"{ROCM_TORCH_INDEX}`) to train on the GPU",
    ("apple", "tensorflow"): "on a Mac Keras trains on the GPU through torch (MPS; tensorflow-metal is no longer "
                             "kept up): `KERAS_BACKEND=torch make run`",
    ("apple", "jax"): "on a Mac Keras trains on the GPU through torch (MPS; jax-metal is abandoned): "
                      "`KERAS_BACKEND=torch make run`",
    ("apple", "torch"): "install torch (`pip install torch`: its macOS arm64 wheels carry MPS) to train on the GPU",
    ("intel", "tensorflow"): "Keras trains on an Intel GPU through torch's XPU build: install it (`pip install "
                             f"--force-reinstall torch --index-url {XPU_TORCH_INDEX}`), then `KERAS_BACKEND=torch make "
                             "run`",
    ("intel", "jax"): "Keras trains on an Intel GPU through torch's XPU build: install it (`pip install "
                      f"--force-reinstall torch --index-url {XPU_TORCH_INDEX}`), then `KERAS_BACKEND=torch make run`",
    ("intel", "torch"): f"install torch's XPU build (`pip install --force-reinstall torch --index-url "
                        f"{XPU_TORCH_INDEX}`) to train on the GPU",
    ("tpu", "tensorflow"): f"Keras trains on a TPU through JAX: {JAX_TPU_INSTALL}, then `KERAS_BACKEND=jax make run`",
    ("tpu", "jax"): f"install JAX's TPU build: {JAX_TPU_INSTALL}",
    ("tpu", "torch"): f"Keras trains on a TPU through JAX: {JAX_TPU_INSTALL}, then `KERAS_BACKEND=jax make run`",
}


def gpu_spec(gpu: SourceGpu, info: SourceInfo) -> GpuSpec:
    """One GPU as its source reports it (NVML for NVIDIA, AMD SMI or sysfs for AMD, ioreg for Apple), as a run's
    record keeps it: every fact, None where the source has none (a Mac's GPU shares the machine's memory), read as
    a record is rather than built in code, which would leave a GPU record's None facts out."""
    return GpuSpec.model_validate({"index": gpu.index, "name": gpu.name, "mem_total_mib": gpu.mem_total_mib,
                                   "driver": gpu.driver, "cuda_driver_version": gpu.runtime_version,
                                   "uuid": gpu.uuid, "vendor": info.vendor, "source": info.name})


class Hardware(RecordedHardware):
    """Everything the dashboard needs to know about this machine, found without importing the ML framework: the
    record a run keeps of the machine (bench.vocab.record_types.RecordedHardware, whose fields it is), with what
    detection always knows (the backend's name, host and platform) and what only detection knows (where GPU readings
    come from, whether the framework was built for this GPU), both kept in the record as written."""

    cpu: CpuSpec  # detection always finds this machine's CPU
    framework: Line = settings.DEFAULT_BACKEND  # Keras backend name
    hostname: Line = ""
    platform: Line = ""
    gpu_source: SourceInfo | None = None  # where GPU readings come from, what they mean and lack; None without one
    framework_gpu_build: Flag | None = None  # built for this machine's GPU (CUDA, ROCm or MPS); None when unknown

    @property
    def vendor(self) -> str | None:
        """The GPUs' vendor ("nvidia", "amd", "apple", "intel", "tpu"); None without a GPU source."""
        return self.gpu_source.vendor if self.gpu_source is not None else None

    def record(self) -> RecordedHardware:
        """This machine as a run's record keeps it (``hardware``): where GPU readings come from and whether the
        framework was built for this GPU among the keys it keeps beside its fields."""
        given = set() if self.label is None else {"label"}  # a name given in place of the description: kept if given
        return RecordedHardware.model_validate(self.model_dump(mode="json", exclude={"label"} - given))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready nested dict: the record's (``bench devices --json``)."""
        return self.record().to_dict()

    @property
    def cores(self) -> int:
        """The cores this process may run on (:func:`all_cores`): what a config's "all cores" is checked against."""
        return all_cores()

    def device_choices(self) -> list[str]:
        """:func:`device_choices` of this machine (what ``bench.vocab.config.RunConfig.validate`` checks a device against)."""
        return device_choices(self)

    def description(self) -> str:
        """This machine in a few words (what a record's ``label`` would replace), e.g. ``"AMD EPYC (2 cores), no GPU"`` or ``"NVIDIA H100 80GB HBM3 x1"``."""
        if self.gpus and self.gpu_reason is None:
            counts = Counter(gpu.name for gpu in self.gpus)
            return " + ".join(f"{name} x{count}" for name, count in counts.items())
        cores = self.cpu.logical_cores
        return f"{self.cpu.model} ({cores} core{'s' if cores != 1 else ''}), no GPU"


def all_cores() -> int:
    """The cores this process may run on (its affinity), which is what "all cores" means for a CPU run."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        return os.cpu_count() or 1


def discover() -> Hardware:
    """Describe this machine: CPU, targetable GPUs, the Keras backend and why no GPU is usable (if so)."""
    env = os.environ
    found = sources.find()
    info = found.source.info if found.source is not None else None
    all_gpus = [gpu_spec(g, info) for g in found.source.gpus()] if found.source is not None and info else []
    # a Mac's GPU, a TPU and an Intel GPU are not numbered by CUDA; NVIDIA's and AMD's (HIP takes the same variable) are
    cuda_visible = env.get("CUDA_VISIBLE_DEVICES") if info is None or info.vendor in ("nvidia", "amd") else None
    visible = visible_gpu_indices(cuda_visible, all_gpus)
    gpus = [gpu for gpu in all_gpus if gpu.index in visible]
    backend = settings.default_backend(env)
    version = _framework_version(backend)
    has_cuda = framework_has_cuda(backend)
    vendor = info.vendor if info is not None else "nvidia"
    gpu_build = framework_gpu_build(backend, vendor)
    return Hardware(
        cpu=_cpu_info(),
        gpus=tuple(gpus),
        gpu_reason=gpu_reason(
            nvml_reason=found.reason,
            visible_gpus=gpus,
            framework=backend,
            framework_version=version,
            framework_cuda=gpu_build,
            cuda_visible_devices=cuda_visible,
            vendor=vendor,
        ),
        framework=backend,
        framework_version=version,
        framework_cuda=has_cuda,
        hostname=socket.gethostname(),
        platform=platform.platform(),
        gpu_source=info,
        framework_gpu_build=gpu_build,
    )


def gpu_reason(
    *,
    nvml_reason: str | None,
    visible_gpus: list[GpuSpec],
    framework: str,
    framework_version: str | None,
    framework_cuda: bool | None,
    cuda_visible_devices: str | None,
    vendor: str = "nvidia",
) -> str | None:
    """The plain reason no GPU is usable, checked in this order; None when a GPU is usable.

    1. No GPU source answers (no NVIDIA driver, no AMD GPU, not a Mac) -> ``nvml_reason``, the source's reason.
    2. ``CUDA_VISIBLE_DEVICES`` hides every GPU.
    3. The framework was built without the vendor's GPU support (``framework_cuda``: CUDA for NVIDIA, ROCm for AMD,
       MPS for a Mac, XPU for Intel, libtpu for a TPU), only when that is known for sure.
    """
    if nvml_reason:
        return nvml_reason
    if not visible_gpus:
        return (
            f"CUDA_VISIBLE_DEVICES={cuda_visible_devices!r} hides every GPU: unset it, or list the GPUs to use "
            "(e.g. CUDA_VISIBLE_DEVICES=0), then restart the app."
        )
    if framework_cuda is False:
        pretty = _PRETTY.get(framework, framework)
        version = f" {framework_version}" if framework_version else ""
        if vendor == "nvidia":
            fix = _CUDA_FIX.get(framework, "install a CUDA build of it to train on the GPU")
            return f"{pretty}{version} here was built without CUDA: {fix}."
        build = GPU_BUILD.get(vendor, vendor)
        fix = BUILD_FIX[vendor, framework] if (vendor, framework) in BUILD_FIX else "install a GPU build of it"
        accelerator = ACCELERATOR.get(vendor, f"{vendor} GPU")
        return f"{pretty}{version} here cannot train on this {accelerator} (it needs a {build} build): {fix}."
    return None


def visible_gpu_indices(cuda_visible_devices: str | None, gpus: list[GpuSpec]) -> list[int]:
    """NVML indices of ``gpus`` that ``CUDA_VISIBLE_DEVICES`` leaves visible, in the order it lists them.

    Unset (None) keeps all; ``""``/``"-1"`` hide all; entries are NVML indices or ``GPU-<uuid>`` prefixes, and parsing
    stops at the first entry that names no GPU (as CUDA does).
    """
    indexed = [gpu for gpu in gpus if gpu.index is not None]  # a detected GPU always has its index
    if cuda_visible_devices is None:
        return [gpu.index for gpu in indexed if gpu.index is not None]
    by_index = {gpu.index: gpu for gpu in indexed}
    chosen: list[int] = []
    for raw in cuda_visible_devices.split(","):
        entry = raw.strip()
        match: GpuSpec | None = None
        if re.fullmatch(r"\d+", entry):
            match = by_index.get(int(entry))
        elif entry.upper().startswith("GPU-"):
            candidates = [g for g in indexed if g.uuid and g.uuid.lower().startswith(entry.lower())]
            match = candidates[0] if len(candidates) == 1 else None
        if match is None or match.index is None:
            break
        if match.index not in chosen:
            chosen.append(match.index)
    return chosen


def device_choices(hw: Hardware) -> list[str]:
    """``["cpu"]`` plus ``"gpu:N"`` for each targetable GPU (none when ``hw.gpu_reason`` says no GPU is usable)."""
    if hw.gpu_reason is not None:
        return ["cpu"]
    return ["cpu", *(f"gpu:{gpu.index}" for gpu in hw.gpus)]


def offered_devices(hw: Hardware) -> list[str]:
    """The devices a page offers for one run: :func:`device_choices`, and ``"gpus"`` (every GPU, data-parallel) when
    two or more GPUs are usable. The one rule for offering "gpus": a machine whose GPUs are unusable (no driver, a
    framework built without CUDA) offers only "cpu", however many GPUs NVML lists."""
    choices = device_choices(hw)
    return choices + (["gpus"] if len(choices) > 2 else [])


def cuda_visible_devices_for(device: str | Target, hw: Hardware) -> str:
    """The ``CUDA_VISIBLE_DEVICES`` value a worker should set BEFORE importing the framework to train on ``device``.

    ``"cpu"`` -> ``""`` (hide every GPU); ``"gpu:N"`` -> that GPU's UUID (its NVML index when the UUID is unknown).

    Raises:
        ValueError: ``device`` is malformed, ``gpus`` (give each GPU), or not one of :func:`device_choices` (the
            message lists them).
    """
    target = device if isinstance(device, Target) else Target.from_device(device)
    if target.is_cpu:
        return ""
    if target.index is None:
        raise ValueError(f"Device {str(device)!r} names every GPU; give one GPU as gpu:N.")
    choices = device_choices(hw)
    gpu = next((g for g in hw.gpus if g.index == target.index), None)
    if gpu is None or target.device not in choices:
        why = f" ({hw.gpu_reason})" if hw.gpu_reason else ""
        raise ValueError(f"Device {str(device)!r} is not available here{why}; choose one of {', '.join(choices)}.")
    return gpu.uuid or str(gpu.index)


def torch_device_env(device: str | Target, hw: Hardware) -> dict[str, str]:
    """What a torch worker must set before Keras loads so that its variables live where ``device`` says.

    Keras's torch backend takes ``KERAS_TORCH_DEVICE``, else picks MPS on a Mac whatever the run asked. So: ``cpu`` ->
    ``KERAS_TORCH_DEVICE=cpu`` (on a Mac a CPU run must not land on the GPU); ``gpu:0`` on a Mac -> ``mps``; ``gpu:N``
    on an Intel GPU -> ``xpu:N`` (torch's XPU device; CUDA_VISIBLE_DEVICES does not narrow it); NVIDIA and AMD GPUs
    need nothing (torch's ``cuda`` device, ROCm's too, after CUDA_VISIBLE_DEVICES narrowed it)."""
    target = device if isinstance(device, Target) else Target.from_device(device)
    if target.is_cpu:
        return {"KERAS_TORCH_DEVICE": "cpu"}
    if hw.vendor == "intel":
        return {"KERAS_TORCH_DEVICE": "xpu" if target.index is None else f"xpu:{target.index}"}
    return {"KERAS_TORCH_DEVICE": "mps"} if hw.vendor == "apple" else {}


def tpu_device_env(device: str | Target) -> dict[str, str]:
    """What a JAX worker sets so that a ``gpu:N`` run on a TPU host holds chip N alone (libtpu's per-process chip
    bounds; TPU_VISIBLE_DEVICES is the older libtpu's name); ``gpus`` keeps every chip."""
    target = device if isinstance(device, Target) else Target.from_device(device)
    if target.index is None:
        return {}
    chip = str(target.index)
    return {"TPU_CHIPS_PER_PROCESS_BOUNDS": "1,1,1", "TPU_PROCESS_BOUNDS": "1,1,1", "TPU_VISIBLE_CHIPS": chip,
            "TPU_VISIBLE_DEVICES": chip}


def framework_gpu_build(backend: str, vendor: str) -> bool | None:
    """Whether the installed ``backend`` can train on this ``vendor``'s GPU, read from its files WITHOUT importing it:
    CUDA for NVIDIA (:func:`framework_has_cuda`); ROCm for AMD (TensorFlow's ``is_rocm_build``, a ``jax-rocm*``
    plug-in, torch's ``hip`` version); MPS for a Mac (torch's macOS wheels carry it; TensorFlow and JAX train there
    no longer); XPU for Intel (torch's ``xpu`` version: torch.xpu's package is in every build, the version only in
    its XPU build); libtpu for a TPU (JAX with a ``libtpu`` distribution). None when unknown or not installed."""
    backend = backend.strip().lower()
    if vendor == "nvidia":
        return framework_has_cuda(backend)
    if vendor in ("intel", "tpu"):
        return _intel_or_tpu_build(backend, vendor)
    if vendor == "apple":
        if backend != "torch":
            return False
        return True if _package_file_text("torch", "version.py") is not None else None
    if vendor != "amd":
        return None
    if backend == "tensorflow":
        text = _package_file_text("tensorflow", "python/platform/build_info.py")
        match = re.search(r"""['"]is_rocm_build['"]\s*[:,]\s*(True|False)""", text or "")
        return None if text is None else (match is not None and match.group(1) == "True")
    if backend == "jax":
        if importlib.util.find_spec("jax") is None:
            return None
        return any(_normalise(name).startswith("jax-rocm") for name in _distribution_names())
    if backend == "torch":
        text = _package_file_text("torch", "version.py")
        match = re.search(r"^hip\s*(?::[^=]*)?=\s*(.+?)\s*$", text or "", flags=re.MULTILINE)
        return None if text is None else (match is not None and match.group(1) != "None")
    return None


def _intel_or_tpu_build(backend: str, vendor: str) -> bool | None:
    """Keras reaches an Intel GPU through torch's XPU build alone, a TPU through JAX's libtpu alone."""
    served = "torch" if vendor == "intel" else "jax"
    if backend != served:
        return False if backend in _PRETTY else None
    if backend == "jax":
        if importlib.util.find_spec("jax") is None:
            return None
        return any(_normalise(name).startswith("libtpu") for name in _distribution_names())
    text = _package_file_text("torch", "version.py")
    match = re.search(r"^xpu\s*(?::[^=]*)?=\s*(.+?)\s*$", text or "", flags=re.MULTILINE)
    return None if text is None else (match is not None and match.group(1) != "None")


def framework_has_cuda(backend: str) -> bool | None:
    """Whether the installed ``backend`` was built with CUDA, read from its files WITHOUT importing it.

    tensorflow: ``is_cuda_build`` in tensorflow/python/platform/build_info.py; jax: a ``jax-cuda*`` plugin
    distribution is installed; torch: ``cuda`` in torch/version.py is not None. None when the backend is unknown,
    not installed, or the file does not say.
    """
    backend = backend.strip().lower()
    if backend == "tensorflow":
        text = _package_file_text("tensorflow", "python/platform/build_info.py")
        if text is None:
            return None
        match = re.search(r"""['"]is_cuda_build['"]\s*[:,]\s*(True|False)""", text)
        return None if match is None else match.group(1) == "True"
    if backend == "jax":
        if importlib.util.find_spec("jax") is None:
            return None
        return any(_normalise(name).startswith("jax-cuda") for name in _distribution_names())
    if backend == "torch":
        text = _package_file_text("torch", "version.py")
        if text is None:
            return None
        match = re.search(r"^cuda\s*(?::[^=]*)?=\s*(.+?)\s*$", text, flags=re.MULTILINE)
        if match is None:
            return None
        return match.group(1) != "None"
    return None


_PROBE_SCRIPT = r"""
import json, sys
backend = sys.argv[1]
out = {"backend": backend, "version": None, "devices": [], "built_with_cuda": None, "error": None}
try:
    if backend == "tensorflow":
        import tensorflow as tf
        out["version"] = tf.__version__
        out["built_with_cuda"] = bool(tf.test.is_built_with_cuda())
        out["devices"] = [d.name.split(":", 1)[-1] for d in tf.config.list_physical_devices()]
    elif backend == "jax":
        import importlib.metadata as md
        import jax
        out["version"] = jax.__version__
        names = [(d.metadata.get("Name") or "").lower().replace("_", "-") for d in md.distributions()]
        out["built_with_cuda"] = any(n.startswith("jax-cuda") for n in names)
        out["devices"] = [f"{d.platform.upper()}:{d.id}" for d in jax.devices()]
        if not any(d.startswith("CPU:") for d in out["devices"]):
            out["devices"] = ["CPU:0"] + out["devices"]
    elif backend == "torch":
        import torch
        out["version"] = torch.__version__
        out["built_with_cuda"] = torch.version.cuda is not None
        out["devices"] = ["CPU:0"] + [f"GPU:{i}" for i in range(torch.cuda.device_count())]
        mps = getattr(torch.backends, "mps", None)
        if mps is not None and mps.is_available():  # a Mac's GPU, through Metal
            out["devices"].append("MPS:0")
        xpu = getattr(torch, "xpu", None)
        if xpu is not None and xpu.is_available():  # an Intel GPU, through torch's XPU build
            out["devices"] += [f"XPU:{i}" for i in range(xpu.device_count())]
    else:
        out["error"] = f"Unknown backend {backend!r}: use tensorflow, jax or torch."
except ImportError as exc:
    out["error"] = f"{backend} is not installed for {sys.executable} ({exc}); install it with pip."
except Exception as exc:
    out["error"] = f"{backend} failed to start: {type(exc).__name__}: {exc}"
print("BENCH_PROBE_JSON:" + json.dumps(out), flush=True)
"""


class FrameworkProbe(BaseModel):
    """What a framework said of itself in a child process (:func:`probe_framework`): its version, the devices it
    lists, whether it was built with CUDA (None: not known), or why it could not say (``error``)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    backend: str
    version: str | None = None
    devices: list[str] = []
    built_with_cuda: bool | None = None
    error: str | None = None


def probe_framework(backend: str | None = None, timeout_s: float = 60) -> FrameworkProbe:
    """Ask the framework itself, in a fresh subprocess, which devices it sees. Never raises.

    Args:
        backend: "tensorflow", "jax" or "torch"; None uses ``KERAS_BACKEND`` (default tensorflow).
        timeout_s: give up after this many seconds (importing TensorFlow takes ~5-10 s).

    Returns:
        What the framework answered (its version, the devices it lists: ``["CPU:0", "GPU:0", ...]``, whether it
        was built with CUDA), or why it could not (``error``).
    """
    backend = settings.default_backend() if backend is None else backend.strip().lower()
    env = dict(os.environ)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # keep TensorFlow's start-up chatter out of the output
    env["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"  # JAX must not grab 75% of GPU memory just to list devices
    try:
        completed = subprocess.run(
            [sys.executable, "-c", _PROBE_SCRIPT, backend],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return FrameworkProbe(backend=backend, error=f"Asking {backend} for its devices took longer than "
                                                     f"{timeout_s:g} s; the probe was stopped.")
    except OSError as exc:
        return FrameworkProbe(backend=backend, error=f"Could not start {sys.executable} to probe {backend}: {exc}")
    for line in reversed(completed.stdout.splitlines()):
        if line.startswith("BENCH_PROBE_JSON:"):
            try:
                return FrameworkProbe.model_validate_json(line.removeprefix("BENCH_PROBE_JSON:"))
            except ValidationError as exc:
                return FrameworkProbe(backend=backend, error=f"The {backend} probe printed unreadable output: "
                                                             f"{exc.errors(include_url=False)[0]['msg']}")
    stderr_lines = [line for line in completed.stderr.splitlines() if line.strip()]
    last = stderr_lines[-1] if stderr_lines else "no output"
    return FrameworkProbe(backend=backend, error=f"The {backend} probe exited with code {completed.returncode}: {last}")


def _cpu_info() -> CpuSpec:
    logical = psutil.cpu_count(logical=True) or os.cpu_count() or 1
    try:
        physical = psutil.cpu_count(logical=False)
    except (OSError, RuntimeError):
        physical = None
    return CpuSpec(
        model=_cpu_model(),
        physical_cores=physical,
        logical_cores=int(logical),
        ram_total_mib=psutil.virtual_memory().total / _MIB,
    )


def _cpu_model() -> str:
    """'model name' from /proc/cpuinfo (Linux), else platform.processor(), else the machine type."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and one_line(value):
                    return one_line(value) or value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


_cuda_version_text = cuda_version_text  # NVML's integer CUDA driver version as text (its home: monitor.nvidia)


def _framework_version(backend: str) -> str | None:
    for dist in _DISTRIBUTIONS.get(backend, (backend,)):
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def _package_file_text(package: str, relative: str) -> str | None:
    """Text of ``relative`` inside top-level ``package``, located without importing the package; None if absent."""
    try:
        spec = importlib.util.find_spec(package)  # a top-level name: finds it without executing it
    except (ImportError, ValueError):
        return None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        path = Path(location) / relative
        try:
            return path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
    return None


def _distribution_names() -> list[str]:
    names: list[str] = []
    for dist in importlib.metadata.distributions():
        name = dist.metadata["Name"] if dist.metadata is not None and "Name" in dist.metadata else None
        if name:
            names.append(name)
    return names


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()
