"""The run form's MLflow setting (ui.config_form.mlflow_setting): BENCH_MLFLOW_URI its default, one URI for the whole
server (the run queue's finished-run hook, bench.output.mlflow_log.DashboardLog), a bad URI refused beside the field.
No MLflow is needed: nothing is logged here (tests/unit/test_mlflow.py logs for real)."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from bench.output import mlflow_log

ROOT = Path(__file__).resolve().parents[2]


def _dashboard_log() -> mlflow_log.DashboardLog:
    from ui import common

    return mlflow_log.dashboard_log(common.get_manager().finished_hooks)


def test_the_setting_takes_bench_mlflow_uri_and_sets_the_servers_uri(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("BENCH_MLFLOW_URI", "http://tracking.example:5000")
    at = AppTest.from_file(str(ROOT / "pages/train.py"), default_timeout=30).run()
    assert not at.exception
    field = at.text_input(key="cfg_mlflow_uri")
    assert field.value == "http://tracking.example:5000", "BENCH_MLFLOW_URI is the default"

    field.set_value("not a uri").run()
    assert any("is not an MLflow tracking URI" in e.value for e in at.error)
    assert _dashboard_log().uri == "http://tracking.example:5000", "a refused URI changes nothing"

    at.text_input(key="cfg_mlflow_uri").set_value("sqlite:///runs-mlflow.db").run()
    assert not at.error
    assert _dashboard_log().uri == "sqlite:///runs-mlflow.db"

    at.text_input(key="cfg_mlflow_uri").set_value("").run()
    assert _dashboard_log().uri is None, "empty: off"


def test_without_bench_mlflow_uri_the_setting_is_off(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("BENCH_MLFLOW_URI", raising=False)
    at = AppTest.from_file(str(ROOT / "pages/train.py"), default_timeout=30).run()
    assert not at.exception
    assert at.text_input(key="cfg_mlflow_uri").value == ""
    assert _dashboard_log().uri is None
