"""The live stream measured end to end: how long an epoch's end takes to reach every viewer, and what one update
costs the publisher early and late in a run.

    python -m benchmarks.live_latency cost --epochs 5 --epochs 2000
    python -m benchmarks.live_latency latency --viewers 1 --viewers 100 --viewers 1000 --seconds 40

- ``cost``: the Train page's publisher (ui.live.make_publisher's charts: grown from the new readings) on a run of
  0.5 s samples and 2 s epochs, stopped at epoch N: the publisher thread's CPU time for one update (four samples and
  an epoch's end), median of ``--repeats``. The header's and the sidebar's words are not in the figure.
- ``latency``: a server (uvicorn, the stream's route, ui/live_routes.py) in a process of its own, publishing a paced
  run (a sample every 0.5 s, an epoch every 2 s) that wakes the publisher as the supervisor does
  (``Publisher.poke``); ``--viewers`` clients in a second process, each an HTTP/1.1 connection reading the stream as
  a browser's EventSource does. Latency: from the epoch's end (the server's wall clock, which it reports at the
  end) to the moment each viewer has read the event with that epoch's bar; p50, p95 and max over every viewer and epoch.
  Both processes share the machine's clock. ``published_*``: from the epoch's end to the event's making (the
  coalescing and the publisher's work), the rest is delivery. The server's CPU while they watch is its process' CPU
  time over the window.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_S = 0.5
EPOCH_S = 2.0


def _sample(i: int) -> dict[str, Any]:
    return {"t_s": i * SAMPLE_S, "cpu_percent": float(30 + i % 60), "process_cpu_percent": 100.0 + i % 40,
            "ram_used_mib": 4000.0 + i % 100, "process_rss_mib": 900.0 + i % 50, "gpus": []}


def _epoch(e: int) -> dict[str, Any]:
    return {"epoch": e, "epoch_seconds": EPOCH_S, "includes_tracing": e == 1, "t_start_s": 1.0 + (e - 1) * EPOCH_S,
            "t_end_s": 1.0 + e * EPOCH_S, "samples_per_s": 1000.0, "loss": 1.0 / e, "val_loss": 1.1 / e,
            "accuracy": 1 - 1 / (e + 1), "val_accuracy": 1 - 1 / (e + 2)}


class PacedRun:
    """A run as the publisher reads it (the fields of a RunSnapshot the Train page's charts use), grown by hand."""

    def __init__(self) -> None:
        from bench.vocab.readings import epochs_of, samples_of
        from bench.vocab.run_info import Phase

        self._epochs_of, self._samples_of = epochs_of, samples_of
        self.phases = (Phase(phase="importing torch", t_s=0.0), Phase(phase="training", t_s=1.0))
        self.epochs: list[Any] = []
        self.samples: list[Any] = []
        self.ended_at: dict[int, float] = {}  # epoch -> wall time of its end

    def add(self, samples: int, epochs: int) -> None:
        start = len(self.samples)
        self.samples += self._samples_of([_sample(i) for i in range(start, start + samples)])
        first = len(self.epochs) + 1
        self.epochs += self._epochs_of([_epoch(e) for e in range(first, first + epochs)])
        for e in range(first, first + epochs):
            self.ended_at[e] = time.time()

    def snapshot(self) -> SimpleNamespace:
        last = self.epochs[-1].epoch if self.epochs else 0
        return SimpleNamespace(id=1, created_at=1.0, status="running", active=True, epochs=tuple(self.epochs),
                               samples=tuple(self.samples), info=SimpleNamespace(phases=self.phases),
                               last_epoch=last, last_end=self.ended_at.get(last))


def make_publisher(run: PacedRun) -> Any:
    from ui import live, live_feed

    return live_feed.Publisher(
        run.snapshot, header=lambda s: None, line=lambda s: None, charts=live._chart_keys, figures=live._figures,
        grow=live.GROW)


# -- cost -----------------------------------------------------------------------------------------------------------
def cost(at_epoch: int, repeats: int) -> dict[str, Any]:
    run = PacedRun()
    n = int((1.0 + at_epoch * EPOCH_S) / SAMPLE_S)
    run.add(n, at_epoch)
    box = [run.snapshot()]
    publisher = make_publisher(run)
    publisher.refresh(force=True)  # the whole charts, once
    steps = []
    for _ in range(repeats):
        run.add(4, 1)
        steps.append(run.snapshot())
    publisher._current = lambda: box[0]
    cpu_ms, sizes = [], []
    for step in steps:
        box[0] = step
        seq = publisher.seq
        t = time.thread_time()
        publisher.refresh(force=True)
        cpu_ms.append((time.thread_time() - t) * 1000)
        sizes.append(sum(len(d) for _, d in publisher.since(seq, "plain") or []))
    return {"epoch": at_epoch, "way": "grown", "cpu_ms_median": statistics.median(cpu_ms),
            "cpu_ms_max": max(cpu_ms), "event_bytes": statistics.median(sizes), "repeats": repeats}


# -- latency: the server ----------------------------------------------------------------------------------------------
def serve(port: int, seconds: float) -> None:
    """A stream server publishing a paced run; prints its CPU time over the watched window as JSON on stdout."""
    import uvicorn
    from starlette.applications import Starlette

    from ui import live_feed, live_routes

    run = PacedRun()
    run.add(3, 0)
    publisher = make_publisher(run)
    live_feed.install("train", run, lambda: publisher)
    publisher.refresh(force=True)

    def pace() -> None:
        k = 0
        while True:
            time.sleep(SAMPLE_S)
            k += 1
            run.add(1, 1 if k % round(EPOCH_S / SAMPLE_S) == 0 else 0)
            publisher.poke()  # as the supervisor's on_change does

    threading.Thread(target=pace, daemon=True).start()
    config = uvicorn.Config(Starlette(routes=live_routes.routes()), host="127.0.0.1", port=port, log_level="warning")
    server = uvicorn.Server(config)

    def report() -> None:
        # the window: from the clients' signal (a file) to ``seconds`` later
        flag = Path(os.environ["LIVE_LATENCY_FLAG"])
        while not flag.exists():
            time.sleep(0.1)
        start = time.process_time()
        time.sleep(seconds)
        print(json.dumps({"server_cores": (time.process_time() - start) / seconds, "viewers": publisher.viewers,
                          "ended_at": run.ended_at}), flush=True)

    threading.Thread(target=report, daemon=True).start()
    server.run()


# -- latency: the viewers ---------------------------------------------------------------------------------------------
async def _viewer(port: int, got: list[tuple[int, float, float]], stop: asyncio.Event, ready: list[int]) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET /bench/live?feed=train HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\n"
                 f"\r\n".encode())
    await writer.drain()
    ready[0] += 1
    buffer = b""
    while not stop.is_set():
        try:
            chunk = await asyncio.wait_for(reader.read(65536), 1.0)
        except asyncio.TimeoutError:
            continue
        if not chunk:
            break
        now = time.time()
        buffer += chunk
        while b"\n\n" in buffer:
            event, buffer = buffer.split(b"\n\n", 1)
            at = event.find(b"data: {")
            if at < 0:
                continue
            body = event[at + 6:]
            if b'"epochs":{"op":"extend"' not in body.replace(b" ", b""):
                continue
            msg = json.loads(body)
            for epoch in msg["charts"]["epochs"]["groups"][0]["update"]["x"][0]:
                got.append((epoch, now, msg["at"]))
    writer.close()


