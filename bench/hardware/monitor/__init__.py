"""Monitoring: one collector per source (cpu.py with psutil, gpu.py with NVML) driven by one sampler thread.

NVML is only ever called through :mod:`bench.hardware.monitor.nvml`.
"""

from __future__ import annotations

from bench.hardware.monitor.cpu import CpuCollector, CpuReading
from bench.hardware.monitor.gpu import GpuCollector, GpuReading, GpuUnavailable
from bench.hardware.monitor.sampler import Sample, Sampler

__all__ = ["CpuCollector", "CpuReading", "GpuCollector", "GpuReading", "GpuUnavailable", "Sample", "Sampler"]
