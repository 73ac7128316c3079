"""AMD GPUs as GPU sources (bench.hardware.monitor.sources): AMD SMI where ROCm's library loads, the amdgpu driver's
sysfs files without it.

AMD SMI (the ``amdsmi`` Python package over ROCm's libamd_smi): ``amdsmi_get_gpu_activity`` gives the GFX, UMC
(memory controller) and MM (multimedia) engines' activity in %, ``amdsmi_get_gpu_vram_usage`` VRAM in MB,
``amdsmi_get_power_info`` the socket power in W (``average_socket_power`` on Navi and MI200 and older,
``current_socket_power`` on MI300 and newer; "N/A" where a card has none), ``amdsmi_get_energy_count`` the energy
accumulator. sysfs (``/sys/class/drm/cardN/device``): ``gpu_busy_percent``, ``mem_busy_percent``,
``mem_info_vram_used`` / ``mem_info_vram_total`` (bytes) and the card's hwmon ``power1_average`` (or
``power1_input``), ``power1_cap`` (microwatts), ``temp1_input`` (millidegrees), ``freq1_input`` (the GFX clock, Hz).
A figure a source does not give is None with the reason in its SourceInfo, never 0. GPUs are numbered in the order
the source lists them, which is ROCm's order (PCI bus order) on a machine whose every AMD GPU ROCm sees.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.hardware.monitor.source_types import (Machine, ReadingCollector, SourceGpu, SourceInfo, key,
                                                 number)
from bench.readings import GpuReading

__all__ = ["AMDSMI_INFO", "AmdSmiSource", "NO_CARD", "SYSFS_INFO", "SysfsSource", "open_amdsmi", "open_sysfs"]

AMD_VENDOR_ID = "0x1002"
NO_CARD = "No AMD GPU under"
GPM_WHY = "SM, tensor and DRAM activity are NVIDIA GPM figures; AMD's drivers give no counterpart here."
AMDSMI_INFO = SourceInfo(
    name="AMD SMI", vendor="amd",
    utilization=("AMD SMI's GFX activity (amdsmi_get_gpu_activity): the share of time the graphics and compute "
                 "engine was busy, averaged by the card's firmware; like NVML's it says the engine was working, not "
                 "how much of the chip worked."),
    not_measured={"sm_active_percent": GPM_WHY, "tensor_active_percent": GPM_WHY,
                  "throttle_reasons": "AMD SMI's violation status is not read yet: clock-limit reasons are not "
                                      "shown for AMD GPUs."})
SYSFS_INFO = SourceInfo(
    name="amdgpu sysfs", vendor="amd",
    utilization=("the amdgpu driver's gpu_busy_percent: the share of time the GPU was busy, as the driver samples "
                 "it; it says the engine was working, not how much of the chip worked."),
    not_measured={"sm_active_percent": GPM_WHY, "tensor_active_percent": GPM_WHY,
                  "energy_j": "the amdgpu driver's sysfs gives no energy counter: energy is power integrated over "
                              "the samples (an estimate); AMD SMI (`pip install amdsmi` with ROCm) gives the counter.",
                  "throttle_reasons": "sysfs gives no clock-limit reasons."})
AMDSMI_MISSING = ("AMD SMI is not usable (the amdsmi package or ROCm's libamd_smi is missing): install ROCm, then "
                  "`pip install amdsmi` (or the amdsmi of /opt/rocm/share/amd_smi)")
_MIB = 2**20


# -- AMD SMI ------------------------------------------------------------------------------------------------------
class AmdSmiSource:
    """The AMD GPUs AMD SMI lists."""

    info = AMDSMI_INFO

    def __init__(self, module: Any, handles: list[Any]) -> None:
        self._smi = module
        self._handles = handles

    def _ask(self, function: str, *args: Any) -> Any:
        """``amdsmi.<function>(*args)``, or None where it raises (not supported on this card, a guest VM, ...)."""
        try:
            return getattr(self._smi, function)(*args)
        except Exception:  # noqa: BLE001 - AmdSmiLibraryException and its kin: a gap, not a failure
            return None

    def gpus(self) -> list[SourceGpu]:
        gpus = []
        for index, handle in enumerate(self._handles):
            asic = self._ask("amdsmi_get_gpu_asic_info", handle)
            vram = self._ask("amdsmi_get_gpu_vram_usage", handle)
            driver = self._ask("amdsmi_get_gpu_driver_info", handle)
            uuid = self._ask("amdsmi_get_gpu_device_uuid", handle)
            name = key(asic, "market_name")
            total = number(key(vram, "vram_total"))
            gpus.append(SourceGpu(index=index, name=str(name) if name else f"AMD GPU {index}",
                                  mem_total_mib=total, driver=_text(key(driver, "driver_version")),
                                  uuid=_text(uuid)))
        return gpus

    def collector(self, indices: list[int] | None = None) -> ReadingCollector:
        chosen = list(range(len(self._handles))) if indices is None else indices
        return ReadingCollector(self, self.info, chosen, len(self._handles))

    def read(self, index: int) -> GpuReading:
        handle = self._handles[index]
        activity = self._ask("amdsmi_get_gpu_activity", handle)
        vram = self._ask("amdsmi_get_gpu_vram_usage", handle)
        power = self._ask("amdsmi_get_power_info", handle)
        energy = self._ask("amdsmi_get_energy_count", handle)
        clock = self._ask("amdsmi_get_clock_info", handle, _enum(self._smi, "AmdSmiClkType", "GFX"))
        temp = self._ask("amdsmi_get_temp_metric", handle, _enum(self._smi, "AmdSmiTemperatureType", "EDGE"),
                         _enum(self._smi, "AmdSmiTemperatureMetric", "CURRENT"))
        watts = _first(number(key(power, "average_socket_power")), number(key(power, "current_socket_power")),
                       number(key(power, "socket_power")))
        return GpuReading(
            index=index, name=None,
            util_percent=_percent(key(activity, "gfx_activity")),
            mem_util_percent=_percent(key(activity, "umc_activity")),
            mem_used_mib=number(key(vram, "vram_used")),
            mem_total_mib=number(key(vram, "vram_total")),
            power_w=_watts(watts), power_limit_w=_watts(number(key(power, "power_limit"))),
            temp_c=number(temp), sm_clock_mhz=number(key(clock, "clk")),
            energy_j=_joules(energy), source=self.info.name)


def _enum(module: Any, kind: str, member: str) -> Any:
    return getattr(getattr(module, kind, None), member, None)


def _joules(energy: Any) -> float | None:
    """The energy accumulator times its resolution (microjoules a count), in joules. Older amdsmi names the
    accumulator ``power``, newer ``energy_accumulator``."""
    count = _first(number(key(energy, "energy_accumulator")), number(key(energy, "power")))
    resolution = number(key(energy, "counter_resolution"))
    return None if count is None or resolution is None else count * resolution / 1e6


def _watts(value: float | None) -> float | None:
    """AMD SMI's power in W; a value above 10 kW is the microwatts some versions give (power_limit), scaled."""
    if value is None or value >= 2**32 - 1:  # UINT32_MAX: "not supported" (amdsmi.h)
        return None
    return value / 1e6 if value > 10_000 else value


