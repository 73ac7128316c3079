"""Google TPUs as a GPU source (bench.hardware.monitor.sources): libtpu's monitoring SDK.

``from libtpu.sdk import tpumonitoring``; ``tpumonitoring.get_metric(name).data()`` gives one value a chip (a core
for ``tensorcore_util``), as text: ``duty_cycle_pct`` (the share of time the chip's TensorCores were running a
program, %), ``tensorcore_util`` (how busy the TensorCores' arithmetic units were, %), ``hbm_capacity_usage`` and
``hbm_capacity_total`` (HBM in bytes). libtpu serves these figures from the runtime of the process that uses the TPU
(a JAX run), so between runs they are empty and a reading is a gap. The chips themselves are listed from the PCI bus
(Google's vendor id), so an idle TPU VM still offers ``gpu:N``.

The duty cycle is the utilization, and it is NVML's lesson again: tpu-info's README shows a chip at 100 % duty cycle
beside 13-15 % TensorCore utilization. The TensorCore figure is the reading's ``tensor_active_percent``, the field the
diagnosis reads for NVIDIA's tensor activity (GPM), so a TPU run is judged by the same finer measure.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from bench.hardware.monitor.source_types import (Figure, HostAccess, Reading, ReadingCollector, SourceGpu, SourceInfo,
                                                 bounded, figure, number)

__all__ = ["CHIPS_HERE", "INFO", "TpuCollector", "TpuSource", "open_tpu", "tpu_chips"]

GOOGLE_VENDOR_ID = "0x1ae0"
# PCI device id -> chip (tpu-info's table; v2 and v3 share 0x0027)
CHIP_NAMES = {"0x0027": "TPU v2/v3 chip", "0x005e": "TPU v4 chip", "0x0063": "TPU v5e chip",
              "0x0062": "TPU v5p chip", "0x006f": "TPU v6e chip", "0x0076": "TPU7x chip"}
CHIPS_HERE = "TPU chips are on this machine's PCI bus"
NO_TPU = "No TPU on this machine's PCI bus"
UTILIZATION, TENSORCORE, HBM_USED, HBM_TOTAL = "duty_cycle_pct", "tensorcore_util", "hbm_capacity_usage", \
    "hbm_capacity_total"
NO_POWER = "libtpu's monitoring SDK gives no power, energy, temperature or clock figure for a chip."
INFO = SourceInfo(
    name="libtpu monitoring (tpumonitoring)", vendor="tpu",
    utilization=("libtpu's duty cycle (duty_cycle_pct): the share of time the chip's TensorCores were running a "
                 "program; like NVML's it says the chip was busy, not how much of it worked (tpu-info's README shows "
                 "100 % duty cycle beside 13-15 % TensorCore utilization). The finer figure, TensorCore utilization "
                 "(tensorcore_util), is shown as tensor activity."),
    not_measured={"power_w": NO_POWER, "energy_j": NO_POWER, "temp_c": NO_POWER, "sm_clock_mhz": NO_POWER,
                  "power_limit_w": NO_POWER,
                  "sm_active_percent": "SM activity is an NVIDIA GPM figure; a TPU has no SMs (its TensorCore "
                                       "utilization is the tensor activity).",
                  "throttle_reasons": "libtpu gives no clock-limit reasons."})
LIBTPU_MISSING = ("libtpu is not installed, so its monitoring SDK cannot read them: `pip install -U \"jax[tpu]\"` "
                  "installs JAX's TPU build with libtpu")
_MIB = 2**20


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None


def tpu_chips(pci_root: Path) -> list[str]:
    """The TPU chips under ``pci_root`` (``/sys/bus/pci/devices``), named by their PCI device id, in address order."""
    try:
        entries = sorted(pci_root.iterdir())
    except OSError:
        return []
    return [CHIP_NAMES[device] for entry in entries
            if _read(entry / "vendor") == GOOGLE_VENDOR_ID and (device := _read(entry / "device") or "") in CHIP_NAMES]


class TpuCollector(ReadingCollector):
    """The TPU's readings: tensor activity is given (TensorCore utilization), SM and DRAM activity are not."""

    @property
    def gpm_reasons(self) -> dict[str, str]:
        why = ("SM and DRAM activity are NVIDIA GPM figures; a TPU's tensor activity is libtpu's TensorCore "
               "utilization.")
        return {f"gpu:{i}": why for i in self.indices}