CLIENT_CORES = [0.0]  # the viewers' process over the window: near 1.0, the viewers themselves are what is slow


async def _watch(port: int, viewers: int, seconds: float, flag: Path) -> list[tuple[int, float, float]]:
    got: list[tuple[int, float, float]] = []
    stop = asyncio.Event()
    ready = [0]
    tasks = [asyncio.create_task(_viewer(port, got, stop, ready)) for _ in range(viewers)]
    while ready[0] < viewers:
        await asyncio.sleep(0.05)
    await asyncio.sleep(2.0)  # every snapshot read
    got.clear()
    flag.write_text("go")
    start = time.process_time()
    await asyncio.sleep(seconds)
    CLIENT_CORES[0] = (time.process_time() - start) / seconds
    stop.set()
    await asyncio.gather(*tasks, return_exceptions=True)
    return got


def latency(viewers: int, seconds: float) -> dict[str, Any]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    flag = Path(f"/tmp/live-latency-{os.getpid()}-{viewers}")
    flag.unlink(missing_ok=True)
    env = {**os.environ, "LIVE_LATENCY_FLAG": str(flag)}
    server = subprocess.Popen([sys.executable, "-m", "benchmarks.live_latency", "serve", "--port", str(port),
                               "--seconds", str(seconds)], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        got = asyncio.run(_watch(port, viewers, seconds, flag))
        assert server.stdout is not None
        line = server.stdout.readline()
        server_figures = json.loads(line) if line else {}
    finally:
        server.terminate()
        server.wait(10)
        flag.unlink(missing_ok=True)
    ended = {int(k): v for k, v in server_figures.pop("ended_at", {}).items()}
    ms = sorted((now - ended[e]) * 1000 for e, now, _ in got if e in ended)
    published = sorted((at - ended[e]) * 1000 for e, _, at in got if e in ended)

    def pick(values: list[float], q: float) -> float | None:
        return round(values[min(len(values) - 1, int(q * len(values)))], 1) if values else None

    return {"viewers": viewers, "deliveries": len(ms), "p50_ms": pick(ms, 0.5), "p95_ms": pick(ms, 0.95),
            "max_ms": pick(ms, 1.0), "published_p50_ms": pick(published, 0.5),
            "published_p95_ms": pick(published, 0.95), **server_figures, "client_cores": round(CLIENT_CORES[0], 3), "load_avg": os.getloadavg()[0]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=("cost", "latency", "serve"))
    parser.add_argument("--epochs", type=int, action="append", help="cost: the epoch to measure at (repeatable)")
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--viewers", type=int, action="append", help="latency: viewers (repeatable)")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    if args.what == "serve":
        serve(args.port, args.seconds)
        return
    if args.what == "cost":
        for at in args.epochs or [5, 2000]:
            print(json.dumps(cost(at, args.repeats)), flush=True)
        return
    for viewers in args.viewers or [1, 100]:
        print(json.dumps(latency(viewers, args.seconds)), flush=True)


if __name__ == "__main__":
    main()
