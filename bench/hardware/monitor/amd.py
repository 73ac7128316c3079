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

from bench.hardware.monitor.source_types import (Figure, HostAccess, Reading, ReadingCollector, Sentinels, SourceGpu,
                                                 SourceInfo, all_ones, bounded, figure, key, number, text)

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
# amdsmi.h: a query the card does not support answers the field's all-ones value (UINT16_MAX for activity,
# temperatures and clocks, UINT32_MAX and UINT64_MAX for power, energy and memory)
AMDSMI_NA = Sentinels(all_ones(16, 32, 64), "AMD SMI's 'not supported'")
SYSFS_NA = Sentinels(all_ones(32, 64), "the amdgpu driver's all-ones 'no value'")


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
            total = figure(key(vram, "vram_total"), "mem_total_mib", sentinels=AMDSMI_NA)
            gpus.append(SourceGpu(index=index, name=_text(key(asic, "market_name")) or f"AMD GPU {index}",
                                  mem_total_mib=total.value, driver=_text(key(driver, "driver_version")),
                                  uuid=_text(uuid), not_measured=_why({"mem_total_mib": total})))
        return gpus

    def collector(self, indices: list[int] | None = None) -> ReadingCollector:
        chosen = list(range(len(self._handles))) if indices is None else indices
        return ReadingCollector(self, self.info, chosen, len(self._handles))

    def read(self, index: int) -> Reading:
        handle = self._handles[index]
        activity = self._ask("amdsmi_get_gpu_activity", handle)
        vram = self._ask("amdsmi_get_gpu_vram_usage", handle)
        power = self._ask("amdsmi_get_power_info", handle)
        energy = self._ask("amdsmi_get_energy_count", handle)
        clock = self._ask("amdsmi_get_clock_info", handle, _enum(self._smi, "AmdSmiClkType", "GFX"))
        temp = self._ask("amdsmi_get_temp_metric", handle, _enum(self._smi, "AmdSmiTemperatureType", "EDGE"),
                         _enum(self._smi, "AmdSmiTemperatureMetric", "CURRENT"))
        watts = _given(key(power, "average_socket_power"), key(power, "current_socket_power"),
                       key(power, "socket_power"))
        return bounded(index, self.info.name, {
            "util_percent": figure(key(activity, "gfx_activity"), "util_percent", sentinels=AMDSMI_NA),
            "mem_util_percent": figure(key(activity, "umc_activity"), "mem_util_percent", sentinels=AMDSMI_NA),
            "mem_used_mib": figure(key(vram, "vram_used"), "mem_used_mib", sentinels=AMDSMI_NA),
            "mem_total_mib": figure(key(vram, "vram_total"), "mem_total_mib", sentinels=AMDSMI_NA),
            "power_w": _watts(watts, "power_w"), "power_limit_w": _watts(key(power, "power_limit"), "power_limit_w"),
            "temp_c": figure(temp, "temp_c", sentinels=AMDSMI_NA),
            "sm_clock_mhz": figure(key(clock, "clk"), "sm_clock_mhz", sentinels=AMDSMI_NA),
            "energy_j": _joules(energy)})


def _enum(module: Any, kind: str, member: str) -> Any:
    return getattr(getattr(module, kind, None), member, None)


def _joules(energy: Any) -> Figure:
    """The energy accumulator times its resolution (microjoules a count), in joules. Older amdsmi names the
    accumulator ``power``, newer ``energy_accumulator``."""
    count = _given(key(energy, "energy_accumulator"), key(energy, "power"))
    resolution = number(key(energy, "counter_resolution"))
    if resolution is None or not 0 < resolution < 1e9:
        return figure(None, "energy_j")
    return figure(count, "energy_j", scale=resolution / 1e6, sentinels=AMDSMI_NA)


def _watts(raw: Any, name: str) -> Figure:
    """AMD SMI's power in W; a value above 10 kW is the microwatts some versions give (power_limit), scaled."""
    value = number(raw)
    return figure(raw, name, scale=1e-6 if value is not None and value > 10_000 else 1.0, sentinels=AMDSMI_NA)


def _given(*values: Any) -> Any:
    """The first raw value that is a number (AMD SMI says "N/A" where a card has no such figure), else None."""
    return next((v for v in values if number(v) is not None or isinstance(v, (int, float))), None)


def _first(*values: Figure) -> Figure:
    return next((f for f in values if f.value is not None or f.why is not None), Figure(None))


def _text(value: Any) -> str | None:
    return text(value) if isinstance(value, str) and value.strip() != "N/A" else None


def _why(figures: dict[str, Figure]) -> dict[str, str]:
    return {name: f.why for name, f in figures.items() if f.why is not None}


def open_amdsmi(machine: HostAccess) -> AmdSmiSource | str:
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
            name = text(_read(device / "product_name")) or f"AMD GPU (device {text(_read(device / 'device')) or '?'})"
            total = figure(_read(device / "mem_info_vram_total"), "mem_total_mib", scale=1 / _MIB, sentinels=SYSFS_NA)
            gpus.append(SourceGpu(index=index, name=name, mem_total_mib=total.value,
                                  uuid=text(_read(device / "unique_id")), not_measured=_why({"mem_total_mib": total})))
        return gpus

    def collector(self, indices: list[int] | None = None) -> ReadingCollector:
        chosen = list(range(len(self._cards))) if indices is None else indices
        return ReadingCollector(self, self.info, chosen, len(self._cards))

    def read(self, index: int) -> Reading:
        device = self._cards[index]
        hwmon = _hwmon(device)

        def sensor(file: str, name: str, scale: float) -> Figure:
            return figure(_read(hwmon / file) if hwmon is not None else None, name, scale=scale, sentinels=SYSFS_NA)

        def device_file(file: str, name: str, scale: float = 1.0) -> Figure:
            return figure(_read(device / file), name, scale=scale, sentinels=SYSFS_NA)

        return bounded(index, self.info.name, {
            "util_percent": device_file("gpu_busy_percent", "util_percent"),
            "mem_util_percent": device_file("mem_busy_percent", "mem_util_percent"),
            "mem_used_mib": device_file("mem_info_vram_used", "mem_used_mib", 1 / _MIB),
            "mem_total_mib": device_file("mem_info_vram_total", "mem_total_mib", 1 / _MIB),
            "power_w": _first(sensor("power1_average", "power_w", 1e-6), sensor("power1_input", "power_w", 1e-6)),
            "power_limit_w": sensor("power1_cap", "power_limit_w", 1e-6),
            "temp_c": sensor("temp1_input", "temp_c", 1e-3), "sm_clock_mhz": sensor("freq1_input", "sm_clock_mhz", 1e-6)})


def open_sysfs(machine: HostAccess) -> SysfsSource | str:
    """amdgpu sysfs's source where an AMD card with ``gpu_busy_percent`` is listed; else why not."""
    cards = amd_cards(machine.drm_root)
    if not cards:
        return f"{NO_CARD} {machine.drm_root} (no amdgpu card)."
    readable = [c for c in cards if _read(c / "gpu_busy_percent") is not None]
    if not readable:
        return (f"The amdgpu driver lists {len(cards)} AMD GPU(s) under {machine.drm_root} but gpu_busy_percent is "
                "not readable: a kernel of 4.19 or newer with the amdgpu driver gives it.")
    return SysfsSource(readable)
