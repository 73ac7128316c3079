"""ui.live_routes: the stream and the static files served beside Streamlit's routes, tested through Starlette's own
test client (no Streamlit server): read-only, allow-listed names, cached by the browser, Streamlit's host rule."""

from __future__ import annotations

import gzip
import json

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from ui import live, live_feed, live_routes, static_files


@pytest.fixture
def client() -> TestClient:
    return TestClient(Starlette(routes=live_routes.routes()))


def test_plotly_and_the_elements_script_are_static_files_the_browser_keeps(client):
    url = static_files.static_url("plotly.min.js")
    assert "?v=" in url, "the content's hash is in the address, so a changed file is a new address"
    plain = client.get(url, headers={"Accept-Encoding": "identity"})
    assert plain.status_code == 200 and plain.content.startswith(b"/**") and b"plotly.js v" in plain.content[:200]
    assert "immutable" in plain.headers["cache-control"] and "max-age=31536000" in plain.headers["cache-control"]
    zipped = client.get(url, headers={"Accept-Encoding": "gzip"})
    assert zipped.headers.get("content-encoding") == "gzip" and zipped.content == plain.content  # decoded by httpx
    again = client.get(url, headers={"If-None-Match": plain.headers["etag"]})
    assert again.status_code == 304 and not again.content
    script = client.get(static_files.static_url("live.js"))
    assert script.status_code == 200 and b"export function viewElement" in script.content
    assert script.headers["content-type"].startswith("text/javascript")


@pytest.mark.parametrize("name", ["app.py", "..%2Fapp.py", "plotly.js", ".env", "live.css"])
def test_only_the_named_files_are_served(client, name):
    assert client.get(f"/bench/static/{name}").status_code == 404


def test_the_stream_is_read_only_and_checks_its_one_parameter(client, monkeypatch):
    monkeypatch.setattr(live_feed, "_PUBLISHERS", {})
    monkeypatch.setattr(live_routes, "_train_feed", lambda: None)  # no dashboard's job manager to make it from
    assert client.post("/bench/live").status_code == 405
    assert client.get("/bench/live?variant=<script>").status_code == 400
    assert client.get("/bench/live?feed=../history").status_code == 400
    starting = client.get("/bench/live")
    assert starting.status_code == 503 and starting.headers["retry-after"] == "2"


def test_the_stream_sends_a_snapshot_first(client, monkeypatch):
    pub = live_feed.Publisher(lambda: None, header=lambda r: None, line=lambda r: None, charts=lambda r: {},
                              figures=lambda r, v, n: {}, grow=live.GROW)
    monkeypatch.setattr(live_feed, "_PUBLISHERS", {"train": (object(), pub)})
    with client.stream("GET", "/bench/live") as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        lines = response.iter_lines()
        assert next(lines) == "retry: 2000"
        first = next(line for line in lines if line.startswith("data: "))
    msg = json.loads(first[6:])
    assert msg["kind"] == "snapshot" and msg["state"]["key"] == "none" and msg["charts"] == {}


@pytest.mark.parametrize("allowed, host, ok", [
    ([], "anything.example:8501", True), (["*"], "x", True), (["class.example.org"], "class.example.org:8501", True),
    (["class.example.org"], "evil.example", False), (["*.example.org"], "room1.example.org", True),
    (["*.example.org"], "example.org.evil", False), (["localhost"], "[::1]:8501", False)])
def test_the_streams_host_rule_is_streamlits(monkeypatch, allowed, host, ok):
    import streamlit as st

    monkeypatch.setattr(st, "get_option", lambda name: allowed if name == "server.allowedHosts" else None)
    assert live_routes.host_allowed(host) is ok


def test_gzip_copy_is_the_file(client):
    found = static_files.static_file("live.js")
    assert found is not None and gzip.decompress(found.gzipped) == found.body


def test_the_emulated_viewers_wait_as_the_browser_does():
    """benchmarks/viewers.py reruns after a state change with the delays ui/static/live-plan.js uses (one home: the
    script; the emulation reads the same numbers or the class it measures is not the one the browser makes)."""
    import re

    from benchmarks import viewers

    script = (static_files.STATIC / "live-plan.js").read_text(encoding="utf-8")

    def const(name: str) -> float:
        found = re.search(rf"const {name} = (\d+);", script)
        assert found, name
        return int(found.group(1)) / 1000

    assert viewers.RERUN_AFTER_S == const("RERUN_AFTER_MS")
    assert viewers.RERUN_SPREAD_S_PER_VIEWER == const("RERUN_SPREAD_MS_PER_VIEWER")
    assert viewers.RERUN_SPREAD_MAX_S == const("RERUN_SPREAD_MAX_MS")
