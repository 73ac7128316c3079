"""The matmul peaks measured on this machine, kept in ``peaks.json`` beside the store: one best peak per host,
device, thread count, backend and dtype; flagged stale when a run achieves more; and where a peak came from, in words.
Measuring is bench.hardware.probe's job; this module never measures.
"""

from __future__ import annotations

import datetime
import json
import logging
import math
import os
import socket
import time
from pathlib import Path
from collections.abc import Mapping
from typing import Any

from bench import settings
from bench.hardware import devices

log = logging.getLogger("bench.hardware.probe")
CACHE_VERSION = 2  # 1 kept one single-size measurement per size; those are not trusted as a ceiling


def default_cache_path() -> Path:
    """``peaks.json`` in the folder of the run store (BENCH_STORE moves both)."""
    return settings.store_path().parent / "peaks.json"


def cache_key(device: str, *, cpu_threads: int | None, backend: str, dtype: str, hostname: str | None = None) -> str:
    """The cache entry name: one best peak per host, device, thread count, backend and dtype."""
    device = device.strip().lower()
    threads = (cpu_threads or devices.all_cores()) if device == "cpu" else None
    host = hostname or socket.gethostname()
    return f"{host}|{device}|threads={threads or '-'}|{backend}|{dtype}"


def read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("ignoring the unreadable peak cache %s (%s); it will be rewritten", path, exc)
        return {}
    peaks = data.get("peaks") if isinstance(data, dict) and data.get("version") == CACHE_VERSION else None
    return peaks if isinstance(peaks, dict) else {}


def write(path: Path, peaks: dict[str, Any]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"version": CACHE_VERSION, "peaks": peaks}, indent=2), encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        log.warning("could not save the peak cache %s (%s); the peak will be measured again next time", path, exc)


def path_of(cache_path: Path | str | None) -> Path:
    """``cache_path``, or the default beside the store when None."""
    return Path(cache_path) if cache_path is not None else default_cache_path()


def keep_best(old: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """The cache entry after a new measurement: the higher of the two peaks (a busy machine only ever lowers a
    probe), no longer stale, with ``probes`` (count), ``last_probe_at`` and ``last_probe_gflops`` of the new one."""
    previous = old if isinstance(old, dict) and is_plausible(old) else None
    best = dict(new) if previous is None or new.get("peak_gflops", 0) >= previous["peak_gflops"] else dict(previous)
    for key in ("stale", "stale_since", "beaten_by"):
        best.pop(key, None)
    best["stale"] = False
    best["probes"] = int((previous or {}).get("probes") or (1 if previous else 0)) + 1
    best["last_probe_at"] = new.get("measured_at")
    best["last_probe_gflops"] = new.get("peak_gflops")
    return best


def lookup(device: str = "cpu", *, cpu_threads: int | None = None, backend: str | None = None,
           dtype: str = "float32", cache_path: Path | None = None) -> dict[str, Any] | None:
    """The cached best peak of ``device`` (stale or not) without measuring; None when it was never measured."""
    backend = (backend or "").strip().lower() or settings.default_backend()
    try:
        key = cache_key(device, cpu_threads=cpu_threads, backend=backend, dtype=dtype)
    except AttributeError:
        return None
    hit = read(path_of(cache_path)).get(key)
    return hit if isinstance(hit, dict) and is_plausible(hit) else None


def mark_stale(device: str, achieved_gflops: float, *, cpu_threads: int | None = None, backend: str | None = None,
               dtype: str = "float32", run_id: int | None = None, cache_path: Path | None = None) -> bool:
    """Flag the cached peak of ``device`` as due for a new probe because a run achieved ``achieved_gflops``, more
    than it. Returns True when this call flagged it (False: no entry, not beaten, or already flagged)."""
    path = path_of(cache_path)
    backend = (backend or "").strip().lower() or settings.default_backend()
    key = cache_key(device, cpu_threads=cpu_threads, backend=backend, dtype=dtype)
    peaks = read(path)
    entry = peaks.get(key)
    if not isinstance(entry, dict) or not is_plausible(entry) or entry.get("stale"):
        return False
    if not _finite_number(achieved_gflops) or achieved_gflops <= entry["peak_gflops"]:
        return False
    peaks[key] = {**entry, "stale": True, "stale_since": time.time(),
                  "beaten_by": {"gflops": float(achieved_gflops), "run_id": run_id}}
    write(path, peaks)
    return True


def describe(entry: Mapping[str, Any]) -> str:
    """Where a peak came from, in words: 'best of <sizes>² × <repeats> repeats, measured <date time> while other
    processes used <share> of the CPU', so a reader can judge how far the figure holds."""
    sizes = entry.get("sizes") or ([entry["size"]] if entry.get("size") else [])
    what = f"best of {', '.join(f'{s}²' for s in sizes)}" if sizes else "matmul"
    if entry.get("repeats"):
        what += f" × {entry['repeats']} repeats"
    when = entry.get("measured_at")
    if isinstance(when, (int, float)) and _finite_number(when):
        what += f", measured {datetime.datetime.fromtimestamp(when).strftime('%Y-%m-%d %H:%M')}"
    others = (entry.get("conditions") or {}).get("others_cpu_percent")
    if _finite_number(others):
        what += f" while other processes used {others:.0f} % of the CPU"
    return what


def _finite_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def is_plausible(result: dict[str, Any]) -> bool:
    """A peak worth showing: a finite, positive number of GFLOP/s."""
    value = result.get("peak_gflops")
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def known_peaks(cache_path: Path | None = None) -> list[dict[str, Any]]:
    """Every cached measurement of this host, for display (newest first)."""
    host = socket.gethostname()
    peaks = read(Path(cache_path) if cache_path is not None else default_cache_path())
    rows = [v for k, v in peaks.items() if isinstance(v, dict) and k.startswith(f"{host}|")]
    return sorted(rows, key=lambda r: r.get("measured_at") or 0, reverse=True)
