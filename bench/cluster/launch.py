"""Runs placed on a Ray cluster, supervised at home.

The JobManager hands a run of a cluster-bound queue to ``ClusterLauncher.start``: the run waits (still queued, its
phase saying so) for a node of the cluster that matches where it may run and has its device free, each device
holding one run at a time (a CPU run takes the node's cores, a GPU run one whole GPU, ``gpus`` all of them), so a
comparison's or sweep's runs go side by side on as many matching devices as the cluster has. Then the run goes
through the ordinary Supervisor, given a ``RunLaunch`` in place of the multiprocessing context and the sampler
factory: its "process" is a ``RayProcess`` that places a NodeAgent actor on the node (Ray's node affinity, with the
device's resources, so nothing Ray schedules shares it) and starts the project's own worker and sampler there; a
thread polls the agent and hands the worker's events to the supervisor's queue (their wall times moved onto this
machine's clock) and the node's samples to the supervisor's sampler callback. The store, the live view, Stop,
MLflow and /metrics see a local run.

Where it ran goes into the run's record: ``hardware`` is the node's, as discovered there; ``info.ray`` (a
RayPlacement) holds the node's id (two nodes on one host are told apart), address, kind, accelerator type, custom
resources, the resources the run held and the GPUs Ray gave it. A node lost mid-run ends the run ``interrupted``,
its epochs kept, its error naming the node.
"""

from __future__ import annotations

import logging
import queue as queue_module
import threading
import time
from dataclasses import dataclass, field
from collections.abc import Sequence
from typing import Any, Callable

from bench.cluster import nodes as cluster_nodes
from bench.cluster.agent import Launched, NodeAgent, Polled, Seen
from bench.cluster.nodes import ClusterError, Node, NodeMachine
from bench.vocab.config import RunConfig
from bench.hardware.monitor import Sample
from bench.vocab.record_types import RecordedHardware
from bench.vocab.records import Status
from bench.vocab.run_info import RayPlacement, RunError
from bench.runs.run_state import RunState
from bench.runs.run_writer import RunWriter

log = logging.getLogger(__name__)
POLL_S = 0.2  # how often a run's agent is asked for its events and samples
CALL_TIMEOUT_S = 30.0  # a poll or a placement that takes longer: the node is asked again, then given up
PLACE_TIMEOUT_S = 120.0  # the agent's first answer (Ray starts a worker process on the node for it)
NODES_REFRESH_S = 1.0  # a waiting run reads the cluster's nodes again this often (a node joined, one was lost)
LOST_AFTER_S = 10.0  # an agent that does not answer for this long (and is not known dead at once) is taken as lost


def demand(config: RunConfig, node: Node) -> dict[str, Any]:
    """The Ray resources a run holds on ``node``: a CPU run the node's cores, a GPU run one whole GPU (and a core to
    drive it), ``gpus`` every GPU of the node (or its ``devices``)."""
    device = config.device
    if device == "cpu" or device.startswith("cpu"):
        return {"num_cpus": max(node.cpus, 1) if node.cpus else 0, "num_gpus": 0}
    if device == "gpus":
        return {"num_cpus": min(1, node.cpus), "num_gpus": config.devices or node.gpus}
    return {"num_cpus": min(1, node.cpus), "num_gpus": 1}


def slots_needed(config: RunConfig, node: Node) -> tuple[str, int]:
    """The device kind a run takes on a node and how many of it: ("cpu", 1) the node's cores, ("gpu", N) GPUs."""
    if config.device.startswith("cpu"):
        return "cpu", 1
    return "gpu", int(demand(config, node)["num_gpus"])


@dataclass
class _Busy:
    """What this queue's runs hold on one node."""

    cpu: int = 0
    gpu: int = 0


@dataclass
class ClusterMachine:
    """The cluster as one machine for validation (``bench.vocab.config.DeviceInventory``): a run is valid when some node it may go
    to can run it. GPUs: those of the matching node with the most; cores: the largest node's."""

    address: str
    machines: list[NodeMachine]
    where: str | None = None

    @property
    def gpus(self) -> list[Any]:
        return max((m.gpus for m in self.machines), key=len, default=[])

    @property
    def gpu_reason(self) -> str | None:
        if any(m.gpus and m.gpu_reason is None for m in self.machines):
            return None
        reasons = {m.gpu_reason for m in self.machines if m.gpu_reason}
        return "no node of the cluster has a usable GPU" + (f" ({'; '.join(sorted(reasons))})" if reasons else "")

    @property
    def cores(self) -> int:
        return max((m.cores for m in self.machines), default=1)

    def device_choices(self) -> list[str]:
        # a cluster run asks for a whole GPU and Ray picks which: it is gpu:0 of what the node lets it see
        choices = ["cpu"]
        if self.gpu_reason is None:
            choices.append("gpu:0")
        return choices

    def record(self) -> RecordedHardware:
        """What a run's record says before it is placed: the cluster, not this machine."""
        where = f", on {self.where}" if self.where else ""
        return RecordedHardware.model_validate({"label": f"a node of the Ray cluster at {self.address}{where} (not placed yet)"})

    def label(self) -> str:
        return f"Ray cluster at {self.address}: {len(self.machines)} node(s)"


