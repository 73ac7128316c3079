"""A Ray cluster as the project sees it: its address (``--cluster``, else BENCH_RAY_ADDRESS), the connection, and its
nodes (id, address, resources, accelerator type, custom resources), each one's hardware discovered on the node itself
by the project's own discovery (bench.hardware.devices), and the names a run may be placed by.

Ray is imported inside the functions: the dashboard and the CLI load it only when a cluster is asked for.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from bench.vocab import settings

log = logging.getLogger(__name__)

ADDRESS_ENV = "BENCH_RAY_ADDRESS"
INSTALL = "pip install -r requirements-ray.txt"
CONNECT_CHECK_S = 3.0  # how long the head's port is tried before Ray itself is asked (its own retries take minutes)
# resources Ray gives every node; the rest (besides node:IP and accelerator_type:T) are the operator's own
_STANDARD = ("CPU", "GPU", "memory", "object_store_memory")
_ACCELERATOR_PREFIX = "accelerator_type:"
_lock = threading.Lock()
_connected: list[str] = []  # the address this process joined (one per process: Ray's own rule)


class ClusterError(RuntimeError):
    """The cluster cannot be used: not installed, not reachable, or holds nothing a run can go to. The message says
    what to do."""


def address_of(given: str | None) -> str | None:
    """The cluster's address: ``given`` (an option, the pages' setting), else BENCH_RAY_ADDRESS; None for none.
    ``auto`` joins the cluster this machine is a node of."""
    raw = (given if given is not None else settings.env(ADDRESS_ENV)).strip()
    return raw or None


def _ray() -> Any:
    # a run's threads that outlive the connection (a process at its exit) must not join the cluster again by
    # themselves, as Ray does by default for a call made before ray.init
    os.environ.setdefault("RAY_ENABLE_AUTO_CONNECT", "0")
    try:
        import ray
    except ImportError:
        raise ClusterError(f"Ray is not installed here: {INSTALL} (the cluster's own Ray version), then try again; "
                           "or run without --cluster.") from None
    return ray


def _reachable(address: str) -> str | None:
    """Why the head at ``host:port`` cannot be reached, or None when its port answers (``auto`` and ``ray://`` are
    left to Ray)."""
    if address == "auto" or "://" in address:
        return None
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        return f"{address!r} is not HOST:PORT (the head's address, e.g. 10.0.0.5:6379) or auto"
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=CONNECT_CHECK_S):
            return None
    except OSError as exc:
        return f"nothing answers at {address} ({exc.strerror or exc})"


def connect(address: str) -> Any:
    """Join the cluster at ``address`` once per process; returns the ``ray`` module.

    Raises:
        ClusterError: Ray missing, the head not answering, or this process already joined another cluster.
    """
    ray = _ray()
    with _lock:
        if ray.is_initialized():
            if _connected and _connected[0] != address:
                raise ClusterError(f"This process already uses the Ray cluster at {_connected[0]}; one cluster per "
                                   f"process: restart it to use {address}.")
            return ray
        why = _reachable(address)
        if why is not None:
            raise ClusterError(f"The Ray cluster cannot be reached: {why}. Start it (`ray start --head`), check the "
                               f"address (--cluster or {ADDRESS_ENV}), or run without a cluster; local runs are "
                               "not affected.")
        logging.getLogger("ray").setLevel(logging.WARNING)  # its connection chatter is not the user's
        try:
            ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
        except Exception as exc:  # noqa: BLE001 - Ray raises many kinds; each is this one message
            raise ClusterError(f"The Ray cluster at {address} cannot be joined: {exc}. Check that its Ray version "
                               f"matches this one ({ray.__version__}) and that the head's ports are open "
                               "(docs/CLUSTER.md).") from None
        _connected[:] = [address]
        return ray


def disconnect() -> None:
    """Leave the cluster (tests, and a process that ends): the next connect joins again."""
    with _lock:
        if _connected:
            _ray().shutdown()
            _connected.clear()


class RayNodeEntry(BaseModel):
    """One entry of ``ray.nodes()``: the keys this project reads, as Ray spells them."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    NodeID: str = ""
    NodeManagerAddress: str = ""
    Alive: bool = False
    Resources: dict[str, float] | None = None
    NodeManagerHostname: str = ""


