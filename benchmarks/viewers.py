"""Emulated viewers of the dashboard: each does over HTTP and the websocket what a Chromium page of the Train page does.

A viewer, as Streamlit 1.67's front end and the live view element (ui/static/live*.js) behave:

1. fetches what a fresh browser fetched on its first load of the page (the list is taken from a real Chromium page in
   the same pass: the page's HTML, Streamlit's scripts and styles, the live element's script and plotly.js), each
   once, accepting gzip;
2. asks ``/_stcore/health`` and ``/_stcore/host-config`` (the XSRF cookie comes with them), opens the websocket
   ``/_stcore/stream`` with the subprotocols ``streamlit`` and the XSRF token, and sends the first ``rerun_script``
   for the page, reading every ForwardMsg until ``script_finished``;
3. subscribes to the live stream (``/bench/live``) and reads its events;
4. when the stream's run state differs from the one its page was drawn with, waits as the element does
   (RERUN_AFTER_S plus a random share of the spread) and sends the fragment's rerun with the element's trigger, as
   the browser sends it, reading the rerun's messages.

What it records: bytes received (websocket, stream, files), each stream event's delay from its publication (events
carry the publisher's wall clock; viewers run on the same machine), the age of the newest event held, sampled every
half second while a run is live, reruns sent, disconnects. ``python -m benchmarks.viewers URL N`` runs N of them in
one asyncio process until a line ``stop`` arrives on stdin, then prints a JSON summary.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import statistics
import sys
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

RERUN_AFTER_S = 1.5  # as ui/static/live-plan.js: RERUN_AFTER_MS, RERUN_SPREAD_MS_PER_VIEWER, RERUN_SPREAD_MAX_MS
RERUN_SPREAD_S_PER_VIEWER = 0.1
RERUN_SPREAD_MAX_S = 10.0
AGE_SAMPLE_S = 0.5
READY_WAIT_S = 120.0  # after its page loaded, a viewer that has no snapshot of the stream by then is counted out
HTTP_TIMEOUT_S = 120.0


@dataclass
class Viewer:
    index: int
    bytes_ws: int = 0
    bytes_stream: int = 0
    bytes_files: int = 0
    delays_s: list[float] = field(default_factory=list)
    ages_s: list[float] = field(default_factory=list)
    reruns: int = 0
    disconnects: int = 0
    errors: list[str] = field(default_factory=list)
    loaded_s: float | None = None
    stage: str = "new"  # where the viewer is (a viewer that never gets ready says where it stopped)
    ready: bool = False
    newest_at: float | None = None
    live: bool = False
    drawn_state: str | None = None
    viewers_seen: int = 1


async def http_get(host: str, port: int, path: str, headers: dict[str, str]) -> tuple[int, dict[str, list[str]], bytes]:
    """One HTTP/1.1 GET on a fresh connection, as a browser's parallel fetches are: status, headers, body."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        head = "".join(f"{k}: {v}\r\n" for k, v in {"Host": f"{host}:{port}", "Connection": "close", **headers}.items())
        writer.write(f"GET {path} HTTP/1.1\r\n{head}\r\n".encode())
        await writer.drain()
        status, found = await asyncio.wait_for(_read_head(reader), HTTP_TIMEOUT_S)
        body = await asyncio.wait_for(reader.read(), HTTP_TIMEOUT_S)
        if "chunked" in ",".join(found.get("transfer-encoding", [])):
            body = _dechunk(body)
        return status, found, body
    finally:
        writer.close()


async def _read_head(reader: asyncio.StreamReader) -> tuple[int, dict[str, list[str]]]:
    status_line = await reader.readline()
    status = int(status_line.split()[1])
    found: dict[str, list[str]] = {}
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b"\n", b""):
            return status, found
        name, _, value = line.decode("latin-1").partition(":")
        found.setdefault(name.strip().lower(), []).append(value.strip())


def _dechunk(body: bytes) -> bytes:
    out, i = bytearray(), 0
    while i < len(body):
        end = body.index(b"\r\n", i)
        size = int(body[i:end].split(b";")[0], 16)
        if size == 0:
            break
        out += body[end + 2:end + 2 + size]
        i = end + 2 + size + 2
    return bytes(out)


