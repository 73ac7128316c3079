"""The peak stand-in (BENCH_PEAK_TARGET): loaded by name as the worker stand-in is, asked by the run queue in the
probe's place, and its figure named as replayed wherever a peak's source is told."""

from __future__ import annotations

import threading

import pytest

from bench.hardware import peak_cache
from bench.runs.peaks import PeakQueue
from bench.vocab import settings
from benchmarks import standins


def test_unset_is_the_probe_and_a_name_loads_the_stand_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BENCH_PEAK_TARGET", raising=False)
    assert settings.peak_target() is None
    monkeypatch.setenv("BENCH_PEAK_TARGET", standins.REPLAYED_PEAK_TARGET)
    assert settings.peak_target() is standins.replayed_peak
    monkeypatch.setenv("BENCH_PEAK_TARGET", "benchmarks.standins:nothing_here")
    with pytest.raises(ValueError, match="cannot be loaded.*unset it for the matmul peak probe"):
        settings.peak_target()


def test_the_queue_asks_the_stand_in_and_its_figure_reads_as_replayed_not_measured() -> None:
    queue = PeakQueue(None, enqueue=lambda task: task(), own_runs=set(), stopping=lambda: False,
                      state_lock=threading.Lock(), measure=standins.replayed_peak)
    entry = queue.queue("cpu", cpu_threads=1).result(timeout=5)
    assert entry.peak_gflops == standins.REPLAYED_PEAK_GFLOPS and entry.backend == peak_cache.REPLAYED
    said = peak_cache.describe(entry)
    assert said == "replayed by a stand-in, not measured: no probe ran"
    measured = entry.updated(backend="tensorflow", sizes=(1024,), repeats=3)
    assert peak_cache.describe(measured).startswith("best of 1024² × 3 repeats, measured ")
