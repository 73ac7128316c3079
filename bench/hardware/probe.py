"""Measured peak FLOP/s of one device: dense-matmul probes at several sizes, run in a subprocess, the best kept.

A sweep (and the Train and Compare pages) report the GFLOP/s a training run achieved against what the device can do;
this module supplies that "what it can do" by timing repeated ``keras.ops.matmul`` of two ``size x size`` matrices
(2 * size**3 FLOPs each) at several sizes, several timed repeats each, and keeping the best rate. One size on a busy
machine understates the ceiling, so that a run later "beats" it; the best of several sizes and repeats, measured
while no run is active, with the machine's other CPU use during the probe recorded beside it, holds better.
The measurement runs in a fresh ``python -m bench.hardware.probe --child`` process that narrows device visibility, thread
counts and CPU affinity with :func:`bench.training.framework.prepare_environment` (as a training worker does) BEFORE the framework is imported, so the caller
(the Streamlit server, the CLI) never imports TensorFlow. Results are cached in ``peaks.json`` beside the run store,
one entry per host, device, threads, backend and dtype: the best measurement so far, and a ``stale`` flag that a run
achieving more than it sets (:func:`mark_stale`) until the next probe.

``python -m bench.hardware.probe [--device cpu] [--cpu-threads N] [--sizes 1024,2048,4096] [--repeats 3] [--refresh]``
prints the JSON.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psutil
from pydantic import BaseModel, ConfigDict, ValidationError

from bench.vocab import settings
from bench.vocab.record_base import record_error
from bench.hardware import devices, lifetime, peak_cache
from bench.vocab.target import Target

log = logging.getLogger(__name__)

DTYPES = ("float32", "float16", "bfloat16", "float64")
CPU_SIZES = (1024, 2048, 4096)
GPU_SIZES = (2048, 4096, 8192)  # a GPU needs larger matrices than a CPU to reach its ceiling
REPEATS = 3
_MARKER = "BENCH_PEAK_JSON:"
_ROOT = Path(__file__).resolve().parents[2]  # holds the bench package; the child needs it on sys.path


class ProbeError(RuntimeError):
    """The probe could not measure; the message says why and what to do."""


class ProbeRequest(BaseModel):
    """What the probe's child process measures: one device, through one backend, at each matrix side, ``repeats``
    timed blocks each, for at least ``seconds`` of timed matmuls in all."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    device: str
    backend: str
    cpu_threads: int | None = None
    sizes: tuple[int, ...]
    repeats: int = 1
    dtype: str
    seconds: float


