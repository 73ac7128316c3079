"""A real server stops when told to (Ctrl-C in its terminal, `docker stop`) while a page still watches its live
stream: the server's graceful stop waits for its open connections, and the stream, which never closes by itself, is
ended by the stop signal first (ui.live_routes.lifespan). Before, the server waited on every page still open."""

from __future__ import annotations

import http.client
import signal
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.e2e.conftest import Server

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "terminate"])
def test_a_stop_signal_ends_the_open_streams_and_the_server(tmp_path: Path, sig: signal.Signals) -> None:
    server = Server(tmp_path)
    try:
        address = urlsplit(server.url)
        watcher = http.client.HTTPConnection(address.hostname, address.port, timeout=60)
        watcher.request("GET", "/bench/live?feed=train&variant=plain")
        stream = watcher.getresponse()
        assert stream.status == 200 and stream.getheader("Content-Type", "").startswith("text/event-stream")
        assert stream.readline().startswith(b"retry:"), "the stream is open and speaking"
        server.proc.send_signal(sig)
        try:
            server.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the server still runs 30 s after {sig.name}, a stream open: {server.log.read_text()[-800:]}")
        rest = stream.read()  # the stream ended (the server closed it), not cut by the reader's timeout
        assert b"retry:" not in rest
        assert "Waiting for connections to close" not in server.log.read_text(encoding="utf-8")
    finally:
        server.stop()