class ClusterLauncher:
    """A run queue's way onto a cluster: which of its runs go there, the nodes they may go to, and which devices this
    queue's runs hold. ``where`` (None: any node) names the nodes by what the cluster holds: an accelerator type, a
    custom resource, a node's address or id.

    Raises (at construction):
        ClusterError: the cluster cannot be joined, or no node matches ``where``.
    """

    def __init__(self, address: str, *, where: str | None = None) -> None:
        self.address = address
        self.where = where
        self._lock = threading.Condition()
        self._runs: dict[int, Node | None] = {}  # run id -> the node it holds (None while it waits)
        self._busy: dict[str, _Busy] = {}
        self._nodes_read: tuple[float, list[Node]] = (-NODES_REFRESH_S, [])
        found = self.nodes()
        if not found:
            raise ClusterError(self._no_node_message())
        self.machine = ClusterMachine(address, cluster_nodes.machines_of(address, found), where)

    def nodes(self) -> list[Node]:
        """The alive nodes runs may go to, read from the cluster at most every NODES_REFRESH_S (every waiting run
        asks)."""
        with self._lock:
            read_at, known = self._nodes_read
            if time.monotonic() - read_at < NODES_REFRESH_S:
                return known
        found = [n for n in cluster_nodes.nodes(self.address) if n.matches(self.where)]
        with self._lock:
            self._nodes_read = (time.monotonic(), found)
        return found

    def lanes(self, configs: Sequence[RunConfig]) -> int:
        """How many runs of ``configs``' kinds the cluster trains at once, each alone on its device (the rule
        ``_fits`` holds runs to): a node gives a CPU run its cores (one run), GPU runs a whole GPU each (as many as
        it has GPUs, ``gpus`` runs all of them: one); a node counts the most runs of one kind it takes. At least 1,
        read from the nodes alive now (a node that joins or is lost changes it)."""
        total = 0
        for node in self.nodes():
            fits = [1 if kind == "cpu" else node.gpus // max(count, 1)
                    for kind, count in (slots_needed(c, node) for c in configs if _can_run(c, node))]
            total += max(fits, default=0)
        return max(total, 1)

    def _no_node_message(self) -> str:
        every = cluster_nodes.nodes(self.address)
        names = sorted({name for n in every for name in (n.accelerator_type, *n.custom) if name})
        listing = "; ".join(n.label() for n in every) or "none"
        return (f"No node of the Ray cluster at {self.address} matches {self.where!r}. Its nodes: {listing}. Name "
                f"one by accelerator type or custom resource ({', '.join(names) or 'none declared'}), a node's "
                "address or id.")

    # -- the JobManager's side ------------------------------------------------------------------------------------
    def accept(self, run_id: int) -> None:
        """Run ``run_id`` of the queue goes to the cluster."""
        with self._lock:
            self._runs[run_id] = None

    def holds(self, run_id: int) -> bool:
        with self._lock:
            return run_id in self._runs

    def start(self, state: RunState, lock: Any, stop_event: Any, run: Callable[[], None]) -> None:
        """Start the run in a thread of its own: wait for a free matching device (the run stays queued), then
        ``run()`` (the queue's supervision of it), then free the device."""
        threading.Thread(target=self._place_and_run, args=(state, lock, stop_event, run),
                         name=f"bench-cluster-run-{state.id}", daemon=True).start()

    def context(self, state: RunState, lock: Any, writer: RunWriter) -> RunLaunch:
        """What the Supervisor starts the run with in place of a multiprocessing context and a sampler factory."""
        with self._lock:
            node = self._runs.get(state.id)
        return RunLaunch(self, state, lock, writer, node)

    # -- placing --------------------------------------------------------------------------------------------------
    def _place_and_run(self, state: RunState, lock: Any, stop_event: Any, run: Callable[[], None]) -> None:
        node = None
        try:
            node = self._claim(state, lock, stop_event)
            run()
        finally:
            if node is not None:
                self._release(node, state.config)
            with self._lock:
                self._runs.pop(state.id, None)

    def _claim(self, state: RunState, lock: Any, stop_event: Any) -> Node | None:
        """Wait until a matching node has the run's device free and take it; None when the run was stopped while
        it waited, or no node can ever run it (the supervisor then ends it with the reason)."""
        said = ""
        while not stop_event.is_set():
            try:
                candidates = [n for n in self.nodes() if _can_run(state.config, n)]
            except ClusterError as exc:
                log.warning("%s", exc)
                candidates = []
            with self._lock:
                free = [n for n in candidates if self._fits(state.config, n)]
                if free:
                    node = min(free, key=lambda n: (self._load(n), n.id))
                    kind, count = slots_needed(state.config, node)
                    busy = self._busy.setdefault(node.id, _Busy())
                    setattr(busy, kind, getattr(busy, kind) + count)
                    self._runs[state.id] = node
                    return node
            words = (f"waiting for a free {_device_words(state.config)} on the cluster" if candidates else
                     f"waiting for a node of the cluster with a {_device_words(state.config)}")
            if words != said:
                with lock:
                    state.phase = words
                said = words
            with self._lock:
                self._lock.wait(NODES_REFRESH_S)
        return None

    def _busy_on(self, node: Node) -> _Busy:
        """What this queue's runs hold on ``node`` now (nothing where none runs there)."""
        return self._busy[node.id] if node.id in self._busy else _Busy()

    def _fits(self, config: RunConfig, node: Node) -> bool:
        busy = self._busy_on(node)
        kind, count = slots_needed(config, node)
        if kind == "cpu":  # the node's cores: nothing else of ours there
            return busy.cpu == 0 and busy.gpu == 0
        return busy.cpu == 0 and busy.gpu + count <= node.gpus

    def _load(self, node: Node) -> int:
        busy = self._busy_on(node)
        return busy.cpu + busy.gpu

    def _release(self, node: Node, config: RunConfig) -> None:
        with self._lock:
            kind, count = slots_needed(config, node)
            busy = self._busy.setdefault(node.id, _Busy())
            setattr(busy, kind, max(0, getattr(busy, kind) - count))
            self._nodes_read = (-NODES_REFRESH_S, [])  # a run ended (its node lost, maybe): read the nodes afresh
            self._lock.notify_all()

    def node_machine(self, node: Node) -> NodeMachine:
        return cluster_nodes.machine_of(self.address, node)


