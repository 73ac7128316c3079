"""`python -m bench doctor`: the GPU checklist, on this machine (no GPU: exit 1, a driver check that says how to fix
it) and on a scripted Hopper GPU (every item ok, exit 0); the System page shows the same list."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from bench.cli import main as cli
from bench.hardware import devices, doctor
from bench.hardware.monitor import nvml
from tests.unit import fake_nvml
from tests.fixtures import fresh_nvml  # noqa: F401 - the fixture, used by name

ROOT = Path(__file__).resolve().parents[2]


pytestmark = pytest.mark.usefixtures("fresh_nvml")


@pytest.mark.slow
def test_doctor_on_this_machine_without_a_gpu_says_what_is_missing_and_exits_1() -> None:
    """The real command, as a user runs it. Its framework check is given 10 ms (``--timeout 0.01``): the child that
    would import the framework is stopped before it could, so the command's own work is checked here without a
    framework loaded to find no GPU; the framework's real device list, in that child, is
    tests/unit/test_devices.py::test_probe_framework_tensorflow_sees_a_cpu's, and the doctor's reading of a
    framework's answer the scripted tests below."""
    done = subprocess.run([sys.executable, "-m", "bench", "doctor", "--json", "--timeout", "0.01"], cwd=ROOT,
                          capture_output=True, text=True, timeout=180)
    if nvml.available()[0]:
        pytest.skip("this machine has an NVIDIA driver: the no-GPU answer cannot be shown here")
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    report = json.loads(done.stdout)
    assert report["gpu_ready"] is False
    assert {"name", "status", "detail", "fix"} <= set(report["checks"][0])
    driver = next(c for c in report["checks"] if "driver" in c["name"].lower())
    assert driver["status"] == "missing" and driver["fix"], driver
    assert all(c["status"] in ("ok", "missing", "unknown") for c in report["checks"])
    assert all(c["fix"] for c in report["checks"] if c["status"] == "missing"), "every missing item says its fix"
    framework = next(c for c in report["checks"] if c["name"].startswith("framework"))
    assert framework["status"] == "unknown" and "longer than 0.01 s" in framework["detail"], framework
    assert framework["fix"].startswith("First the NVIDIA driver"), framework


def _framework_with_a_gpu(backend: str | None = None, timeout_s: float = 60) -> devices.FrameworkProbe:
    return devices.FrameworkProbe(backend=backend or "tensorflow", version="2.x", devices=["CPU:0", "GPU:0"],
                                  built_with_cuda=True)


def test_doctor_on_a_hopper_gpu_is_ready_with_gpm_energy_and_power(monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    nvml.set_module(fake_nvml.hopper_with_gpm())
    monkeypatch.setattr(devices, "probe_framework", _framework_with_a_gpu)
    monkeypatch.setattr(devices, "framework_has_cuda", lambda backend: True)
    assert cli.main(["doctor", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    status = {c["name"]: c["status"] for c in report["checks"]}
    assert report["gpu_ready"] is True
    assert status["NVIDIA driver and NVML"] == "ok"
    assert status["framework with CUDA, listing the GPU"] == "ok"
    assert status["GPM (SM and tensor activity, Hopper and newer)"] == "ok"
    assert status["energy counter"] == "ok" and status["power limit"] == "ok"


def test_a_framework_that_does_not_list_the_gpu_is_missing_with_the_cuda_build_fix(
        monkeypatch: pytest.MonkeyPatch) -> None:
    nvml.set_module(fake_nvml.older_without_gpm())
    monkeypatch.setattr(devices, "probe_framework", lambda backend=None, timeout_s=60: devices.FrameworkProbe(
        backend="tensorflow", version="2.x", devices=["CPU:0"], built_with_cuda=False))
    report = doctor.diagnose()
    framework = next(c for c in report.checks if c.name.startswith("framework"))
    assert not report.gpu_ready
    assert framework.status == "missing" and "and-cuda" in framework.fix
    gpm = next(c for c in report.checks if c.name.startswith("GPM"))
    assert gpm.status == "missing" and gpm.fix


def test_doctor_refuses_bad_input_with_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["doctor", "--timeout", "soon"])
    assert exited.value.code == 2


def test_the_system_page_shows_the_checklist_at_its_top(monkeypatch: pytest.MonkeyPatch, isolated_store: Path) -> None:
    monkeypatch.setattr(devices, "probe_framework", lambda backend=None, timeout_s=60: devices.FrameworkProbe(
        backend="tensorflow", version="2.x", devices=["CPU:0"]))
    import streamlit as st

    st.cache_resource.clear()
    at = AppTest.from_file(str(ROOT / "pages" / "system.py"), default_timeout=60).run()
    assert not at.exception, at.exception
    assert at.subheader[0].value == "Can this machine train on a GPU?"
    lines = [m.value.replace("\\", "") for m in at.markdown]  # outside text is shown backslash-escaped
    assert any("**NVIDIA driver and NVML**" in line for line in lines), lines
    assert any("**CPU energy (RAPL)**" in line for line in lines), lines
    if not nvml.available()[0]:
        assert "No GPU run is possible here yet" in at.warning[0].value
        assert any("**NVIDIA driver and NVML** (missing)" in line for line in lines)
        assert any(c.value.startswith("Fix: Install the NVIDIA driver") for c in at.caption)


def test_a_framework_slower_than_the_timeout_is_unknown_not_missing() -> None:
    """The child process that imports the framework is the slow part: past the timeout it is stopped (here at once:
    no Python starts in 10 ms), and the doctor answers with the framework `unknown`."""
    report = doctor.diagnose(framework_timeout_s=0.01)
    framework = next(c for c in report.checks if c.name.startswith("framework"))
    assert framework.status == "unknown" and "longer than 0.01 s" in framework.detail, framework
    assert not report.gpu_ready
