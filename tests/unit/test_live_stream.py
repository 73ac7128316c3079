"""ui.live_routes.events: one subscriber's stream loses no event, whenever the publisher's thread publishes it: while
the stream reads its snapshot, between two of its writes, or while it writes a keep-alive. Each test publishes the
run's end in that window from a thread, as the publisher does, and expects it on the stream within a second (the
stream's keep-alive is made short, so a loop that waited for the next publish would send keep-alives instead)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable

import pytest

from ui import live_routes

WAIT_S = 1.0  # far more than a delivery takes (about 3 ms), far less than a publish that never comes


def event(seq: int, **fields: object) -> bytes:
    return b"data: " + json.dumps({"seq": seq, **fields}).encode() + b"\n\n"


class StandIn:
    """The publisher as the stream uses it: a sequence number, a ring of encoded events, listeners called from the
    publishing thread after each event. ``during_snapshot`` runs between the snapshot's making and its return."""

    def __init__(self) -> None:
        self.seq = 0
        self.ring: list[tuple[int, bytes]] = []
        self.listeners: list[Callable[[], None]] = []
        self.lock = threading.Lock()
        self.during_snapshot: Callable[[], None] | None = None
        self.viewers = 0

    def subscribed(self, delta: int) -> int:
        self.viewers += delta
        return self.viewers

    def want(self, variant: str) -> None:
        pass

    def on_publish(self, listener: Callable[[], None]) -> None:
        self.listeners.append(listener)

    def snapshot(self, variant: str) -> tuple[int, bytes]:
        with self.lock:
            made = (self.seq, event(self.seq, kind="snapshot"))
        if self.during_snapshot is not None:
            self.during_snapshot()
        return made

    def since(self, seq: int, variant: str) -> list[tuple[int, bytes]] | None:
        with self.lock:
            return [(n, data) for n, data in self.ring if n > seq]

    def publish(self, **fields: object) -> None:
        """One event, published from another thread (as the publisher's own thread does), waited for."""

        def run() -> None:
            with self.lock:
                self.seq += 1
                self.ring.append((self.seq, event(self.seq, kind="tick", **fields)))
            for listener in list(self.listeners):
                listener()

        thread = threading.Thread(target=run)
        thread.start()
        thread.join()


async def read_until_end(stream, react: Callable[[bytes], object] = lambda chunk: None) -> list[bytes]:
    """The stream's chunks until the run's end arrives, or the chunks so far once WAIT_S passed without it."""
    got: list[bytes] = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT_S
    while loop.time() < deadline:
        try:
            chunk = await asyncio.wait_for(stream.__anext__(), max(0.01, deadline - loop.time()))
        except asyncio.TimeoutError:
            break
        got.append(chunk)
        if b'"ended"' in chunk:
            break
        result = react(chunk)
        if asyncio.iscoroutine(result):
            await result
    await stream.aclose()
    return got


def ended_in(chunks: list[bytes]) -> bool:
    return any(b'"ended"' in c for c in chunks)


@pytest.fixture(autouse=True)
def short_keepalive(monkeypatch):
    monkeypatch.setattr(live_routes, "KEEPALIVE_S", 0.1)


def test_a_publish_while_the_snapshot_is_read_is_sent():
    pub = StandIn()
    pub.during_snapshot = lambda: pub.publish(state="ended")

    async def main() -> list[bytes]:
        return await read_until_end(live_routes.events(pub, "plain"))

    chunks = asyncio.run(main())
    assert ended_in(chunks), f"the run's end, published while the snapshot was read, was not sent: {chunks}"


def test_a_publish_between_two_writes_is_sent():
    pub = StandIn()

    async def main() -> list[bytes]:
        pub.publish(epoch=1)

        async def react(chunk: bytes) -> None:
            # the stream just wrote the snapshot or an event; the run ends before it looks again, and this loop
            # runs the publisher's notice before the stream resumes
            if b'"snapshot"' in chunk:
                pub.publish(epoch=2)
            elif b'"epoch": 2' in chunk:
                pub.publish(state="ended")
            await asyncio.sleep(0)  # a yield to the loop, no clock: the publisher's notice runs here

        return await read_until_end(live_routes.events(pub, "plain"), react)

    chunks = asyncio.run(main())
    assert any(b'"epoch": 2' in c for c in chunks), chunks
    assert ended_in(chunks), f"the run's end, published while an event was written, was not sent: {chunks}"


def test_a_publish_while_a_keepalive_is_written_is_sent():
    pub = StandIn()

    async def main() -> list[bytes]:
        async def react(chunk: bytes) -> None:
            if chunk.startswith(b": keepalive"):
                pub.publish(state="ended")
                await asyncio.sleep(0)  # a yield to the loop, no clock: the publisher's notice runs here

        return await read_until_end(live_routes.events(pub, "plain"), react)

    chunks = asyncio.run(main())
    assert any(c.startswith(b": keepalive") for c in chunks), "no keep-alive was written: the test did not run"
    keepalive = next(c for c in chunks if c.startswith(b": keepalive"))
    assert b"\nevent: ping\n" in keepalive and keepalive.endswith(b"\n\n"), \
        "the keep-alive is an event the browser hears (its stall check, ui/static/live-feed.js)"
    assert ended_in(chunks), f"the run's end, published across a keep-alive, was not sent: {chunks}"


def test_every_event_goes_once_and_in_order_whatever_the_timing():
    """Many publishes from a thread while the stream writes: each event once, in order, none lost."""
    pub = StandIn()
    total = 200

    async def main() -> list[bytes]:
        def publish_all() -> None:
            for i in range(total - 1):
                pub.publish(epoch=i)
            pub.publish(state="ended")

        stream = live_routes.events(pub, "plain")
        first = await stream.__anext__()  # retry line
        publisher = threading.Thread(target=publish_all)
        publisher.start()

        async def react(chunk: bytes) -> None:
            await asyncio.sleep(0)  # a yield to the loop, no clock: the publishing thread's notices interleave

        try:
            chunks = [first, *await read_until_end(stream, react)]
        finally:
            publisher.join()
        return chunks

    chunks = asyncio.run(main())
    seqs = [json.loads(c[6:])["seq"] for c in chunks if c.startswith(b"data: ")]
    snapshot_seq = seqs[0]
    assert seqs[1:] == list(range(snapshot_seq + 1, total + 1)), seqs
