"""A small LRU cache shared by every browser session of the server, that builds each value once (single flight).

Viewers of one live run rerun their panels at about the same moment; with a plain cache each of them misses the
new chart window's figure and builds it again, and the server's one interpreter falls behind
(docs/PERFORMANCE-METHOD.md, 'Many viewers of one run'). Here the first caller builds, the others wait for its value.
A build that raises is not cached: the waiters try again themselves.

Streamlit's ``st.cache_resource`` also locks per key, but it hashes its arguments, needs a script run around it for
its messages, and keeps its entries out of sight; this one is plain Python, tested without a server.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class SharedCache(Generic[V]):
    """At most ``maxsize`` values by key, least recently used dropped first; ``get`` builds a missing one once."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._values: OrderedDict[Hashable, V] = OrderedDict()
        self._building: dict[Hashable, threading.Event] = {}
        self._lock = threading.Lock()
        self.builds = 0  # how many values were built: the tests' view of the sharing

    def __len__(self) -> int:
        with self._lock:
            return len(self._values)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._values

    def get(self, key: Hashable, build: Callable[[], V]) -> V:
        while True:
            with self._lock:
                if key in self._values:
                    self._values.move_to_end(key)
                    return self._values[key]
                pending = self._building.get(key)
                if pending is None:
                    pending = self._building[key] = threading.Event()
                    break
            pending.wait()  # another session builds it; then look again (it may have failed: build it here)
        try:
            value = build()
            with self._lock:
                self.builds += 1
                self._values[key] = value
                while len(self._values) > self.maxsize:
                    self._values.popitem(last=False)
            return value
        finally:
            with self._lock:
                del self._building[key]
            pending.set()
