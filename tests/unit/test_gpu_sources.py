"""Every GPU source without the hardware, each scripted from the outputs its tool prints (tests/unit/scripted_gpus.py):
Apple's ioreg plist and macmon, AMD SMI's documented return shapes, the amdgpu driver's sysfs files. A figure a source
cannot give is None with its reason, never 0; the sampler, the device list and the doctor read whichever answers."""

from __future__ import annotations

import pytest

from bench.hardware import devices, doctor
from bench.hardware.monitor import amd, apple, nvml, sources
from bench.hardware.monitor.sampler import Sampler
from bench.readings import GpuReading
from tests.unit import fake_nvml
from tests.unit import scripted_gpus as sg


@pytest.fixture(autouse=True)
def _clean() -> object:
    yield
    sources.reset()
    nvml.reset()


def _one(machine: sources.Machine) -> tuple[sources.Found, GpuReading]:
    nvml.set_module(fake_nvml.missing())
    sources.script(machine)
    found = sources.find()
    assert found.source is not None, found.tried
    return found, found.source.collector([0]).collect()[0]


def test_a_macs_ioreg_plist_gives_utilization_and_memory_and_names_its_undocumented_source() -> None:
    found, reading = _one(sg.mac())
    assert found.source is not None and found.source.info is apple.IOREG_INFO
    assert [g.name for g in found.source.gpus()] == ["Apple M2 Pro (19-core GPU)"]
    assert reading.util_percent == 87 and reading.mem_used_mib == pytest.approx(1288437760 / 2**20)
    assert reading.extra == {"renderer_util_percent": 85.0, "tiler_util_percent": 12.0}
    assert reading.source == "IOAccelerator (ioreg)"
    # no power, no clock, no memory total on a Mac without macmon: None, with the reason, never 0
    assert reading.power_w is None and reading.sm_clock_mhz is None and reading.mem_total_mib is None
    assert "macmon-lib" in apple.IOREG_INFO.not_measured["power_w"]
    assert not apple.IOREG_INFO.documented and "does not document" in apple.IOREG_INFO.utilization


def test_macmon_where_installed_adds_power_and_its_own_utilization() -> None:
    found, reading = _one(sg.mac(macmon=sg.fake_macmon(usage=0.42, gpu_w=11.5)))
    assert found.source is not None and found.source.info is apple.MACMON_INFO
    assert reading.util_percent == pytest.approx(42.0) and reading.power_w == 11.5
    assert reading.mem_used_mib is not None and reading.source == "macmon (IOReport)"


def test_an_unreadable_plist_is_a_reason_not_a_zero() -> None:
    nvml.set_module(fake_nvml.missing())
    sources.script(sg.mac(plist=b"not a plist"))
    found = sources.find()
    assert found.source is None and found.reason is not None and "ioreg lists no IOAccelerator" in found.reason


def test_amd_smi_reads_its_documented_shapes_and_na_is_none() -> None:
    found, reading = _one(sg.amd_smi())
    assert found.source is not None and found.source.info is amd.AMDSMI_INFO
    gpu = found.source.gpus()[0]
    assert (gpu.name, gpu.mem_total_mib, gpu.driver) == ("AMD Instinct MI300X", 196592.0, "6.8.5")
    assert (reading.util_percent, reading.mem_util_percent, reading.mem_used_mib) == (71.0, 23.0, 18432.0)
    assert reading.power_w == 612.0 and reading.power_limit_w == 750.0  # average_socket_power "N/A": current's
    assert reading.temp_c == 54.0 and reading.sm_clock_mhz == 2100.0
    assert reading.energy_j is not None and reading.energy_j > 0 and reading.source == "AMD SMI"


def test_amd_smi_gaps_are_none() -> None:
    gpu = sg.FakeAmdGpu(gfx_activity="N/A", current_socket_power="N/A", edge_temp_c="N/A",
                        unsupported={"amdsmi_get_energy_count", "amdsmi_get_clock_info"})
    _, reading = _one(sg.amd_smi([gpu]))
    assert reading.util_percent is None and reading.power_w is None and reading.temp_c is None
    assert reading.energy_j is None and reading.sm_clock_mhz is None and reading.mem_used_mib == 18432.0


