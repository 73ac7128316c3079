"""The GPU-aware install: with an NVIDIA driver present (a fake nvidia-smi on PATH, or a scripted NVML library) `make run`
and `make test` install the framework's CUDA build for the CUDA version the driver runs, without one the packages of
requirements.txt, and GPU=0 / GPU=1 override the guess; a CPU build of torch already installed is swapped for its CUDA
build. The test installs nothing: it reads the choice and `make -n` (what make would run)."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import install_stack  # noqa: E402  (a script of the checkout, not a package)

# `nvidia-smi -L` lists the GPU; plain `nvidia-smi` prints the header with the CUDA version the driver runs
FAKE_SMI = """#!/bin/sh
if [ "$1" = "-L" ]; then echo 'GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-00000000-fake)'; exit 0; fi
echo '| NVIDIA-SMI 580.159.04    Driver Version: 580.159.04    CUDA Version: {cuda}     |'
"""


@pytest.fixture
def no_driver(tmp_path: Path) -> dict[str, str]:
    """An environment where NVML does not load and nvidia-smi is absent."""
    return {"PATH": str(tmp_path / "empty-bin"), "BENCH_NVML_LIBRARY": str(tmp_path / "no-libnvidia-ml.so.1")}


@pytest.fixture
def fake_driver(tmp_path: Path, no_driver: dict[str, str]) -> dict[str, str]:
    """The same, with an nvidia-smi that lists one GPU of a driver that runs CUDA 13.0."""
    return _smi(tmp_path, no_driver, "13.0")


def _smi(tmp_path: Path, no_driver: dict[str, str], cuda: str) -> dict[str, str]:
    folder = tmp_path / f"bin-{cuda}"
    folder.mkdir()
    smi = folder / "nvidia-smi"
    smi.write_text(FAKE_SMI.format(cuda=cuda), encoding="utf-8")
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


@pytest.mark.parametrize(("backend", "cuda", "key", "packages"), [
    ("jax", "13.0", "cuda-jax-cuda13", ("jax[cuda13]>=0.4.30",)),
    ("jax", "12.4", "cuda-jax-cuda12", ("jax[cuda12]>=0.4.30",)),
    ("torch", "13.0", "cuda-torch-cu130", ("torch", "--extra-index-url", "https://download.pytorch.org/whl/cu130")),
    ("torch", "12.8", "cuda-torch-cu128", ("torch", "--extra-index-url", "https://download.pytorch.org/whl/cu128")),
    ("torch", "12.4", "cuda-torch-cu126", ("torch", "--extra-index-url", "https://download.pytorch.org/whl/cu126")),
])
def test_with_a_driver_the_cuda_build_of_the_chosen_backend_for_its_cuda(
        tmp_path: Path, no_driver: dict[str, str], backend: str, cuda: str, key: str, packages: tuple[str, ...]) -> None:
    env = {**_smi(tmp_path, no_driver, cuda), "KERAS_BACKEND": backend}
    choice = install_stack.choose(env, machine="x86_64", system="Linux")
    assert (choice.key, choice.packages) == (key, packages)
    assert f"runs CUDA {cuda}" in choice.why


def test_gpu_1_without_a_driver_takes_the_cuda_12_builds(no_driver: dict[str, str]) -> None:
    """They run on any driver from 525 on; CUDA 13's need 580."""
    choice = install_stack.choose({**no_driver, "GPU": "1", "KERAS_BACKEND": "jax"})
    assert choice.packages == ("jax[cuda12]>=0.4.30",)


class _ScriptedNvml:
    """libnvidia-ml.so.1 as ctypes sees it: nvmlInit_v2 and the driver's CUDA version (13000 for 13.0)."""

    def nvmlInit_v2(self) -> int:
        return 0

    def nvmlSystemGetCudaDriverVersion_v2(self, version: ctypes._Pointer) -> int:  # type: ignore[type-arg]
        version.contents.value = 13000
        return 0

    def nvmlShutdown(self) -> int:
        return 0


def test_nvml_that_loads_is_a_driver_and_says_its_cuda_version(monkeypatch: pytest.MonkeyPatch,
                                                                no_driver: dict[str, str]) -> None:
    monkeypatch.setattr(install_stack.ctypes, "CDLL", lambda name: _ScriptedNvml())
    driver = install_stack.find_driver(no_driver)
    assert driver.present and driver.cuda == (13, 0) and "NVML" in driver.why
    assert install_stack.choose({**no_driver, "KERAS_BACKEND": "jax"}).key == "cuda-jax-cuda13"


def test_a_cpu_build_of_torch_is_swapped_for_the_cuda_build_of_its_version(fake_driver: dict[str, str]) -> None:
    torch = install_stack.choose({**fake_driver, "KERAS_BACKEND": "torch"}, machine="x86_64", system="Linux")
    assert install_stack.replacement(torch, "2.13.0+cpu") == (
        "torch==2.13.0+cu130", "--extra-index-url", "https://download.pytorch.org/whl/cu130")
    assert install_stack.replacement(torch, "2.13.0") == ()  # PyPI's Linux build is the CUDA one
    assert install_stack.replacement(torch, None) == ()
    tensorflow = install_stack.choose(fake_driver, machine="x86_64", system="Linux")
    assert install_stack.replacement(tensorflow, "2.13.0+cpu") == ()


