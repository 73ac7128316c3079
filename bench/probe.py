"""Measured peak FLOP/s of one device: a short dense-matmul probe, run in a subprocess and cached on disk.

A sweep reports the GFLOP/s a training run achieved against what the device can do; this module supplies that
"what it can do" by timing repeated ``keras.ops.matmul`` of two ``size x size`` matrices (2 * size**3 FLOPs each).
The measurement runs in a fresh ``python -m bench.probe --child`` process that narrows device visibility, thread
counts and CPU affinity with :func:`bench.worker.prepare_environment` BEFORE the framework is imported, so the caller
(the Streamlit server, the CLI) never imports TensorFlow. Results are cached in ``peaks.json`` beside the run store,
keyed by host, device, threads, backend, dtype and matrix size.

``python -m bench.probe [--device cpu] [--cpu-threads N] [--size N] [--dtype float32] [--refresh]`` prints the JSON.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import settings
from bench.target import Target

log = logging.getLogger(__name__)

DTYPES = ("float32", "float16", "bfloat16", "float64")
CACHE_VERSION = 1
_MARKER = "BENCH_PEAK_JSON:"
_ROOT = Path(__file__).resolve().parent.parent  # holds the bench package; the child needs it on sys.path


class ProbeError(RuntimeError):
    """The probe could not measure; the message says why and what to do."""


def _all_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        return os.cpu_count() or 1


def _check_args(device: str, cpu_threads: int | None, size: int, dtype: str, seconds: float) -> None:
    """Raise ValueError (with what is allowed) for malformed probe arguments; no hardware is touched."""
    target = Target.from_device(device)  # ValueError names the allowed forms
    if target.kind == "gpus":
        raise ValueError("the matmul probe measures one device: probe each GPU as 'gpu:N' (a multi-GPU peak is at "
                         "most the sum of theirs)")
    if cpu_threads is not None:
        if not target.is_cpu:
            raise ValueError("cpu_threads applies to the CPU probe only; leave it None for a GPU device")
        cores = _all_cores()
        if isinstance(cpu_threads, bool) or not isinstance(cpu_threads, int) or not 1 <= cpu_threads <= cores:
            raise ValueError(f"cpu_threads must be from 1 to {cores} on this machine, or None for all (got {cpu_threads!r})")
    if isinstance(size, bool) or not isinstance(size, int) or not 16 <= size <= 32768:
        raise ValueError(f"size must be a whole number from 16 to 32768 (got {size!r}); 2048 suits most devices")
    if dtype not in DTYPES:
        raise ValueError(f"dtype {dtype!r} is not supported; pick one of {', '.join(DTYPES)}")
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds <= 600:
        raise ValueError(f"seconds must be > 0 and <= 600 (got {seconds!r})")


def measure_peak(
    device: str = "cpu",
    *,
    backend: str | None = None,
    cpu_threads: int | None = None,
    size: int = 2048,
    dtype: str = "float32",
    seconds: float = 2.0,
    timeout_s: float = 120,
) -> dict[str, Any]:
    """Time repeated ``size x size`` matmuls on ``device`` in a fresh subprocess; never imports the framework here.

    Args:
        device: ``"cpu"`` or ``"gpu:N"`` (NVML index).
        backend: Keras backend; None uses ``KERAS_BACKEND`` (default tensorflow).
        cpu_threads: pin the CPU probe to this many cores and threads; None = all cores.
        size: matrix side; each matmul is ``2 * size**3`` FLOPs.
        dtype: element type of both matrices.
        seconds: how long to time matmuls after warm-up.
        timeout_s: give up (and end the subprocess) after this many seconds, framework start-up included.

    Returns:
        ``{"device", "backend", "dtype", "size", "peak_gflops" (best timed batch), "mean_gflops" (all timed batches),
        "seconds" (time measured), "repeats" (matmuls timed), "threads" (None for a GPU), "measured_at" (epoch
        seconds), "hardware_label", "hostname", "framework", "placement"}``.

    Raises:
        ValueError: malformed arguments (message says what is allowed).
        ProbeError: the subprocess failed, timed out, or ran somewhere other than ``device``.
    """
    backend = (backend or settings.default_backend()).strip().lower()
    _check_args(device, cpu_threads, size, dtype, seconds)
    params = {"device": device.strip().lower(), "backend": backend, "cpu_threads": cpu_threads, "size": size,
              "dtype": dtype, "seconds": float(seconds)}
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_ROOT), env.get("PYTHONPATH", "")) if p)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"  # JAX must not grab most of the GPU for two matrices
    try:
        completed = subprocess.run(
            [sys.executable, "-m", "bench.probe", "--child", json.dumps(params)],
            capture_output=True, text=True, timeout=timeout_s, env=env, cwd=str(_ROOT), check=False,
        )
    except subprocess.TimeoutExpired:
        raise ProbeError(
            f"The {device} matmul probe took longer than {timeout_s:g} s and was stopped; "
            "raise timeout_s, or lower size/seconds."
        ) from None
    except OSError as exc:
        raise ProbeError(f"Could not start {sys.executable} for the matmul probe: {exc}") from exc
    for line in reversed(completed.stdout.splitlines()):
        if line.startswith(_MARKER):
            try:
                result = json.loads(line.removeprefix(_MARKER))
            except json.JSONDecodeError as exc:
                raise ProbeError(f"The matmul probe printed unreadable output ({exc}); run it again.") from exc
            if result.get("error"):
                raise ProbeError(f"The {device} matmul probe failed: {result['error']}")
            return result
    stderr_lines = [line for line in completed.stderr.splitlines() if line.strip()]
    last = stderr_lines[-1] if stderr_lines else "no output"
    raise ProbeError(
        f"The {device} matmul probe exited with code {completed.returncode} without a result ({last}); "
        f"run `{sys.executable} -m bench.probe --device {device}` to see its full output."
    )


# -- the child side: runs in its own process ----------------------------------------------------------------------
def _measure_here(params: dict[str, Any]) -> dict[str, Any]:
    """Set up the environment, import the framework and time the matmuls (the body of the probe subprocess)."""
    from bench import devices, worker

    device, backend, threads = params["device"], params["backend"], params.get("cpu_threads")
    size, dtype, budget_s = int(params["size"]), str(params["dtype"]), float(params["seconds"])
    worker.prepare_environment({"device": device, "backend": backend, "cpu_threads": threads})
    hw = devices.discover()  # after prepare_environment: a GPU probe sees only its own GPU
    framework, _ = worker._framework_setup(backend, threads)

    import keras

    def sync(value: Any) -> float:
        # reading one element waits for every matmul queued before it (one stream per device)
        return float(keras.ops.convert_to_numpy(keras.ops.slice(value, (0, 0), (1, 1)))[0, 0])

    with keras.device(Target.from_device(device).keras_device):
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
        placement = worker.variable_device(c0)
        one_s = min(batch(1) for _ in range(2))  # warm-up and a first estimate
        per_batch = max(1, int((budget_s / 5) / max(one_s, 1e-7)))
        timed_s, repeats, best_rate = 0.0, 0, 0.0
        while timed_s < budget_s or repeats == 0:
            spent = batch(per_batch)
            timed_s += spent
            repeats += per_batch
            best_rate = max(best_rate, per_batch / spent)
    if device != "cpu" and "gpu" not in placement.lower() and "cuda" not in placement.lower():
        raise RuntimeError(
            f"asked for {device} but the matmul ran on {placement!r}: the {backend} build here cannot use the GPU "
            "(see `python -m bench devices --probe`)"
        )
    flops = 2.0 * size**3
    if device == "cpu":
        label = f"{hw.cpu.model} ({threads or _all_cores()} of {hw.cpu.logical_cores} cores)"
    else:
        label = hw.gpus[0].name if hw.gpus else device
    return {
        "device": device,
        "backend": backend,
        "dtype": dtype,
        "size": size,
        "peak_gflops": best_rate * flops / 1e9,
        "mean_gflops": repeats * flops / timed_s / 1e9,
        "seconds": timed_s,
        "repeats": repeats,
        "threads": (threads or _all_cores()) if device == "cpu" else None,
        "measured_at": time.time(),
        "hardware_label": label,
        "hostname": socket.gethostname(),
        "framework": framework,
        "placement": placement,
    }


def _child_main(raw: str) -> int:
    try:
        result = _measure_here(json.loads(raw))
    except Exception as exc:  # noqa: BLE001 - reported to the parent as data, which raises ProbeError
        result = {"error": f"{type(exc).__name__}: {exc}"}
    print(_MARKER + json.dumps(result), flush=True)
    return 0


# -- cache ----------------------------------------------------------------------------------------------------------
def default_cache_path() -> Path:
    """``peaks.json`` in the folder of the run store (BENCH_STORE moves both)."""
    return settings.store_path().parent / "peaks.json"


def cache_key(device: str, *, cpu_threads: int | None, backend: str, dtype: str, size: int,
              hostname: str | None = None) -> str:
    """The cache entry name: one measurement per host, device, thread count, backend, dtype and matrix size."""
    threads = (cpu_threads or _all_cores()) if device == "cpu" else None
    host = hostname or socket.gethostname()
    return f"{host}|{device}|threads={threads or '-'}|{backend}|{dtype}|size={size}"


def _read_cache(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("ignoring the unreadable peak cache %s (%s); it will be rewritten", path, exc)
        return {}
    peaks = data.get("peaks") if isinstance(data, dict) and data.get("version") == CACHE_VERSION else None
    return peaks if isinstance(peaks, dict) else {}


def _write_cache(path: Path, peaks: dict[str, Any]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"version": CACHE_VERSION, "peaks": peaks}, indent=2), encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        log.warning("could not save the peak cache %s (%s); the peak will be measured again next time", path, exc)


def cached_peak(
    device: str = "cpu",
    *,
    cpu_threads: int | None = None,
    refresh: bool = False,
    cache_path: Path | None = None,
    **kw: Any,
) -> dict[str, Any]:
    """The matmul peak of ``device``, measured once per host/device/threads/backend/dtype/size and then cached.

    Args:
        device, cpu_threads: as :func:`measure_peak`.
        refresh: measure again even when a cached value exists (and replace it).
        cache_path: the JSON cache; default :func:`default_cache_path`.
        **kw: passed to :func:`measure_peak` (backend, size, dtype, seconds, timeout_s).

    Returns:
        The :func:`measure_peak` dict plus ``"from_cache": bool``.

    Raises:
        ValueError, ProbeError: as :func:`measure_peak` (only when a measurement is needed).
    """
    path = Path(cache_path) if cache_path is not None else default_cache_path()
    backend = (kw.pop("backend", None) or settings.default_backend()).strip().lower()
    size, dtype = kw.get("size", 2048), kw.get("dtype", "float32")
    device = device.strip().lower()
    key = cache_key(device, cpu_threads=cpu_threads, backend=backend, dtype=dtype, size=size)
    if not refresh:
        hit = _read_cache(path).get(key)
        if isinstance(hit, dict) and isinstance(hit.get("peak_gflops"), (int, float)):
            return {**hit, "from_cache": True}
    result = measure_peak(device, backend=backend, cpu_threads=cpu_threads, **kw)
    peaks = _read_cache(path)  # re-read: another process may have added entries meanwhile
    peaks[key] = result
    _write_cache(path, peaks)
    return {**result, "from_cache": False}


def is_plausible(result: dict[str, Any]) -> bool:
    """A peak worth showing: a finite, positive number of GFLOP/s."""
    value = result.get("peak_gflops")
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


# -- command line ---------------------------------------------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.probe", description="Measure a device's matmul peak.")
    parser.add_argument("--device", default="cpu", help="cpu or gpu:N (default cpu)")
    parser.add_argument("--cpu-threads", type=int, default=None, help="pin the CPU probe to N cores")
    parser.add_argument("--size", type=int, default=2048, help="matrix side (default 2048)")
    parser.add_argument("--dtype", default="float32", help=f"one of {', '.join(DTYPES)}")
    parser.add_argument("--seconds", type=float, default=2.0, help="seconds of timed matmuls (default 2)")
    parser.add_argument("--refresh", action="store_true", help="measure again even when cached")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        return _child_main(args.child)
    try:
        result = cached_peak(args.device, cpu_threads=args.cpu_threads, refresh=args.refresh, size=args.size,
                             dtype=args.dtype, seconds=args.seconds)
    except (ValueError, ProbeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, ValueError) else 1
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())


def known_peaks(cache_path: Path | None = None) -> list[dict[str, Any]]:
    """Every cached measurement of this host, for display (newest first)."""
    host = socket.gethostname()
    peaks = _read_cache(Path(cache_path) if cache_path is not None else default_cache_path())
    rows = [v for k, v in peaks.items() if isinstance(v, dict) and k.startswith(f"{host}|")]
    return sorted(rows, key=lambda r: r.get("measured_at") or 0, reverse=True)
