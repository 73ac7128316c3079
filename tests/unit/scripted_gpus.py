"""Scripted GPU machines without the hardware: a Mac (ioreg's IOAccelerator plist, macmon), an AMD machine (AMD SMI's
documented return shapes, or the amdgpu driver's sysfs files), an Intel GPU machine (pyzes's Sysman structures) and a
TPU VM (TPU chips on the PCI bus, libtpu's monitoring SDK), as tests/unit/fake_nvml.py scripts NVML.

The ioreg plist (recorded/ioreg-m2pro.plist), the sysfs tree (recorded/amd-sysfs), the Sysman answers
(recorded/intel-sysman-arc-a770.json: each engine group's and the energy counter's successive (counter, timestamp)
reads, the memory modules' state), the TPU VM's PCI devices (recorded/tpu-v5e-pci) and libtpu's metric strings
(recorded/tpu-v5e-metrics.json) have the shape and units those tools give on the machines (Apple M2 Pro, Radeon RX
7900 XTX, Arc A770, TPU v5e); their values are chosen for the tests, not taken from a machine here, and docs/GPU.md
says each vendor is not yet checked on hardware. :func:`use` scripts a machine
for every source and for the framework's answers (its GPU build and the devices it lists), with NVML absent.
"""

from __future__ import annotations

import ctypes
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from bench.hardware import devices
from bench.hardware.monitor import nvml, sources
from bench.hardware.monitor.source_types import HostAccess
from tests.unit import fake_nvml

RECORDED = Path(__file__).parent / "recorded"
IOREG_PLIST = RECORDED / "ioreg-m2pro.plist"
AMD_SYSFS = RECORDED / "amd-sysfs"
INTEL_SYSMAN = RECORDED / "intel-sysman-arc-a770.json"
TPU_PCI = RECORDED / "tpu-v5e-pci"
TPU_METRICS = RECORDED / "tpu-v5e-metrics.json"
NOTHING = RECORDED / "nothing-here"  # a sysfs root with no entries


class AmdSmiLibraryException(Exception):
    """amdsmi's exception for a query the card or driver does not support."""


@dataclass
class FakeAmdGpu:
    """One AMD GPU as amdsmi's Python functions return it (dicts, units as documented: %, MB, W, MHz, degrees C)."""

    market_name: str = "AMD Instinct MI300X"
    gfx_activity: Any = 71
    umc_activity: Any = 23
    mm_activity: Any = "N/A"
    vram_used_mb: int = 18_432
    vram_total_mb: int = 196_592
    average_socket_power: Any = "N/A"  # MI300 and newer give current_socket_power
    current_socket_power: Any = 612
    power_limit_w: Any = 750
    energy_accumulator: int = 1_250_000_000
    counter_resolution: float = 15.3  # microjoules a count
    gfx_clock_mhz: int = 2_100
    edge_temp_c: Any = 54
    unsupported: set[str] = field(default_factory=set)