class Session:
    """One emulated viewer's connection to the server."""

    def __init__(self, viewer: Viewer, url: str, files: list[str], page: str, query: str, spread_of: Any) -> None:
        parsed = urllib.parse.urlsplit(url)
        self.v = viewer
        self.host, self.port = parsed.hostname or "localhost", parsed.port or 80
        self.origin = f"{parsed.scheme}://{parsed.netloc}"
        self.files, self.page, self.query = files, page, query
        self.cookies: dict[str, str] = {}
        self.ws: Any = None
        self.page_hash = ""
        self.element_id: str | None = None
        self.fragment_id: str | None = None
        self.stream_path = "/bench/live?variant=plain"
        self.pending: asyncio.Task[None] | None = None
        self.spread_of = spread_of
        self.script_done = asyncio.Event()
        self.tasks: set[asyncio.Task[Any]] = set()  # the loop keeps only weak references to its tasks

    def spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    def _headers(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        headers = {"User-Agent": "bench-emulated-viewer", "Accept-Encoding": "gzip, deflate"}
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        return {**headers, **(extra or {})}

    async def get(self, path: str) -> bytes:
        status, headers, body = await http_get(self.host, self.port, path, self._headers())
        for cookie in headers.get("set-cookie", []):
            name, _, rest = cookie.partition("=")
            self.cookies[name.strip()] = rest.split(";")[0]
        if status >= 400:
            raise RuntimeError(f"GET {path}: {status}")
        self.v.bytes_files += len(body)
        return body

    async def load(self) -> None:
        started = time.monotonic()
        self.v.stage = "files"
        await asyncio.gather(*(self.get(path) for path in self.files))
        self.v.stage = "health"
        await self.get("/_stcore/health")
        await self.get("/_stcore/host-config")
        self.v.stage = "websocket"
        await self.connect()
        self.v.stage = "first run"
        await self.rerun(first=True)
        self.v.stage = "stream"
        self.spawn(self.read_stream())
        self.v.loaded_s = time.monotonic() - started

    async def connect(self) -> None:
        from websockets.asyncio.client import connect
        from websockets.typing import Origin, Subprotocol

        token = self.cookies.get("_streamlit_xsrf", "")
        self.ws = await connect(f"ws://{self.host}:{self.port}/_stcore/stream",
                                subprotocols=[Subprotocol("streamlit"), Subprotocol(token)], origin=Origin(self.origin),
                                additional_headers={"Cookie": self._headers()["Cookie"]}, max_size=None,
                                compression=None)
        self.spawn(self.read_ws())

    async def read_ws(self) -> None:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        try:
            async for frame in self.ws:
                self.v.bytes_ws += len(frame)
                msg = ForwardMsg()
                msg.ParseFromString(frame)
                kind = msg.WhichOneof("type")
                if kind == "new_session":
                    self.page_hash = msg.new_session.page_script_hash
                elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
                    element = msg.delta.new_element
                    if element.WhichOneof("type") == "bidi_component" and \
                            element.bidi_component.component_name == "bench_live_view":
                        self.element_id = element.bidi_component.id
                        self.fragment_id = msg.delta.fragment_id or self.fragment_id
                        data = json.loads(element.bidi_component.json or "{}")
                        self.v.drawn_state = data.get("state")
                elif kind == "script_finished":
                    self.script_done.set()
        except Exception as exc:  # the connection ended under the viewer: a disconnect
            self.v.errors.append(f"websocket: {type(exc).__name__}: {exc}"[:200])
        self.v.disconnects += 1

    async def rerun(self, *, first: bool = False, state: str | None = None) -> None:
        from streamlit.proto.BackMsg_pb2 import BackMsg

        msg = BackMsg()
        rerun = msg.rerun_script
        if first:
            rerun.query_string = self.query
            rerun.page_name = self.page
        else:
            rerun.page_script_hash = self.page_hash
            rerun.fragment_id = self.fragment_id or ""
            widget = rerun.widget_states.widgets.add()
            widget.id = f"$$STREAMLIT_INTERNAL_KEY_{self.element_id}__events"
            widget.json_trigger_value = json.dumps(
                [{"event": "changed", "value": {"state": state, "at": int(time.time() * 1000)}}])
        info = rerun.context_info
        info.timezone, info.locale, info.url = "UTC", "en-US", f"{self.origin}/{self.page}"
        info.color_scheme = "light"
        self.script_done.clear()
        await self.ws.send(msg.SerializeToString())
        await asyncio.wait_for(self.script_done.wait(), HTTP_TIMEOUT_S)

    async def read_stream(self) -> None:
        while True:
            try:
                await self._stream_once()
            except Exception as exc:
                self.v.errors.append(f"stream: {type(exc).__name__}: {exc}"[:200])
            self.v.disconnects += 1
            await asyncio.sleep(2.0)

    async def _stream_once(self) -> None:
        reader, writer = await asyncio.open_connection(self.host, self.port)
        head = "".join(f"{k}: {v}\r\n" for k, v in self._headers({"Accept": "text/event-stream"}).items())
        writer.write(f"GET {self.stream_path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n{head}\r\n".encode())
        await writer.drain()
        status, headers = await _read_head(reader)
        if status != 200:
            raise RuntimeError(f"stream: {status}")
        chunked = "chunked" in ",".join(headers.get("transfer-encoding", []))
        buffer = b""
        while True:
            data = await _next_chunk(reader) if chunked else await reader.read(65536)
            if not data:
                raise ConnectionError("stream closed")
            self.v.bytes_stream += len(data)
            buffer += data
            while b"\n\n" in buffer:
                event, buffer = buffer.split(b"\n\n", 1)
                for line in event.split(b"\n"):
                    if line.startswith(b"data: "):
                        self.on_event(json.loads(line[6:]))

    def on_event(self, msg: dict[str, Any]) -> None:
        now = time.time()
        if "at" in msg:
            self.v.delays_s.append(max(0.0, now - msg["at"]))
            self.v.newest_at = msg["at"]
        if "viewers" in msg:
            self.v.viewers_seen = msg["viewers"] or 1
        state = msg.get("state")
        if state:
            self.v.live = bool(state.get("active"))
            if msg.get("kind") == "snapshot":
                self.v.ready = True
                self.v.stage = "watching"
            if state["key"] != self.v.drawn_state and (self.pending is None or self.pending.done()):
                self.pending = self.spawn(self._rerun_later(state["key"]))

    async def _rerun_later(self, key: str) -> None:
        spread = min(RERUN_SPREAD_MAX_S, RERUN_SPREAD_S_PER_VIEWER * max(1, self.v.viewers_seen))
        await asyncio.sleep(RERUN_AFTER_S + random.random() * spread)
        if key == self.v.drawn_state or self.element_id is None:
            return
        self.v.reruns += 1
        await self.rerun(state=key)


async def _next_chunk(reader: asyncio.StreamReader) -> bytes:
    size_line = await reader.readline()
    if not size_line:
        return b""
    size = int(size_line.split(b";")[0], 16)
    if size == 0:
        return b""
    data = await reader.readexactly(size)
    await reader.readexactly(2)
    return data


async def run_viewers(url: str, n: int, files: list[str], *, page: str = "train", query: str = "",
                      join_over_s: float = 0.0) -> dict[str, Any]:
    viewers = [Viewer(i) for i in range(n)]
    sessions = [Session(v, url, files, page, query, None) for v in viewers]

    async def start(i: int, session: Session) -> None:
        await asyncio.sleep(join_over_s * i / max(1, n))
        try:
            await session.load()
        except Exception as exc:
            session.v.errors.append(f"load: {type(exc).__name__}: {exc}"[:200])
            session.v.disconnects += 1

    async def sample_ages() -> None:
        while True:
            await asyncio.sleep(AGE_SAMPLE_S)
            now = time.time()
            for v in viewers:
                if v.live and v.newest_at is not None:
                    v.ages_s.append(now - v.newest_at)

    tasks = [asyncio.create_task(sample_ages())]  # kept: the loop holds tasks weakly
    loads = [asyncio.create_task(start(i, s)) for i, s in enumerate(sessions)]
    await asyncio.gather(*loads)
    deadline = time.monotonic() + READY_WAIT_S
    while not all(v.ready or v.errors for v in viewers) and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    for v in viewers:
        if not v.ready and not v.errors:
            v.errors.append(f"not ready after {READY_WAIT_S:.0f} s: stopped at {v.stage}")
    print(json.dumps({"stages": {v.stage: sum(w.stage == v.stage for w in viewers) for v in viewers}}),
          file=sys.stderr, flush=True)
    print(json.dumps({"ready": sum(v.ready for v in viewers)}), flush=True)
    loop = asyncio.get_running_loop()
    while (await loop.run_in_executor(None, sys.stdin.readline)).strip() == "bytes":
        print(json.dumps({"bytes": sum(v.bytes_ws + v.bytes_stream for v in viewers)}), flush=True)
    tasks[0].cancel()
    return summary(viewers)


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 3)


