"""Monitoring: one collector per source (cpu.py with psutil, gpu.py with NVML) driven by one sampler thread.

NVML is only ever called through :mod:`bench.monitor.nvml`.
"""

from __future__ import annotations

from bench.monitor.cpu import CpuCollector, CpuReading
from bench.monitor.gpu import GpuCollector, GpuReading, GpuUnavailable
from bench.monitor.sampler import Sample, Sampler

__all__ = ["CpuCollector", "CpuReading", "GpuCollector", "GpuReading", "GpuUnavailable", "Sample", "Sampler"]