def _can_run(config: RunConfig, node: Node) -> bool:
    if config.device.startswith("cpu"):
        return node.cpus > 0
    return node.gpus >= int(config.devices or 1 if config.device == "gpus" else 1)


def _device_words(config: RunConfig) -> str:
    return "CPU node" if config.device.startswith("cpu") else "GPU"


class _EventQueue(queue_module.Queue):  # type: ignore[type-arg]
    """The supervisor's event queue for a cluster run: filled by the run's poll thread."""

    def close(self) -> None:
        pass


class RunLaunch:
    """One cluster run's stand-in for the supervisor's multiprocessing context (``Queue``, ``Process``) and sampler
    factory (``sampler``): the process is a RayProcess on the node the run holds."""

    def __init__(self, launcher: ClusterLauncher, state: RunState, lock: Any, writer: RunWriter,
                 node: Node | None) -> None:
        self.launcher = launcher
        self.state = state
        self.lock = lock
        self.writer = writer
        self.node = node
        self.process: RayProcess | None = None
        self.on_sample: Callable[[Sample], None] | None = None

    def Queue(self) -> _EventQueue:  # noqa: N802 - the multiprocessing context's name
        return _EventQueue()

    def Process(self, *, target: Callable[..., None], args: tuple[Any, ...], name: str,  # noqa: N802
                daemon: bool = True) -> RayProcess:
        self.process = RayProcess(self, target, args)
        return self.process

    def sampler(self, interval_s: float, on_sample: Callable[[Sample], None]) -> _NodeSampler:
        self.on_sample = on_sample
        return _NodeSampler(self)

    def placed(self, node: Node, machine: NodeMachine, described: Seen, launched: Launched,
               held: dict[str, Any]) -> None:
        """The run is on its node: its record learns where (hardware, info.ray) and why figures will be missing."""
        where = RayPlacement(**{**node.to_dict(), "address": self.launcher.address, "held": held,
                                "gpu_ids": tuple(described.gpu_ids), "worker_pid": launched.pid,
                                # Ray placed it elsewhere: say so
                                **({"node_id": described.node_id} if described.node_id else {})})
        hardware = machine.hardware.record()
        with self.lock:
            state = self.state
            state.hardware = hardware
            state.phase = f"starting on node {node.short_id}"
            state.info = state.info.updated(ray=where, energy_reasons=launched.energy_reasons,
                                            gpm_reasons=launched.gpm_reasons)
        self.writer.update(self.state, hardware=hardware, info=self.state.info)


