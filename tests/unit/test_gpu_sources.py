"""Every GPU source without the hardware, each scripted from the outputs its tool prints (tests/unit/scripted_gpus.py):
Apple's ioreg plist and macmon, AMD SMI's documented return shapes, the amdgpu driver's sysfs files, Level Zero
Sysman's structures (pyzes), libtpu's metric strings. A figure a source cannot give is None with its reason, never 0; the sampler, the device list and the doctor read whichever answers."""

from __future__ import annotations

import pytest

from bench.hardware import devices, doctor
from bench.vocab.record_types import CpuSpec, GpuSpec
from bench.hardware.monitor import amd, apple, intel, nvml, sources, tpu
from bench.hardware.monitor.sampler import Sampler
from bench.vocab.readings import GpuReading
from tests.unit import fake_nvml
from tests.unit import scripted_gpus as sg


@pytest.fixture(autouse=True)
def _clean() -> object:
    yield
    sources.reset()
    nvml.reset()


def _one(machine: sources.HostAccess) -> tuple[sources.Found, GpuReading]:
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
    sources.script(sources.HostAccess(system="Linux", drm_root=sg.RECORDED / "no-drm", ioreg=lambda: None,
                                   amdsmi=lambda: None, macmon=lambda: None, pyzes=lambda: None,
                                   tpumonitoring=lambda: None, pci_root=sg.NOTHING))
    found = sources.find()
    assert found.source is None and found.reason == nvml.NO_DRIVER_REASON
    assert [name for name, _ in found.tried] == ["NVML", "AMD SMI", "amdgpu sysfs", "macmon (IOReport)",
                                                 "IOAccelerator (ioreg)", "libtpu monitoring (tpumonitoring)",
                                                 "Level Zero Sysman (pyzes)"]


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
    assert GpuReading.model_validate(reading.to_dict()).source == "IOAccelerator (ioreg)"
    assert GpuReading.model_validate({"index": 0, "util_percent": 5.0}).source is None
    assert sources.info_of("AMD SMI") is amd.AMDSMI_INFO and sources.info_of(None) is None


@pytest.mark.parametrize(("machine", "vendor", "source"), [(sg.mac(), "apple", "IOAccelerator (ioreg)"),
                                                          (sg.amd_smi(), "amd", "AMD SMI"),
                                                          (sg.amd_sysfs(), "amd", "amdgpu sysfs"),
                                                          (sg.intel(), "intel", "Level Zero Sysman (pyzes)")])
def test_devices_offer_the_gpu_of_each_scripted_machine(monkeypatch: pytest.MonkeyPatch, machine: sources.HostAccess,
                                                        vendor: str, source: str) -> None:
    with sg.use(monkeypatch, machine):
        hw = devices.discover()
    assert hw.gpu_reason is None and devices.device_choices(hw) == ["cpu", "gpu:0"]
    assert (hw.gpus[0].vendor, hw.gpus[0].source, hw.vendor) == (vendor, source, vendor)
    assert hw.gpu_source is not None and hw.gpu_source.name == source
    assert hw.record().gpus[0].source == source  # the run's record keeps where its readings came from


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
    cpu = CpuSpec("M2", 10, 10, 16384.0)
    mac = devices.Hardware(cpu=cpu, gpus=[GpuSpec(0, "Apple M2 Pro", None, None, None, None, "apple",
                                                          apple.IOREG_INFO.name)], gpu_source=apple.IOREG_INFO)
    rocm = devices.Hardware(cpu=cpu, gpus=[GpuSpec(0, "MI300X", None, None, None, None, "amd", "AMD SMI")],
                            gpu_source=amd.AMDSMI_INFO)
    assert devices.torch_device_env("gpu:0", mac) == {"KERAS_TORCH_DEVICE": "mps"}
    assert devices.torch_device_env("cpu", mac) == {"KERAS_TORCH_DEVICE": "cpu"}  # a CPU run stays off the GPU
    assert devices.torch_device_env("gpu:0", rocm) == {}  # ROCm's torch names its GPUs cuda:N
    assert devices.cuda_visible_devices_for("gpu:0", rocm) == "0"  # HIP takes CUDA_VISIBLE_DEVICES by index


