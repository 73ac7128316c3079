"""The small checks every reader of outside data shares (is it a number, a whole number, a JSON object) and the one
shape of their error: a RecordError naming the field's path, what it held, and what to do. A leaf: bench.typed (the
declared records' reader) and bench.readings build on it."""

from __future__ import annotations

from typing import Any

from bench import limits
from bench.errors import RecordError

EXPORT_HINT = "export a run with `python -m bench export ID --format json`"


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def show_value(value: Any, limit: int = 60) -> str:
    """A short repr of an offending value for an error message."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def fail(path: str, problem: str) -> RecordError:
    where = f"{path} " if path else ""
    return RecordError(f"{where}{problem}; fix the file or {EXPORT_HINT}")


def json_object(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise fail(path, f"must be a JSON object, got {show_value(value)}")
    return value


def check_number(value: Any, key: str, path: str) -> float:
    """``value`` as the number field ``key`` may hold (bench.limits.BOUNDS); RecordError naming ``path`` if not."""
    wrong = limits.problem(value, key)
    if wrong is not None:
        raise fail(path, wrong)
    return value