def test_without_amd_smi_the_amdgpu_sysfs_files() -> None:
    found, reading = _one(sg.amd_sysfs())
    assert found.source is not None and found.source.info is amd.SYSFS_INFO
    assert dict(found.tried)["AMD SMI"] == amd.AMDSMI_MISSING
    # card1 is an Intel GPU and card0-DP-1 a connector: one AMD GPU
    assert [g.name for g in found.source.gpus()] == ["AMD Radeon RX 7900 XTX"]
    assert (reading.util_percent, reading.mem_util_percent, reading.mem_used_mib) == (63.0, 18.0, 4096.0)
    assert (reading.power_w, reading.power_limit_w, reading.temp_c, reading.sm_clock_mhz) == (231.0, 327.0, 61.0,
                                                                                             2371.0)
    assert reading.energy_j is None and "energy" in amd.SYSFS_INFO.not_measured["energy_j"]


def test_on_this_kind_of_machine_without_any_gpu_the_reason_is_nvmls_as_always() -> None:
    nvml.set_module(fake_nvml.missing())
    sources.script(sources.Machine(system="Linux", drm_root=sg.RECORDED / "no-drm", ioreg=lambda: None,
                                   amdsmi=lambda: None, macmon=lambda: None))
    found = sources.find()
    assert found.source is None and found.reason == nvml.NO_DRIVER_REASON
    assert [name for name, _ in found.tried] == ["NVML", "AMD SMI", "amdgpu sysfs", "macmon (IOReport)",
                                                 "IOAccelerator (ioreg)"]


def test_nvml_answers_first_and_its_readings_name_it() -> None:
    nvml.set_module(fake_nvml.two_gpus())
    sources.script(sg.amd_sysfs())  # an AMD card beside: NVML is still asked first
    found = sources.find()
    assert found.source is not None and found.source.info.name == "NVML"
    assert {r.source for r in found.source.collector().collect()} == {"NVML"}


def test_the_sampler_reads_a_scripted_mac_and_says_why_there_is_no_gpu_energy() -> None:
    nvml.set_module(fake_nvml.missing())
    sources.script(sg.mac())
    sampler = Sampler(0.5, monitor_gpus=True)
    sample = sampler.sample_once()
    assert sampler.gpu_reason is None and sample.gpus and sample.gpus[0].source == "IOAccelerator (ioreg)"
    assert sample.gpus[0].util_percent == 87
    assert "macmon-lib" in sampler.energy_reasons["gpu"]
    assert "GPM" in sampler.gpm_reasons["gpu:0"]


def test_a_reading_keeps_its_source_through_json_and_old_readings_have_none() -> None:
    reading = GpuReading(0, "Apple M2 Pro", util_percent=87.0, source="IOAccelerator (ioreg)")
    assert GpuReading.from_dict(reading.to_dict()).source == "IOAccelerator (ioreg)"
    assert GpuReading.from_dict({"index": 0, "util_percent": 5.0}).source is None
    assert sources.info_of("AMD SMI") is amd.AMDSMI_INFO and sources.info_of(None) is None


@pytest.mark.parametrize(("machine", "vendor", "source"), [(sg.mac(), "apple", "IOAccelerator (ioreg)"),
                                                          (sg.amd_smi(), "amd", "AMD SMI"),
                                                          (sg.amd_sysfs(), "amd", "amdgpu sysfs")])
def test_devices_offer_the_gpu_of_each_scripted_machine(monkeypatch: pytest.MonkeyPatch, machine: sources.Machine,
                                                        vendor: str, source: str) -> None:
    with sg.use(monkeypatch, machine):
        hw = devices.discover()
    assert hw.gpu_reason is None and devices.device_choices(hw) == ["cpu", "gpu:0"]
    assert (hw.gpus[0].vendor, hw.gpus[0].source, hw.vendor) == (vendor, source, vendor)
    assert hw.gpu_source is not None and hw.gpu_source.name == source
    assert hw.record().gpus[0].extra["source"] == source  # the run's record keeps where its readings came from


def test_a_mac_on_tensorflow_is_told_to_train_through_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    with sg.use(monkeypatch, sg.mac(), backend="tensorflow", gpu_build=False):
        hw = devices.discover()
    assert devices.device_choices(hw) == ["cpu"]
    assert hw.gpu_reason is not None and "KERAS_BACKEND=torch make run" in hw.gpu_reason


def test_an_amd_gpu_with_a_cuda_torch_is_told_to_install_the_rocm_build(monkeypatch: pytest.MonkeyPatch) -> None:
    with sg.use(monkeypatch, sg.amd_smi(), gpu_build=False):
        hw = devices.discover()
    assert hw.gpu_reason is not None and "ROCm" in hw.gpu_reason and devices.ROCM_TORCH_INDEX in hw.gpu_reason


