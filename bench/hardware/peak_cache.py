"""The matmul peaks measured on this machine, kept in ``peaks.json`` beside the store: one best peak per host,
device, thread count, backend and dtype; flagged stale when a run achieves more; and where a peak came from, in words.
Measuring is bench.hardware.probe's job; this module never measures.

An entry is a :class:`PeakEntry` from the moment it is read until it is written: ``peaks.json`` is a file a user may
edit or damage, so :func:`read` parses each entry with its model's checked reader and skips (with one warning
naming the key and the field) an entry that does not read; a key a later version added is kept for the round trip.
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
from typing import Any, ClassVar

from pydantic import PrivateAttr, model_validator

from bench.vocab import limits, settings
from bench.vocab.errors import RecordError
from bench.hardware import devices
from bench.vocab.limits import Count, Flag, Gflops, Line, Number, Percent, Seconds, Text, Timestamp, Id
from bench.vocab.record_base import Record

log = logging.getLogger("bench.hardware.probe")
CACHE_VERSION = 2  # 1 kept one single-size measurement per size; those are not trusted as a ceiling
# The backend of an entry no probe measured: a peak stand-in's (BENCH_PEAK_TARGET, bench.vocab.settings.peak_target),
# as a replayed run's worker names its backend "replayed"; describe says so
REPLAYED = "replayed"


class PeakConditions(Record):
    """What else the machine did around a probe: whole-machine CPU in the half second before, the other processes'
    share of all cores during it, and the 1-minute load average; each None where not known."""

    SPARSE: ClassVar[bool] = True

    busy_before_percent: Percent | None = None
    others_cpu_percent: Percent | None = None
    load_avg_1m: Number | None = None


class BeatenBy(Record):
    """The run that achieved more than a cached peak (and so flagged it stale): its GFLOP/s and its id."""

    SPARSE: ClassVar[bool] = True

    gflops: Gflops
    run_id: Id | None = None


class PeakEntry(Record):
    """One cached matmul peak: what bench.hardware.probe.measure_peak measured (the best GFLOP/s, the sizes and
    repeats, when, under what conditions, where), what the cache adds (``stale`` once a run beat it, by whom, how
    many probes and the last one's figure) and, as bench.hardware.probe.cached_peak hands it out, ``from_cache``."""

    SPARSE: ClassVar[bool] = True

    PATH: ClassVar[str] = "peak"

    peak_gflops: Gflops
    device: Line | None = None
    backend: Line | None = None
    dtype: Line | None = None
    size: Count | None = None  # the side that gave the peak
    sizes: tuple[Count, ...] | None = None
    repeats: Count | None = None
    by_size: dict[str, Gflops] | None = None  # size -> best GFLOP/s
    mean_gflops: Gflops | None = None
    seconds: Seconds | None = None
    matmuls: Count | None = None
    threads: Count | None = None  # None for a GPU
    measured_at: Timestamp | None = None
    conditions: PeakConditions | None = None
    hardware_label: Text | None = None
    hostname: Line | None = None
    framework: Line | None = None
    placement: Line | None = None
    stale: Flag = False
    stale_since: Timestamp | None = None
    beaten_by: BeatenBy | None = None
    probes: Count | None = None
    last_probe_at: Timestamp | None = None
    last_probe_gflops: Gflops | None = None
    from_cache: Flag | None = None  # set by probe.cached_peak on what it hands out; never stored

    _order: tuple[str, ...] = PrivateAttr(default=())  # the keys as read: written back in their order

    @model_validator(mode="wrap")
    @classmethod
    def _keep_order(cls, data: Any, handler: Any) -> Any:
        entry = handler(data)
        if isinstance(data, dict) and isinstance(entry, PeakEntry):
            entry._order = tuple(data)
        return entry

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        return {**{k: out[k] for k in self._order if k in out}, **out}

    def updated(self, **fields: Any) -> PeakEntry:
        """A copy with ``fields`` set; one set to None is left out when written (the cache clears ``beaten_by``
        so), one newly set is written after the keys the entry was read with."""
        held = {k: v for k, v in self.model_dump(exclude_unset=True).items() if k not in fields}
        new = type(self).model_validate({**held, **{k: v for k, v in fields.items() if v is not None}})
        new._order = self._order
        return new


def default_cache_path() -> Path:
    """``peaks.json`` in the folder of the run store (BENCH_STORE moves both)."""
    return settings.store_path().parent / "peaks.json"


def cache_key(device: str, *, cpu_threads: Count | None, backend: str, dtype: str, hostname: Line | None = None) -> str:
    """The cache entry name: one best peak per host, device, thread count, backend and dtype."""
    device = device.strip().lower()
    threads = (cpu_threads or devices.all_cores()) if device == "cpu" else None
    host = hostname or socket.gethostname()
    return f"{host}|{device}|threads={threads or '-'}|{backend}|{dtype}"


_WARNED: set[tuple[str, str, str]] = set()  # (file, key, problem): each damaged entry is told once per process


def read(path: Path) -> dict[str, PeakEntry]:
    """The entries of the cache file at ``path`` (empty when it is missing, unreadable or of another version); an
    entry that does not read is skipped with a warning naming its key and field, the others still read."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("ignoring the unreadable peak cache %s (%s); it will be rewritten", path, exc)
        return {}
    if not isinstance(data, dict) or data.get("version") != CACHE_VERSION or not isinstance(data.get("peaks"), dict):
        return {}
    peaks: dict[str, PeakEntry] = {}
    for key, raw in data["peaks"].items():
        try:
            peaks[str(key)] = PeakEntry.model_validate(raw, path="")
        except RecordError as exc:
            _warn_once(path, str(key), str(exc).split("; fix the file")[0])
    return peaks


def _warn_once(path: Path, key: str, problem: str) -> None:
    if (str(path), key, problem) not in _WARNED:
        _WARNED.add((str(path), key, problem))
        log.warning("ignoring the peak cache entry %r in %s: %s; it is measured again when needed", key, path, problem)


def write(path: Path, peaks: dict[str, PeakEntry]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        document = {"version": CACHE_VERSION, "peaks": {key: entry.to_dict() for key, entry in peaks.items()}}
        tmp.write_text(json.dumps(document, indent=2), encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        log.warning("could not save the peak cache %s (%s); the peak will be measured again next time", path, exc)


def path_of(cache_path: Path | str | None) -> Path:
    """``cache_path``, or the default beside the store when None."""
    return Path(cache_path) if cache_path is not None else default_cache_path()


def keep_best(old: PeakEntry | None, new: PeakEntry) -> PeakEntry:
    """The cache entry after a new measurement: the higher of the two peaks (a busy machine only ever lowers a
    probe), no longer stale, with ``probes`` (count), ``last_probe_at`` and ``last_probe_gflops`` of the new one."""
    previous = old if old is not None and is_plausible(old) else None
    best = new if previous is None or new.peak_gflops >= previous.peak_gflops else previous
    probes = (previous.probes or 1) + 1 if previous is not None else 1
    return best.updated(stale=False, stale_since=None, beaten_by=None, probes=probes, last_probe_at=new.measured_at,
                        last_probe_gflops=new.peak_gflops, from_cache=None)


def lookup(device: str = "cpu", *, cpu_threads: Count | None = None, backend: Line | None = None,
           dtype: str = "float32", cache_path: Path | None = None) -> PeakEntry | None:
    """The cached best peak of ``device`` (stale or not) without measuring; None when it was never measured."""
    backend = (backend or "").strip().lower() or settings.default_backend()
    try:
        key = cache_key(device, cpu_threads=cpu_threads, backend=backend, dtype=dtype)
    except AttributeError:
        return None
    hit = read(path_of(cache_path)).get(key)
    return hit if hit is not None and is_plausible(hit) else None


def mark_stale(device: str, achieved_gflops: float, *, cpu_threads: Count | None = None, backend: Line | None = None,
               dtype: str = "float32", run_id: int | None = None, cache_path: Path | None = None) -> bool:
    """Flag the cached peak of ``device`` as due for a new probe because a run achieved ``achieved_gflops``, more
    than it. Returns True when this call flagged it (False: no entry, not beaten, or already flagged)."""
    path = path_of(cache_path)
    backend = (backend or "").strip().lower() or settings.default_backend()
    key = cache_key(device, cpu_threads=cpu_threads, backend=backend, dtype=dtype)
    peaks = read(path)
    entry = peaks.get(key)
    if entry is None or not is_plausible(entry) or entry.stale:
        return False
    if limits.problem(achieved_gflops, "achieved_gflops") is not None or achieved_gflops <= entry.peak_gflops:
        return False
    peaks[key] = entry.updated(stale=True, stale_since=time.time(),
                               beaten_by=BeatenBy(gflops=float(achieved_gflops), run_id=run_id))
    write(path, peaks)
    return True


def describe(entry: PeakEntry) -> str:
    """Where a peak came from, in words: 'best of <sizes>² × <repeats> repeats, measured <date time> while other
    processes used <share> of the CPU', so a reader can judge how far the figure holds; a stand-in's figure
    (backend REPLAYED) reads as replayed, never as measured."""
    if entry.backend == REPLAYED:
        return "replayed by a stand-in, not measured: no probe ran"
    sizes = entry.sizes or ((entry.size,) if entry.size else ())
    what = f"best of {', '.join(f'{s}²' for s in sizes)}" if sizes else "matmul"
    if entry.repeats:
        what += f" × {entry.repeats} repeats"
    if entry.measured_at is not None and math.isfinite(entry.measured_at):
        what += f", measured {datetime.datetime.fromtimestamp(entry.measured_at).strftime('%Y-%m-%d %H:%M')}"
    others = entry.conditions.others_cpu_percent if entry.conditions is not None else None
    if others is not None and math.isfinite(others):
        what += f" while other processes used {others:.0f} % of the CPU"
    return what


def is_plausible(entry: PeakEntry) -> bool:
    """A peak worth showing: a finite, positive number of GFLOP/s."""
    return math.isfinite(entry.peak_gflops) and entry.peak_gflops > 0


def known_peaks(cache_path: Path | None = None) -> list[PeakEntry]:
    """Every cached measurement of this host, for display (newest first)."""
    host = socket.gethostname()
    rows = [entry for key, entry in read(path_of(cache_path)).items() if key.startswith(f"{host}|")]
    return sorted(rows, key=lambda entry: entry.measured_at or 0, reverse=True)
