"""Which framework build `make run` and `make test` install: the CUDA build where an NVIDIA driver answers, torch for
Keras on a Mac with Apple silicon (its GPU is reached through torch's MPS), else the packages of requirements.txt as
they are.

    python scripts/install_stack.py --key      # "cpu" or "cuda-<backend>[-<cuda>]": the Makefile's stamp, so a
                                               # machine that changes (a driver installed later) gets the right
                                               # stack next time
    python scripts/install_stack.py --packages # the extra pip arguments for that stack (nothing for "cpu")
    python scripts/install_stack.py --replace  # run by the venv's Python: the pip arguments that swap an installed
                                               # CPU build of torch for its CUDA build (nothing when none is there)
    python scripts/install_stack.py --explain  # the choice and why, for a person
    python scripts/install_stack.py --backend  # the Keras backend the stack trains with (KERAS_BACKEND for `make run`)

A driver is present when NVML loads (libnvidia-ml.so.1) or `nvidia-smi -L` lists a GPU; the CUDA version it supports
(NVML, or nvidia-smi's header) picks JAX's plug-in (cuda13 or cuda12) and torch's wheel index. GPU=1 or GPU=0 in the
environment forces the choice. The backend is KERAS_BACKEND (tensorflow by default). On a Mac with Apple silicon
(Darwin arm64) the GPU stack is "mps-torch": Keras over torch, whose macOS wheels carry MPS (tensorflow-metal is no
longer kept up, jax-metal is abandoned); GPU=0 keeps the CPU stack and the backend KERAS_BACKEND names. An AMD GPU
(ROCm) is not chosen here yet: `python -m bench doctor` names the ROCm build to install. Standard library only: it
runs before anything is installed.
"""

from __future__ import annotations

import argparse
import ctypes
import importlib.metadata
import os
import platform
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass

NVML_LIBRARY = "libnvidia-ml.so.1"
TORCH_INDEX = "https://download.pytorch.org/whl/{tag}"


@dataclass(frozen=True)
class Driver:
    present: bool
    why: str
    cuda: tuple[int, int] | None = None  # the newest CUDA the driver runs, where it says


@dataclass(frozen=True)
class Choice:
    key: str  # "cpu" or "cuda-<backend>[-<cuda>]"
    packages: tuple[str, ...]  # extra pip arguments; empty for "cpu"
    why: str
    backend: str = "tensorflow"
    torch_index: str = ""  # torch's CUDA wheel index, for the torch stack


