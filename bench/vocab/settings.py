"""Process-wide defaults, each overridable by a documented environment variable.

| variable                   | default                           | meaning                                             |
|----------------------------|-----------------------------------|-----------------------------------------------------|
| BENCH_STORE                | ~/.local/share/bench/runs.sqlite3 | SQLite file holding runs, epochs and samples        |
| BENCH_STORE_BUSY_TIMEOUT_S | 30                                | a store write waits this long for another           |
|                            |                                   | process's write before the store counts as failing  |
| BENCH_HANG_TIMEOUT_S       | 300                               | a worker silent this long is ended as hung          |
| BENCH_STOP_GRACE_S         | 5                                 | after Stop, seconds before the worker is killed     |
| BENCH_HEARTBEAT_LIMIT_S    | 30                                | a run whose owner on another host has not           |
|                            |                                   | renewed its heartbeat this long is interrupted      |
| BENCH_PRESENTER_KEY        | (unset)                           | when set, starting/stopping/deleting needs it       |
| BENCH_PRESTART             | 1                                 | dashboard keeps a worker with the framework         |
|                            |                                   | loaded for the next run (0: every run cold)         |
| KERAS_BACKEND              | tensorflow                        | tensorflow, jax or torch                            |
| BENCH_WORKER_TARGET        | (unset: the training worker)      | module:name of a worker stand-in the dashboard and  |
|                            |                                   | the CLI run instead (tests replay runs with one)    |
| BENCH_PEAK_TARGET          | (unset: the matmul peak probe)    | module:name of a peak stand-in the dashboard and    |
|                            |                                   | the CLI ask instead of probing (tests replay a peak |
|                            |                                   | with one, as they replay runs)                      |
| BENCH_MLFLOW_URI           | (unset: no MLflow logging)        | MLflow tracking URI: the dashboard's setting, and   |
|                            |                                   | where `--mlflow` without a URI logs                 |
| BENCH_MLFLOW_EXPERIMENT    | bench                             | the MLflow experiment runs are logged under         |
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

BACKENDS = ("tensorflow", "jax", "torch")


def env(name: str, environ: Mapping[str, str] | None = None) -> str:
    """The one reading of a variable: its text in ``environ`` (the process environment by default), "" when unset."""
    source = os.environ if environ is None else environ
    return source[name] if name in source else ""


def store_path() -> Path:
    """Where the SQLite store lives (BENCH_STORE overrides)."""
    raw = env("BENCH_STORE")
    if raw:
        return Path(raw).expanduser()
    return Path.home() / ".local" / "share" / "bench" / "runs.sqlite3"


def _float_env(name: str, default: float) -> float:
    raw = env(name)
    if raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a number of seconds; unset it or give e.g. {name}={default:g}") from None
    if value <= 0:
        raise ValueError(f"{name}={raw!r} must be > 0 seconds")
    return value


def hang_timeout_s() -> float:
    """Seconds without any event from a worker before it is declared hung."""
    return _float_env("BENCH_HANG_TIMEOUT_S", 300.0)


def stop_grace_s() -> float:
    """Seconds a worker gets to stop cooperatively before it is terminated."""
    return _float_env("BENCH_STOP_GRACE_S", 5.0)


def store_busy_timeout_s() -> float:
    """Seconds a store write waits for another process's write before the store counts as failing
    (BENCH_STORE_BUSY_TIMEOUT_S; default 30)."""
    return _float_env("BENCH_STORE_BUSY_TIMEOUT_S", 30.0)


def heartbeat_limit_s() -> float:
    """Seconds after an owner's last heartbeat before another host's run counts as interrupted (owners renew it every
    sixth of this)."""
    return _float_env("BENCH_HEARTBEAT_LIMIT_S", 30.0)


DEFAULT_BACKEND = "tensorflow"


def default_backend(environ: Mapping[str, str] | None = None) -> str:
    """The Keras backend in force: ``KERAS_BACKEND`` of ``environ`` (the process environment by default), stripped and
    lowercased; "tensorflow" when unset or empty."""
    return (env("KERAS_BACKEND", environ) or DEFAULT_BACKEND).strip().lower() or DEFAULT_BACKEND


ON = ("1", "true", "yes", "on")
OFF = ("0", "false", "no", "off")


def switch(name: str, default: bool, environ: Mapping[str, str] | None = None, *, on: str = "",
           off: str = "") -> bool:
    """The one reading of an on/off variable: 1, true, yes or on; 0, false, no or off; unset or empty: ``default``.
    ``on`` and ``off`` say what each does, for the message.

    Raises:
        ValueError: the variable holds anything else (the message names it and the values it takes).
    """
    raw = env(name, environ).strip().lower()
    if not raw:
        return default
    if raw in ON:
        return True
    if raw in OFF:
        return False
    raise ValueError(f"{name}={raw!r} must be 1{f' ({on})' if on else ''} or 0{f' ({off})' if off else ''}")


def prestart_worker() -> bool:
    """Whether the dashboard keeps a pre-started worker for the next run (BENCH_PRESTART=0 turns it off)."""
    return switch("BENCH_PRESTART", True)


def _stand_in(name: str, example: str, real: str) -> Callable[..., Any] | None:
    """The callable the variable ``name`` names as "module:name" (importable by a spawned process), or None when it is
    unset; ``example`` is a value it takes, ``real`` what runs when it is unset (both for the message).

    Raises:
        ValueError: the variable is not "module:name", or names nothing callable.
    """
    raw = env(name).strip()
    if not raw:
        return None
    module, _, attr = raw.partition(":")
    try:
        target = getattr(importlib.import_module(module), attr) if module and attr else None
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"{name}={raw!r} cannot be loaded ({exc}); unset it for {real}") from None
    if not callable(target):
        raise ValueError(f"{name}={raw!r} must name a callable as module:name, e.g. {example}; unset it for {real}")
    return target


def worker_target() -> Callable[..., None] | None:
    """The worker stand-in (dashboard and CLI) named by BENCH_WORKER_TARGET ("module:name", e.g.
    benchmarks.standins:PACED_WORKER, importable by a spawned process), or None for the training worker.

    Raises:
        ValueError: the variable is not "module:name", or names nothing callable.
    """
    return _stand_in("BENCH_WORKER_TARGET", "benchmarks.standins:PACED_WORKER", "the training worker")


def peak_target() -> Callable[..., Any] | None:
    """The peak stand-in (dashboard and CLI) named by BENCH_PEAK_TARGET ("module:name", e.g.
    benchmarks.standins:replayed_peak), called as bench.hardware.probe.cached_peak is (device, cpu_threads=,
    refresh=) in its place; or None for the matmul peak probe. A stand-in's entry says it was not measured (its
    ``backend`` is "replayed", which bench.hardware.peak_cache.describe tells), so a page never shows it as a probe's.

    Raises:
        ValueError: the variable is not "module:name", or names nothing callable.
    """
    return _stand_in("BENCH_PEAK_TARGET", "benchmarks.standins:replayed_peak", "the matmul peak probe")


MLFLOW_SCHEMES = ("http", "https", "sqlite", "postgresql", "mysql", "mssql", "file", "databricks")


def parse_mlflow_uri(text: str) -> str:
    """An MLflow tracking URI as typed (an option, the dashboard's field, BENCH_MLFLOW_URI), stripped; the one check
    of what one looks like: a scheme MLflow tracks to (a database's driver after ``+`` allowed) and no blanks.

    Raises:
        ValueError: empty, blanks or controls inside, or no known scheme; the message gives examples.
    """
    uri = text.strip()
    scheme = uri.partition(":")[0].partition("+")[0].lower()
    blanks = any(c.isspace() or not c.isprintable() for c in uri)
    if not uri or blanks or ":" not in uri or scheme not in MLFLOW_SCHEMES:
        raise ValueError(f"{text!r} is not an MLflow tracking URI: give one starting with "
                         f"{', '.join(s + ':' for s in MLFLOW_SCHEMES)}, e.g. http://localhost:5000 or "
                         "sqlite:///mlflow.db")
    return uri


def mlflow_uri() -> str | None:
    """The MLflow tracking URI of BENCH_MLFLOW_URI, or None when unset.

    Raises:
        ValueError: the variable is set to something that is not a tracking URI.
    """
    raw = env("BENCH_MLFLOW_URI").strip()
    if not raw:
        return None
    try:
        return parse_mlflow_uri(raw)
    except ValueError as exc:
        raise ValueError(f"BENCH_MLFLOW_URI: {exc}; or unset it") from None


def mlflow_experiment() -> str:
    """The MLflow experiment runs are logged under (BENCH_MLFLOW_EXPERIMENT; default "bench")."""
    return env("BENCH_MLFLOW_EXPERIMENT").strip() or "bench"