class FakeAmdSmi:
    """A stand-in for the ``amdsmi`` module: the functions the AMD source calls, with amdsmi's documented shapes."""

    AmdSmiLibraryException = AmdSmiLibraryException
    AmdSmiClkType = SimpleNamespace(GFX="GFX")
    AmdSmiTemperatureType = SimpleNamespace(EDGE="EDGE")
    AmdSmiTemperatureMetric = SimpleNamespace(CURRENT="CURRENT")

    def __init__(self, gpus: list[FakeAmdGpu], *, init_error: bool = False) -> None:
        self.gpus = gpus
        self.init_error = init_error
        self.energy_reads = 0

    def _gpu(self, handle: int, function: str) -> FakeAmdGpu:
        gpu = self.gpus[handle]
        if function in gpu.unsupported:
            raise AmdSmiLibraryException(f"{function}: AMDSMI_STATUS_NOT_SUPPORTED")
        return gpu

    def amdsmi_init(self) -> None:
        if self.init_error:
            raise AmdSmiLibraryException("AMDSMI_STATUS_INIT_ERROR: is the amdgpu driver loaded?")

    def amdsmi_get_processor_handles(self) -> list[int]:
        return list(range(len(self.gpus)))

    def amdsmi_get_gpu_asic_info(self, handle: int) -> dict[str, Any]:
        gpu = self._gpu(handle, "amdsmi_get_gpu_asic_info")
        return {"market_name": gpu.market_name, "vendor_id": "0x1002", "device_id": "0x74a1", "rev_id": "0x00",
                "asic_serial": "0x0", "oam_id": handle}

    def amdsmi_get_gpu_driver_info(self, handle: int) -> dict[str, Any]:
        self._gpu(handle, "amdsmi_get_gpu_driver_info")
        return {"driver_name": "amdgpu", "driver_version": "6.8.5", "driver_date": "2015/01/01 00:00"}

    def amdsmi_get_gpu_device_uuid(self, handle: int) -> str:
        self._gpu(handle, "amdsmi_get_gpu_device_uuid")
        return f"1fff74a1-0000-1000-80ce-58c6e0c3a1b{handle}"

    def amdsmi_get_gpu_activity(self, handle: int) -> dict[str, Any]:
        gpu = self._gpu(handle, "amdsmi_get_gpu_activity")
        return {"gfx_activity": gpu.gfx_activity, "umc_activity": gpu.umc_activity, "mm_activity": gpu.mm_activity}

    def amdsmi_get_gpu_vram_usage(self, handle: int) -> dict[str, Any]:
        gpu = self._gpu(handle, "amdsmi_get_gpu_vram_usage")
        return {"vram_total": gpu.vram_total_mb, "vram_used": gpu.vram_used_mb}

    def amdsmi_get_power_info(self, handle: int) -> dict[str, Any]:
        gpu = self._gpu(handle, "amdsmi_get_power_info")
        return {"current_socket_power": gpu.current_socket_power, "average_socket_power": gpu.average_socket_power,
                "gfx_voltage": "N/A", "soc_voltage": "N/A", "mem_voltage": "N/A", "power_limit": gpu.power_limit_w}

    def amdsmi_get_energy_count(self, handle: int) -> dict[str, Any]:
        gpu = self._gpu(handle, "amdsmi_get_energy_count")
        self.energy_reads += 1
        sentinel = gpu.energy_accumulator in (2**32 - 1, 2**64 - 1)  # "not supported" stays itself
        return {"energy_accumulator": gpu.energy_accumulator + (0 if sentinel else 100_000 * self.energy_reads),
                "counter_resolution": gpu.counter_resolution, "timestamp": 1_700_000_000}

    def amdsmi_get_clock_info(self, handle: int, clock: Any) -> dict[str, Any]:
        gpu = self._gpu(handle, "amdsmi_get_clock_info")
        return {"clk": gpu.gfx_clock_mhz, "min_clk": 500, "max_clk": 2_100, "clk_locked": False,
                "clk_deep_sleep": False}

    def amdsmi_get_temp_metric(self, handle: int, sensor: Any, metric: Any) -> Any:
        return self._gpu(handle, "amdsmi_get_temp_metric").edge_temp_c


# -- Intel: pyzes's ctypes API, answered from recorded structures ----------------------------------------------------
class _Handle(ctypes.c_void_p):
    """pyzes's handle types are c_void_p subclasses."""


class _DeviceCore(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * 256), ("uuid", type("ze_device_uuid_t", (ctypes.Structure,),
                                                             {"_fields_": [("id", ctypes.c_ubyte * 16)]}))]