def _percent(value: Any) -> float | None:
    number_ = number(value)
    return number_ if number_ is not None and 0 <= number_ <= 100 else None


def _first(*values: float | None) -> float | None:
    return next((v for v in values if v is not None), None)


def _text(value: Any) -> str | None:
    return str(value) if isinstance(value, str) and value and value != "N/A" else None


def open_amdsmi(machine: Machine) -> AmdSmiSource | str:
    """AMD SMI's source where the package loads, initialises and lists a GPU; else why not."""
    if machine.system != "Linux":
        return f"AMD SMI runs on Linux only (this is {machine.system})."
    module = machine.amdsmi()
    if module is None:
        return AMDSMI_MISSING
    try:
        module.amdsmi_init()
        handles = list(module.amdsmi_get_processor_handles())
    except Exception as exc:  # noqa: BLE001 - AmdSmiLibraryException where the driver is not loaded
        return f"AMD SMI could not start ({type(exc).__name__}: {exc}): is the amdgpu driver loaded?"
    if not handles:
        return "AMD SMI started but lists no GPU."
    return AmdSmiSource(module, handles)


# -- sysfs ---------------------------------------------------------------------------------------------------------
def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None


def amd_cards(drm_root: Path) -> list[Path]:
    """The ``device`` folders of the AMD cards under ``drm_root`` (card0, card1, ...; connectors left out), in order."""
    try:
        entries = sorted((p for p in drm_root.iterdir() if p.name.startswith("card") and p.name[4:].isdigit()),
                         key=lambda p: int(p.name[4:]))
    except OSError:
        return []
    return [p / "device" for p in entries if _read(p / "device" / "vendor") == AMD_VENDOR_ID]