def test_gpu_n_reaches_each_vendors_device_through_torch() -> None:
    cpu = devices.CpuInfo("M2", 10, 10, 16384.0)
    mac = devices.Hardware(cpu=cpu, gpus=[devices.GpuInfo(0, "Apple M2 Pro", None, None, None, None, "apple",
                                                          apple.IOREG_INFO.name)], gpu_source=apple.IOREG_INFO)
    rocm = devices.Hardware(cpu=cpu, gpus=[devices.GpuInfo(0, "MI300X", None, None, None, None, "amd", "AMD SMI")],
                            gpu_source=amd.AMDSMI_INFO)
    assert devices.torch_device_env("gpu:0", mac) == {"KERAS_TORCH_DEVICE": "mps"}
    assert devices.torch_device_env("cpu", mac) == {"KERAS_TORCH_DEVICE": "cpu"}  # a CPU run stays off the GPU
    assert devices.torch_device_env("gpu:0", rocm) == {}  # ROCm's torch names its GPUs cuda:N
    assert devices.cuda_visible_devices_for("gpu:0", rocm) == "0"  # HIP takes CUDA_VISIBLE_DEVICES by index


@pytest.mark.parametrize(("machine", "first", "optional"), [
    (sg.mac(), "Apple GPU and its reading source", "macmon (IOReport)"),
    (sg.amd_sysfs(), "AMD GPU and its reading source", "AMD SMI"),
])
def test_the_doctor_on_each_scripted_machine(monkeypatch: pytest.MonkeyPatch, machine: sources.Machine, first: str,
                                            optional: str) -> None:
    with sg.use(monkeypatch, machine):
        report = doctor.diagnose()
    checks = {c.name: c for c in report.checks}
    assert report.gpu_ready and checks[first].status == doctor.OK
    readings = next(c for c in report.checks if c.name.startswith("GPU readings"))
    assert readings.status == doctor.OK and "Not measured here" in readings.detail
    assert checks[optional].status == doctor.MISSING and "pip install" in checks[optional].fix


def test_the_doctor_on_a_mac_without_a_readable_gpu_says_so_with_its_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    with sg.use(monkeypatch, sg.mac(plist=b""), gpu_build=False):
        report = doctor.diagnose()
    first = report.checks[0]
    assert not report.gpu_ready and first.name == "Apple GPU and its reading source" and first.status == doctor.MISSING
    assert "ioreg" in first.fix
    framework = report.checks[1]
    assert framework.status == doctor.MISSING and framework.fix.startswith("First the GPU's source")


def test_gpu_verify_knows_each_vendors_source_row() -> None:
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
    import gpu_verify

    rows = {c.record: c for c in gpu_verify.CLAIMS}
    apple_row, amd_row = rows["source_apple.json"], rows["source_amd.json"]
    reading = GpuReading(0, util_percent=87.0, mem_used_mib=1228.7, source="IOAccelerator (ioreg)").to_dict()
    record = {"vendor": "apple", "source": "IOAccelerator (ioreg)", "gpus": ["Apple M2 Pro"], "reading": reading}
    holds, measured = apple_row.measure(record)
    assert holds and "IOAccelerator (ioreg) answered for Apple M2 Pro" in measured and "util_percent" in measured
    assert not amd_row.measure(record)[0], "an Apple record is no proof of the AMD row"
    assert not apple_row.measure({**record, "reading": {"util_percent": None}})[0]
    mps = {"runs": [{"config": {"device": "gpu:0"}, "info": {"backend": "torch", "placement": "mps:0"}}]}
    assert gpu_verify._torch(mps)[0] and gpu_verify._torch_on(mps, "mps")[0]


@pytest.mark.parametrize(("machine", "source", "power"), [(sg.mac(), "IOAccelerator (ioreg)", False),
                                                         (sg.amd_sysfs(), "amdgpu sysfs", True)])
def test_bench_devices_shows_each_scripted_gpu_its_source_and_a_reading(monkeypatch: pytest.MonkeyPatch, capsys,
                                                                       machine: sources.Machine, source: str,
                                                                       power: bool) -> None:
    """`bench devices --json`: the device, its source (what its utilization means, what it cannot give) and one
    reading from it; the text form names the source where a CUDA version would stand, and says what is not measured."""
    import json

    from bench import cli

    with sg.use(monkeypatch, machine):
        assert cli.main(["devices", "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
        assert cli.main(["devices"]) == 0
        text = capsys.readouterr().out
    assert data["gpu_source"]["name"] == source and data["gpu_source"]["utilization"]
    reading = data["gpu_readings"][0]
    assert reading["source"] == source and reading["util_percent"] is not None
    assert (reading["power_w"] is not None) is power
    assert f"read by {source}" in text and "CUDA" not in text.split("Framework")[0]
    assert "now: utilization" in text and ("power not measured" in text) is not power
