"""Tests for bench.hardware.devices: hardware discovery, device names, CUDA_VISIBLE_DEVICES, the framework's CUDA support."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.hardware import devices
from bench.vocab.record_types import CpuSpec, GpuSpec
from bench.vocab.config import RunConfig
from bench.hardware.devices import Hardware, device_choices, discover
from bench.hardware.monitor import nvml
from bench.vocab.target import Target

try:
    from tests.unit import fake_nvml
except ImportError:  # tests/unit is not a package on sys.path: import the sibling module directly
    import fake_nvml  # type: ignore[no-redef]

REPO_ROOT = Path(__file__).resolve().parents[2]
HAS_TENSORFLOW = importlib.util.find_spec("tensorflow") is not None


@pytest.fixture(autouse=True)
def _fresh_nvml(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv("KERAS_BACKEND", "tensorflow")
    nvml.reset()
    yield
    nvml.reset()


@pytest.fixture
def two_fake_gpus(monkeypatch: pytest.MonkeyPatch) -> fake_nvml.FakeNvml:
    """Fake NVML with two GPUs, and a framework that says it has CUDA (whatever is installed here)."""
    fake = fake_nvml.two_gpus()
    nvml.set_module(fake)
    monkeypatch.setattr(devices, "framework_has_cuda", lambda backend: True)
    return fake


# ------------------------------------------------------------------------------------------------------ discover
def test_discover_on_this_machine() -> None:
    ok, _ = nvml.available()
    hw = discover()
    assert hw.cpu.logical_cores > 0
    assert hw.cpu.physical_cores is None or 0 < hw.cpu.physical_cores <= hw.cpu.logical_cores
    assert hw.cpu.ram_total_mib > 0
    assert hw.cpu.model
    assert hw.framework == "tensorflow"
    assert hw.hostname and hw.platform
    json.dumps(hw.to_dict())
    if ok:
        pytest.skip("this machine has a working NVIDIA driver; the no-GPU expectations below do not apply")
    assert hw.gpus == ()
    assert hw.gpu_reason is not None and "driver" in hw.gpu_reason
    assert hw.description().endswith("no GPU")
    assert f"({hw.cpu.logical_cores} core" in hw.description()
    assert device_choices(hw) == ["cpu"]


def test_discover_two_fake_gpus(two_fake_gpus: fake_nvml.FakeNvml) -> None:
    hw = discover()
    assert hw.gpu_reason is None
    assert [g.index for g in hw.gpus] == [0, 1]
    gpu = hw.gpus[1]
    assert gpu.name == "NVIDIA H100 80GB HBM3"
    assert gpu.mem_total_mib == 80 * 1024.0
    assert gpu.driver == "550.54.15"
    assert gpu.cuda_driver_version == "12.4"
    assert gpu.uuid is not None and gpu.uuid.startswith("GPU-00000001")
    assert device_choices(hw) == ["cpu", "gpu:0", "gpu:1"]
    assert hw.description() == "NVIDIA H100 80GB HBM3 x2"
    assert hw.to_dict()["gpus"][0]["index"] == 0


@pytest.mark.parametrize("value", ["", "-1", " -1 ", "7"])
def test_cuda_visible_devices_hiding_every_gpu(
    two_fake_gpus: fake_nvml.FakeNvml, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", value)
    hw = discover()
    assert hw.gpus == ()
    assert hw.gpu_reason is not None and hw.gpu_reason.startswith("CUDA_VISIBLE_DEVICES")
    assert "hides every GPU" in hw.gpu_reason
    assert device_choices(hw) == ["cpu"]
    assert hw.description().endswith("no GPU")


@pytest.mark.parametrize(
    ("value", "expected"),
    [("1", ["cpu", "gpu:1"]), ("1,0", ["cpu", "gpu:0", "gpu:1"]), ("0,7,1", ["cpu", "gpu:0"]),
     ("GPU-00000001", ["cpu", "gpu:1"]), (" 0 , 1 ", ["cpu", "gpu:0", "gpu:1"])],
)
def test_cuda_visible_devices_selects_gpus(
    two_fake_gpus: fake_nvml.FakeNvml, monkeypatch: pytest.MonkeyPatch, value: str, expected: list[str]
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", value)
    hw = discover()
    assert hw.gpu_reason is None
    assert device_choices(hw) == expected


def test_framework_without_cuda_is_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    nvml.set_module(fake_nvml.two_gpus())
    monkeypatch.setattr(devices, "framework_has_cuda", lambda backend: False)
    monkeypatch.setattr(devices, "_framework_version", lambda backend: "2.21.0")
    hw = discover()
    assert hw.gpu_reason == (
        "TensorFlow 2.21.0 here was built without CUDA: install tensorflow[and-cuda] (Linux) to train on the GPU."
    )
    assert device_choices(hw) == ["cpu"]


def test_gpu_reason_order() -> None:
    gpu = GpuSpec(0, "G", 1.0, None, None, None)
    common = {"framework": "tensorflow", "framework_version": "2.21.0", "cuda_visible_devices": ""}
    driver = nvml.NO_DRIVER_REASON
    assert devices.gpu_reason(nvml_reason=driver, visible_gpus=[], framework_cuda=False, **common) == driver
    hidden = devices.gpu_reason(nvml_reason=None, visible_gpus=[], framework_cuda=False, **common)
    assert hidden is not None and hidden.startswith("CUDA_VISIBLE_DEVICES=''")
    no_cuda = devices.gpu_reason(nvml_reason=None, visible_gpus=[gpu], framework_cuda=False, **common)
    assert no_cuda is not None and "built without CUDA" in no_cuda
    assert devices.gpu_reason(nvml_reason=None, visible_gpus=[gpu], framework_cuda=None, **common) is None
    assert devices.gpu_reason(nvml_reason=None, visible_gpus=[gpu], framework_cuda=True, **common) is None


def test_no_gpu_driver_reason_from_fake(monkeypatch: pytest.MonkeyPatch) -> None:
    nvml.set_module(fake_nvml.missing())
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # the driver reason comes first
    hw = discover()
    assert hw.gpus == ()
    assert hw.gpu_reason is not None and hw.gpu_reason.startswith("No NVIDIA driver found")


# ----------------------------------------------------------------------------------------------- device names
@pytest.mark.parametrize(
    ("text", "expected"),
    [("cpu", ("cpu", None)), ("CPU", ("cpu", None)), (" gpu:0 ", ("gpu", 0)), ("gpu:1", ("gpu", 1)),
     ("GPU:12", ("gpu", 12)), ("gpus", ("gpus", None))],
)
def test_device_names_good(text: str, expected: tuple[str, int | None]) -> None:
    target = Target.from_device(text)
    assert (target.kind, target.index) == expected


@pytest.mark.parametrize("text", ["", "gpu", "gpu:", "gpu:-1", "gpu:x", "cuda:0", "gpu:0:1", "tpu", "cpu:0", "cpu/2",
                                  None, 0])
def test_device_names_bad(text: str) -> None:
    with pytest.raises(ValueError, match=r"use 'cpu' or 'gpu:N'"):
        Target.from_device(text)


def test_cuda_visible_devices_for(two_fake_gpus: fake_nvml.FakeNvml) -> None:
    hw = discover()
    assert devices.cuda_visible_devices_for("cpu", hw) == ""
    assert devices.cuda_visible_devices_for("gpu:1", hw) == hw.gpus[1].uuid
    assert devices.cuda_visible_devices_for(Target.parse("gpu:0"), hw) == hw.gpus[0].uuid
    with pytest.raises(ValueError, match="choose one of cpu, gpu:0, gpu:1"):
        devices.cuda_visible_devices_for("gpu:5", hw)
    with pytest.raises(ValueError, match="give one GPU as gpu:N"):
        devices.cuda_visible_devices_for("gpus", hw)


def test_cuda_visible_devices_for_gpu_without_usable_gpu() -> None:
    nvml.set_module(fake_nvml.missing())
    hw = discover()
    with pytest.raises(ValueError, match="No NVIDIA driver found"):
        devices.cuda_visible_devices_for("gpu:0", hw)


def test_the_detected_machine_is_the_record_with_what_only_detection_knows() -> None:
    """One description of the machine: Hardware is the record's RecordedHardware with what only detection knows, and
    the record it writes keeps every part of it (where GPU readings come from among the record's extra keys)."""
    from bench.hardware.monitor.source_types import SourceGpu, SourceInfo
    from bench.vocab.record_types import RecordedHardware

    detected_only = {"gpu_source", "framework_gpu_build"}
    assert issubclass(Hardware, RecordedHardware)
    assert set(Hardware.model_fields) - set(RecordedHardware.model_fields) == detected_only
    fields = set(Hardware.model_fields) - {"label"}  # a name given in place of the description: only where given
    info = SourceInfo(name="AMD SMI", vendor="amd", utilization="GFX busy share")
    hw = Hardware(cpu=CpuSpec("X", None, 4, 1024.0), gpus=[devices.gpu_spec(SourceGpu(0, "MI300X"), info)],
                  gpu_reason=None, gpu_source=info, framework_gpu_build=True)
    record = hw.record()
    assert record.cpu == hw.cpu and record.gpus == hw.gpus
    assert set(record.to_dict()) == fields and record.to_dict() == hw.to_dict()
    assert record.to_dict()["gpus"][0] == {"index": 0, "name": "MI300X", "mem_total_mib": None, "driver": None,
                                           "cuda_driver_version": None, "uuid": None, "vendor": "amd",
                                           "source": "AMD SMI"}, "a detected GPU's record keeps its None facts"
    assert record.extra == {"gpu_source": info.model_dump(mode="json"), "framework_gpu_build": True}


def test_hardware_description_mixed_gpus() -> None:
    cpu = CpuSpec("X", 1, 2, 1024.0)
    gpus = [GpuSpec(0, "A", None, None, None, None), GpuSpec(1, "B", None, None, None, None),
            GpuSpec(2, "A", None, None, None, None)]
    assert Hardware(cpu=cpu, gpus=gpus).description() == "A x2 + B x1"
    assert Hardware(cpu=cpu).description() == "X (2 cores), no GPU"


@pytest.mark.parametrize(
    ("version", "text"), [(12040, "12.4"), (11080, "11.8"), (12000, "12.0"), (0, None), (None, None)]
)
def test_cuda_version_text(version: int | None, text: str | None) -> None:
    assert devices._cuda_version_text(version) == text


# ------------------------------------------------------------------------------------- framework, no import
def test_framework_has_cuda_unknown_or_absent_backends() -> None:
    assert devices.framework_has_cuda("not-a-backend") is None
    for backend in ("jax", "torch"):
        if importlib.util.find_spec(backend) is None:
            assert devices.framework_has_cuda(backend) is None


def test_framework_has_cuda_tensorflow_without_importing_it() -> None:
    if not HAS_TENSORFLOW:
        pytest.skip("tensorflow is not installed here")
    code = (
        "import json, sys; from bench.hardware import devices; "
        "r = devices.framework_has_cuda('tensorflow'); hw = devices.discover(); "
        "heavy = ('tensorflow', 'keras', 'jax', 'torch', 'streamlit'); "
        "print(json.dumps([r, sorted(m for m in heavy if m in sys.modules)]))"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60, check=True
    )
    has_cuda, imported = json.loads(completed.stdout.strip().splitlines()[-1])
    assert isinstance(has_cuda, bool)
    assert imported == [], f"discovery imported {imported}"


def test_framework_has_cuda_reads_build_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tf_dir = tmp_path / "tensorflow" / "python" / "platform"
    tf_dir.mkdir(parents=True)
    (tmp_path / "tensorflow" / "__init__.py").write_text("raise RuntimeError('must not be imported')\n")
    (tf_dir / "build_info.py").write_text("build_info = dict([('is_cuda_build', False), ('is_rocm_build', False)])\n")
    torch_dir = tmp_path / "torch"
    torch_dir.mkdir()
    (torch_dir / "__init__.py").write_text("raise RuntimeError('must not be imported')\n")
    (torch_dir / "version.py").write_text("__version__ = '2.5.0'\ncuda: Optional[str] = '12.4'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("tensorflow", "torch"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    assert devices.framework_has_cuda("tensorflow") is False
    assert devices.framework_has_cuda("torch") is True
    (torch_dir / "version.py").write_text("__version__ = '2.5.0+cpu'\ncuda = None\n")
    assert devices.framework_has_cuda("torch") is False


# --------------------------------------------------------------------------------------------------- probing
@pytest.mark.slow
def test_probe_framework_tensorflow_sees_a_cpu() -> None:
    if not HAS_TENSORFLOW:
        pytest.skip("tensorflow is not installed here")
    result = devices.probe_framework("tensorflow", timeout_s=120)
    assert result.error is None, result
    assert result.backend == "tensorflow"
    assert result.version
    assert "CPU:0" in result.devices
    assert isinstance(result.built_with_cuda, bool)


def test_probe_framework_errors_are_returned_not_raised() -> None:
    unknown = devices.probe_framework("not-a-backend")
    assert unknown.error is not None and "Unknown backend" in unknown.error
    assert unknown.devices == []
    if HAS_TENSORFLOW:
        slow = devices.probe_framework("tensorflow", timeout_s=0.05)
        assert slow.error is not None and "longer than 0.05 s" in slow.error


def _two_gpus(reason: str | None) -> Hardware:
    cpu = CpuSpec(model="X", physical_cores=2, logical_cores=2, ram_total_mib=1024.0)
    return Hardware(cpu=cpu, gpus=[GpuSpec(0, "A", None, None, None, None), GpuSpec(1, "A", None, None, None, None)],
                    gpu_reason=reason)


@pytest.mark.parametrize("reason", [None, "TensorFlow here is built without CUDA."])
def test_every_offered_device_passes_validation(reason: str | None) -> None:
    """One rule offers the devices and validation accepts each one: two GPUs that a framework without CUDA cannot
    use offer only the CPU (the pages used to offer "gpus" there, and validation then refused it)."""
    hw = _two_gpus(reason)
    offered = devices.offered_devices(hw)
    assert offered == (["cpu", "gpu:0", "gpu:1", "gpus"] if reason is None else ["cpu"])
    for device in offered:
        RunConfig(device=device).validate(hw)


def test_target_options_follow_the_offered_devices() -> None:
    from ui.common import target_options

    assert target_options(_two_gpus("no CUDA build.")) == ["cpu/1", "cpu"]
    assert target_options(_two_gpus(None))[-3:] == ["gpu:0", "gpu:1", "gpus"]