@dataclass(frozen=True)
class Node:
    """One node of the cluster as Ray reports it: its id (two nodes on one host are two ids), address, whether it is
    alive, and its resources (totals: CPU, GPU, the accelerator type, the operator's custom ones)."""

    id: str
    ip: str
    alive: bool
    resources: dict[str, float] = field(default_factory=dict)
    hostname: str = ""

    @classmethod
    def of(cls, raw: dict[str, Any]) -> Node:
        """A node from one entry of ``ray.nodes()``, read by its type (RayNodeEntry)."""
        entry = RayNodeEntry.model_validate(raw)
        return cls(id=entry.NodeID, ip=entry.NodeManagerAddress, alive=entry.Alive, resources=entry.Resources or {},
                   hostname=entry.NodeManagerHostname)

    @property
    def short_id(self) -> str:
        return self.id[:8]

    @property
    def cpus(self) -> int:
        return int(self.resources.get("CPU", 0))

    @property
    def gpus(self) -> int:
        return int(self.resources.get("GPU", 0))

    @property
    def accelerator_type(self) -> str | None:
        """Ray's accelerator type of the node's GPUs (``H100``, ``A10G``, ...), None on a node without one."""
        found = [k[len(_ACCELERATOR_PREFIX):] for k in self.resources if k.startswith(_ACCELERATOR_PREFIX)]
        return found[0] if found else None

    @property
    def custom(self) -> tuple[str, ...]:
        """The operator's own resources (``--resources='{"node_b": 1}'``): how a node type is named by hand."""
        return tuple(sorted(k for k in self.resources if k not in _STANDARD and not k.startswith("node:")
                            and not k.startswith(_ACCELERATOR_PREFIX)))

    @property
    def kind(self) -> str:
        """The node's type: its accelerator type (else CPU) and its custom resources, e.g. ``H100``, ``CPU node_b``:
        the suite runs once per kind."""
        return " ".join((self.accelerator_type or "CPU", *self.custom))

    def names(self) -> tuple[str, ...]:
        """Every name a run may be placed by on this node: its id (or a prefix of it), address, accelerator type and
        custom resources."""
        return tuple(n for n in (self.id, self.ip, self.accelerator_type, *self.custom) if n)

    def matches(self, where: str | None) -> bool:
        """Whether ``where`` (None: any node) names this node: its accelerator type, a custom resource, its address,
        or its id or a prefix of it (at least 6 characters)."""
        if where is None:
            return True
        return (where in (self.ip, self.accelerator_type) or where in self.custom
                or (len(where) >= 6 and self.id.startswith(where)))

    def label(self) -> str:
        """One line: ``node 95a3640e at 10.0.0.5: 8 CPUs, 1 GPU (H100), node_b``."""
        parts = [f"{self.cpus} CPU{'s' if self.cpus != 1 else ''}"]
        if self.gpus:
            parts.append(f"{self.gpus} GPU{'s' if self.gpus != 1 else ''}"
                         + (f" ({self.accelerator_type})" if self.accelerator_type else ""))
        parts += self.custom
        return f"node {self.short_id} at {self.ip}: {', '.join(parts)}"

    def to_dict(self) -> dict[str, Any]:
        """What a run's record keeps of the node (``info.ray``), JSON-ready."""
        return {"node_id": self.id, "node_ip": self.ip, "hostname": self.hostname, "kind": self.kind,
                "accelerator_type": self.accelerator_type, "custom_resources": list(self.custom),
                "cpus": self.cpus, "gpus": self.gpus}


@dataclass(frozen=True)
class Placement:
    """Where a run of the cluster went, read from its record's ``info.ray`` (``Node.to_dict`` and the launch's
    additions): the one reader of it for every view that names a run's node (the Sweep page, the CLI, the lab's
    board)."""

    node_id: str
    kind: str | None = None

    @classmethod
    def of(cls, info: Any) -> Placement | None:
        """The placement a run's info holds; None for a run that was not placed on a cluster or names no node.
        ``info.ray`` was parsed as its record: a node id of letters and digits, a kind that moves nothing on screen."""
        where = getattr(info, "ray", None)
        if where is None or where.node_id is None:
            return None
        return cls(where.node_id, where.kind if where.kind and where.kind.strip() else None)

    @property
    def short_id(self) -> str:
        return self.node_id[:8]

    def label(self) -> str:
        """``node 95a3640e (CPU node_b)``: the node's short id, told apart from its neighbours on one host, and its
        kind."""
        return f"node {self.short_id} ({self.kind or '?'})"


