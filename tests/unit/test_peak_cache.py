"""peaks.json as a way in from outside (bench/hardware/peak_cache.py): a file a user may edit or damage. Each entry is
read into a PeakEntry with the checked reader; one that does not read is skipped with a warning naming its key and
field, the rest still read; a key this version does not know is kept through read and write."""

from __future__ import annotations

import json
import logging
import math
import socket
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.hardware import peak_cache

HOST = socket.gethostname()
GOOD = {"device": "cpu", "backend": "tensorflow", "dtype": "float32", "size": 2048, "sizes": [1024, 2048],
        "repeats": 3, "peak_gflops": 105.1, "by_size": {"1024": 98.0, "2048": 105.1}, "threads": 2,
        "measured_at": 1.75e9, "conditions": {"busy_before_percent": 3.0, "others_cpu_percent": 1.5,
                                              "load_avg_1m": 0.4},
        "stale": False, "probes": 2}


def _key(device: str, dtype: str = "float32") -> str:
    return f"{HOST}|{device}|threads=2|tensorflow|{dtype}"


def _write(path: Path, peaks: dict[str, Any]) -> None:
    path.write_text(json.dumps({"version": peak_cache.CACHE_VERSION, "peaks": peaks}), encoding="utf-8")


def test_a_damaged_entry_is_skipped_and_named_while_the_good_ones_still_list(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "peaks.json"
    damaged = {_key("gpu:0"): {**GOOD, "device": "gpu:0", "peak_gflops": "fast"},
               _key("gpu:1"): {**GOOD, "device": "gpu:1", "peak_gflops": math.inf},  # written as Infinity
               _key("gpu:2"): {**GOOD, "device": "gpu:2", "conditions": [1, 2, 3]},
               _key("gpu:3"): "not an entry"}
    _write(path, {_key("cpu"): GOOD, **damaged, _key("cpu", "float64"): {**GOOD, "dtype": "float64",
                                                                          "measured_at": 1.7e9}})
    assert "Infinity" in path.read_text()
    with caplog.at_level(logging.WARNING, logger="bench.hardware.probe"):
        peaks = peak_cache.known_peaks(path)
    assert [(p.device, p.dtype, p.peak_gflops) for p in peaks] == [("cpu", "float32", 105.1),
                                                                   ("cpu", "float64", 105.1)]
    assert all(isinstance(p, peak_cache.PeakEntry) for p in peaks)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == len(damaged), "one warning per damaged entry"
    for key, field in ((_key("gpu:0"), "peak_gflops"), (_key("gpu:1"), "peak_gflops"),
                       (_key("gpu:2"), "conditions"), (_key("gpu:3"), "JSON object")):
        [said] = [w for w in warnings if repr(key) in w]
        assert field in said and str(path) in said
    assert "'fast'" in next(w for w in warnings if repr(_key("gpu:0")) in w), "the warning shows what it held"
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="bench.hardware.probe"):
        peak_cache.known_peaks(path)
    assert caplog.records == [], "each damaged entry is told once, not on every page draw"


def test_a_damaged_entry_is_not_looked_up_and_marking_another_stale_still_works(tmp_path: Path) -> None:
    path = tmp_path / "peaks.json"
    _write(path, {peak_cache.cache_key("cpu", cpu_threads=2, backend="tensorflow", dtype="float32"): GOOD,
                  peak_cache.cache_key("cpu", cpu_threads=1, backend="tensorflow", dtype="float32"):
                      {**GOOD, "peak_gflops": -4.0}})
    assert peak_cache.lookup("cpu", cpu_threads=1, backend="tensorflow", cache_path=path) is None
    hit = peak_cache.lookup("cpu", cpu_threads=2, backend="tensorflow", cache_path=path)
    assert hit is not None and hit.peak_gflops == 105.1 and hit.conditions is not None
    assert hit.conditions.others_cpu_percent == 1.5 and hit.sizes == (1024, 2048)
    assert peak_cache.mark_stale("cpu", 200.0, cpu_threads=2, backend="tensorflow", run_id=3, cache_path=path)
    flagged = peak_cache.lookup("cpu", cpu_threads=2, backend="tensorflow", cache_path=path)
    assert flagged is not None and flagged.stale and flagged.beaten_by == peak_cache.BeatenBy(gflops=200.0, run_id=3)
    assert not peak_cache.mark_stale("cpu", math.inf, cpu_threads=2, backend="tensorflow", cache_path=path)


def test_an_unknown_key_round_trips_through_read_and_write(tmp_path: Path) -> None:
    path = tmp_path / "peaks.json"
    later = {**GOOD, "conditions": {**GOOD["conditions"], "gpu_clock_mhz": 1980},
             "tuned_by": {"tool": "a later version", "passes": [1, 2]}}
    _write(path, {_key("cpu"): later})
    entry = peak_cache.read(path)[_key("cpu")]
    assert entry.extra == {"tuned_by": {"tool": "a later version", "passes": [1, 2]}}
    peak_cache.write(path, peak_cache.read(path))
    assert json.loads(path.read_text(encoding="utf-8"))["peaks"] == {_key("cpu"): later}, "the same keys, in order"
    assert list(json.loads(path.read_text(encoding="utf-8"))["peaks"][_key("cpu")]) == list(later)


def test_a_new_probe_keeps_the_keys_it_was_read_with_and_adds_the_caches() -> None:
    old = peak_cache.PeakEntry.model_validate({**GOOD, "stale": True, "stale_since": 1.76e9,
                                          "beaten_by": {"gflops": 120.0, "run_id": 9}, "tuned_by": "x"})
    new = peak_cache.PeakEntry.model_validate({"device": "cpu", "peak_gflops": 90.0, "measured_at": 1.77e9})
    best = peak_cache.keep_best(old, new).to_dict()
    assert best["peak_gflops"] == 105.1 and best["tuned_by"] == "x" and best["stale"] is False
    assert "beaten_by" not in best and "stale_since" not in best
    assert best["probes"] == 3 and best["last_probe_gflops"] == 90.0 and best["last_probe_at"] == 1.77e9


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                                       max_size=3), max_leaves=8)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(field=st.sampled_from(sorted(GOOD) + ["beaten_by", "stale_since", "from_cache", "sizes", "by_size"]),
       value=json_values)
def test_any_value_in_any_field_reads_or_is_skipped_never_raises(tmp_path: Path, field: str, value: Any) -> None:
    """Whatever a user writes into one field of one entry, reading the cache never raises and the other entry reads."""
    path = tmp_path / "peaks.json"
    _write(path, {_key("cpu"): GOOD, _key("gpu:0"): {**GOOD, field: value}})
    peaks = peak_cache.read(path)
    assert peaks[_key("cpu")].peak_gflops == 105.1
    for entry in peaks.values():
        assert peak_cache.is_plausible(entry) or entry.peak_gflops == 0
        peak_cache.describe(entry)
        json.dumps(entry.to_dict(), allow_nan=False)
    peak_cache.write(path, peaks)
    assert peak_cache.read(path).keys() == peaks.keys(), "what was read is written back readable"
