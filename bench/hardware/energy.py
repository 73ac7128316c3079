"""What a run's devices spent in each epoch: joules from the cumulative counters in the samples, and the clock-event
(throttle) reasons seen, for each device the run used ("cpu" always, "gpu:N" for each GPU it trained on).

An epoch's joules are the counter's value at ``t_end_s`` minus its value at ``t_start_s``, each interpolated linearly
between the samples either side (the counters are cumulative: the CPU's RAPL ``cpu_energy_j``, each GPU's NVML
``energy_j``). A GPU without the counter gets its power draw integrated over the epoch instead (trapezoids over the
linearly interpolated power) and is named in ``energy_estimated``. Without samples on both sides of both ends, or
without any reading, the figure is None: never a guess from outside the sampled span.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from bench.vocab.readings import Sample

__all__ = ["covers", "devices_used", "epoch_energy", "epoch_throttle_reasons", "gpu_index"]

Samples = Sequence[Sample]


def gpu_index(device: str) -> int | None:
    """``"gpu:3"`` -> 3; None for any other device name."""
    if device.startswith("gpu:") and device[4:].isdigit():
        return int(device[4:])
    return None


def devices_used(device: str, samples: Samples = ()) -> list[str]:
    """The devices a run on ``device`` (its config's: cpu, gpu:N, gpus) spends energy on: ``"cpu"`` and, for a GPU
    target, ``"gpu:N"`` (``gpus``: every GPU index seen in the samples)."""
    devices = ["cpu"]
    device = device.strip().lower()
    if gpu_index(device) is not None:
        devices.append(device)
    elif device == "gpus":
        seen = sorted({g.index for s in samples for g in s.gpus or ()})
        devices.extend(f"gpu:{i}" for i in seen)
    return devices


def _number(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def _series(samples: Samples, device: str, key: str) -> list[tuple[float, float]]:
    """(t_s, value) of one reading of ``device`` over the samples, time-ordered, readings that are None left out."""
    index = gpu_index(device)
    points = []
    for sample in samples:
        t_s = _number(sample.t_s)
        if t_s is None:
            continue
        if index is None:
            value = _number(getattr(sample, key))
        else:
            gpu = sample.gpu(index)
            value = _number(getattr(gpu, key)) if gpu else None
        if value is not None:
            points.append((t_s, value))
    points.sort(key=lambda p: p[0])
    return points


def _at(points: list[tuple[float, float]], t_s: float) -> float | None:
    """The series at ``t_s``, linearly interpolated; None outside the sampled span."""
    if not points or t_s < points[0][0] or t_s > points[-1][0]:
        return None
    for (t0, v0), (t1, v1) in zip(points, points[1:]):
        if t0 <= t_s <= t1:
            return v0 if t1 == t0 else v0 + (v1 - v0) * (t_s - t0) / (t1 - t0)
    return points[-1][1]  # a single point exactly at t_s


def _counter_joules(points: list[tuple[float, float]], start_s: float, end_s: float) -> float | None:
    begin, end = _at(points, start_s), _at(points, end_s)
    if begin is None or end is None or end < begin:  # a counter that went back (driver reloaded) says nothing
        return None
    return end - begin


def _integrated_joules(points: list[tuple[float, float]], start_s: float, end_s: float) -> float | None:
    """Power (W) integrated over [start_s, end_s]: trapezoids over the interpolated power curve."""
    begin, end = _at(points, start_s), _at(points, end_s)
    if begin is None or end is None:
        return None
    curve = [(start_s, begin), *[(t, v) for t, v in points if start_s < t < end_s], (end_s, end)]
    return sum((t1 - t0) * (v0 + v1) / 2 for (t0, v0), (t1, v1) in zip(curve, curve[1:]))


def epoch_energy(samples: Samples, t_start_s: Any, t_end_s: Any, devices: Iterable[str]
                 ) -> tuple[dict[str, float | None], list[str]]:
    """(device -> joules in [t_start_s, t_end_s] or None, the devices whose joules were integrated from power)."""
    start, end = _number(t_start_s), _number(t_end_s)
    joules: dict[str, float | None] = {}
    estimated: list[str] = []
    for device in devices:
        joules[device] = None
        if start is None or end is None or end < start:
            continue
        if gpu_index(device) is None:
            joules[device] = _counter_joules(_series(samples, device, "cpu_energy_j"), start, end)
            continue
        counter = _series(samples, device, "energy_j")
        value = _counter_joules(counter, start, end) if counter else None
        if value is None and not counter:
            value = _integrated_joules(_series(samples, device, "power_w"), start, end)
            if value is not None:
                estimated.append(device)
        joules[device] = value
    return joules, estimated


def covers(samples: Samples, t_end_s: Any) -> bool:
    """Whether a sample was taken at or after ``t_end_s`` (an epoch ending then can be settled)."""
    end = _number(t_end_s)
    return end is not None and any((_number(s.t_s) or -math.inf) >= end for s in samples)


def epoch_throttle_reasons(samples: Samples, t_start_s: Any, t_end_s: Any, devices: Iterable[str]
                           ) -> list[str] | None:
    """The clock-event reasons the used GPUs reported from ``t_start_s`` to the first sample after ``t_end_s``
    (sorted words; [] when they reported none; None without a GPU or without any reading of the reasons)."""
    indices = {gpu_index(d) for d in devices} - {None}
    start, end = _number(t_start_s), _number(t_end_s)
    if not indices or start is None or end is None:
        return None
    timed = sorted((s for s in samples if _number(s.t_s) is not None), key=lambda s: s.t_s)
    window = [s for s in timed if start <= s.t_s <= end]
    window += [s for s in timed if s.t_s > end][:1]
    seen: set[str] | None = None
    for sample in window:
        for gpu in sample.gpus or ():
            if gpu.index in indices and gpu.throttle_reasons is not None:
                seen = (seen or set()) | set(gpu.throttle_reasons)
    return sorted(seen) if seen is not None else None