def test_gpu_0_and_gpu_1_override_the_guess(no_driver: dict[str, str], fake_driver: dict[str, str]) -> None:
    assert install_stack.choose({**fake_driver, "GPU": "0"}).key == "cpu"
    assert install_stack.choose({**no_driver, "GPU": "1"}, machine="x86_64", system="Linux").key == "cuda-tensorflow"
    with pytest.raises(ValueError, match="GPU=1"):
        install_stack.choose({**no_driver, "GPU": "yes"})


def test_tensorflow_has_a_cuda_build_on_linux_x86_64_only(fake_driver: dict[str, str]) -> None:
    choice = install_stack.choose(fake_driver, machine="aarch64", system="Linux")
    assert choice.key == "cpu" and "Linux x86_64 only" in choice.why


def _make_n(target: str, venv: Path, env: dict[str, str]) -> str:
    """What `make -n TARGET` would run, in an environment whose PATH holds the fake driver alone (make, its shell and
    Python are called by their full paths, so no real nvidia-smi of a GPU machine answers for the fake)."""
    env = {**os.environ, **env}
    shown = subprocess.run([shutil.which("make") or "make", "-n", target, f"VENV={venv}", f"PY={sys.executable}"],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    return shown.stdout


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize(("driver", "gpu", "expected"), [
    ("fake", None, "tensorflow[and-cuda]"), ("none", None, None), ("fake", "0", None), ("none", "1", "tensorflow[and-cuda]"),
])
def test_make_installs_what_the_choice_says(tmp_path: Path, no_driver: dict[str, str], fake_driver: dict[str, str],
                                            driver: str, gpu: str | None, expected: str | None) -> None:
    env = {**(fake_driver if driver == "fake" else no_driver), "KERAS_BACKEND": "tensorflow", "GPU": gpu or ""}
    venv = tmp_path / "venv"
    shown = _make_n("install", venv, env)
    pip = next(line for line in shown.splitlines() if "installer.py" in line and "-r requirements.txt" in line)
    if expected is None:
        assert "and-cuda" not in pip and f"{venv}/.installed-cpu" in shown
    else:
        assert expected in pip and f"{venv}/.installed-cuda-tensorflow" in shown


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_swaps_a_cpu_build_of_torch_for_its_cuda_build(tmp_path: Path, fake_driver: dict[str, str]) -> None:
    """A venv made before the driver, with torch 2.13.0+cpu in it: the next install asks for 2.13.0+cu130."""
    site = tmp_path / "site" / "torch-2.13.0+cpu.dist-info"
    site.mkdir(parents=True)
    (site / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.13.0+cpu\n", encoding="utf-8")
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    python.write_text(f"#!/bin/sh\nPYTHONPATH={site.parent} exec {sys.executable} \"$@\"\n", encoding="utf-8")
    python.chmod(0o755)
    shown = _make_n("install-dev", venv, {**fake_driver, "KERAS_BACKEND": "torch", "GPU": ""})
    assert "-r requirements-dev.txt torch --extra-index-url https://download.pytorch.org/whl/cu130" in shown
    assert "install 'torch==2.13.0+cu130' --extra-index-url https://download.pytorch.org/whl/cu130" in shown
    assert f"{venv}/.installed-dev-cuda-torch-cu130" in shown
    without = _make_n("install-dev", venv, {**fake_driver, "KERAS_BACKEND": "tensorflow", "GPU": ""})
    assert "torch==" not in without


# -- a Mac with Apple silicon: Keras over torch (MPS), whatever KERAS_BACKEND said, unless GPU=0 ------------------------
@pytest.mark.parametrize("backend", ["", "tensorflow", "jax", "torch"])
def test_on_a_mac_with_apple_silicon_the_torch_backend(no_driver: dict[str, str], backend: str) -> None:
    env = {**no_driver, **({"KERAS_BACKEND": backend} if backend else {})}
    choice = install_stack.choose(env, machine="arm64", system="Darwin")
    assert (choice.key, choice.packages, choice.backend) == ("mps-torch", ("torch",), "torch")
    assert "MPS" in choice.why and "Apple silicon" in choice.why


def test_on_a_mac_gpu_0_keeps_the_cpu_stack_and_the_named_backend(no_driver: dict[str, str]) -> None:
    choice = install_stack.choose({**no_driver, "GPU": "0", "KERAS_BACKEND": "jax"}, machine="arm64", system="Darwin")
    assert (choice.key, choice.packages, choice.backend) == ("cpu", (), "jax")


def test_an_intel_mac_is_not_taken_for_apple_silicon(no_driver: dict[str, str]) -> None:
    assert install_stack.choose(no_driver, machine="x86_64", system="Darwin").key == "cpu"


def test_a_mac_stack_swaps_no_torch_build(no_driver: dict[str, str]) -> None:
    """torch's macOS wheels are its MPS build: nothing to swap, whatever is installed."""
    choice = install_stack.choose(no_driver, machine="arm64", system="Darwin")
    assert install_stack.replacement(choice, "2.13.0") == ()


def test_backend_prints_the_stacks_backend(no_driver: dict[str, str], monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    for name, value in no_driver.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("KERAS_BACKEND", "jax")
    monkeypatch.setattr(install_stack.platform, "system", lambda: "Darwin")
    monkeypatch.setattr(install_stack.platform, "machine", lambda: "arm64")
    assert install_stack.main(["--backend"]) == 0 and capsys.readouterr().out.strip() == "torch"
    monkeypatch.setenv("GPU", "0")
    assert install_stack.main(["--backend"]) == 0 and capsys.readouterr().out.strip() == "jax"
