"""The smoke run of benchmarks/render_cost.py (the live panel's publisher and the Train page), on its current child
interface at its smallest size (docs/TESTING.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.common import run_child
from tests.smoke import measured, read


@pytest.mark.slow
def test_render_cost_smoke_times_the_publisher_and_the_page(tmp_path: Path) -> None:
    out = tmp_path / "render.json"
    run_child("benchmarks.render_cost", ["render", json.dumps({"real_s": 1.0, "repeats": 1}), str(out)],
              timeout_s=180, log_path=tmp_path / "render.log")
    result = read(out)
    assert result["publish_ms"] and all(measured(v) for v in result["publish_ms"])
    assert result["page_ms"] and result["event_bytes"] > 0
