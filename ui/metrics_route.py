"""``GET {base}/metrics``: this machine and its runs in Prometheus's text format (bench.output.prometheus), one text
shared by every scrape within a second. Read-only; ``BENCH_METRICS=0`` turns it off (it then answers 404).

ui/live_routes.py mounts it beside the live stream. The runs come from the server's JobManager, which the first page
view makes: app.py hands it here at every page view (:func:`follow`). They are its current run and the live runs of
other processes on the same store (a `python -m bench run`, another dashboard), read from the store once per text
made, so at most once a second; each is handed to the exporter as plain figures (:func:`figures_of`). Until the first
page view a scrape shows the machine alone (its GPUs, CPU and memory), and never makes the JobManager itself (that
would start the spare worker).

prometheus_client is imported at the first scrape, not with the server, so a dashboard nobody scrapes starts as it did.
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from bench.hardware.devices import Hardware
from bench.vocab import settings
from bench.vocab.readings import Sample
from bench.vocab.records import ACTIVE
from bench.runs.run_state import RunSnapshot
from bench.store import Store, StoreError
from bench.vocab.target import text_of_config
from ui import common

if TYPE_CHECKING:
    from bench.output.prometheus import Exporter, RunFigures
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
    return settings.switch(ENV, True, environ, on="serve /metrics", off="do not")


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
        # this host as discovered: a manager whose runs go to a Ray cluster runs on a ClusterMachine (the nodes as one
        # machine for validation), which has no hostname, GPU UUIDs or memory of this host to scrape
        machine = manager.machine if manager is not None else None
        if not isinstance(machine, Hardware):
            machine = common.get_hardware()
        made = Exporter(machine, (lambda: shown_runs(manager)) if manager is not None else None)
        _held = (manager, made)
        if held is not None:
            held[1].close()
        return made


def own_sample(run: RunSnapshot) -> Sample | None:
    """The latest sample of a live run that this process samples (the JobManager's sampler took it); None for a run
    shown from the store (another process samples it), one on a Ray cluster's node (its samples are the node's, not
    this machine's) and for one that has ended."""
    if not run.active or run.owner is not None or not run.samples or run.info.ray is not None:
        return None
    return run.samples[-1]


def figures_of(run: RunSnapshot) -> RunFigures:
    """A run as the metrics show it: its labels, status, progress and epochs, and its own latest sample when this
    process samples it."""
    from bench.output.prometheus import RunFigures

    epoch = run.current_epoch()
    return RunFigures(id=run.id, model=run.config.model, target=text_of_config(run.config), status=str(run.status),
                      epoch=epoch if epoch is not None else len(run.epochs), epochs_planned=run.config.epochs,
                      progress_ratio=run.fraction_done(), epochs=tuple(run.epochs), worker=own_sample(run))


def others_live(store: Store | None) -> list[RunSnapshot]:
    """The live runs of other processes on ``store`` (the CLI's, another dashboard's), as read from it; none when the
    store cannot be read (the scrape still shows the machine and this server's run)."""
    if store is None:
        return []
    me = (os.getpid(), socket.gethostname())
    out = []
    try:
        for run in store.list_runs():
            if run.id is None or str(run.status) not in ACTIVE:
                continue
            owner = store.owners.owner_of(run.id)
            if owner is not None and (owner.pid, owner.host) != me:
                out.append(RunSnapshot.from_stored(run, owner=f"process {owner.pid} on {owner.host}"))
    except StoreError:
        return []
    return out


def shown_runs(manager: JobManager) -> list[RunFigures]:
    """The runs a scrape shows: the JobManager's current run (live or the latest) and the other processes' live
    runs on its store, each once."""
    current = manager.current()
    shown = [current] if current is not None else []
    shown += [run for run in others_live(manager.store) if current is None or run.id != current.id]
    return [figures_of(run) for run in shown]


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