class ProbeAnswer(BaseModel):
    """What the probe's child process answers: the peak it measured, or why it could not."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    peak: peak_cache.PeakEntry | None = None
    error: str | None = None


def default_sizes(device: str) -> tuple[int, ...]:
    """The matrix sides probed on this kind of device when none are given."""
    return CPU_SIZES if device.strip().lower() == "cpu" else GPU_SIZES


def _check_args(device: str, cpu_threads: int | None, sizes: Sequence[int], dtype: str, seconds: float,
                repeats: int) -> None:
    """Raise ValueError (with what is allowed) for malformed probe arguments; no hardware is touched."""
    target = Target.from_device(device)  # ValueError names the allowed forms
    if target.kind == "gpus":
        raise ValueError("the matmul probe measures one device: probe each GPU as 'gpu:N' (a multi-GPU peak is at "
                         "most the sum of theirs)")
    if cpu_threads is not None:
        if not target.is_cpu:
            raise ValueError("cpu_threads applies to the CPU probe only; leave it None for a GPU device")
        cores = devices.all_cores()
        if isinstance(cpu_threads, bool) or not isinstance(cpu_threads, int) or not 1 <= cpu_threads <= cores:
            raise ValueError(f"cpu_threads must be from 1 to {cores} on this machine, or None for all (got {cpu_threads!r})")
    if not sizes:
        raise ValueError("give at least one matrix size, e.g. 1024,2048,4096")
    for size in sizes:
        if isinstance(size, bool) or not isinstance(size, int) or not 16 <= size <= 32768:
            raise ValueError(f"size must be a whole number from 16 to 32768 (got {size!r}); 1024, 2048 and 4096 "
                             "suit most devices")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or not 1 <= repeats <= 50:
        raise ValueError(f"repeats must be a whole number from 1 to 50 (got {repeats!r}); 3 is the default")
    if dtype not in DTYPES:
        raise ValueError(f"dtype {dtype!r} is not supported; pick one of {', '.join(DTYPES)}")
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds <= 600:
        raise ValueError(f"seconds must be > 0 and <= 600 (got {seconds!r})")


def _busy_cpu_seconds() -> float:
    times = psutil.cpu_times()
    return sum(times) - times.idle - getattr(times, "iowait", 0.0)


def _children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure_peak(
    device: str = "cpu",
    *,
    backend: str | None = None,
    cpu_threads: int | None = None,
    size: int | None = None,
    sizes: Sequence[int] | None = None,
    repeats: int = REPEATS,
    dtype: str = "float32",
    seconds: float = 3.0,
    timeout_s: float = 180,
) -> peak_cache.PeakEntry:
    """Time repeated matmuls at each size on ``device`` in a fresh subprocess; never imports the framework here.

    Args:
        device: ``"cpu"`` or ``"gpu:N"`` (NVML index).
        backend: Keras backend; None uses ``KERAS_BACKEND`` (default tensorflow).
        cpu_threads: pin the CPU probe to this many cores and threads; None = all cores.
        size: one matrix side (the same as ``sizes=[size]``).
        sizes: matrix sides to probe; None = :func:`default_sizes`. Each matmul is ``2 * size**3`` FLOPs.
        repeats: timed blocks per size, after a warm-up; the fastest block counts.
        dtype: element type of both matrices.
        seconds: time spent timing matmuls over all sizes (at least; each block holds one matmul or more).
        timeout_s: give up (and end the subprocess) after this many seconds, framework start-up included.

    Returns:
        The peak measured: ``device``, ``backend``, ``dtype``, ``size`` (the side that gave the peak), ``sizes``,
        ``repeats``, ``peak_gflops`` (best timed batch at any size), ``by_size`` (size -> best GFLOP/s),
        ``mean_gflops`` (all timed batches), ``seconds`` (time measured), ``matmuls``, ``threads`` (None for a GPU),
        ``measured_at`` (epoch seconds), ``conditions`` (:func:`_conditions`), ``hardware_label``, ``hostname``,
        ``framework``, ``placement``.

    Raises:
        ValueError: malformed arguments (message says what is allowed).
        ProbeError: the subprocess failed, timed out, ran somewhere other than ``device``, or answered what does not
        read as a peak (its field named).
    """
    backend = (backend or "").strip().lower() or settings.default_backend()
    chosen = [size] if size is not None else list(sizes) if sizes is not None else list(default_sizes(device))
    _check_args(device, cpu_threads, chosen, dtype, seconds, repeats)
    request = ProbeRequest(device=device.strip().lower(), backend=backend, cpu_threads=cpu_threads,
                           sizes=tuple(chosen), repeats=repeats, dtype=dtype, seconds=float(seconds))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_ROOT), settings.env("PYTHONPATH", env)) if p)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"  # JAX must not grab most of the GPU for two matrices
    env.update(lifetime.parent_env())  # the child ends with this process, even one that dies as it starts
    busy_before = psutil.cpu_percent(interval=0.5)
    wall0, busy0, own0 = time.monotonic(), _busy_cpu_seconds(), _children_cpu_seconds()
    try:
        completed = subprocess.run(
            [sys.executable, "-m", "bench.hardware.probe", "--child", request.model_dump_json()],
            capture_output=True, text=True, timeout=timeout_s, env=env, cwd=str(_ROOT), check=False,
        )
    except subprocess.TimeoutExpired:
        raise ProbeError(
            f"The {device} matmul probe took longer than {timeout_s:g} s and was stopped; "
            "raise timeout_s, or probe fewer or smaller sizes."
        ) from None
    except OSError as exc:
        raise ProbeError(f"Could not start {sys.executable} for the matmul probe: {exc}") from exc
    wall, busy, own = time.monotonic() - wall0, _busy_cpu_seconds() - busy0, _children_cpu_seconds() - own0
    for line in reversed(completed.stdout.splitlines()):
        if line.startswith(_MARKER):
            answer = _answer(device, line.removeprefix(_MARKER))
            if answer.peak is None:
                raise ProbeError(f"The {device} matmul probe failed: {answer.error or 'no peak and no reason'}")
            return answer.peak.updated(conditions=_conditions(busy_before, busy - own, wall))
    stderr_lines = [line for line in completed.stderr.splitlines() if line.strip()]
    last = stderr_lines[-1] if stderr_lines else "no output"
    raise ProbeError(
        f"The {device} matmul probe exited with code {completed.returncode} without a result ({last}); "
        f"run `{sys.executable} -m bench.hardware.probe --device {device}` to see its full output."
    )


def _answer(device: str, text: str) -> ProbeAnswer:
    """The child's answer read from its JSON line; ProbeError naming the field that does not read."""
    try:
        return ProbeAnswer.model_validate_json(text)
    except ValidationError as exc:
        reason = str(record_error(exc, ProbeAnswer, "the matmul probe's result", text)).split("; fix the file")[0]
        raise ProbeError(f"The {device} matmul probe gave an unusable result: {reason}; run it again.") from None


