"""The GPU-aware install: with an NVIDIA driver present (a fake nvidia-smi on PATH) `make run` and `make test` install
the framework's CUDA build, without one the packages of requirements.txt, and GPU=0 / GPU=1 override the guess. The
test installs nothing: it reads the choice and `make -n` (what make would run)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import install_stack  # noqa: E402  (a script of the checkout, not a package)

FAKE_SMI = "#!/bin/sh\necho 'GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-00000000-fake)'\n"


@pytest.fixture
def no_driver(tmp_path: Path) -> dict[str, str]:
    """An environment where NVML does not load and nvidia-smi is absent."""
    return {"PATH": str(tmp_path / "empty-bin"), "BENCH_NVML_LIBRARY": str(tmp_path / "no-libnvidia-ml.so.1")}


@pytest.fixture
def fake_driver(tmp_path: Path, no_driver: dict[str, str]) -> dict[str, str]:
    """The same, with an nvidia-smi that lists one GPU."""
    folder = tmp_path / "bin"
    folder.mkdir()
    smi = folder / "nvidia-smi"
    smi.write_text(FAKE_SMI, encoding="utf-8")
    smi.chmod(0o755)
    return {**no_driver, "PATH": str(folder)}


def test_without_a_driver_the_cpu_stack(no_driver: dict[str, str]) -> None:
    choice = install_stack.choose(no_driver, machine="x86_64", system="Linux")
    assert (choice.key, choice.packages) == ("cpu", ())


def test_with_a_driver_tensorflow_and_cuda(fake_driver: dict[str, str]) -> None:
    choice = install_stack.choose(fake_driver, machine="x86_64", system="Linux")
    assert choice.key == "cuda-tensorflow"
    assert choice.packages == ("tensorflow[and-cuda]>=2.16",)
    assert "nvidia-smi lists 1 GPU" in choice.why


@pytest.mark.parametrize(("backend", "package"), [("jax", "jax[cuda12]>=0.4.30"), ("torch", "torch")])
def test_with_a_driver_the_cuda_build_of_the_chosen_backend(fake_driver: dict[str, str], backend: str,
                                                            package: str) -> None:
    choice = install_stack.choose({**fake_driver, "KERAS_BACKEND": backend}, machine="x86_64", system="Linux")
    assert choice.key == f"cuda-{backend}" and choice.packages[0] == package


def test_gpu_0_and_gpu_1_override_the_guess(no_driver: dict[str, str], fake_driver: dict[str, str]) -> None:
    assert install_stack.choose({**fake_driver, "GPU": "0"}).key == "cpu"
    assert install_stack.choose({**no_driver, "GPU": "1"}, machine="x86_64", system="Linux").key == "cuda-tensorflow"
    with pytest.raises(ValueError, match="GPU=1"):
        install_stack.choose({**no_driver, "GPU": "yes"})


def test_tensorflow_has_a_cuda_build_on_linux_x86_64_only(fake_driver: dict[str, str]) -> None:
    choice = install_stack.choose(fake_driver, machine="aarch64", system="Linux")
    assert choice.key == "cpu" and "Linux x86_64 only" in choice.why


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize(("driver", "gpu", "expected"), [
    ("fake", None, "tensorflow[and-cuda]"), ("none", None, None), ("fake", "0", None), ("none", "1", "tensorflow[and-cuda]"),
])
def test_make_installs_what_the_choice_says(tmp_path: Path, no_driver: dict[str, str], fake_driver: dict[str, str],
                                            driver: str, gpu: str | None, expected: str | None) -> None:
    env = {**os.environ, **(fake_driver if driver == "fake" else no_driver)}
    # make, a shell and Python stay reachable, and no real nvidia-smi of a GPU machine can answer for the fake
    tools = {str(Path(shutil.which(name) or "/usr/bin/make").parent) for name in ("make", "sh")}
    env["PATH"] = os.pathsep.join([env["PATH"], *sorted(tools), str(Path(sys.executable).parent)])
    env.pop("GPU", None)
    env.pop("KERAS_BACKEND", None)
    if gpu is not None:
        env["GPU"] = gpu
    venv = tmp_path / "venv"
    shown = subprocess.run(["make", "-n", "install", f"VENV={venv}", f"PY={sys.executable}"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    pip = next(line for line in shown.stdout.splitlines() if "pip" in line and "install -r requirements.txt" in line)
    if expected is None:
        assert "and-cuda" not in pip and f"{venv}/.installed-cpu" in shown.stdout
    else:
        assert expected in pip and f"{venv}/.installed-cuda-tensorflow" in shown.stdout
