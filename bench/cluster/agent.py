"""The node's side of a cluster run: a Ray actor that starts the project's own worker on its node the way the
supervisor does at home (a spawned process, started through worker_process.start_worker_process, with the same
config, event queue, Stop event and log), samples it with the node's own Sampler (its CPU, its GPUs), and keeps the
worker's events and the samples until the supervisor polls them. It holds the resources the run was placed with
(the node's cores, or its GPU) for as long as it lives, so nothing else Ray schedules shares the device.

Plain Python: bench.cluster.launch makes it a Ray actor class where a run is placed (``ray.remote(NodeAgent)``).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import socket
import tempfile
import threading
import time
import queue as queue_module
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from bench.hardware.monitor import Sample, Sampler
from bench.runs.worker_process import kill, start_worker_process

PARENT_CHECK_S = 0.5


def node_child(target: Callable[..., None], config: dict[str, Any], queue: Any, stop_event: Any,
               log_path: str | None) -> None:
    """The worker process on the node: ends itself when the agent that started it is gone (a lost node's agent is
    killed with its raylet), then runs ``target`` as the supervisor would (the training worker, or a stand-in)."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_CHECK_S)
        os._exit(1)

    threading.Thread(target=watch, name="bench-agent-watch", daemon=True).start()
    target(config, queue, stop_event, log_path)


def log_path_here(name: str | None) -> str | None:
    """Where the worker's own output goes on the node: a folder of the node's temporary directory, under the name the
    supervisor gave its log."""
    if not name:
        return None
    folder = Path(tempfile.gettempdir()) / "bench-cluster-logs"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return str(folder / Path(name).name)


@dataclass(frozen=True)
class Seen:
    """The node as the agent sees itself (``describe``)."""

    node_id: str
    hostname: str
    pid: int
    gpu_ids: list[str]
    cuda_visible_devices: str | None
    wall: float


@dataclass(frozen=True)
class Launched:
    """The worker started on the node (``launch``): its pid, the wall time its sampler's clock starts at (the node's
    clock), why energy or GPM figures will be missing there."""

    pid: int
    t0_wall: float
    energy_reasons: dict[str, str] = field(default_factory=dict)
    gpm_reasons: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Polled:
    """What came since the last poll (``poll``): the worker's events, the node's samples, whether the worker has
    ended and every event it sent was handed over (``done``), and its exit code once it ended."""

    events: list[Any]  # the worker's events (bench.runs.events), as it made them
    samples: list[Sample]
    done: bool
    exitcode: int | None = None


class NodeAgent:
    """One run on one node: ``describe`` (where it is), ``launch`` (the worker and its sampler), ``poll`` (what they
    said since), ``stop`` (the run's Stop), ``kill`` (the hard end)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: list[Any] = []  # the worker's events (bench.runs.events), as it made them
        self._samples: list[Sample] = []
        self._process: Any = None
        self._stop: Any = None
        self._sampler: Sampler | None = None
        self._pump: threading.Thread | None = None

    def describe(self) -> Seen:
        """The node as it sees itself: Ray's node id, its host, the GPUs Ray gave this run, the clock now."""
        import ray

        context = ray.get_runtime_context()
        return Seen(node_id=context.get_node_id(), hostname=socket.gethostname(), pid=os.getpid(),
                    gpu_ids=[str(g) for g in ray.get_gpu_ids()],
                    cuda_visible_devices=os.environ.get("CUDA_VISIBLE_DEVICES"), wall=time.time())

    def launch(self, target: Callable[..., None], config: dict[str, Any], log_name: str | None,
               interval_s: float) -> Launched:
        """Start the worker and the node's sampler on it; returns the worker's pid, the wall time both started (the
        origin of the samples' clock, on this node's clock) and why energy or GPM figures will be missing here."""
        ctx = mp.get_context("spawn")
        events, self._stop = ctx.Queue(), ctx.Event()
        self._process = ctx.Process(target=node_child, name="bench-worker",
                                    args=(target, config, events, self._stop, log_path_here(log_name)), daemon=True)
        start_worker_process(self._process)
        self._sampler = Sampler(interval_s, on_sample=self._keep, clock=time.monotonic)
        self._sampler.set_pid(self._process.pid)
        self._sampler.start()
        t0 = time.time()
        self._pump = threading.Thread(target=self._read, args=(events,), name="bench-agent-events", daemon=True)
        self._pump.start()
        return Launched(pid=self._process.pid, t0_wall=t0, energy_reasons=dict(self._sampler.energy_reasons or {}),
                        gpm_reasons=dict(self._sampler.gpm_reasons or {}))

    def _keep(self, sample: Sample) -> None:
        with self._lock:
            self._samples.append(sample)

    def _read(self, events: Any) -> None:
        """Move the worker's events off its queue while it lives, and those it sent last after it ended."""
        while True:
            try:
                event = events.get(timeout=0.2)
            except (queue_module.Empty, EOFError, OSError):
                if self._process is None or self._process.is_alive():
                    continue
                try:  # ended: what is still in the pipe, then done
                    event = events.get(timeout=0.5)
                except (queue_module.Empty, EOFError, OSError):
                    return
            with self._lock:
                self._events.append(event)

    def poll(self) -> Polled:
        """The events and samples since the last poll, and whether the worker still runs (its exit code when not).
        ``done`` once the worker has ended and every event it sent was handed over."""
        with self._lock:
            taken, samples = self._events, self._samples
            self._events, self._samples = [], []
        process = self._process
        alive = process is not None and process.is_alive()
        pumping = self._pump is not None and self._pump.is_alive()
        done = not alive and not pumping
        if done and self._sampler is not None:
            self._sampler.stop()
            with self._lock:
                samples, self._samples = samples + self._samples, []
        return Polled(events=taken, samples=samples, done=done,
                      exitcode=process.exitcode if process is not None and not alive else None)

    def sample_once(self) -> Sample:
        """One reading now, on the run's sample clock: the supervisor's closing sample, so the last epoch's end lies
        between two samples."""
        if self._sampler is None:
            raise RuntimeError("the run's sampler has not started")
        return self._sampler.sample_once()

    def stop(self) -> None:
        """The run's Stop: the worker reads it at its next batch."""
        if self._stop is not None:
            self._stop.set()

    def kill(self) -> None:
        """End the worker now (Stop's grace passed, or a hang)."""
        if self._process is not None and self._process.is_alive():
            kill(self._process)
