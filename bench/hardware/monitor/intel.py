"""Intel GPUs as a GPU source (bench.hardware.monitor.sources): Level Zero Sysman through the ``pyzes`` package.

pyzes is a ctypes binding of Sysman's C API (it loads Level Zero's loader, libze_loader, when imported): each call
fills a structure passed by reference and returns a ``ze_result_t`` (0 is success). The source reads, per device,
``zesDeviceGetProperties`` (model name, driver version, UUID), the engine groups of ``zesDeviceEnumEngineGroups``
whose ``zesEngineGetActivity`` gives two counters, ``activeTime`` and ``timestamp`` (microseconds): utilization is the
growth of the first over the growth of the second between two reads, for the whole-device compute and render groups
(the busier of the two; the group of all engines where neither is listed). Power is the growth of the card's energy
counter (``zesPowerGetEnergyCounter``: microjoules, with its own microsecond timestamp) over the same kind of
interval, and the counter itself is the energy reading. Memory is the device-local memory modules' ``size`` and
``free`` (``zesMemoryGetState``, bytes). A GPU's first read takes the counters twice, :data:`FIRST_INTERVAL_S`
apart, so even one reading has a utilization. A figure the source does not give is None with the reason in
:data:`INFO`, never 0.
"""

from __future__ import annotations

import ctypes
import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from bench.hardware.monitor.source_types import (HostAccess, Reading, ReadingCollector, Sentinels, SourceGpu, SourceInfo,
                                                 all_ones, bounded, figure, text)

__all__ = ["FIRST_INTERVAL_S", "INFO", "NOT_STARTED", "SysmanSource", "open_sysman"]

FIRST_INTERVAL_S = 0.1
SUCCESS = 0
# zes_engine_group_t: the whole-device groups whose activity is the utilization, and the fallback
COMPUTE_ALL, RENDER_ALL, ALL_ENGINES = 1, 12, 0
MEM_LOC_DEVICE = 1
NOT_STARTED = "Level Zero Sysman could not start"
NO_GPM = "SM, tensor and DRAM activity are NVIDIA GPM figures; Level Zero Sysman gives no counterpart here."
INFO = SourceInfo(
    name="Level Zero Sysman (pyzes)", vendor="intel",
    utilization=("Level Zero Sysman's engine activity: the growth of the compute (or render) engine group's active "
                 "time over the time between two reads (zesEngineGetActivity), the share of that time in which the "
                 "engines ran work; like NVML's it says the engines were working, not how much of the chip worked."),
    not_measured={"temp_c": "Sysman's temperature sensors are not read (they often need root).",
                  "sm_clock_mhz": "Sysman's frequency domains are not read yet.",
                  "power_limit_w": "Sysman's power limits are not read yet.",
                  "mem_util_percent": "Sysman's memory bandwidth counters are not read yet.",
                  "sm_active_percent": NO_GPM, "tensor_active_percent": NO_GPM,
                  "throttle_reasons": "Sysman's throttle reasons (zesFrequencyGetState) are not read yet."})
PYZES_MISSING = ("Level Zero Sysman is not usable (the pyzes package or Level Zero's loader, libze_loader, is "
                 "missing): install Intel's GPU driver with Level Zero, then `pip install pyzes`")
_MIB = 2**20
SYSMAN_NA = Sentinels(all_ones(32, 64), "Level Zero Sysman's all-ones 'no value'")


@dataclass(frozen=True)
class _Counter:
    """One read of a monotonic counter and its timestamp (microseconds)."""

    value: float
    at: float


