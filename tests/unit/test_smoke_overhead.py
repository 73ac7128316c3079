"""The smoke run of `python -m bench overhead` (benchmarks/overhead.py, with benchmarks/dashboard.py, memory.py and
render_cost.py, whose smoke runs these are): its smallest configuration, every side replayed, each figure asserted
measured; and the smallest configuration never written to the doc (docs/TESTING.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.dashboard import browser_unavailable
from tests.smoke import measured, read, run


@pytest.mark.slow
def test_bench_overhead_smoke_measures_every_figure_over_a_real_watched_window(tmp_path: Path) -> None:
    """`python -m bench overhead --smoke`: every side replayed, one round; the watched window held live 3 s (and
    profiled: where the page's CPU goes); the memory replay (benchmarks/memory.py) and the render timing run as in a
    real pass. Without a browser, the figures that need none (`--no-browser`)."""
    browser = browser_unavailable() is None
    out = tmp_path / "overhead.json"
    done = run(["-m", "bench", "overhead", "--smoke", "--json", str(out), *([] if browser else ["--no-browser"])],
               tmp_path, timeout_s=280)
    result = read(out)
    assert result["replayed"] is True and result["schema"] == "bench.overhead/1"
    figures = ["engine_vs_bare_ratio", "sampling_ratio", "rerun_ms", "memory_growth_mb"]
    if browser:
        figures += ["watched_vs_bare_ratio", "page_ready_s", "first_batch_s", "watch_cores"]
    for name in figures:
        assert measured(result[name]), f"{name} not measured: {result['details']['notes']}"
        assert name in done.stdout
    details = result["details"]
    kinds = {"bare", "engine", "sampling_off", "sampling_0.1"} | ({"watched"} if browser else set())
    assert {r["kind"] for r in result["runs"]} == kinds and all(len(r["epochs"]) == 3 for r in result["runs"])
    if browser:
        assert details["watch_window_s"] >= 3.0, "the page watched a live run for the whole window"
        assert details["page_profile_ms_per_s"], "the watching page's profile: where its CPU goes"
    assert details["train_page_rerun_wall_ms"] is not None and details["publish_wall_ms"] is not None
    render = details["render"]  # benchmarks/render_cost.py's own result: its smoke run is this one
    assert render["publish_ms"] and all(measured(v) for v in render["publish_ms"])
    assert render["page_ms"] and render["event_bytes"] > 0
    [memory] = details["memory"]
    assert memory["samples_kept"] > 0 and memory["renders_during_stream"] > 0
    assert any("replayed by a stand-in worker" in note for note in details["notes"])


def test_bench_overhead_smoke_never_writes_the_doc(tmp_path: Path) -> None:
    from benchmarks import overhead

    for extra in (["--write-doc"], ["--report", str(tmp_path / "x.md")], ["--quick"], ["--rounds", "3"]):
        assert overhead.main(["--smoke", *extra]) == 2
    assert not (tmp_path / "x.md").exists()