def summary(viewers: list[Viewer]) -> dict[str, Any]:
    delays = [d for v in viewers for d in v.delays_s]
    ages = [a for v in viewers for a in v.ages_s]
    loads = [v.loaded_s for v in viewers if v.loaded_s is not None]
    return {"viewers": len(viewers), "ready": sum(v.ready for v in viewers),
            "bytes_ws": sum(v.bytes_ws for v in viewers), "bytes_stream": sum(v.bytes_stream for v in viewers),
            "bytes_files": sum(v.bytes_files for v in viewers),
            "delay_p50_s": _pct(delays, 0.5), "delay_p95_s": _pct(delays, 0.95),
            "age_p50_s": _pct(ages, 0.5), "age_p95_s": _pct(ages, 0.95), "age_samples": len(ages),
            "load_p50_s": _pct(loads, 0.5), "load_max_s": round(max(loads), 2) if loads else None,
            "reruns": sum(v.reruns for v in viewers), "disconnects": sum(v.disconnects for v in viewers),
            "errors": [e for v in viewers for e in v.errors][:10],
            "median_events": statistics.median([len(v.delays_s) for v in viewers]) if viewers else 0}


def main(argv: list[str]) -> None:
    # In a room the viewers' browsers are other machines; here they share the server's two cores, so they take only
    # what the server and the training leave (their own CPU is reported apart: emulator_cpu_s).
    os.nice(19)
    url, n = argv[0], int(argv[1])
    files = json.loads(argv[2]) if len(argv) > 2 else []
    query = argv[3] if len(argv) > 3 else ""
    join_over_s = float(argv[4]) if len(argv) > 4 else 0.0
    result = asyncio.run(run_viewers(url, n, files, query=query, join_over_s=join_over_s))
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