class SysmanSource:
    """The Intel GPUs Level Zero Sysman lists."""

    info = INFO

    def __init__(self, module: Any, devices: list[Any]) -> None:
        self._zes = module
        self._devices = devices
        self._engines = [self._engine_groups(d) for d in devices]
        self._power = [self._card_power(d) for d in devices]
        self._last: dict[tuple[str, int, int], _Counter] = {}  # (kind, GPU, handle number) -> the previous read
        self._lock = threading.Lock()

    # -- one call, its result code checked -------------------------------------------------------------------------
    def _call(self, function: str, *args: Any) -> bool:
        """``pyzes.<function>(*args)`` succeeded (its structures filled); False where it fails or raises."""
        try:
            return bool(getattr(self._zes, function)(*args) == SUCCESS)
        except Exception:  # noqa: BLE001 - a missing entry point or a driver error: a gap, not a failure
            return False

    def _struct(self, kind: str, stype: str | None = None) -> Any:
        value = getattr(self._zes, kind)()
        if stype is not None:
            value.stype = getattr(self._zes, stype)
        return value

    def _handles(self, function: str, kind: str, device: Any) -> list[Any]:
        """The handles a ``zesDeviceEnum*`` call lists for ``device`` (count first, then the array)."""
        count = ctypes.c_uint32(0)
        if not self._call(function, device, ctypes.byref(count), None) or count.value == 0:
            return []
        array = (getattr(self._zes, kind) * count.value)()
        return list(array[:count.value]) if self._call(function, device, ctypes.byref(count), array) else []

    def _engine_groups(self, device: Any) -> list[Any]:
        """The whole-device compute and render groups (the group of all engines where neither is listed)."""
        groups: defaultdict[int, list[Any]] = defaultdict(list)
        for handle in self._handles("zesDeviceEnumEngineGroups", "zes_engine_handle_t", device):
            props = self._struct("zes_engine_properties_t", "ZES_STRUCTURE_TYPE_ENGINE_PROPERTIES")
            if self._call("zesEngineGetProperties", handle, ctypes.byref(props)) and not props.onSubdevice:
                groups[int(props.type)].append(handle)
        chosen = [h for kind in (COMPUTE_ALL, RENDER_ALL) for h in groups[kind]]
        return chosen or groups[ALL_ENGINES]

    def _card_power(self, device: Any) -> Any:
        """The power domain of the whole card (not a sub-device's), or None."""
        domains = self._handles("zesDeviceEnumPowerDomains", "zes_pwr_handle_t", device)
        for handle in domains:
            props = self._struct("zes_power_properties_t", "ZES_STRUCTURE_TYPE_POWER_PROPERTIES")
            if self._call("zesPowerGetProperties", handle, ctypes.byref(props)) and not props.onSubdevice:
                return handle
        return domains[0] if domains else None

    # -- static facts ----------------------------------------------------------------------------------------------
    def gpus(self) -> list[SourceGpu]:
        gpus = []
        for index, device in enumerate(self._devices):
            props = self._struct("zes_device_properties_t", "ZES_STRUCTURE_TYPE_DEVICE_PROPERTIES")
            ok = self._call("zesDeviceGetProperties", device, ctypes.byref(props))
            name = (_text(props.modelName) or _text(props.core.name)) if ok else None
            _, total = self._memory(device)
            checked = figure(total, "mem_total_mib", who="Level Zero Sysman")
            gpus.append(SourceGpu(index=index, name=name or f"Intel GPU {index}", mem_total_mib=checked.value,
                                  driver=_text(props.driverVersion) if ok else None,
                                  uuid=bytes(props.core.uuid.id).hex() if ok else None,
                                  not_measured={"mem_total_mib": checked.why} if checked.why else {}))
        return gpus

    def collector(self, indices: list[int] | None = None) -> ReadingCollector:
        chosen = list(range(len(self._devices))) if indices is None else indices
        return ReadingCollector(self, self.info, chosen, len(self._devices))

    # -- readings --------------------------------------------------------------------------------------------------
    def _memory(self, device: Any) -> tuple[float | None, float | None]:
        """(used, total) MiB of the device-local memory modules; (None, None) where none is listed (an integrated
        GPU's memory is the system's)."""
        used = total = 0.0
        found = False
        for handle in self._handles("zesDeviceEnumMemoryModules", "zes_mem_handle_t", device):
            props = self._struct("zes_mem_properties_t", "ZES_STRUCTURE_TYPE_MEM_PROPERTIES")
            state = self._struct("zes_mem_state_t", "ZES_STRUCTURE_TYPE_MEM_STATE")
            if (self._call("zesMemoryGetProperties", handle, ctypes.byref(props)) and props.location == MEM_LOC_DEVICE
                    and self._call("zesMemoryGetState", handle, ctypes.byref(state))):
                found = True
                used += (state.size - state.free) / _MIB
                total += state.size / _MIB
        return (used, total) if found else (None, None)

    def _counters(self, index: int) -> dict[tuple[str, int, int], _Counter]:
        """Every counter of GPU ``index`` read now: each engine group's active time, the card's energy."""
        now: dict[tuple[str, int, int], _Counter] = {}
        for number_, handle in enumerate(self._engines[index]):
            stats = self._struct("zes_engine_stats_t")
            if self._call("zesEngineGetActivity", handle, ctypes.byref(stats)):
                now["engine", index, number_] = _Counter(float(stats.activeTime), float(stats.timestamp))
        power = self._power[index]
        energy = self._struct("zes_power_energy_counter_t")
        if power is not None and self._call("zesPowerGetEnergyCounter", power, ctypes.byref(energy)):
            now["energy", index, 0] = _Counter(int(energy.energy), float(energy.timestamp))  # exact: sentinels
        return now

    def _deltas(self, index: int) -> tuple[dict[tuple[str, int, int], _Counter], dict[tuple[str, int, int], float]]:
        """The counters now, and each one's growth per microsecond since the previous read (the first read of a GPU
        waits :data:`FIRST_INTERVAL_S` for a second one)."""
        with self._lock:
            now = self._counters(index)
            if now and not any(k in self._last for k in now):
                time.sleep(FIRST_INTERVAL_S)
                self._last.update(now)
                now = self._counters(index)
            rates = {k: (c.value - self._last[k].value) / (c.at - self._last[k].at) for k, c in now.items()
                     if k in self._last and c.at > self._last[k].at and c.value >= self._last[k].value}
            self._last.update(now)
        return now, rates

    def read(self, index: int) -> Reading:
        now, rates = self._deltas(index)
        busy = [min(rate, 1.0) * 100 for (kind, _, _), rate in rates.items() if kind == "engine"]
        energy_key = ("energy", index, 0)
        used, total = self._memory(self._devices[index])
        who = "Level Zero Sysman"
        return bounded(index, self.info.name, {
            "util_percent": figure(max(busy) if busy else None, "util_percent", who=who),
            "mem_used_mib": figure(used, "mem_used_mib", who=who),
            "mem_total_mib": figure(total, "mem_total_mib", who=who),
            "power_w": figure(rates.get(energy_key), "power_w", who=who),  # microjoules a microsecond: watts
            "energy_j": figure(now[energy_key].value if energy_key in now else None, "energy_j", scale=1e-6,
                               who=who, sentinels=SYSMAN_NA)})


