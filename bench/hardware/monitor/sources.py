"""One GPU reading, several sources: whichever of NVML, AMD SMI (amdgpu sysfs without it), Apple's IOAccelerator
statistics (macmon where installed), libtpu's monitoring SDK (TPUs) and Level Zero Sysman (Intel GPUs) answers on this
machine gives every GPU reading, the device list and the reason none does.

A source says its name, its vendor, what its "utilization" means and which readings it cannot give, each with the
reason (source_types.SourceInfo); a reading it cannot give is None ("not measured here"), never 0. :func:`find` tries
the sources in order, NVML first so an NVIDIA machine reads as it always did, and keeps why each other one did not
answer (the doctor lists them). Where the sources look is one source_types.HostAccess; tests script a Mac, an AMD or
Intel machine or a TPU VM with :func:`script`, as tests/unit/fake_nvml.py scripts NVML.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from bench.hardware.monitor import amd, apple, intel, nvidia, tpu
from bench.hardware.monitor.source_types import GpuSource, HostAccess, SourceInfo

__all__ = ["Found", "find", "info_of", "machine", "reset", "script"]

Opener = Callable[[HostAccess], "GpuSource | str"]
# (source name, opener), in the order they are asked
OPENERS: tuple[tuple[str, Opener], ...] = (
    (nvidia.INFO.name, nvidia.open_source),
    (amd.AMDSMI_INFO.name, amd.open_amdsmi),
    (amd.SYSFS_INFO.name, amd.open_sysfs),
    (apple.MACMON_INFO.name, apple.open_macmon),
    (apple.IOREG_INFO.name, apple.open_ioreg),
    (tpu.INFO.name, tpu.open_tpu),
    (intel.INFO.name, intel.open_sysman),
)
INFO: dict[str, SourceInfo] = {i.name: i for i in (nvidia.INFO, amd.AMDSMI_INFO, amd.SYSFS_INFO, apple.MACMON_INFO,
                                                     apple.IOREG_INFO, tpu.INFO, intel.INFO)}

_machine = HostAccess()
_lock = threading.Lock()


def machine() -> HostAccess:
    """Where the sources look now."""
    return _machine


def script(scripted: HostAccess) -> None:
    """Read ``scripted`` in place of this machine (tests)."""
    global _machine
    with _lock:
        _machine = scripted


def reset() -> None:
    """Back to this machine."""
    script(HostAccess())


@dataclass(frozen=True)
class Found:
    """The source that answered (None where none did), and why each source asked before it did not."""

    source: GpuSource | None
    tried: tuple[tuple[str, str], ...]  # (source name, why it did not answer)
    system: str = ""

    @property
    def reason(self) -> str | None:
        """Why no GPU can be read here: on a Mac the IOAccelerator's reason; elsewhere amdgpu sysfs's where an AMD
        card is there but unreadable, libtpu's where TPU chips are, Level Zero's where pyzes loaded but could not
        start; else NVML's (the sentence this project always gave)."""
        return None if self.source is not None else self.unreadable()[1]

    def unreadable(self) -> tuple[str, str]:
        """(the vendor whose accelerator is here but unreadable, why): "nvidia" with NVML's reason where no other
        vendor's hardware was seen."""
        reasons = dict(self.tried)

        def said(name: str) -> str:
            return reasons.get(name, "")

        if self.system == "Darwin":
            return "apple", said(apple.IOREG_INFO.name)
        for vendor, name, here in (("amd", amd.SYSFS_INFO.name, lambda why: not why.startswith(amd.NO_CARD)),
                                   ("tpu", tpu.INFO.name, lambda why: why.startswith(tpu.CHIPS_HERE)),
                                   ("intel", intel.INFO.name, lambda why: why.startswith(intel.NOT_STARTED))):
            if said(name) and here(said(name)):
                return vendor, said(name)
        return "nvidia", said(nvidia.INFO.name) or next(iter(reasons.values()), "no GPU source answered")


def find() -> Found:
    """The first source that answers with one GPU or more, in the order of :data:`OPENERS`."""
    scripted = _machine
    tried: list[tuple[str, str]] = []
    for name, opener in OPENERS:
        result = opener(scripted)
        if isinstance(result, str):
            tried.append((name, result))
            continue
        return Found(result, tuple(tried), scripted.system)
    return Found(None, tuple(tried), scripted.system)


def info_of(name: str | None) -> SourceInfo | None:
    """What a reading's ``source`` means; None for a reading that names none (records written before sources)."""
    return INFO[name] if name and name in INFO else None
