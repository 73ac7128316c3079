"""Poll with a deadline instead of fixed sleeps."""

from __future__ import annotations

import time
from typing import Any, Callable


def wait_for(predicate: Callable[[], Any], timeout_s: float = 30.0, what: str = "condition", poll_s: float = 0.1) -> Any:
    """Return the first truthy value of predicate(); fail the test after timeout_s."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(poll_s)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
