"""docs/grafana/: the Grafana dashboard over the dashboard's /metrics is a dashboard Grafana loads, and its queries
name only series the endpoint serves (bench.output.prometheus.SERIES); compose.yaml's "monitoring" profile runs
Prometheus on that endpoint and Grafana provisioned with the dashboard, and a plain `docker compose up` starts neither.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from bench.output.prometheus import SERIES

ROOT = Path(__file__).resolve().parents[2]
GRAFANA = ROOT / "docs" / "grafana"
DASHBOARD = GRAFANA / "bench.json"
PANEL_TYPES = {"row", "stat", "gauge", "timeseries"}
KEYWORDS = {"and", "or", "unless", "bool", "by", "without", "on", "ignoring", "group_left", "group_right", "offset",
            "inf", "nan"}


def metric_names(expr: str) -> set[str]:
    """The series a PromQL expression names: label matchers, ranges, grouping labels, strings, Grafana's variables,
    numbers and function names left out; ``label_values(series, label)`` names its series alone."""
    expr = re.sub(r"label_values\(([^,()]*(?:\{[^}]*\})?)\s*,\s*\w+\s*\)", r"\1", expr)
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', "", expr)
    expr = re.sub(r"\{[^}]*\}", "", expr)
    expr = re.sub(r"\[[^\]]*\]", "", expr)
    expr = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", expr)
    expr = re.sub(r"\$\{?\w+\}?", "", expr)
    names = re.findall(r"(?<![\w.])([A-Za-z_:][\w:]*)(?![\w:])(?!\s*\()", expr)
    return {n for n in names if n.lower() not in KEYWORDS}


def test_the_name_reader_reads_promql() -> None:
    assert metric_names('histogram_quantile(0.5, sum by (le, run_id) (bench_epoch_seconds_bucket{a="b"}))') == \
        {"bench_epoch_seconds_bucket"}
    assert metric_names("increase(X_total{gpu=~\"$gpu\"}[$__range]) / 1e3 + on(gpu) Y offset 5m") == {"X_total", "Y"}
    assert metric_names('label_values(DCGM_FI_DEV_GPU_UTIL{Hostname=~"$host"}, gpu)') == {"DCGM_FI_DEV_GPU_UTIL"}


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text(encoding="utf-8"))


def panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for panel in dashboard["panels"]:
        yield panel
        yield from panel.get("panels", [])


def queries(dashboard: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(where, PromQL) for every panel target and every query variable."""
    for panel in panels(dashboard):
        for target in panel.get("targets", []):
            yield f"panel {panel['title']!r} {target['refId']}", target["expr"]
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            query = variable["query"]
            yield f"variable {variable['name']}", query["query"] if isinstance(query, dict) else query


def test_the_dashboard_is_grafana_dashboard_json(dashboard) -> None:
    assert dashboard["title"] and re.fullmatch(r"[\w-]{1,40}", dashboard["uid"])
    assert isinstance(dashboard["schemaVersion"], int) and dashboard["schemaVersion"] >= 36
    ids = [p["id"] for p in panels(dashboard)]
    assert len(ids) == len(set(ids)), "panel ids are unique"
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    for panel in panels(dashboard):
        assert panel["type"] in PANEL_TYPES, panel["title"]
        pos = panel["gridPos"]
        assert all(isinstance(pos[k], int) for k in ("h", "w", "x", "y")) and pos["x"] + pos["w"] <= 24, panel
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        assert panel["targets"] and "unit" in panel["fieldConfig"]["defaults"], panel["title"]
        refs = [t["refId"] for t in panel["targets"]]
        assert len(refs) == len(set(refs)) and all(t["expr"].strip() for t in panel["targets"]), panel["title"]


def test_every_query_names_only_series_the_endpoint_serves(dashboard) -> None:
    named: set[str] = set()
    for where, expr in queries(dashboard):
        found = metric_names(expr)
        assert found, f"{where}: {expr!r} names no series"
        assert found <= SERIES, f"{where} names {sorted(found - SERIES)}, which /metrics does not serve"
        named |= found
    dcgm = {n for n in named if n.startswith("DCGM_")}
    assert {"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_POWER_USAGE",
            "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"} <= dcgm
    assert {"bench_epoch_seconds_bucket", "bench_samples_per_second", "bench_run_status", "bench_run_epoch",
            "bench_cpu_utilization_percent"} <= named


def test_the_gpu_panels_select_by_dcgms_own_labels(dashboard) -> None:
    """A real DCGM exporter's series carry the same labels, so the GPU panels read them too."""
    for where, expr in queries(dashboard):
        for matcher in re.findall(r"DCGM_\w+\{([^}]*)\}", expr):
            labels = set(re.findall(r"(\w+)\s*=~?", matcher))
            assert labels <= {"gpu", "UUID", "modelName", "Hostname"}, (where, labels)


def test_the_monitoring_profile_scrapes_the_endpoint_and_provisions_the_dashboard() -> None:
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text(encoding="utf-8"))
    services = compose["services"]
    assert "profiles" not in services["bench"], "a plain `docker compose up` serves the dashboard alone"
    for name in ("prometheus", "grafana"):
        assert services[name]["profiles"] == ["monitoring"], f"{name} starts only with --profile monitoring"
        assert re.fullmatch(r"[\w./-]+:[\w.-]+", services[name]["image"]), "an image with a tag"
        for volume in services[name]["volumes"]:
            source = volume.split(":")[0]
            if source.startswith("./"):
                assert (ROOT / source).exists(), f"{name} mounts {source}, which is not in the checkout"
            else:
                assert source in compose["volumes"], f"{name}'s volume {source} is declared"
    mounts = {v.split(":")[1]: v.split(":")[0] for v in services["grafana"]["volumes"]}
    assert mounts["/var/lib/grafana/dashboards/bench.json"] == "./docs/grafana/bench.json"

    prom_path = mounts_of(services["prometheus"])["/etc/prometheus/prometheus.yml"]
    prom = yaml.safe_load((ROOT / prom_path).read_text(encoding="utf-8"))
    [bench] = [job for job in prom["scrape_configs"] if job["job_name"] == "bench"]
    assert bench["metrics_path"] == "/metrics"
    targets = {t for group in bench["static_configs"] for t in group["targets"]}
    assert {"bench:8501", "bench-gpu:8501"} == targets, "the dashboard's services, on their port"

    provisioning = ROOT / mounts["/etc/grafana/provisioning"]
    [source] = yaml.safe_load((provisioning / "datasources" / "prometheus.yml").read_text())["datasources"]
    assert source["type"] == "prometheus" and source["url"] == "http://prometheus:9090"
    [provider] = yaml.safe_load((provisioning / "dashboards" / "bench.yml").read_text())["providers"]
    assert provider["options"]["path"] == "/var/lib/grafana/dashboards"


def mounts_of(service: dict[str, Any]) -> dict[str, str]:
    return {v.split(":")[1]: v.split(":")[0] for v in service["volumes"]}