@pytest.mark.parametrize(("machine", "first", "optional"), [
    (sg.mac(), "Apple GPU and its reading source", "macmon (IOReport)"),
    (sg.amd_sysfs(), "AMD GPU and its reading source", "AMD SMI"),
])
def test_the_doctor_on_each_scripted_machine(monkeypatch: pytest.MonkeyPatch, machine: sources.HostAccess, first: str,
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


@pytest.mark.parametrize(("machine", "source", "power", "backend"), [
    (sg.mac(), "IOAccelerator (ioreg)", False, "torch"), (sg.amd_sysfs(), "amdgpu sysfs", True, "torch"),
    (sg.intel(), "Level Zero Sysman (pyzes)", True, "torch"), (sg.tpu(), "libtpu monitoring (tpumonitoring)", False,
                                                                "jax")])
def test_bench_devices_shows_each_scripted_gpu_its_source_and_a_reading(monkeypatch: pytest.MonkeyPatch, capsys,
                                                                       machine: sources.HostAccess, source: str,
                                                                       power: bool, backend: str) -> None:
    """`bench devices --json`: the device, its source (what its utilization means, what it cannot give) and one
    reading from it; the text form names the source where a CUDA version would stand, and says what is not measured."""
    import json

    from bench.cli import main as cli

    with sg.use(monkeypatch, machine, backend=backend):
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


# -- Intel GPUs (Level Zero Sysman through pyzes) and TPUs (libtpu's monitoring SDK) ---------------------------------
def test_sysman_reads_engine_activity_and_power_as_counter_deltas() -> None:
    found, reading = _one(sg.intel())
    assert found.source is not None and found.source.info is intel.INFO
    gpu = found.source.gpus()[0]
    assert (gpu.name, gpu.mem_total_mib, gpu.driver) == ("Intel(R) Arc(TM) A770 Graphics", 16384.0, "1.3.29735")
    assert gpu.uuid == "8680a056080000000300000000000000"
    # the compute group's active time grew 68,000 us in 100,000 us; the render group's 10 %: the busier counts. The
    # group of all engines (85 %), the media group (99 %) and a sub-device's group (100 %) are not the utilization
    assert reading.util_percent == pytest.approx(68.0)
    assert reading.power_w == pytest.approx(185.0)  # 18.5 J in 0.1 s
    assert reading.energy_j == pytest.approx(5018.5) and reading.source == "Level Zero Sysman (pyzes)"
    # the device-local module alone (4 GiB of 16 in use); the system-memory module is not the GPU's
    assert (reading.mem_used_mib, reading.mem_total_mib) == (4096.0, 16384.0)
    for name in ("temp_c", "sm_clock_mhz", "throttle_reasons", "tensor_active_percent"):
        assert getattr(reading, name) is None and intel.INFO.not_measured[name]
    assert "active time" in intel.INFO.utilization and "not how much of the chip worked" in intel.INFO.utilization


def test_sysman_that_cannot_start_is_the_reason_not_nvmls() -> None:
    import json

    module = sg.FakePyzes(json.loads(sg.INTEL_SYSMAN.read_text(encoding="utf-8")), init_result=0x78000001)
    nvml.set_module(fake_nvml.missing())
    sources.script(sg.intel(module))
    found = sources.find()
    assert found.source is None and found.unreadable() == ("intel", found.reason)
    assert found.reason is not None and found.reason.startswith(intel.NOT_STARTED) and "0x78000001" in found.reason


def test_libtpu_gives_the_duty_cycle_as_utilization_and_tensorcore_use_as_tensor_activity() -> None:
    found, reading = _one(sg.tpu())
    assert found.source is not None and found.source.info is tpu.INFO
    assert [(g.name, g.mem_total_mib) for g in found.source.gpus()] == [("TPU v5e chip", 16384.0)] * 2
    assert reading.util_percent == 100.0 and reading.tensor_active_percent == pytest.approx(13.6)
    assert (reading.mem_used_mib, reading.mem_total_mib) == (10035.0, 16384.0)
    second = found.source.collector([1]).collect()[0]
    assert second.tensor_active_percent == pytest.approx(14.81) and second.mem_used_mib == 4096.0
    for name in ("power_w", "energy_j", "temp_c", "sm_active_percent"):
        assert getattr(reading, name) is None and tpu.INFO.not_measured[name]
    assert "100 % duty cycle beside 13-15 % TensorCore utilization" in tpu.INFO.utilization
    assert "tensor activity" in found.source.collector([0]).gpm_reasons["gpu:0"]


def test_a_tpu_core_list_is_averaged_per_chip_and_an_idle_tpu_is_a_gap() -> None:
    four_cores = {"duty_cycle_pct": ["80", "60"], "tensorcore_util": ["10", "20", "30", "50"]}
    _, reading = _one(sg.tpu(four_cores))
    assert reading.util_percent == 80.0 and reading.tensor_active_percent == pytest.approx(15.0)
    assert reading.mem_used_mib is None  # libtpu has no HBM figure here: a gap, never 0
    found, idle = _one(sg.tpu({}))  # no run uses the TPU: libtpu serves no figures, the chips are still listed
    assert found.source is not None and len(found.source.gpus()) == 2
    assert idle.util_percent is None and idle.tensor_active_percent is None


def test_tpu_chips_without_libtpu_are_the_reason() -> None:
    nvml.set_module(fake_nvml.missing())
    sources.script(sg.tpu(libtpu=False))
    found = sources.find()
    assert found.source is None and found.unreadable()[0] == "tpu"
    assert found.reason is not None and found.reason.startswith(tpu.CHIPS_HERE) and "jax[tpu]" in found.reason


def test_devices_offer_each_tpu_chip_through_jax(monkeypatch: pytest.MonkeyPatch) -> None:
    with sg.use(monkeypatch, sg.tpu(), backend="jax"):
        hw = devices.discover()
    assert hw.gpu_reason is None and devices.device_choices(hw) == ["cpu", "gpu:0", "gpu:1"]
    assert hw.vendor == "tpu" and hw.gpus[0].source == "libtpu monitoring (tpumonitoring)"


@pytest.mark.parametrize(("machine", "backend", "words"), [
    (sg.tpu(), "torch", ("this TPU", "TPU (libtpu)", "jax[tpu]", "KERAS_BACKEND=jax")),
    (sg.intel(), "torch", ("this Intel GPU", "XPU", devices.XPU_TORCH_INDEX)),
    (sg.intel(), "jax", ("this Intel GPU", "KERAS_BACKEND=torch")),
])
def test_a_framework_that_cannot_reach_the_accelerator_is_told_which_can(monkeypatch: pytest.MonkeyPatch,
                                                                        machine: sources.HostAccess, backend: str,
                                                                        words: tuple[str, ...]) -> None:
    with sg.use(monkeypatch, machine, backend=backend, gpu_build=False):
        hw = devices.discover()
    assert devices.device_choices(hw) == ["cpu"]
    assert hw.gpu_reason is not None and all(w in hw.gpu_reason for w in words), hw.gpu_reason


def test_framework_gpu_build_reads_torchs_xpu_version_and_jaxs_libtpu(monkeypatch: pytest.MonkeyPatch) -> None:
    files = {"version.py": "cuda = None\nhip = None\nxpu: Optional[str] = '20250101'\n"}
    monkeypatch.setattr(devices, "_package_file_text", lambda package, relative: files.get(relative))
    assert devices.framework_gpu_build("torch", "intel") is True
    files["version.py"] = "cuda = None\nxpu: Optional[str] = None\n"  # every torch has torch/xpu; not its version
    assert devices.framework_gpu_build("torch", "intel") is False
    assert devices.framework_gpu_build("tensorflow", "intel") is False
    monkeypatch.setattr(devices, "_distribution_names", lambda: ["jax", "jaxlib", "libtpu"])
    assert devices.framework_gpu_build("jax", "tpu") in (True, None)  # None only where jax is not installed
    monkeypatch.setattr(devices, "_distribution_names", lambda: ["jax", "jaxlib", "jax-cuda12-plugin"])
    assert devices.framework_gpu_build("jax", "tpu") in (False, None)
    assert devices.framework_gpu_build("torch", "tpu") is False


def test_gpu_n_on_an_intel_gpu_is_torchs_xpu_device() -> None:
    cpu = CpuSpec("Core", 8, 16, 32768.0)
    arc = devices.Hardware(cpu=cpu, gpus=[GpuSpec(0, "Arc A770", None, None, None, None, "intel",
                                                          intel.INFO.name)], gpu_source=intel.INFO)
    assert devices.torch_device_env("gpu:0", arc) == {"KERAS_TORCH_DEVICE": "xpu:0"}
    assert devices.torch_device_env("cpu", arc) == {"KERAS_TORCH_DEVICE": "cpu"}


@pytest.mark.parametrize(("machine", "backend", "first", "shown"), [
    (sg.intel(), "torch", "Intel GPU and its reading source", "power 185.0 W"),
    (sg.tpu(), "jax", "TPU and its reading source", "tensor activity 14 %"),
])
def test_the_doctor_on_an_intel_gpu_and_a_tpu(monkeypatch: pytest.MonkeyPatch, machine: sources.HostAccess,
                                             backend: str, first: str, shown: str) -> None:
    with sg.use(monkeypatch, machine, backend=backend):
        report = doctor.diagnose()
    checks = {c.name: c for c in report.checks}
    assert report.gpu_ready and checks[first].status == doctor.OK
    readings = next(c for c in report.checks if c.name.startswith("GPU readings"))
    assert readings.status == doctor.OK and shown in readings.detail and "Not measured here" in readings.detail


@pytest.mark.parametrize(("machine", "backend", "first", "fix"), [
    (sg.tpu(libtpu=False), "jax", "TPU and its reading source", "jax[tpu]"),
    (sg.intel(sg.FakePyzes({"devices": []}, init_result=0x78000001)), "torch", "Intel GPU and its reading source",
     "pip install pyzes"),
])
def test_the_doctor_names_the_fix_where_the_accelerator_is_here_but_unread(monkeypatch: pytest.MonkeyPatch,
                                                                          machine: sources.HostAccess, backend: str,
                                                                          first: str, fix: str) -> None:
    with sg.use(monkeypatch, machine, backend=backend, gpu_build=False):
        report = doctor.diagnose()
    check = report.checks[0]
    assert not report.gpu_ready and (check.name, check.status) == (first, doctor.MISSING) and fix in check.fix
    framework = report.checks[1]
    assert framework.status == doctor.MISSING and framework.fix.startswith("First the GPU's source")


def test_a_tpu_run_on_gpu_n_holds_chip_n_alone_and_gpus_every_chip() -> None:
    env = devices.tpu_device_env("gpu:1")
    assert env["TPU_VISIBLE_CHIPS"] == "1" and env["TPU_CHIPS_PER_PROCESS_BOUNDS"] == "1,1,1"
    assert devices.tpu_device_env("gpus") == {}
