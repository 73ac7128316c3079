"""ui.shared_cache.SharedCache: concurrent callers of one key share one build; a failed build is not cached."""

from __future__ import annotations

import threading
import types

import pytest

from ui import shared_cache
from ui.shared_cache import SharedCache


@pytest.fixture
def waiting(monkeypatch: pytest.MonkeyPatch) -> threading.Semaphore:
    """Released once by each caller that starts waiting for a build under way, so a test knows a caller is blocked
    there instead of guessing with a sleep (the cache's in-flight marker is an Event; this one reports its waits)."""
    waits = threading.Semaphore(0)

    class ReportedEvent(threading.Event):
        def wait(self, timeout: float | None = None) -> bool:
            waits.release()
            return super().wait(timeout)

    monkeypatch.setattr(shared_cache, "threading", types.SimpleNamespace(Lock=threading.Lock, Event=ReportedEvent))
    return waits


def test_concurrent_callers_of_one_key_get_one_build(waiting: threading.Semaphore):
    cache: SharedCache[object] = SharedCache(4)
    calls, gate = [], threading.Event()

    def build() -> object:
        calls.append(threading.current_thread().name)
        gate.wait(5)  # every other caller arrives while this build is still going
        return object()

    got: list[object] = []
    threads = [threading.Thread(target=lambda: got.append(cache.get("k", build)), name=f"viewer-{i}")
               for i in range(5)]
    for t in threads:
        t.start()
    for _ in range(4):  # every caller but the builder waits for its build
        assert waiting.acquire(timeout=5), "a caller did not wait for the build under way"
    gate.set()
    for t in threads:
        t.join(5)
    assert len(calls) == 1, f"built by {calls}"
    assert len(got) == 5 and all(v is got[0] for v in got)
    assert cache.builds == 1


def test_different_keys_build_apart_and_the_oldest_is_dropped():
    cache: SharedCache[int] = SharedCache(2)
    for n in range(3):
        assert cache.get(n, lambda n=n: n * 10) == n * 10
    assert 0 not in cache and 1 in cache and 2 in cache and len(cache) == 2
    cache.get(1, lambda: -1)  # used: now the newest
    cache.get(3, lambda: 30)
    assert 2 not in cache and cache.get(1, lambda: -1) == 10


def test_a_failed_build_is_not_cached_and_a_waiter_builds_again(waiting: threading.Semaphore):
    cache: SharedCache[str] = SharedCache(2)
    started, release = threading.Event(), threading.Event()

    def failing() -> str:
        started.set()
        release.wait(5)
        raise RuntimeError("no data")

    errors: list[BaseException] = []

    def first() -> None:
        try:
            cache.get("k", failing)
        except RuntimeError as exc:
            errors.append(exc)

    t = threading.Thread(target=first)
    t.start()
    started.wait(5)
    waiter: list[str] = []
    w = threading.Thread(target=lambda: waiter.append(cache.get("k", lambda: "built by the waiter")))
    w.start()
    assert waiting.acquire(timeout=5), "the second caller did not wait for the build under way"
    assert w.is_alive() and not waiter, "the waiter waits for the build under way"
    release.set()
    t.join(5)
    w.join(5)
    assert errors and waiter == ["built by the waiter"]
    with pytest.raises(ValueError):
        cache.get("x", lambda: (_ for _ in ()).throw(ValueError("bad")))
    assert "x" not in cache
