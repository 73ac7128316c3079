"""``GET {base}/metrics``: this machine and the current run in Prometheus's text format (bench.output.prometheus),
one text shared by every scrape within a second. Read-only; ``BENCH_METRICS=0`` turns it off (it then answers 404).

ui/live_routes.py mounts it beside the live stream. The run's figures come from the server's JobManager, which the
first page view makes: app.py hands it here at every page view (:func:`follow`). Until then a scrape shows the
machine alone (its GPUs, CPU and memory), and never makes the JobManager itself (that would start the spare worker).

prometheus_client is imported at the first scrape, not with the server, so a dashboard nobody scrapes starts as it did.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ui import common

if TYPE_CHECKING:
    from bench.output.prometheus import Exporter
    from bench.runs.jobs import JobManager

ENV = "BENCH_METRICS"
OFF_TEXT = f"Metrics are off on this dashboard ({ENV}=0).\n"

_followed: JobManager | None = None  # the server's JobManager, once a page made it
_held: tuple[JobManager | None, Exporter] | None = None  # the exporter and the JobManager it reads
_lock = threading.Lock()


def enabled(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the dashboard serves ``/metrics`` (BENCH_METRICS, on unless 0).

    Raises:
        ValueError: BENCH_METRICS is neither 1 nor 0 (nor true/false, yes/no, on/off).
    """
    raw = environ.get(ENV, "1").strip().lower()
    if raw in ("1", "true", "yes", "on", ""):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{ENV}={raw!r} must be 1 (serve /metrics) or 0 (do not)")


def follow(manager: JobManager) -> None:
    """The server's JobManager, handed over by app.py at every page view: its current run joins the metrics (a new
    one, after the server's resources were made again, replaces the old)."""
    global _followed
    _followed = manager


def exporter() -> Exporter:
    """The exporter of the JobManager followed now (of the machine alone before any page view). It may discover the
    hardware: call it off the event loop."""
    global _held
    from bench.output.prometheus import Exporter  # the first scrape pays the import, not the server's start

    manager = _followed
    with _lock:
        held = _held
        if held is not None and held[0] is manager:
            return held[1]
        machine = manager.machine if manager is not None else common.get_hardware()
        made = Exporter(machine, manager.current if manager is not None else None)
        _held = (manager, made)
        if held is not None:
            held[1].close()
        return made


def _text() -> bytes:
    return exporter().text()


async def respond(request: Any) -> Any:
    """The metrics: the text made within the last second as it is, else made (off the event loop) and handed out."""
    from starlette.responses import Response

    held = _held
    data = held[1].fresh() if held is not None and held[0] is _followed else None
    if data is None:
        data = await asyncio.to_thread(_text)
    return Response(data, headers={"Content-Type": content_type(), "Cache-Control": "no-store"})


def content_type() -> str:
    """Prometheus's text format, as prometheus_client names it."""
    from bench.output.prometheus import CONTENT_TYPE

    return CONTENT_TYPE


async def off(request: Any) -> Any:
    """What ``/metrics`` answers when BENCH_METRICS=0."""
    from starlette.responses import PlainTextResponse

    return PlainTextResponse(OFF_TEXT, status_code=404)