def nodes(address: str, *, alive_only: bool = True) -> list[Node]:
    """The cluster's nodes (alive ones only unless asked), in Ray's order.

    Raises:
        ClusterError: the cluster cannot be joined.
    """
    ray = connect(address)
    found = [Node.of(raw) for raw in ray.nodes()]
    return [n for n in found if n.alive or not alive_only]


@dataclass(frozen=True)
class NodeMachine:
    """A node's hardware as the project's own discovery found it there: what a run placed on it is validated
    against (``bench.vocab.config.DeviceInventory``) and what its record keeps (``hardware``)."""

    node: Node
    hardware: Any  # bench.hardware.devices.Hardware, discovered on the node
    node_cores: int

    @property
    def gpus(self) -> list[Any]:
        return list(self.hardware.gpus)

    @property
    def gpu_reason(self) -> str | None:
        return self.hardware.gpu_reason  # type: ignore[no-any-return]

    @property
    def cores(self) -> int:
        return self.node_cores

    def device_choices(self) -> list[str]:
        return self.hardware.device_choices()  # type: ignore[no-any-return]


def _discover_here() -> tuple[Any, int]:
    """On the node: the project's discovery of its hardware, and the cores a run there may use."""
    from bench.hardware import devices

    return devices.discover(), devices.all_cores()


_machines: dict[str, NodeMachine] = {}


def machine_of(address: str, node: Node, timeout_s: float = 60.0) -> NodeMachine:
    """The node's hardware, discovered once on the node by a task that takes no CPU from a run, then kept.

    Raises:
        ClusterError: the node did not answer within ``timeout_s``.
    """
    return machines_of(address, [node], timeout_s)[0]


def machines_of(address: str, found: list[Node], timeout_s: float = 60.0) -> list[NodeMachine]:
    """:func:`machine_of` for several nodes, asked at once (a lab of thirty machines answers in one round)."""
    ray = connect(address)
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    task = ray.remote(num_cpus=0, max_retries=0)(_discover_here)
    asked = {node.id: task.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node.id, soft=False)).remote()
             for node in found if node.id not in _machines}
    for node in found:
        if node.id not in asked:
            continue
        try:
            hardware, cores = ray.get(asked[node.id], timeout=timeout_s)
        except Exception as exc:  # noqa: BLE001 - a lost node, a timeout, an import error there: one message
            raise ClusterError(f"{node.label()} did not say what hardware it has ({type(exc).__name__}: {exc}); "
                               "check that the project is installed there (docs/CLUSTER.md).") from None
        _machines[node.id] = NodeMachine(node=node, hardware=hardware, node_cores=int(cores))
    return [_machines[node.id] for node in found]


def inventory(address: str) -> list[dict[str, Any]]:
    """What the cluster holds, node by node: Ray's view (id, address, kind, resources) and the hardware the project
    discovered there (a label, the CPU, the GPUs); a node that did not answer says why. For ``bench devices
    --cluster`` and the dashboard's cluster setting.

    Raises:
        ClusterError: the cluster cannot be joined.
    """
    out = []
    found = nodes(address)
    try:
        machines_of(address, found)  # all asked at once; one that fails is said on its own line below
    except ClusterError:
        pass
    for node in found:
        entry: dict[str, Any] = {**node.to_dict(), "label": node.label(),
                                 "resources": {k: v for k, v in node.resources.items() if not k.startswith("node:")}}
        try:
            machine = machine_of(address, node)
            entry["hardware"] = machine.hardware.description()
            entry["cores"] = machine.cores
        except ClusterError as exc:
            entry["hardware"] = None
            entry["why"] = str(exc)
        out.append(entry)
    return out
