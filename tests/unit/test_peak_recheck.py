"""A run that beats its target's measured peak flags the peak and queues a new probe behind the runs (bench.runs.jobs);
the Train/Compare peak line (ui/peak.py) never shows a share above 100 %."""

from __future__ import annotations

import time
from typing import Any

import pytest

from bench.analysis import compare
from bench.hardware import peak_cache, probe
from bench.vocab.readings import epochs_of
from bench.vocab.run_info import RunInfo
from tests import fixtures
from ui import peak
from tests.fixtures import manager  # noqa: F401 - the fixture, used by name

TINY = fixtures.TINY.replace(epochs=2)
MEASURED = {"device": "cpu", "peak_gflops": 105.1, "measured_at": 1.75e9, "sizes": [1024, 2048, 4096],
            "repeats": 3, "conditions": {"others_cpu_percent": 41.0}}
PEAK = peak_cache.PeakEntry.model_validate(MEASURED)


@pytest.fixture
def cached(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """A cached CPU peak of 105.1 GFLOP/s; a new probe (fake) measures 204.0, called with what it was asked."""
    monkeypatch.setattr(probe, "measure_peak", lambda device="cpu", **kw: PEAK)
    probe.cached_peak("cpu", backend=TINY.backend)
    calls: list[dict[str, Any]] = []

    def fake_peak(device: str, *, cpu_threads: int | None = None, refresh: bool = False) -> peak_cache.PeakEntry:
        before = peak_cache.lookup(device, backend=TINY.backend)
        calls.append({"device": device, "refresh": refresh, "at": time.time(),
                      "stale_before": before is not None and before.stale})
        return PEAK.updated(peak_gflops=204.0, stale=False)

    monkeypatch.setattr(probe, "cached_peak", fake_peak)
    return calls


def test_a_run_that_beats_the_peak_flags_it_and_a_probe_follows_the_runs(manager, cached, monkeypatch):
    monkeypatch.setattr(compare, "achieved_of", lambda summary, info: 128.6)
    gid = manager.groups.submit("sweep", [TINY, TINY], targets=["cpu"])
    group = manager.groups.latest("sweep")
    first, second = group.run_ids
    manager.wait(first, timeout_s=30)
    manager.wait(second, timeout_s=30)
    pending = manager.peaks.pending()
    for future in pending:
        assert future.result(timeout=30).peak_gflops == 204.0
    assert len(cached) == 1, "flagged once: the second run found it already flagged"
    assert cached[0]["at"] >= manager.snapshot(second).ended_at, "the new probe waited for the run queued before it"
    assert {k: cached[0][k] for k in ("device", "refresh", "stale_before")} == {
        "device": "cpu", "refresh": True, "stale_before": True}
    group = manager.groups.latest("sweep")
    peak = group.peaks["cpu"]
    assert peak.gflops == 204.0 and peak.entry is not None and peak.entry.peak_gflops == 204.0 and not peak.stale
    assert group.id == gid


def test_a_run_below_the_peak_changes_nothing(manager, cached, monkeypatch):
    monkeypatch.setattr(compare, "achieved_of", lambda summary, info: 52.0)
    manager.wait(manager.submit(TINY), timeout_s=30)
    assert manager.peaks.pending() == [] and cached == []
    cached_peak = peak_cache.lookup("cpu", backend=TINY.backend)
    assert cached_peak is not None and cached_peak.stale is False


def test_the_peak_line_never_shows_a_share_above_100_percent():
    text = peak.peak_text(52.55, PEAK)
    assert text.startswith("Last epoch: 52.5 GFLOP/s, 50% of the measured matmul peak of 105.1 GFLOP/s (best of")
    assert "while other processes used 41 % of the CPU" in text
    beaten = peak.peak_text(128.6, PEAK)
    assert "peak being re-measured" in beaten and "%" not in beaten.split("(")[0]
    assert "122" not in beaten
    assert "peak being re-measured" in peak.peak_text(52.55, PEAK.updated(stale=True))
    assert "peak not measured on this machine yet" in peak.peak_text(52.55, None)
    assert peak.peak_text(None, None).startswith("Last epoch: — GFLOP/s; peak not measured on this machine yet")


def test_a_live_epoch_uses_its_own_figure_or_flops_times_its_rate(monkeypatch):
    monkeypatch.setattr(peak, "peak_of", lambda config: PEAK)
    epochs = [{"epoch": 1, "epoch_seconds": 2.0, "includes_tracing": True, "samples_per_s": 1000.0},
              {"epoch": 2, "epoch_seconds": 1.0, "includes_tracing": False, "samples_per_s": 2000.0}]
    line = peak.epoch_line(epochs_of(epochs), RunInfo(flops_per_sample=2.1e7), TINY)
    assert line.startswith("Epoch 2: 42.0 GFLOP/s, 40% of")
    line = peak.epoch_line(epochs_of([{**epochs[1], "achieved_gflops": 21.0}]), RunInfo(flops_per_sample=2.1e7), TINY)
    assert line.startswith("Epoch 2: 21.0 GFLOP/s, 20% of")
    assert peak.epoch_line((), RunInfo(), TINY) is None


def test_a_group_peak_flagged_stale_keeps_its_figure_and_says_so():
    from bench.runs.run_state import GroupPeak, RunGroup

    group = RunGroup(id=1, kind="sweep", targets=("cpu", "cpu/1"), created_at=0.0,
                     peaks={"cpu": GroupPeak(), "cpu/1": GroupPeak()})
    entry = peak_cache.PeakEntry.model_validate({"peak_gflops": 30.0, "size": 512})
    group = group.with_peak("cpu", 52.0, None, None).with_peak("cpu/1", 30.0, entry, None)
    assert group.peak("cpu").reference == 52.0 and group.peak("cpu/1").reference == entry
    assert group.peak("gpu:0") == GroupPeak(), "a target the group probes nothing for has no figure"
    stale = group.with_stale_peak("cpu").with_stale_peak("cpu/1").with_stale_peak("gpu:0")
    assert stale.peak("cpu").reference == peak_cache.PeakEntry(peak_gflops=52.0, stale=True)
    assert stale.peak("cpu/1").reference == peak_cache.PeakEntry(peak_gflops=30.0, size=512, stale=True)
    assert stale.peak("gpu:0").reference is None, "no figure: nothing to measure against"
    assert group.peak("cpu").stale is False, "the group handed out before is unchanged"
    assert group.peak("cpu/1").reference == entry and entry.stale is False


def test_the_missing_peak_is_said_to_every_viewer_without_a_control_to_press() -> None:
    """The live header's peak line reaches a student on /watch as well as the presenter: it says what is missing,
    never which button to press (a watcher has none)."""
    text = peak.peak_text(52.55, None).lower()
    assert "not measured" in text and "press" not in text and "system page" not in text
