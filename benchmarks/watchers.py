"""Watchers of the watch page, emulated at the HTTP level as a phone's browser loads it: each fetches every file the
page needs (the list a real Chromium fetched, benchmarks/classroom.py), gzip accepted, on one keep-alive connection,
then opens the stream on a second one and reads it until told to stop.

    python -m benchmarks.watchers URL N FILES_JSON JOIN_OVER_S

Prints one JSON line once every watcher holds its first snapshot (``joined_s``: from the first request to the last
watcher's snapshot; ``first_load_bytes``: the median watcher's bytes on the wire, files and the stream's first
snapshot), then, for each line on stdin: ``bytes`` -> the stream's bytes so far; ``stop`` -> the summary, and exits.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import time
from typing import Any
from urllib.parse import urlsplit


class Watcher:
    def __init__(self) -> None:
        self.file_bytes = 0
        self.snapshot_bytes = 0
        self.stream_bytes = 0
        self.joined_at: float | None = None
        self.error: str | None = None
        self.disconnected = False


async def _request(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str, path: str) -> int:
    """One GET on a keep-alive connection: the bytes received (headers and body)."""
    writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nAccept-Encoding: gzip\r\nConnection: keep-alive\r\n\r\n"
                 .encode())
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    status = head.split(b" ", 2)[1]
    if status not in (b"200", b"304"):
        raise RuntimeError(f"{path}: HTTP {status.decode()}")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    if length:
        await reader.readexactly(length)
    return len(head) + length


async def watch(w: Watcher, host: str, port: int, files: list[str], stream: str, stop: asyncio.Event) -> None:
    try:
        reader, writer = await asyncio.open_connection(host, port)
        for path in files:
            w.file_bytes += await _request(reader, writer, f"{host}:{port}", path)
        writer.close()
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(f"GET {stream} HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: text/event-stream\r\n\r\n".encode())
        await writer.drain()
        got = b""
        while not stop.is_set():
            try:
                chunk = await asyncio.wait_for(reader.read(65536), 1.0)
            except asyncio.TimeoutError:
                continue
            if not chunk:
                w.disconnected = True
                break
            w.stream_bytes += len(chunk)
            if w.joined_at is None:
                got += chunk
                at = got.find(b'"kind":"snapshot"')
                if at >= 0 and got.find(b"\n\n", at) >= 0:  # the snapshot whole
                    w.joined_at = time.monotonic()
                    w.snapshot_bytes = w.stream_bytes
                    got = b""
        writer.close()
    except Exception as exc:  # noqa: BLE001 - counted, reported
        w.error = f"{type(exc).__name__}: {exc}"


async def main(url: str, n: int, files: list[str], join_over_s: float) -> None:
    parts = urlsplit(url)
    host, port = parts.hostname or "localhost", parts.port or 80
    stream = "/bench/live?feed=train&variant=plain"
    stop = asyncio.Event()
    watchers = [Watcher() for _ in range(n)]
    t0 = time.monotonic()
    tasks = []
    for i, w in enumerate(watchers):
        tasks.append(asyncio.create_task(watch(w, host, port, files, stream, stop)))
        if join_over_s:
            await asyncio.sleep(join_over_s / n)
    while any(w.joined_at is None and w.error is None and not w.disconnected for w in watchers):
        await asyncio.sleep(0.1)
        if time.monotonic() - t0 > 600:
            break
    joined = [w.joined_at - t0 for w in watchers if w.joined_at is not None]
    first = [w.file_bytes + w.snapshot_bytes for w in watchers if w.joined_at is not None]
    print(json.dumps({"ready": len(joined), "joined_s": round(max(joined), 2) if joined else None,
                      "joined_p50_s": round(statistics.median(joined), 2) if joined else None,
                      "first_load_bytes": round(statistics.median(first)) if first else None,
                      "file_bytes": round(statistics.median([w.file_bytes for w in watchers])),
                      "errors": sorted({w.error for w in watchers if w.error})[:5],
                      "failed": sum(1 for w in watchers if w.error)}), flush=True)
    loop = asyncio.get_running_loop()
    while True:
        line = (await loop.run_in_executor(None, sys.stdin.readline)).strip()
        if line == "bytes":
            print(json.dumps({"bytes": sum(w.stream_bytes for w in watchers)}), flush=True)
        elif line in ("stop", ""):
            stop.set()
            await asyncio.gather(*tasks, return_exceptions=True)
            print(json.dumps({"bytes_stream": sum(w.stream_bytes for w in watchers),
                              "disconnects": sum(1 for w in watchers if w.disconnected),
                              "failed": sum(1 for w in watchers if w.error)}), flush=True)
            return


if __name__ == "__main__":
    # the lowest priority, as benchmarks/viewers.py: in a room the watchers are other machines, here they share the
    # server's two cores and would otherwise take the training's
    os.nice(19)
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3]), float(sys.argv[4])))