def _nvml_cuda(library: str) -> tuple[bool, tuple[int, int] | None]:
    """Whether NVML loads, and the CUDA version the driver supports (None where NVML does not say)."""
    try:
        nvml = ctypes.CDLL(library)
    except OSError:
        return False, None
    try:
        if nvml.nvmlInit_v2() != 0:
            return True, None
        version = ctypes.c_int(0)
        asked = nvml.nvmlSystemGetCudaDriverVersion_v2(ctypes.pointer(version))
        nvml.nvmlShutdown()
    except (AttributeError, OSError):
        return True, None
    return True, ((version.value // 1000, version.value % 1000 // 10) if asked == 0 and version.value > 0 else None)


def _smi_cuda(smi: str, env: dict[str, str]) -> tuple[int, int] | None:
    """The "CUDA Version: 13.0" of nvidia-smi's header."""
    try:
        header = subprocess.run([smi], capture_output=True, text=True, timeout=20, env=env).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(r"CUDA Version:\s*(\d+)\.(\d+)", header)
    return (int(found.group(1)), int(found.group(2))) if found else None


def find_driver(env: dict[str, str]) -> Driver:
    """Whether an NVIDIA driver answers here (NVML loads, or nvidia-smi lists a GPU), and its CUDA version."""
    library = env.get("BENCH_NVML_LIBRARY", NVML_LIBRARY)  # a test points this at a library that is not there
    loads, cuda = _nvml_cuda(library)
    smi = shutil.which("nvidia-smi", path=env.get("PATH"))
    if loads:
        return Driver(True, f"NVML ({library}) loads", cuda or (smi and _smi_cuda(smi, env)) or None)
    if smi is None:
        return Driver(False, "no NVIDIA driver (NVML does not load and nvidia-smi is absent)")
    try:
        listed = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=20, env=env)
    except (OSError, subprocess.TimeoutExpired):
        return Driver(False, "nvidia-smi is installed but did not answer")
    if listed.returncode == 0 and "GPU" in listed.stdout:
        return Driver(True, f"nvidia-smi lists {listed.stdout.count('GPU ')} GPU(s)", _smi_cuda(smi, env))
    return Driver(False, "nvidia-smi is installed but lists no GPU")


def cuda_packages(backend: str, cuda: tuple[int, int] | None) -> tuple[str, tuple[str, ...], str]:
    """(key suffix, pip arguments, torch index) of the CUDA build of ``backend`` for a driver that runs ``cuda``.

    Where the driver's CUDA version is not known (GPU=1 without a driver), the CUDA 12 builds: they run on any driver
    from 525 on, CUDA 13's need 580 or newer."""
    if backend == "tensorflow":  # its pip wheels bring CUDA 12 and cuDNN
        return "", ("tensorflow[and-cuda]>=2.16",), ""
    if backend == "jax":
        plugin = "cuda13" if cuda and cuda >= (13, 0) else "cuda12"
        return f"-{plugin}", (f"jax[{plugin}]>=0.4.30",), ""
    tag = "cu130" if cuda and cuda >= (13, 0) else ("cu128" if cuda and cuda >= (12, 8) else "cu126")
    index = TORCH_INDEX.format(tag=tag)
    # PyPI's torch for Linux x86_64 is a CUDA build already; the index adds PyTorch's own CUDA wheels
    return f"-{tag}", ("torch", "--extra-index-url", index), index


MAC_GPU_KEY = "mps-torch"


def apple_silicon(machine: str, system: str) -> bool:
    return system == "Darwin" and machine == "arm64"


def choose(env: dict[str, str], machine: str | None = None, system: str | None = None) -> Choice:
    """The stack for this machine and environment."""
    backend = (env.get("KERAS_BACKEND") or "tensorflow").strip().lower() or "tensorflow"
    forced = env.get("GPU", "").strip()
    if forced not in ("", "0", "1"):
        raise ValueError(f"GPU={forced!r}: use GPU=1 (install the CUDA build) or GPU=0 (the CPU build)")
    machine = machine or platform.machine()
    system = system or platform.system()
    if apple_silicon(machine, system):
        if forced == "0":
            return Choice("cpu", (), "GPU=0 in the environment: the packages of requirements.txt as they are, on the "
                                     "CPU", backend)
        return Choice(MAC_GPU_KEY, ("torch",), "a Mac with Apple silicon: Keras trains on its GPU through torch's MPS "
                                               "device (torch's macOS wheels carry it), so the torch backend", "torch")
    driver = Driver(forced == "1", f"GPU={forced} in the environment") if forced else find_driver(env)
    if not driver.present:
        return Choice("cpu", (), f"{driver.why}: the packages of requirements.txt as they are", backend)
    if backend not in ("tensorflow", "jax", "torch"):
        raise ValueError(f"KERAS_BACKEND={backend!r}: one of tensorflow, jax, torch")
    if backend == "tensorflow" and (system != "Linux" or machine not in ("x86_64", "AMD64")):
        return Choice("cpu", (), f"{driver.why}, but TensorFlow's CUDA build exists for Linux x86_64 only "
                                 f"(this is {system} {machine}): the CPU build", backend)
    suffix, packages, index = cuda_packages(backend, driver.cuda)
    runs = f" (it runs CUDA {driver.cuda[0]}.{driver.cuda[1]})" if driver.cuda else ""
    return Choice(f"cuda-{backend}{suffix}", packages, f"{driver.why}{runs}: the CUDA build of {backend}", backend,
                  index)


def replacement(choice: Choice, installed_torch: str | None) -> tuple[str, ...]:
    """The pip arguments that swap an installed CPU build of torch (``2.13.0+cpu``) for the CUDA build of the same
    version, for the torch stack: pip keeps a CPU build that satisfies ``torch``, so asking for the package again would
    leave the machine on the CPU. Nothing in every other case."""
    if choice.backend != "torch" or not choice.torch_index or not installed_torch or "+cpu" not in installed_torch:
        return ()
    tag = choice.torch_index.rsplit("/", 1)[-1]
    return (f"torch=={installed_torch.split('+', 1)[0]}+{tag}", "--extra-index-url", choice.torch_index)


def _installed(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _pip_words(words: tuple[str, ...]) -> str:
    return " ".join(f"'{w}'" if any(c in w for c in "[>+") else w for w in words)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--key", action="store_true", help="print the stack's name")
    what.add_argument("--packages", action="store_true", help="print the extra pip arguments")
    what.add_argument("--replace", action="store_true",
                      help="print the pip arguments that swap an installed CPU build of torch for its CUDA build")
    what.add_argument("--explain", action="store_true", help="print the choice and why")
    what.add_argument("--backend", action="store_true", help="print the Keras backend the stack trains with")
    args = parser.parse_args(argv)
    try:
        choice = choose(dict(os.environ))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.key:
        print(choice.key)
    elif args.packages:
        print(_pip_words(choice.packages))
    elif args.replace:
        print(_pip_words(replacement(choice, _installed("torch"))))
    elif args.backend:
        print(choice.backend)
    else:
        print(f"{choice.key}: {choice.why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
