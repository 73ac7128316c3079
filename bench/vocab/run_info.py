"""What a run learned about itself while it ran (``info``) and how it failed (``error``), as pydantic models on
bench.vocab.record_base.Record: a stored row, an imported record and the worker's started event all become the same
objects, and the JSON Schema in docs/schemas/ is generated from these models.

``RunInfo`` is filled by the worker's started event (placement, framework, the model's size and arithmetic, the data,
the parallel layout, a multi-worker run's cluster), by the supervisor (start-up phases, why energy or GPM figures are
missing, a hard stop) and is read by the summary, the diagnosis, the report and the pages. Every field is optional:
a run that failed before it started has none, and records written by older versions lack the later ones.
"""

from __future__ import annotations

from typing import ClassVar

from bench.vocab.limits import Count, Flag, Id, Line, MachineName, NodeId, Number, RunSeconds, Text, Timestamp, Whole
from bench.vocab.record_base import Record


class Phase(Record):
    """A start-up phase of the run (``importing jax``, ``loading data``, ``first step``, ``training``): its name and
    when it began, in seconds from the samples' origin."""

    NOUN: ClassVar[str] = "phase"

    phase: Line
    t_s: RunSeconds


class ClusterInfo(Record):
    """A multi-worker run's cluster as one member saw it: the cluster's id (shared by every member), this member's
    index, the member count, the members' addresses and JAX's process index."""

    PATH: ClassVar[str] = "cluster"
    SPARSE: ClassVar[bool] = True

    id: Line
    index: Count
    size: Count
    workers: tuple[Line, ...] = ()
    process: Count | None = None


class LabMark(Record):
    """A run trained in a class's lab (bench/lab): the lab's id and the student who asked for it, as the student
    wrote their name (checked by bench.lab.names where it entered)."""

    PATH: ClassVar[str] = "lab"

    lab: Line
    student: Line


class RayPlacement(Record):
    """Where a run on a Ray cluster ran: its node (Ray's id, address, host, kind, accelerator type, custom resources,
    cores and GPUs), the cluster's address, the resources held for the run, the GPUs Ray gave it, the worker's pid."""

    PATH: ClassVar[str] = "ray"
    SPARSE: ClassVar[bool] = True

    node_id: NodeId | None = None
    node_ip: Line | None = None
    hostname: MachineName | None = None
    kind: MachineName | None = None  # drawn beside the run's figures (bench.cluster.nodes.Placement)
    accelerator_type: MachineName | None = None
    custom_resources: tuple[MachineName, ...] | None = None
    cpus: Whole | None = None
    gpus: Whole | None = None
    address: Line | None = None
    held: dict[str, Number] | None = None  # the Ray resources held: num_cpus, num_gpus
    gpu_ids: tuple[Line, ...] | None = None
    worker_pid: Whole | None = None


class RunInfo(Record):
    """What a run learned while it ran; every field None (or empty) where it was not learned."""

    PATH: ClassVar[str] = "info"
    SPARSE: ClassVar[bool] = True

    pid: Whole | None = None
    framework: Line | None = None
    backend: Line | None = None
    devices_seen: tuple[Line, ...] | None = None
    placement: Line | None = None  # where the first trainable variable lives: the device the run actually used
    replicas: Count | None = None
    replica_devices: tuple[Line, ...] | None = None
    distribution: Line | None = None
    global_batch_size: Count | None = None
    cluster: ClusterInfo | None = None
    per_device_batch_size: Count | None = None
    params: Count | None = None
    flops_per_sample: Number | None = None
    model_description: Text | None = None
    dataset_description: Text | None = None
    n_train: Count | None = None
    n_test: Count | None = None
    precision: Line | None = None
    jit_compile: Flag | None = None
    steps_per_execution: Count | None = None
    threads: Count | None = None
    input_pipeline: Text | None = None
    worker_start: Text | None = None
    energy_reasons: dict[str, Text] | None = None  # device -> why its energy is not measured
    gpm_reasons: dict[str, Text] | None = None  # GPU -> why its SM/tensor activity is not measured
    hard_stop: Flag | None = None
    phases: tuple[Phase, ...] | None = None
    # set on import (bench import, History -> Import): where the run came from
    imported: Flag | None = None
    source_hardware: Text | None = None
    source_id: Id | None = None  # the source's id: the same type, and bound, as a run's own id
    imported_at: Timestamp | None = None
    imported_status: Line | None = None  # an imported run that was still active: the status it was exported with
    stored_status: Line | None = None  # a store row whose status this version does not know: what the row says
    lab: LabMark | None = None  # a lab's run: which lab, which student (set when it is queued)
    ray: RayPlacement | None = None  # a run on a Ray cluster: where it ran (bench.cluster)

    def with_phase(self, name: str, t_s: float) -> RunInfo:
        return self.updated(phases=[*(p.to_dict() for p in self.phases or ()), {"phase": name, "t_s": t_s}])


class RunError(Record):
    """Why a run failed: the exception's type (or the project's word: ``Hung``, ``WorkerDied``, ``Interrupted``),
    its message, what to do, and the worker's traceback where one was caught."""

    PATH: ClassVar[str] = "error"
    SPARSE: ClassVar[bool] = True

    error_type: Line | None = None
    message: Text | None = None
    hint: Text | None = None
    traceback: Text | None = None

    @property
    def headline(self) -> str:
        """The message, else the type: the one line a listing shows."""
        return self.message or self.error_type or "failed"