def _text(value: Any) -> str | None:
    """A fixed-size C string field as text (up to its first NUL); None where empty."""
    return text(bytes(value).split(b"\0", 1)[0] if isinstance(value, (bytes, bytearray)) else None)


def open_sysman(machine: HostAccess) -> SysmanSource | str:
    """Level Zero Sysman's source where pyzes loads, ``zesInit`` succeeds and a GPU is listed; else why not."""
    if machine.system not in ("Linux", "Windows"):
        return f"Level Zero Sysman runs on Linux and Windows (this is {machine.system})."
    module = machine.pyzes()
    if module is None:
        return PYZES_MISSING
    try:
        code = module.zesInit(0)
        count = ctypes.c_uint32(0)
        devices: list[Any] = []
        if code == SUCCESS and module.zesDriverGet(ctypes.byref(count), None) == SUCCESS and count.value:
            drivers = (module.zes_driver_handle_t * count.value)()
            module.zesDriverGet(ctypes.byref(count), drivers)
            for driver in drivers[:count.value]:
                found = ctypes.c_uint32(0)
                if module.zesDeviceGet(driver, ctypes.byref(found), None) != SUCCESS or not found.value:
                    continue
                handles = (module.zes_device_handle_t * found.value)()
                if module.zesDeviceGet(driver, ctypes.byref(found), handles) == SUCCESS:
                    devices.extend(handles[:found.value])
    except Exception as exc:  # noqa: BLE001 - a binding over a native library fails in its own ways
        return f"{NOT_STARTED} ({type(exc).__name__}: {exc}): is Intel's GPU driver with Level Zero installed?"
    if code != SUCCESS:
        return f"{NOT_STARTED} (zesInit returned {hex(code) if isinstance(code, int) else code!r}): is Intel's GPU driver with Level Zero installed?"
    if not devices:
        return "Level Zero Sysman started but lists no GPU."
    return SysmanSource(module, devices)
