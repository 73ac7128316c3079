"""The smoke runs of the benchmarks that start no server: benchmarks/store_soak.py, record_libs.py and
record_io.py, each at its smallest size, each figure asserted (docs/TESTING.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.smoke import measured, read, run


@pytest.mark.slow
def test_store_soak_smoke_loses_nothing(tmp_path: Path) -> None:
    out = tmp_path / "soak.json"
    run(["-m", "benchmarks.store_soak", "--processes", "2", "--seconds", "2", "--json", str(out)], tmp_path)
    result = read(out)
    assert result["processes"] == 2 and result["runs"] >= 2 and result["epochs"] > 0 and result["samples"] > 0
    assert measured(result["writes_per_s"]) and measured(result["write_ms_p50"]) and measured(result["write_ms_p99"])
    assert result["lost_epochs"] == 0 and result["lost_samples"] == 0 and result["duplicated_samples"] == 0
    assert result["problems"] == []


def test_record_libs_smoke_weighs_each_library(tmp_path: Path) -> None:
    pytest.importorskip("msgspec", reason="benchmarks/record_libs.py weighs msgspec, not a project dependency")
    pytest.importorskip("pydantic", reason="benchmarks/record_libs.py weighs pydantic v2")
    report = tmp_path / "libs.md"
    run(["-m", "benchmarks.record_libs", "--samples", "50", "--report", str(report)], tmp_path)
    text = report.read_text(encoding="utf-8")
    assert "msgspec" in text and "pydantic" in text and "bench.vocab.readings" in text


@pytest.mark.slow
def test_record_io_smoke_times_each_way_in_and_out(tmp_path: Path) -> None:
    out = tmp_path / "io.json"
    done = run(["-m", "benchmarks.record_io", "--repeats", "1", "--json", str(out)], tmp_path, timeout_s=120)
    result = read(out)
    assert result["repeats"] == 1 and len(result["figures"]) == 2
    for run_name, ops in result["figures"].items():
        assert len(ops) == 4, run_name
        assert all(measured(low) and measured(mid) for low, mid in ops.values()), (run_name, ops)
        assert run_name in done.stdout
