"""Poll with a deadline instead of fixed sleeps: the one wait loop of the tests, benchmarks.common.wait_for (the
benchmarks' own), failing the test where it times out."""

from __future__ import annotations

from typing import Any, Callable

from benchmarks.common import wait_for as _wait_for


def wait_for(predicate: Callable[[], Any], timeout_s: float = 30.0, what: str = "condition", poll_s: float = 0.1) -> Any:
    """Return the first truthy value of predicate(); fail the test after timeout_s."""
    try:
        return _wait_for(predicate, timeout_s, what, poll_s)
    except TimeoutError as exc:
        raise AssertionError(str(exc)) from None