class FakePyzes:
    """A stand-in for the ``pyzes`` module: the calls, structures and constants the Intel source uses, with pyzes's
    field names; each call fills the structure it is given by reference and returns 0 (ZE_RESULT_SUCCESS). Each
    engine group's and energy counter's reads follow the recorded list, then go on at its last step."""

    zes_driver_handle_t = type("zes_driver_handle_t", (_Handle,), {})
    zes_device_handle_t = type("zes_device_handle_t", (_Handle,), {})
    zes_engine_handle_t = type("zes_engine_handle_t", (_Handle,), {})
    zes_pwr_handle_t = type("zes_pwr_handle_t", (_Handle,), {})
    zes_mem_handle_t = type("zes_mem_handle_t", (_Handle,), {})
    ZES_STRUCTURE_TYPE_DEVICE_PROPERTIES, ZES_STRUCTURE_TYPE_POWER_PROPERTIES = 0x1, 0xD
    ZES_STRUCTURE_TYPE_MEM_PROPERTIES, ZES_STRUCTURE_TYPE_MEM_STATE, ZES_STRUCTURE_TYPE_ENGINE_PROPERTIES = 0xB, 0x1E, 0x5

    class zes_device_properties_t(ctypes.Structure):
        _fields_ = [("stype", ctypes.c_int32), ("core", _DeviceCore), ("modelName", ctypes.c_char * 64),
                    ("driverVersion", ctypes.c_char * 64)]

    class zes_engine_properties_t(ctypes.Structure):
        _fields_ = [("stype", ctypes.c_int32), ("type", ctypes.c_int32), ("onSubdevice", ctypes.c_uint8)]

    class zes_engine_stats_t(ctypes.Structure):
        _fields_ = [("activeTime", ctypes.c_uint64), ("timestamp", ctypes.c_uint64)]

    class zes_power_properties_t(ctypes.Structure):
        _fields_ = [("stype", ctypes.c_int32), ("onSubdevice", ctypes.c_uint8)]

    class zes_power_energy_counter_t(ctypes.Structure):
        _fields_ = [("energy", ctypes.c_uint64), ("timestamp", ctypes.c_uint64)]

    class zes_mem_properties_t(ctypes.Structure):
        _fields_ = [("stype", ctypes.c_int32), ("location", ctypes.c_int32)]

    class zes_mem_state_t(ctypes.Structure):
        _fields_ = [("stype", ctypes.c_int32), ("free", ctypes.c_uint64), ("size", ctypes.c_uint64)]

    def __init__(self, recorded: dict[str, Any], *, init_result: int = 0) -> None:
        self.devices = recorded["devices"]
        self.init_result = init_result
        self.objects: dict[int, tuple[str, dict[str, Any]]] = {}  # handle value -> (kind, its recorded entry)
        self.reads: dict[int, int] = {}

    def _handle(self, kind: str, entry: dict[str, Any]) -> int:
        value = next((v for v, (k, e) in self.objects.items() if e is entry), 0) or len(self.objects) + 1
        self.objects[value] = (kind, entry)
        return value

    def _list(self, count: Any, array: Any, kind: Any, entries: list[tuple[str, dict[str, Any]]]) -> int:
        count._obj.value = len(entries)
        if array is not None:
            for i, (name, entry) in enumerate(entries):
                array[i] = kind(self._handle(name, entry))
        return 0

    def _next(self, handle: Any, series: list[list[int]]) -> list[int]:
        read = self.reads[handle.value] = self.reads.get(handle.value, -1) + 1
        if read < len(series):
            return series[read]
        (a0, t0), (a1, t1) = series[-2], series[-1]
        steps = read - len(series) + 1
        return [a1 + steps * (a1 - a0), t1 + steps * (t1 - t0)]

    def zesInit(self, flags: int) -> int:
        return self.init_result

    def zesDriverGet(self, count: Any, drivers: Any) -> int:
        return self._list(count, drivers, self.zes_driver_handle_t, [("driver", {"devices": self.devices})])

    def zesDeviceGet(self, driver: Any, count: Any, devices: Any) -> int:
        return self._list(count, devices, self.zes_device_handle_t, [("device", d) for d in self.devices])

    def zesDeviceGetProperties(self, device: Any, props: Any) -> int:
        entry = self.objects[device.value][1]
        props._obj.modelName = entry["modelName"].encode()
        props._obj.driverVersion = entry["driverVersion"].encode()
        props._obj.core.name = entry["coreName"].encode()
        props._obj.core.uuid.id[:] = list(bytes.fromhex(entry["uuid"]))
        return 0

    def zesDeviceEnumEngineGroups(self, device: Any, count: Any, engines: Any) -> int:
        entry = self.objects[device.value][1]
        return self._list(count, engines, self.zes_engine_handle_t, [("engine", e) for e in entry["engines"]])

    def zesEngineGetProperties(self, engine: Any, props: Any) -> int:
        entry = self.objects[engine.value][1]
        props._obj.type, props._obj.onSubdevice = entry["type"], entry["onSubdevice"]
        return 0

    def zesEngineGetActivity(self, engine: Any, stats: Any) -> int:
        stats._obj.activeTime, stats._obj.timestamp = self._next(engine, self.objects[engine.value][1]["activity"])
        return 0

    def zesDeviceEnumPowerDomains(self, device: Any, count: Any, domains: Any) -> int:
        entry = self.objects[device.value][1]
        return self._list(count, domains, self.zes_pwr_handle_t, [("power", p) for p in entry["power"]])

    def zesPowerGetProperties(self, power: Any, props: Any) -> int:
        props._obj.onSubdevice = self.objects[power.value][1]["onSubdevice"]
        return 0

    def zesPowerGetEnergyCounter(self, power: Any, energy: Any) -> int:
        energy._obj.energy, energy._obj.timestamp = self._next(power, self.objects[power.value][1]["energy"])
        return 0

    def zesDeviceEnumMemoryModules(self, device: Any, count: Any, modules: Any) -> int:
        entry = self.objects[device.value][1]
        return self._list(count, modules, self.zes_mem_handle_t, [("memory", m) for m in entry["memory"]])

    def zesMemoryGetProperties(self, memory: Any, props: Any) -> int:
        props._obj.location = self.objects[memory.value][1]["location"]
        return 0

    def zesMemoryGetState(self, memory: Any, state: Any) -> int:
        entry = self.objects[memory.value][1]
        state._obj.size, state._obj.free = entry["size"], entry["free"]
        return 0