def _hwmon(device: Path) -> Path | None:
    try:
        return next(iter(sorted((device / "hwmon").iterdir())), None)
    except OSError:
        return None


class SysfsSource:
    """The AMD GPUs the amdgpu driver lists under /sys/class/drm."""

    info = SYSFS_INFO

    def __init__(self, cards: list[Path]) -> None:
        self._cards = cards

    def gpus(self) -> list[SourceGpu]:
        gpus = []
        for index, device in enumerate(self._cards):
            name = _read(device / "product_name") or f"AMD GPU (device {_read(device / 'device') or '?'})"
            total = number(_read(device / "mem_info_vram_total"))
            gpus.append(SourceGpu(index=index, name=name, mem_total_mib=None if total is None else total / _MIB,
                                  uuid=_read(device / "unique_id")))
        return gpus

    def collector(self, indices: list[int] | None = None) -> ReadingCollector:
        chosen = list(range(len(self._cards))) if indices is None else indices
        return ReadingCollector(self, self.info, chosen, len(self._cards))

    def read(self, index: int) -> GpuReading:
        device = self._cards[index]
        hwmon = _hwmon(device)

        def sensor(name: str, scale: float) -> float | None:
            value = number(_read(hwmon / name)) if hwmon is not None else None
            return None if value is None else value / scale

        used, total = number(_read(device / "mem_info_vram_used")), number(_read(device / "mem_info_vram_total"))
        return GpuReading(
            index=index, name=None,
            util_percent=_percent(_read(device / "gpu_busy_percent")),
            mem_util_percent=_percent(_read(device / "mem_busy_percent")),
            mem_used_mib=None if used is None else used / _MIB,
            mem_total_mib=None if total is None else total / _MIB,
            power_w=_first(sensor("power1_average", 1e6), sensor("power1_input", 1e6)),
            power_limit_w=sensor("power1_cap", 1e6), temp_c=sensor("temp1_input", 1000),
            sm_clock_mhz=sensor("freq1_input", 1e6), source=self.info.name)


def open_sysfs(machine: Machine) -> SysfsSource | str:
    """amdgpu sysfs's source where an AMD card with ``gpu_busy_percent`` is listed; else why not."""
    cards = amd_cards(machine.drm_root)
    if not cards:
        return f"{NO_CARD} {machine.drm_root} (no amdgpu card)."
    readable = [c for c in cards if _read(c / "gpu_busy_percent") is not None]
    if not readable:
        return (f"The amdgpu driver lists {len(cards)} AMD GPU(s) under {machine.drm_root} but gpu_busy_percent is "
                "not readable: a kernel of 4.19 or newer with the amdgpu driver gives it.")
    return SysfsSource(readable)
