"""What a run learned about itself while it ran (``info``) and how it failed (``error``), typed: declared once in
bench.typed's way, so a stored row, an imported record and the worker's started event all become the same objects,
and the JSON Schema in docs/schemas/ is generated from these declarations.

``RunInfo`` is filled by the worker's started event (placement, framework, the model's size and arithmetic, the data,
the parallel layout, a multi-worker run's cluster), by the supervisor (start-up phases, why energy or GPM figures are
missing, a hard stop) and is read by the summary, the diagnosis, the report and the pages. Every field is optional:
a run that failed before it started has none, and records written by older versions lack the later ones.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar

from bench import typed
from bench.typed import JsonValue


@typed.record
@dataclass(frozen=True)
class Phase:
    """A start-up phase of the run (``importing jax``, ``loading data``, ``first step``, ``training``): its name and
    when it began, in seconds from the samples' origin."""

    phase: str
    t_s: float


@typed.record(sparse=True)
@dataclass(frozen=True)
class ClusterInfo(typed.Record):
    """A multi-worker run's cluster as one member saw it: the cluster's id (shared by every member), this member's
    index, the member count, the members' addresses and JAX's process index."""

    id: str
    index: int
    size: int
    workers: tuple[str, ...] = ()
    process: int | None = None
    extra: dict[str, JsonValue] = field(default_factory=dict)
    keys: tuple[str, ...] | None = field(default=None, compare=False, repr=False)


@typed.record(sparse=True)
@dataclass(frozen=True)
class RunInfo(typed.Record):
    """What a run learned while it ran; every field None (or empty) where it was not learned."""

    PATH: ClassVar[str] = "info"

    pid: int | None = None
    framework: str | None = None
    backend: str | None = None
    devices_seen: tuple[str, ...] | None = None
    placement: str | None = None  # where the first trainable variable lives: the device the run actually used
    replicas: int | None = None
    replica_devices: tuple[str, ...] | None = None
    distribution: str | None = None
    global_batch_size: int | None = None
    cluster: ClusterInfo | None = None
    per_device_batch_size: int | None = None
    params: int | None = None
    flops_per_sample: float | None = None
    model_description: str | None = None
    dataset_description: str | None = None
    n_train: int | None = None
    n_test: int | None = None
    precision: str | None = None
    jit_compile: bool | None = None
    steps_per_execution: int | None = None
    threads: int | None = None
    input_pipeline: str | None = None
    worker_start: str | None = None
    energy_reasons: dict[str, str] | None = None  # device -> why its energy is not measured
    gpm_reasons: dict[str, str] | None = None  # GPU -> why its SM/tensor activity is not measured
    hard_stop: bool | None = None
    phases: tuple[Phase, ...] | None = None
    # set on import (bench import, History -> Import): where the run came from
    imported: bool | None = None
    source_hardware: str | None = None
    source_id: int | None = None
    imported_at: float | None = None
    imported_status: str | None = None  # an imported run that was still active: the status it was exported with
    stored_status: str | None = None  # a store row whose status this version does not know: what the row says
    extra: dict[str, JsonValue] = field(default_factory=dict)
    keys: tuple[str, ...] | None = field(default=None, compare=False, repr=False)

    def updated(self, **fields: Any) -> RunInfo:
        """A copy with ``fields`` set (the supervisor learns them one event at a time); a field this version does not
        declare is kept among the extra keys."""
        known = {f.name for f in dataclasses.fields(self)}
        extra = {k: v for k, v in fields.items() if k not in known}
        typed_fields = RunInfo.of({k: v for k, v in fields.items() if k in known})
        values = {k: getattr(typed_fields, k) for k in fields if k in known}
        keys = None if self.keys is None else (*self.keys, *(k for k in fields if k not in self.keys))
        return dataclasses.replace(self, **values, extra={**self.extra, **extra}, keys=keys)

    def with_phase(self, name: str, t_s: float) -> RunInfo:
        return self.updated(phases=[*(typed.dump(p) for p in self.phases or ()), {"phase": name, "t_s": t_s}])


@typed.record(sparse=True)
@dataclass(frozen=True)
class RunError(typed.Record):
    """Why a run failed: the exception's type (or the project's word: ``Hung``, ``WorkerDied``, ``Interrupted``),
    its message, what to do, and the worker's traceback where one was caught."""

    PATH: ClassVar[str] = "error"

    error_type: str | None = None
    message: str | None = None
    hint: str | None = None
    traceback: str | None = None
    extra: dict[str, JsonValue] = field(default_factory=dict)
    keys: tuple[str, ...] | None = field(default=None, compare=False, repr=False)

    @property
    def headline(self) -> str:
        """The message, else the type: the one line a listing shows."""
        return self.message or self.error_type or "failed"