def _conditions(busy_before: float | None, others_cpu_s: float, wall_s: float) -> peak_cache.PeakConditions:
    """What else the machine did around a probe: ``busy_before_percent`` (whole-machine CPU in the half second
    before), ``others_cpu_percent`` (CPU time of every process but the probe during it, as a share of all cores)
    and ``load_avg_1m``; each None where not known."""
    cores = psutil.cpu_count() or 1
    others = max(0.0, min(100.0, 100.0 * others_cpu_s / (wall_s * cores))) if wall_s > 0 else None
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # pragma: no cover - non-Unix
        load = None
    return peak_cache.PeakConditions(busy_before_percent=busy_before, others_cpu_percent=others, load_avg_1m=load)


# -- the child side: runs in its own process ----------------------------------------------------------------------
def _measure_here(request: ProbeRequest) -> peak_cache.PeakEntry:
    """Set up the environment, import the framework and time the matmuls (the body of the probe subprocess)."""
    from bench.training import framework as setup

    device, backend, threads = request.device, request.backend, request.cpu_threads
    sizes, repeats, dtype, budget_s = list(request.sizes), request.repeats, request.dtype, request.seconds
    setup.prepare_environment({"device": device, "backend": backend, "cpu_threads": threads})
    hw = devices.discover()  # after prepare_environment: a GPU probe sees only its own GPU
    if backend == "torch":  # before Keras loads: on a Mac its torch backend would take MPS for a CPU probe too
        os.environ.update(devices.torch_device_env(device, hw))
    framework, _ = setup.framework_setup(backend, threads)

    import keras

    def sync(value: Any) -> float:
        # reading one element waits for every matmul queued before it (one stream per device)
        return float(keras.ops.convert_to_numpy(keras.ops.slice(value, (0, 0), (1, 1)))[0, 0])

    by_size: dict[str, float] = {}
    timed_s, matmuls, flops_done, placement = 0.0, 0, 0.0, ""
    on_mac_gpu = backend == "torch" and hw.vendor == "apple" and device != "cpu"
    with keras.device("mps" if on_mac_gpu else Target.from_device(device).keras_device):
        for size in sizes:
            a = keras.ops.cast(keras.random.normal((size, size), seed=1), dtype)
            b = keras.ops.cast(keras.random.normal((size, size), seed=2), dtype)

            def batch(count: int) -> float:
                t0 = time.perf_counter()
                c = a
                for _ in range(count):
                    c = keras.ops.matmul(a, b)
                sync(c)
                return time.perf_counter() - t0

            c0 = keras.ops.matmul(a, b)
            sync(c0)
            placement = setup.variable_device(c0)
            one_s = batch(1)  # warm-up and a first estimate
            share_s = budget_s / len(sizes) / repeats  # each repeat: timed matmuls for at least this long
            per_batch = max(1, int(share_s / 4 / max(one_s, 1e-7)))
            best = 0.0
            for _ in range(repeats):
                spent, count = 0.0, 0
                while spent < share_s or count == 0:
                    spent += batch(per_batch)
                    count += per_batch
                timed_s += spent
                matmuls += count
                flops_done += count * 2.0 * size**3
                best = max(best, count * 2.0 * size**3 / spent / 1e9)
            by_size[str(size)] = best
    if device != "cpu" and not any(word in placement.lower() for word in ("gpu", "cuda", "rocm", "mps")):
        raise RuntimeError(
            f"asked for {device} but the matmul ran on {placement!r}: the {backend} build here cannot use the GPU "
            "(see `python -m bench devices --probe`)"
        )
    if device == "cpu":
        label = f"{hw.cpu.model} ({threads or devices.all_cores()} of {hw.cpu.logical_cores} cores)"
    else:
        label = (hw.gpus[0].name or device) if hw.gpus else device
    best_size = max(by_size, key=lambda k: by_size[k])
    return peak_cache.PeakEntry(
        device=device,
        backend=backend,
        dtype=dtype,
        size=int(best_size),
        sizes=tuple(sizes),
        repeats=repeats,
        peak_gflops=by_size[best_size],
        by_size=by_size,
        mean_gflops=flops_done / timed_s / 1e9,
        seconds=timed_s,
        matmuls=matmuls,
        threads=(threads or devices.all_cores()) if device == "cpu" else None,
        measured_at=time.time(),
        hardware_label=label,
        hostname=socket.gethostname(),
        framework=framework,
        placement=placement,
    )


