"""Which framework build `make run` and `make test` install: the CUDA build where an NVIDIA driver answers, else the
packages of requirements.txt as they are.

    python scripts/install_stack.py --key      # "cpu" or "cuda-<backend>": the Makefile's stamp, so a machine that
                                               # changes (a driver installed later) gets the right stack next time
    python scripts/install_stack.py --packages # the extra pip arguments for that stack (nothing for "cpu")
    python scripts/install_stack.py --explain  # the choice and why, for a person

A driver is present when NVML loads (libnvidia-ml.so.1) or `nvidia-smi -L` lists a GPU. GPU=1 or GPU=0 in the
environment forces the choice. The backend is KERAS_BACKEND (tensorflow by default). Standard library only: it runs
before anything is installed.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import platform
import shutil
import subprocess
import sys
from dataclasses import dataclass

NVML_LIBRARY = "libnvidia-ml.so.1"
# the CUDA build of each Keras backend, as pip arguments
CUDA_PACKAGES = {
    "tensorflow": ["tensorflow[and-cuda]>=2.16"],
    "jax": ["jax[cuda12]>=0.4.30"],
    # PyPI's torch for Linux x86_64 is a CUDA build; the extra index adds PyTorch's own CUDA wheels for other hosts
    "torch": ["torch", "--extra-index-url", "https://download.pytorch.org/whl/cu124"],
}


@dataclass(frozen=True)
class Choice:
    key: str  # "cpu" or "cuda-<backend>"
    packages: tuple[str, ...]  # extra pip arguments; empty for "cpu"
    why: str


def driver_present(env: dict[str, str]) -> tuple[bool, str]:
    """Whether an NVIDIA driver answers here: NVML loads, or nvidia-smi lists a GPU."""
    library = env.get("BENCH_NVML_LIBRARY", NVML_LIBRARY)  # a test points this at a fake library
    try:
        ctypes.CDLL(library)
        return True, f"NVML ({library}) loads"
    except OSError:
        pass
    smi = shutil.which("nvidia-smi", path=env.get("PATH"))
    if smi is not None:
        try:
            listed = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=20, env=env)
        except (OSError, subprocess.TimeoutExpired):
            return False, "nvidia-smi is installed but did not answer"
        if listed.returncode == 0 and "GPU" in listed.stdout:
            return True, f"nvidia-smi lists {listed.stdout.count('GPU ')} GPU(s)"
        return False, "nvidia-smi is installed but lists no GPU"
    return False, "no NVIDIA driver (NVML does not load and nvidia-smi is absent)"


def choose(env: dict[str, str], machine: str | None = None, system: str | None = None) -> Choice:
    """The stack for this machine and environment."""
    backend = (env.get("KERAS_BACKEND") or "tensorflow").strip().lower() or "tensorflow"
    forced = env.get("GPU", "").strip()
    if forced not in ("", "0", "1"):
        raise ValueError(f"GPU={forced!r}: use GPU=1 (install the CUDA build) or GPU=0 (the CPU build)")
    if forced:
        gpu, why = forced == "1", f"GPU={forced} in the environment"
    else:
        gpu, why = driver_present(env)
    if not gpu:
        return Choice("cpu", (), f"{why}: the packages of requirements.txt as they are")
    if backend not in CUDA_PACKAGES:
        raise ValueError(f"KERAS_BACKEND={backend!r}: one of {', '.join(CUDA_PACKAGES)}")
    machine = machine or platform.machine()
    system = system or platform.system()
    if backend == "tensorflow" and (system != "Linux" or machine not in ("x86_64", "AMD64")):
        return Choice("cpu", (), f"{why}, but TensorFlow's CUDA build exists for Linux x86_64 only "
                                 f"(this is {system} {machine}): the CPU build")
    return Choice(f"cuda-{backend}", tuple(CUDA_PACKAGES[backend]), f"{why}: the CUDA build of {backend}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--key", action="store_true", help="print the stack's name")
    what.add_argument("--packages", action="store_true", help="print the extra pip arguments")
    what.add_argument("--explain", action="store_true", help="print the choice and why")
    args = parser.parse_args(argv)
    try:
        choice = choose(dict(os.environ))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.key:
        print(choice.key)
    elif args.packages:
        print(" ".join(f"'{p}'" if "[" in p or ">" in p else p for p in choice.packages))
    else:
        print(f"{choice.key}: {choice.why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
