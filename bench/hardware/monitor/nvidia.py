"""NVML as one GPU source (bench.hardware.monitor.sources): NVIDIA GPUs, read by gpu.GpuCollector as they always were.

Every NVML call still goes through :mod:`bench.hardware.monitor.nvml`.
"""

from __future__ import annotations

from typing import Any

from bench.hardware.monitor import nvml
from bench.hardware.monitor.gpu import GpuCollector
from bench.hardware.monitor.gpu import NVML_NA
from bench.hardware.monitor.source_types import HostAccess, SourceGpu, SourceInfo, figure, text

__all__ = ["INFO", "NvmlSource", "open_source"]

_MIB = 2**20

INFO = SourceInfo(
    name="NVML", vendor="nvidia",
    utilization=("NVML's utilization: the share of the sample period in which at least one kernel ran on the GPU, "
                 "not how much of the chip was busy (a GPU can show 100 % while most of its cores idle)."))


class NvmlSource:
    """The NVIDIA GPUs NVML sees."""

    info = INFO

    def gpus(self) -> list[SourceGpu]:
        """Every GPU NVML sees, with its static facts."""
        driver = text(nvml.query("nvmlSystemGetDriverVersion"))
        cuda = cuda_version_text(nvml.query("nvmlSystemGetCudaDriverVersion"))
        gpus: list[SourceGpu] = []
        for index in range(int(nvml.query("nvmlDeviceGetCount", default=0))):
            handle = nvml.query("nvmlDeviceGetHandleByIndex", index)
            name = nvml.query("nvmlDeviceGetName", handle) if handle is not None else None
            memory = nvml.query("nvmlDeviceGetMemoryInfo", handle) if handle is not None else None
            total = figure(getattr(memory, "total", None), "mem_total_mib", scale=1 / _MIB, who="NVML",
                           sentinels=NVML_NA)
            uuid = nvml.query("nvmlDeviceGetUUID", handle) if handle is not None else None
            gpus.append(SourceGpu(index=index, name=text(name) or f"GPU {index}", mem_total_mib=total.value,
                                  driver=driver, runtime_version=cuda, uuid=text(uuid),
                                  not_measured={"mem_total_mib": total.why} if total.why else {}))
        return gpus

    def collector(self, indices: list[int] | None = None) -> GpuCollector:
        return GpuCollector(indices)


def open_source(machine: HostAccess) -> NvmlSource | str:
    """NVML's source where it is usable and sees a GPU, else NVML's reason."""
    ok, reason = nvml.available()
    return NvmlSource() if ok else reason


def cuda_version_text(version: Any) -> str | None:
    """NVML's integer CUDA driver version as text: 12040 -> "12.4"."""
    if not isinstance(version, int) or isinstance(version, bool) or not 0 < version < 1_000_000:
        return None
    return f"{version // 1000}.{(version % 1000) // 10}"