class _NodeSampler:
    """The supervisor's sampler of a cluster run: the node samples; its samples arrive with the run's events, until
    the supervisor stops it (the run's samples are then written: later ones are not the run's)."""

    def __init__(self, launch: RunLaunch) -> None:
        self._launch = launch

    def set_pid(self, pid: int | None) -> None:
        pass

    def start(self) -> None:
        pass

    def stop(self, timeout_s: float = 2.0) -> None:
        self._launch.on_sample = None

    def sample_once(self) -> Sample:
        """The supervisor's closing sample, taken on the node (raises when the node's agent has ended)."""
        if self._launch.process is None:
            raise RuntimeError("the run was not started on a node")
        return self._launch.process.sample_once()


@dataclass
class _Ended:
    exitcode: int | None = None
    lost: RunError | None = None
    failed: RunError | None = None
    stop_sent: bool = False
    t_offset: float = 0.0
    notes: list[str] = field(default_factory=list)


class RayProcess:
    """The supervisor's handle on a run's worker on the node, shaped as a multiprocessing.Process (start, pid,
    is_alive, exitcode, join, terminate, kill). ``ended_as`` gives the outcome where the node, not the worker,
    decided it: a lost node (interrupted) or a placement that failed."""

    def __init__(self, launch: RunLaunch, target: Callable[..., None], args: tuple[Any, ...]) -> None:
        self._launch = launch
        self._target = target
        self._config, self._events, self._stop_event, self._log_path = args
        self.pid: int | None = None
        self._agent: Any = None
        self._thread: threading.Thread | None = None
        self._ended = _Ended()
        self._done = threading.Event()

    # -- multiprocessing.Process's shape ------------------------------------------------------------------------------
    def start(self) -> None:
        """Place the agent on the run's node and start the worker there; returns once it runs (or the run cannot
        start: then the process reads as ended, ``ended_as`` saying why)."""
        try:
            self._place()
        except Exception as exc:  # noqa: BLE001 - every failure to place is the run's outcome, said plainly
            self._ended.failed = RunError(error_type="ClusterPlacementFailed", message=str(exc),
                                          hint="Check the cluster's nodes (bench devices --cluster ADDRESS) and "
                                               "that the project is installed on them (docs/CLUSTER.md).")
            self._close_agent()
            self._done.set()
            return
        if self._agent is None:  # stopped before it was placed: a clean end, as a worker that read Stop
            self._ended.exitcode = 0
            self._done.set()
            return
        self._thread = threading.Thread(target=self._poll_loop, name="bench-cluster-poll", daemon=True)
        self._thread.start()

    def is_alive(self) -> bool:
        return not self._done.is_set()

    @property
    def exitcode(self) -> int | None:
        return self._ended.exitcode if self._done.is_set() else None

    def join(self, timeout: float | None = None) -> None:
        self._done.wait(timeout)

    def terminate(self) -> None:
        if self._agent is not None:
            try:
                self._agent.kill.remote()
            except Exception:  # noqa: BLE001 - the node may be gone already
                log.debug("kill on the node failed", exc_info=True)

    def kill(self) -> None:
        self._close_agent()

    def sample_once(self) -> Sample:
        """One reading on the node now (its agent's sampler)."""
        import ray

        agent = self._agent
        if agent is None:
            raise RuntimeError("the node's agent has ended")
        return ray.get(agent.sample_once.remote(), timeout=CALL_TIMEOUT_S)  # type: ignore[no-any-return]

    @property
    def ended_as(self) -> tuple[str, RunError] | None:
        """(status, error) when the cluster decided the run's end: a lost node, a failed placement."""
        if self._ended.lost is not None:
            return Status.INTERRUPTED.value, self._ended.lost
        if self._ended.failed is not None:
            return Status.FAILED.value, self._ended.failed
        return None

    # -- on the node ------------------------------------------------------------------------------------------------
    def _place(self) -> None:
        launch = self._launch
        node = launch.node
        if node is None:
            if self._stop_event.is_set():
                return
            raise ClusterError("no node of the cluster could take this run")
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        machine = launch.launcher.node_machine(node)
        held = demand(launch.state.config, node)
        actor_class = ray.remote(NodeAgent)
        self._agent = actor_class.options(
            **held, max_restarts=0, name=None,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node.id, soft=False)).remote()
        described = self._ask(self._agent.describe.remote(), PLACE_TIMEOUT_S)
        if described is None:  # stopped while Ray started the agent
            self._close_agent()
            return
        launched: Launched = ray.get(self._agent.launch.remote(self._target, self._config, self._log_path,
                                                               launch.state.config.sample_interval_s),
                                     timeout=CALL_TIMEOUT_S)
        # The supervisor's clock starts when this returns; the node's samples count from its sampler's start. The
        # worker's wall times are moved by the difference, so an epoch lands where the node's samples say it was,
        # whatever the two machines' clocks read (no clock sync needed).
        self.pid = launched.pid
        launch.placed(node, machine, described, launched, {k: v for k, v in held.items() if v})
        self._ended.t_offset = time.time() - launched.t0_wall

    def _ask(self, ref: Any, timeout_s: float) -> Any:
        """ray.get of ``ref`` that gives up (None) when the run is stopped meanwhile."""
        import ray

        deadline = time.monotonic() + timeout_s
        while True:
            ready, _ = ray.wait([ref], timeout=0.5)
            if ready:
                return ray.get(ready[0])
            if self._stop_event.is_set():
                return None
            if time.monotonic() > deadline:
                raise ClusterError(f"the node did not start the run within {timeout_s:.0f} s")

    def _poll_loop(self) -> None:
        import ray
        from ray.exceptions import GetTimeoutError, RayActorError

        silent_since: float | None = None
        try:
            while ray.is_initialized():  # the process left the cluster (it ends): nothing more comes
                if self._stop_event.is_set() and not self._ended.stop_sent:
                    self._agent.stop.remote()
                    self._ended.stop_sent = True
                try:
                    batch = ray.get(self._agent.poll.remote(), timeout=CALL_TIMEOUT_S)
                except RayActorError as exc:
                    self._lose(exc)
                    return
                except Exception as exc:  # noqa: BLE001 - the connection itself failed: the run is cut off
                    if ray.is_initialized():
                        self._lose(exc)
                    return
                except GetTimeoutError:
                    silent_since = silent_since or time.monotonic()
                    if time.monotonic() - silent_since > LOST_AFTER_S:
                        self._lose(TimeoutError(f"no answer for {LOST_AFTER_S:.0f} s"))
                        return
                    continue
                silent_since = None
                self._hand_over(batch)
                if batch.done:
                    self._ended.exitcode = batch.exitcode
                    return
                time.sleep(POLL_S)
        finally:
            self._close_agent()
            self._done.set()

    def _hand_over(self, batch: Polled) -> None:
        """The node's samples to the supervisor's callback, its worker's events to the supervisor's queue, their
        wall times on this machine's clock."""
        on_sample = self._launch.on_sample
        if on_sample is not None:
            for sample in batch.samples:
                on_sample(sample)
        offset = self._ended.t_offset
        for event in batch.events:
            self._events.put(event.on_clock(offset))

    def _lose(self, exc: BaseException) -> None:
        node = self._launch.node
        name = node.label() if node is not None else "its node"
        self._ended.lost = RunError.model_validate({
            "error_type": "NodeLost",
            "message": f"The cluster lost {name} while this run trained on it ({type(exc).__name__}). Epochs "
                       "finished before then are kept.",
            "hint": "Start the run again; the cluster places it on a node that is up.",
            "node_id": node.id if node is not None else None})
        log.warning("run %s: %s", self._launch.state.id, self._ended.lost.message)

    def _close_agent(self) -> None:
        agent, self._agent = self._agent, None
        if agent is None:
            return
        try:
            import ray

            if ray.is_initialized():
                ray.kill(agent, no_restart=True)
        except Exception:  # noqa: BLE001 - a lost node's agent is gone already
            log.debug("ending the agent failed", exc_info=True)


def node_kinds(launcher: ClusterLauncher) -> list[tuple[Node, NodeMachine]]:
    """One node of each kind the cluster holds (accelerator type and custom resources: ``Node.kind``), with its
    hardware: where ``bench suite --cluster`` runs the suite once per kind."""
    chosen: dict[str, Node] = {}
    for node in sorted(launcher.nodes(), key=lambda n: n.id):
        chosen.setdefault(node.kind, node)
    return [(node, launcher.node_machine(node)) for node in chosen.values()]


def suite_targets(node: Node, machine: NodeMachine) -> list[str]:
    """The suite's targets on one node: all its cores, one core (where it has more), one whole GPU (where it has
    one: a cluster run holds a GPU, which Ray picks)."""
    found = ["cpu"]
    if machine.cores > 1:
        found.append("cpu/1")
    if node.gpus and machine.gpu_reason is None:
        found.append("gpu:0")
    return found
