"""The smoke run of benchmarks/metrics_scrape.py (`--smoke`): one scrape of each way in each state of a real server,
its run replayed; and the smallest pass never written to the doc (docs/TESTING.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import metrics_scrape
from tests.smoke import needs_browser, read, run


@pytest.mark.slow
def test_metrics_scrape_smoke_costs_each_way_in_each_state(tmp_path: Path) -> None:
    needs_browser()
    out = tmp_path / "scrape.json"
    done = run(["-m", "benchmarks.metrics_scrape", "--scripted-gpu", "--smoke", "--json", str(out)], tmp_path,
               timeout_s=240)
    result = read(out)
    assert result["smoke"] is True and result["scrapes"] == 1 and result["rounds"] == 1
    for state in ("idle", "live"):
        for key in ("rendered_pooled_ms", "shared_pooled_ms", "health_pooled_ms"):
            assert isinstance(result[state][key], (int, float)), (state, key)
        assert result[state]["text_bytes"] > 0 and len(result[state]["rendered_ms"]) == 1
    assert result["scripted_gpu"] is True and isinstance(result["live_run"], int)
    assert "| a run live, no page open: " in done.stdout and "not measured" not in done.stdout


@pytest.mark.parametrize("extra", [["--write-doc"], ["--scrapes", "5"], ["--rounds", "2"]])
def test_metrics_scrape_smoke_never_writes_the_doc(extra: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert metrics_scrape.main(["--smoke", *extra]) == 2
    assert "--smoke is the smallest pass" in capsys.readouterr().err