# -- TPU: libtpu's monitoring SDK, answering the recorded metric strings -------------------------------------------
class FakeTpuMonitoring:
    """A stand-in for ``libtpu.sdk.tpumonitoring``: ``get_metric(name).data()`` gives the recorded strings (one a
    chip; a core for tensorcore_util); a metric libtpu does not have raises, as the SDK does."""

    def __init__(self, metrics: dict[str, list[str]]) -> None:
        self.metrics = metrics

    def list_supported_metrics(self) -> list[str]:
        return list(self.metrics)

    def get_metric(self, name: str) -> Any:
        if name not in self.metrics:
            raise RuntimeError(f"Metric {name} is not supported")
        values = list(self.metrics[name])
        return SimpleNamespace(data=lambda: values, description=lambda: name)


def fake_macmon(usage: float = 0.83, gpu_w: float = 14.2) -> Any:
    """A stand-in for macmon-lib's ``macmon`` module: ``Sampler().metrics()`` with ``gpu_usage[0].usage`` (a ratio)
    and ``power.gpu`` (W), the fields its README shows."""
    metrics = SimpleNamespace(gpu_usage=[SimpleNamespace(freq_mhz=1398.0, usage=usage)],
                              power=SimpleNamespace(gpu=gpu_w, board=31.0, cpu=6.1))
    sampler = SimpleNamespace(metrics=lambda: metrics)
    return SimpleNamespace(Sampler=lambda: sampler)


def mac(*, macmon: Any = None, plist: bytes | None = None) -> HostAccess:
    """A Mac with Apple silicon: ioreg prints the recorded plist; macmon-lib installed where given."""
    printed = IOREG_PLIST.read_bytes() if plist is None else plist
    return HostAccess(system="Darwin", drm_root=RECORDED / "no-drm", ioreg=lambda: printed, amdsmi=lambda: None,
                   macmon=lambda: macmon, pyzes=lambda: None, tpumonitoring=lambda: None, pci_root=NOTHING)


def amd_sysfs() -> HostAccess:
    """A Linux machine with an AMD GPU, amdgpu's sysfs files and no AMD SMI."""
    return HostAccess(system="Linux", drm_root=AMD_SYSFS, ioreg=lambda: None, amdsmi=lambda: None, macmon=lambda: None,
                   pyzes=lambda: None, tpumonitoring=lambda: None, pci_root=NOTHING)


def amd_smi(gpus: list[FakeAmdGpu] | None = None) -> HostAccess:
    """A Linux machine with ROCm's AMD SMI answering (and the same sysfs tree)."""
    module = FakeAmdSmi(gpus or [FakeAmdGpu()])
    return HostAccess(system="Linux", drm_root=AMD_SYSFS, ioreg=lambda: None, amdsmi=lambda: module,
                   macmon=lambda: None, pyzes=lambda: None, tpumonitoring=lambda: None, pci_root=NOTHING)


def intel(module: FakePyzes | None = None) -> HostAccess:
    """A Linux machine with an Intel Arc GPU read by Level Zero Sysman (pyzes), no AMD card, no TPU."""
    zes = module or FakePyzes(json.loads(INTEL_SYSMAN.read_text(encoding="utf-8")))
    return HostAccess(system="Linux", drm_root=NOTHING, ioreg=lambda: None, amdsmi=lambda: None, macmon=lambda: None,
                   pyzes=lambda: zes, tpumonitoring=lambda: None, pci_root=NOTHING)