class TpuSource:
    """The TPU chips of this machine, read by libtpu's monitoring SDK."""

    info = INFO

    def __init__(self, module: Any, names: list[str]) -> None:
        self._sdk = module
        self._names = names
        self._lock = threading.Lock()

    def _metric(self, name: str) -> list[Any]:
        """``tpumonitoring.get_metric(name).data()``: one value a chip (or core); [] where libtpu has none now."""
        try:
            with self._lock:
                data = self._sdk.get_metric(name).data()
        except Exception:  # noqa: BLE001 - no workload, an older libtpu without the metric: a gap, not a failure
            return []
        return list(data) if isinstance(data, (list, tuple)) else []

    def gpus(self) -> list[SourceGpu]:
        totals = self._metric(HBM_TOTAL)
        gpus = []
        for i, name in enumerate(self._names):
            total = _mib(_at(totals, i), "mem_total_mib")
            gpus.append(SourceGpu(index=i, name=name, mem_total_mib=total.value,
                                  not_measured={"mem_total_mib": total.why} if total.why else {}))
        return gpus

    def collector(self, indices: list[int] | None = None) -> TpuCollector:
        chosen = list(range(len(self._names))) if indices is None else indices
        return TpuCollector(self, self.info, chosen, len(self._names))

    def read(self, index: int) -> Reading:
        cores = self._metric(TENSORCORE)
        return bounded(index, self.info.name, {
            "util_percent": figure(_at(self._metric(UTILIZATION), index), "util_percent", who="libtpu"),
            "tensor_active_percent": figure(_chip_mean(cores, index, len(self._names)), "tensor_active_percent",
                                            who="libtpu"),
            "mem_used_mib": _mib(_at(self._metric(HBM_USED), index), "mem_used_mib"),
            "mem_total_mib": _mib(_at(self._metric(HBM_TOTAL), index), "mem_total_mib")})


def _at(values: list[Any], index: int) -> Any:
    """Chip ``index``'s raw value (libtpu gives text), or None."""
    return values[index] if 0 <= index < len(values) else None


def _chip_mean(cores: list[Any], index: int, chips: int) -> float | None:
    """The mean of chip ``index``'s cores' values, where libtpu lists the same number of cores for every chip."""
    if not chips or not cores or len(cores) % chips:
        return None
    per = len(cores) // chips
    values = [number(v) for v in cores[index * per:(index + 1) * per]]
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known and len(known) == len(values) else None


def _mib(raw: Any, name: str) -> Figure:
    return figure(raw, name, scale=1 / _MIB, who="libtpu")


def open_tpu(machine: HostAccess) -> TpuSource | str:
    """libtpu's source where TPU chips are listed (on the PCI bus, or by the SDK itself) and libtpu loads; else why
    not."""
    names = tpu_chips(machine.pci_root)
    module = machine.tpumonitoring()
    if module is None:
        if names:
            return f"{CHIPS_HERE} ({len(names)}: {names[0]}) but {LIBTPU_MISSING}."
        return f"{NO_TPU} (no Google device under {machine.pci_root}) and libtpu is not installed."
    if not names:  # no PCI listing (a container without sysfs): the chips the SDK reports, while a run uses them
        listed = TpuSource(module, [])._metric(HBM_TOTAL)
        names = [f"TPU chip {i}" for i in range(len(listed))]
    if not names:
        return f"{NO_TPU} (no Google device under {machine.pci_root}), and libtpu's monitoring SDK lists none."
    return TpuSource(module, names)