def _child_main(raw: str) -> int:
    lifetime.exit_with_parent()  # a server stopped mid-probe takes its probe with it
    try:
        answer = ProbeAnswer(peak=_measure_here(ProbeRequest.model_validate_json(raw)))
    except Exception as exc:  # noqa: BLE001 - reported to the parent as data, which raises ProbeError
        answer = ProbeAnswer(error=f"{type(exc).__name__}: {exc}")
    print(_MARKER + answer.model_dump_json(exclude_unset=True), flush=True)
    return 0


# -- cache ----------------------------------------------------------------------------------------------------------
def cached_peak(
    device: str = "cpu",
    *,
    cpu_threads: int | None = None,
    refresh: bool = False,
    cache_path: Path | None = None,
    **kw: Any,
) -> peak_cache.PeakEntry:
    """The best matmul peak of ``device``: the cached entry, or a new measurement when there is none, it is stale
    (a run beat it) or ``refresh`` asks; a new measurement replaces the entry only when it is higher.

    Args:
        device, cpu_threads: as :func:`measure_peak`.
        refresh: measure again even when a cached value exists.
        cache_path: the JSON cache; default :func:`bench.hardware.peak_cache.default_cache_path`.
        **kw: passed to :func:`measure_peak` (backend, sizes, repeats, dtype, seconds, timeout_s).

    Returns:
        The cache entry (a :func:`measure_peak` result with ``stale``, ``probes``, ``last_probe_at``,
        ``last_probe_gflops``) with ``from_cache`` set.

    Raises:
        ValueError, ProbeError: as :func:`measure_peak` (only when a measurement is needed).
    """
    path = peak_cache.path_of(cache_path)
    backend = (kw.pop("backend", None) or "").strip().lower() or settings.default_backend()
    dtype = kw.get("dtype", "float32")
    device = device.strip().lower()
    key = peak_cache.cache_key(device, cpu_threads=cpu_threads, backend=backend, dtype=dtype)
    hit = peak_cache.read(path).get(key)
    if not refresh and hit is not None and peak_cache.is_plausible(hit) and not hit.stale:
        return hit.updated(from_cache=True)
    measured = measure_peak(device, backend=backend, cpu_threads=cpu_threads, **kw)
    peaks = peak_cache.read(path)  # re-read: another process may have added entries meanwhile
    peaks[key] = peak_cache.keep_best(peaks.get(key), measured)
    peak_cache.write(path, peaks)
    return peaks[key].updated(from_cache=False)


# -- command line ---------------------------------------------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.hardware.probe", description="Measure a device's matmul peak.")
    parser.add_argument("--device", default="cpu", help="cpu or gpu:N (default cpu)")
    parser.add_argument("--cpu-threads", type=int, default=None, help="pin the CPU probe to N cores")
    parser.add_argument("--sizes", default=None, help="matrix sides, e.g. 1024,2048,4096 (default: by device)")
    parser.add_argument("--repeats", type=int, default=REPEATS, help=f"timed batches per size (default {REPEATS})")
    parser.add_argument("--dtype", default="float32", help=f"one of {', '.join(DTYPES)}")
    parser.add_argument("--seconds", type=float, default=3.0, help="seconds of timed matmuls (default 3)")
    parser.add_argument("--refresh", action="store_true", help="measure again even when cached")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        return _child_main(args.child)
    try:
        sizes = [int(n) for n in args.sizes.split(",") if n.strip()] if args.sizes else None
        result = cached_peak(args.device, cpu_threads=args.cpu_threads, refresh=args.refresh, sizes=sizes,
                             repeats=args.repeats, dtype=args.dtype, seconds=args.seconds)
    except (ValueError, ProbeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, ValueError) else 1
    print(json.dumps(result.to_dict(), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