def tpu(metrics: dict[str, list[str]] | None = None, *, libtpu: bool = True) -> HostAccess:
    """A TPU VM (two TPU v5e chips on the PCI bus) with libtpu's monitoring SDK answering the recorded strings, or
    without libtpu."""
    recorded = json.loads(TPU_METRICS.read_text(encoding="utf-8")) if metrics is None else metrics
    sdk = FakeTpuMonitoring(recorded) if libtpu else None
    return HostAccess(system="Linux", drm_root=NOTHING, ioreg=lambda: None, amdsmi=lambda: None, macmon=lambda: None,
                   pyzes=lambda: None, tpumonitoring=lambda: sdk, pci_root=TPU_PCI)


def vendor_of(machine: HostAccess) -> str:
    """The vendor of a scripted machine's accelerator."""
    if machine.system == "Darwin":
        return "apple"
    if machine.pyzes() is not None:
        return "intel"
    return "tpu" if machine.pci_root == TPU_PCI else "amd"


# what the framework lists on each scripted machine (bench.hardware.devices.probe_framework's answer)
LISTS = {"apple": ["CPU:0", "MPS:0"], "amd": ["CPU:0", "GPU:0"], "intel": ["CPU:0", "XPU:0"],
         "tpu": ["CPU:0", "TPU:0", "TPU:1"]}


@contextmanager
def use(monkeypatch: pytest.MonkeyPatch, machine: HostAccess, *, backend: str = "torch",
        gpu_build: bool | None = True) -> Iterator[HostAccess]:
    """Script ``machine`` for every GPU source (NVML absent), Keras on ``backend`` whose build for the machine's GPU
    is ``gpu_build`` and which lists the GPU."""
    vendor = vendor_of(machine)
    monkeypatch.setenv("KERAS_BACKEND", backend)
    monkeypatch.setattr(devices, "framework_gpu_build", lambda name, kind: gpu_build if kind == vendor else None)

    def probe(name: str | None = None, timeout_s: float = 60) -> devices.FrameworkProbe:
        return devices.FrameworkProbe(backend=name or backend, version="2.8.0",
                                      devices=LISTS[vendor] if gpu_build else ["CPU:0"], built_with_cuda=False)

    monkeypatch.setattr(devices, "probe_framework", probe)
    nvml.set_module(fake_nvml.missing())
    sources.script(machine)
    try:
        yield machine
    finally:
        sources.reset()
        nvml.reset()


PLACEMENT_ENV = "BENCH_SCRIPTED_PLACEMENT"
WORKER_TARGET = "tests.unit.scripted_gpus:replayed_worker"  # for BENCH_WORKER_TARGET


def replayed_worker(config: dict[str, Any], queue: Any, stop_event: Any, log_path: str | None = None) -> None:
    """A replayed run on a scripted GPU machine: it says where its variables lived as the real worker would there
    (``mps:0`` on a Mac under torch, ``cuda:0`` for ROCm's torch; $BENCH_SCRIPTED_PLACEMENT), then 0.8 s epochs."""
    import os
    import time

    from bench.runs import events

    placement = os.environ.get(PLACEMENT_ENV, "mps:0")
    events.emit(queue, events.STARTED, pid=os.getpid(), framework="torch 2.8.0 (replayed)", backend="torch",
                devices_seen=["cpu", placement], placement=placement, replicas=1, replica_devices=[placement],
                params=203530, flops_per_sample=1_221_180, n_train=1000, n_test=200, precision="float32")
    for epoch in range(1, int(config["epochs"]) + 1):
        started = time.time()
        if stop_event.wait(0.8):
            events.emit(queue, events.FINISHED, status="stopped")
            return
        ended = time.time()
        events.emit(queue, events.EPOCH, epoch=epoch, epoch_seconds=ended - started, samples_per_s=1000 / 0.8,
                    loss=1.0 / epoch, accuracy=0.5, val_loss=1.0, val_accuracy=0.5, includes_tracing=epoch == 1,
                    started_wall=started, ended_wall=ended)
    events.emit(queue, events.FINISHED, status="finished")
