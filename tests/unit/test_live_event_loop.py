"""The stream's side of a live feed never waits on the publishing side: the server's event loop never takes the
publisher's lock (which the publishing thread holds while it reads a run, itself waiting on the run's lock while a
training thread holds it), and a stream goes on sending what was published while that lock is held."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

from tests.unit.test_live_feed import Clock, Run, make
from ui import live_feed, live_routes

WAIT_S = 10.0  # far more than any step takes; a stream that waited on the lock would wait for ever


class RecordingLock:
    """The publisher's lock, recording every thread that takes it."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.threads: set[int] = set()

    def acquire(self, *args: Any, **kwargs: Any) -> bool:
        self.threads.add(threading.get_ident())
        return self.lock.acquire(*args, **kwargs)

    def release(self) -> None:
        self.lock.release()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def seq_of(chunk: bytes) -> int | None:
    return json.loads(chunk[6:-2])["seq"] if chunk.startswith(b"data: ") else None


def in_thread(body: Any) -> None:
    """Run ``body`` (an event loop of its own) in a thread, failing if it does not end within WAIT_S."""
    failed: list[BaseException] = []

    def run() -> None:
        try:
            body()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            failed.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(WAIT_S)
    assert not thread.is_alive(), "the event loop was held up"
    if failed:
        raise failed[0]



class Heartbeat:
    """The event loop's heartbeat: a task that counts its turns, each a hundredth of a second apart (it runs while
    the loop is free; a loop blocked on a lock counts none)."""

    def __init__(self) -> None:
        self.beats = 0

    async def beat(self) -> None:
        while True:
            self.beats += 1
            await asyncio.sleep(0.01)  # stand-in: the heartbeat's pace

def test_the_event_loop_never_takes_the_publishers_lock():
    box: list[Run | None] = [Run(n_samples=4)]
    pub = make(box, Clock())
    recording = RecordingLock()
    pub._lock = recording  # type: ignore[assignment]
    pub.refresh(force=True)
    loop_threads: set[int] = set()

    def publish() -> None:
        for n in range(5, 25):
            box[0] = Run(n_epochs=n // 4, n_samples=n)
            pub.refresh(force=True)
            threading.Event().wait(0.01)

    async def watch() -> list[int]:
        loop_threads.add(threading.get_ident())
        stream = live_routes.events(pub, "plain")
        seen: list[int] = []
        publisher = threading.Thread(target=publish)
        try:
            async for chunk in stream:
                seq = seq_of(chunk)
                if seq is not None:
                    seen.append(seq)
                    if len(seen) == 1:
                        publisher.start()  # the events below are published while the stream waits and writes
                if seen and seen[-1] >= 21:
                    break
        finally:
            await stream.aclose()
            publisher.join()
        return seen

    seen: list[int] = []
    try:
        in_thread(lambda: seen.extend(asyncio.run(watch())))
    finally:
        pub.close()
    assert seen == list(range(seen[0], 22)), seen
    assert recording.threads, "the publishing side took the lock"
    assert not loop_threads & recording.threads, "the event loop took the publisher's lock"



def test_a_stream_sends_what_was_published_while_the_publishing_side_holds_its_lock(monkeypatch):
    monkeypatch.setattr(live_routes, "KEEPALIVE_S", 0.1)
    box: list[Run | None] = [Run(n_samples=4)]
    pub = make(box, Clock())
    pub.refresh(force=True)
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:  # a publish under way, waiting on a run a training thread holds
        with pub._lock:
            holding.set()
            release.wait(WAIT_S)

    async def watch() -> None:
        stream = live_routes.events(pub, "plain")
        try:
            assert (await stream.__anext__()).startswith(b"retry")
            first = seq_of(await stream.__anext__())
            for n in (5, 6):  # two events the stream has not sent yet
                box[0] = Run(n_samples=n)
                pub.refresh(force=True)
            holder.start()
            assert holding.wait(WAIT_S)
            heart = Heartbeat()
            beating = asyncio.create_task(heart.beat())
            got = [seq_of(await stream.__anext__()), seq_of(await stream.__anext__())]
            assert got == [first + 1, first + 2], got
            assert await stream.__anext__() == live_routes.KEEPALIVE, "nothing new: a keep-alive, not a wait"
            # the stream's side of the publisher, called on the loop while the lock is held
            assert pub.since(first, "plain") is not None and pub.viewers == 1
            pub.want("present")
            pub.on_publish(lambda: None)
            assert pub.subscribed(+1) == 2 and pub.subscribed(-1) == 1
            assert pub.header is not None and pub.seq == first + 2
            deadline = time.monotonic() + 10
            while heart.beats < 3 and time.monotonic() < deadline:  # the heartbeat goes on while the lock is held
                await asyncio.sleep(0)
            beating.cancel()
            assert heart.beats >= 3, "the loop stood still"
        finally:
            release.set()
            await stream.aclose()

    holder = threading.Thread(target=hold, daemon=True)
    try:
        in_thread(lambda: asyncio.run(watch()))
    finally:
        release.set()
        pub.close()


def test_a_subscriber_starts_the_publishers_loop_once_and_the_loop_ends_when_all_have_left(monkeypatch):
    monkeypatch.setattr(live_feed, "IDLE_STOP_S", 0.0)
    monkeypatch.setattr(live_feed, "TICK_S", 0.02)
    pub = make([Run(n_samples=4)], Clock())
    pub._clock = time.monotonic  # the idle time on the real clock
    try:
        assert pub.subscribed(+1) == 1 and pub.subscribed(+1) == 2
        first = pub._thread
        assert first is not None and first.is_alive()
        assert pub._thread is first, "a second subscriber starts no second loop"
        pub.subscribed(-1)
        pub.subscribed(-1)
        first.join(WAIT_S)
        assert not first.is_alive(), "the loop did not end with no one watching"
        assert pub.subscribed(+1) == 1 and pub._thread is not first and pub._thread.is_alive(), \
            "a subscriber after the end starts a new loop"
    finally:
        pub.close()
