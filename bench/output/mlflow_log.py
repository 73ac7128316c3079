"""Runs, comparisons and sweeps logged to an MLflow tracking server, and a logged run's record read back.

| what a run holds           | what MLflow gets                                                                       |
|----------------------------|----------------------------------------------------------------------------------------|
| its configuration          | params, one per run setting that is set                                                |
| each epoch                 | metrics with the epoch as step and its end as timestamp: epoch_seconds, samples_per_s, |
|                            | loss, accuracy, val_loss, val_accuracy, achieved_gflops, energy_joules_<device>        |
| each utilization sample    | system metrics under MLflow's own names (``system/cpu_utilization_percentage``,       |
|                            | ``system/gpu_0_utilization_percentage``, ...), step = the sample's number from 0 and   |
|                            | timestamp = its wall time, as MLflow's own SystemMetricsMonitor logs them: the UI's    |
|                            | System Metrics tab shows them                                                          |
| its record and report      | artifacts ``bench/run.json`` (``bench.run/1``, what ``bench import --mlflow`` reads)   |
|                            | and ``bench/report.html``                                                              |
| a comparison or sweep      | a parent run (its headline as the tag ``headline`` and as the run's description, the   |
|                            | settings the runs share as params, the document as ``bench/<kind>.json``) and one      |
|                            | child run per run                                                                      |

Sending is a list of steps done in order; a step that fails (a server down or refusing) is tried once more after a
pause, from where it stopped, and a second failure ends the send with an :class:`Outcome` that says why. Nothing
here raises for a failing server: a run is finished and stored whether MLflow took it or not. ``mlflow`` (or
``mlflow-skinny``) is imported only inside the functions that talk to a server, so the dashboard and ``make run``
never load it unless asked to log.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import logging
import math
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, MutableMapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.vocab import records, settings
from bench.analysis import compare
from bench.output import report
from bench.vocab.readings import Epoch, GpuReading, Sample
from bench.vocab.record_types import RecordedHardware, SweepRow
from bench.vocab.records import RunRecord, Status

log = logging.getLogger(__name__)

PIP_LINE = "pip install -r requirements-mlflow.txt"  # mlflow-skinny: the client, no server
RETRY_PAUSE_S = 1.0
# MLflow's own HTTP retries and timeout, unless the user set them: a dead server costs seconds, not minutes
HTTP_DEFAULTS = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0", "MLFLOW_HTTP_REQUEST_TIMEOUT": "10",
                 "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1"}
RECORD_ARTIFACT = "bench/run.json"
REPORT_ARTIFACT = "bench/report.html"
SYSTEM_PREFIX = "system/"  # MLflow's SystemMetricsMonitor prefix
MB_PER_MIB = 2**20 / 1e6  # MLflow's megabytes are 10^6 bytes (memory.used / 1e6); the sampler reads MiB
BATCH_METRICS = 1000  # MLflow's MAX_METRICS_PER_BATCH
MLFLOW_STATUS = {Status.FINISHED: "FINISHED", Status.FAILED: "FAILED", Status.STOPPED: "KILLED",
                 Status.INTERRUPTED: "KILLED", Status.QUEUED: "RUNNING", Status.STARTING: "RUNNING",
                 Status.RUNNING: "RUNNING"}  # a run exported while another process runs it: still running there


def available() -> bool:
    """Whether an MLflow client (mlflow or mlflow-skinny) is installed, without importing it."""
    return importlib.util.find_spec("mlflow") is not None


# -- what a run becomes in MLflow's terms -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Point:
    """One metric value as MLflow logs it: key, value, step, timestamp in milliseconds."""

    key: str
    value: float
    step: int
    timestamp_ms: int


def _mb(mib: float | None) -> float | None:
    return None if mib is None else mib * MB_PER_MIB


def _percent(part: float | None, whole: float | None) -> float | None:
    return None if part is None or not whole else part / whole * 100


# MLflow's system-metric names (mlflow/system_metrics/metrics/cpu_monitor.py, gpu_monitor.py), each from a reading
MACHINE_METRICS: tuple[tuple[str, Callable[[Sample, float | None], float | None]], ...] = (
    ("cpu_utilization_percentage", lambda s, ram_total_mib: s.cpu_percent),
    ("system_memory_usage_megabytes", lambda s, ram_total_mib: _mb(s.ram_used_mib)),
    ("system_memory_usage_percentage", lambda s, ram_total_mib: _percent(s.ram_used_mib, ram_total_mib)),
)
GPU_METRICS: tuple[tuple[str, Callable[[GpuReading], float | None]], ...] = (  # named gpu_<index>_<name>
    ("utilization_percentage", lambda g: g.util_percent),
    ("memory_usage_megabytes", lambda g: _mb(g.mem_used_mib)),
    ("memory_usage_percentage", lambda g: _percent(g.mem_used_mib, g.mem_total_mib)),
    ("power_usage_watts", lambda g: g.power_w),
    ("power_usage_percentage", lambda g: _percent(g.power_w, g.power_limit_w)),
)
EPOCH_METRICS: tuple[tuple[str, Callable[[Epoch, RunRecord], float | None]], ...] = (
    ("epoch_seconds", lambda e, run: e.epoch_seconds),
    ("samples_per_s", lambda e, run: e.samples_per_s),
    ("loss", lambda e, run: e.loss),
    ("accuracy", lambda e, run: e.accuracy),
    ("val_loss", lambda e, run: e.val_loss),
    ("val_accuracy", lambda e, run: e.val_accuracy),
    ("achieved_gflops", lambda e, run: compare.epoch_gflops(e, run.info)),
)


def _kept(values: Iterable[tuple[str, float | None]], step: int, ms: int, prefix: str = "") -> list[Point]:
    """The readings taken (a missing one is None: no point, never a zero), each a point."""
    return [Point(prefix + key, float(v), step, ms) for key, v in values if v is not None and math.isfinite(v)]


def _origin_s(run: RunRecord) -> float:
    """The wall time a run's readings count from (its start), for their timestamps."""
    return next((t for t in (run.started_at, run.created_at) if t is not None), time.time())


def _ram_total_mib(hardware: RecordedHardware) -> float | None:
    return hardware.cpu.ram_total_mib if hardware.cpu is not None else None


def system_points(run: RunRecord) -> list[Point]:
    """A run's samples as MLflow's system metrics: step = the sample's number from 0, timestamp = its wall time."""
    origin, ram_total = _origin_s(run), _ram_total_mib(run.hardware)
    points = []
    for step, sample in enumerate(run.samples):
        ms = int((origin + sample.t_s) * 1000)
        values = [(name, read(sample, ram_total)) for name, read in MACHINE_METRICS]
        values += [(f"gpu_{gpu.index}_{name}", read(gpu)) for gpu in sample.gpus or () for name, read in GPU_METRICS]
        points += _kept(values, step, ms, SYSTEM_PREFIX)
    return points


def _device_key(device: str) -> str:
    return "energy_joules_" + "".join(c if c.isalnum() else "_" for c in device)


def epoch_points(run: RunRecord) -> list[Point]:
    """A run's epochs as metrics, the epoch as step and its end as timestamp (its energy per device beside)."""
    origin = _origin_s(run)
    points = []
    for epoch in run.epochs:
        ms = int((origin + (epoch.t_end_s or 0.0)) * 1000)
        values = [(name, read(epoch, run)) for name, read in EPOCH_METRICS]
        values += [(_device_key(device), joules) for device, joules in (epoch.energy_j or {}).items()]
        points += _kept(values, epoch.epoch, ms)
    return points


def params_of(run: RunRecord) -> dict[str, str]:
    """A run's settings that are set, as MLflow params (text)."""
    return {k: str(v) for k, v in run.config.to_dict().items() if v is not None}


def tags_of(run: RunRecord) -> dict[str, str]:
    """Where and how a run ran, as tags: its id in this store, status, target, placement, framework, machine."""
    info = run.info
    tags = {"mlflow.runName": report.run_label(run), "bench.status": str(run.status),
            "bench.vocab.target": compare.target(run), "bench.hardware": report.hardware_label(run.hardware),
            "bench.placement": info.placement, "bench.framework": info.framework,
            "bench.run_id": None if run.id is None else str(run.id)}
    return {k: v for k, v in tags.items() if v}


def shared_params(runs: Sequence[RunRecord]) -> dict[str, str]:
    """The settings every run of a group shares: the parent run's params."""
    each = [params_of(r) for r in runs]
    return {k: v for k, v in each[0].items() if all(k in p and p[k] == v for p in each[1:])} if each else {}


def sweep_headline(rows: Sequence[SweepRow]) -> str:
    """A sweep in one line: its points and the fastest of them."""
    measured = [r for r in rows if r.samples_per_s is not None]
    text = f"sweep of {len(rows)} point(s)"
    if measured:
        best = max(measured, key=lambda r: r.samples_per_s or 0.0)
        text += (f"; fastest: size {best.size}, batch {best.batch_size} on {best.target} at "
                 f"{best.samples_per_s:,.0f} samples/s")
    return text


def comparison_headline(comparison: records.Comparison) -> str:
    """A comparison's headline: each pair's sentence (``compare.headline``)."""
    pairs = comparison.comparison.pairs if comparison.comparison is not None else ()
    return " ".join(p.headline or compare.headline(p) for p in pairs) or "comparison"


# -- sending ----------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Outcome:
    """What a send did: the MLflow ids of the runs logged (children in order), the parent's, and why it stopped short
    (None: everything was logged)."""

    uri: str
    run_ids: tuple[str, ...] = ()
    parent_id: str | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class TrackingCall:
    """One call to the tracking server, named for the warning when it fails."""

    what: str  # said when it fails, e.g. "create the run of #3"
    do: Callable[[], None]


def _client(uri: str) -> Any:
    for name, value in HTTP_DEFAULTS.items():
        os.environ.setdefault(name, value)
    from mlflow import MlflowClient

    return MlflowClient(tracking_uri=uri)


def _reason(exc: BaseException) -> str:
    """An exception in one short line: its type and the start of its message."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:240]}{'…' if len(text) > 240 else ''}" if text else type(exc).__name__


def send(steps: Sequence[TrackingCall], pause_s: float = RETRY_PAUSE_S) -> str | None:
    """Each step once, in order; the first failure is tried again after ``pause_s`` from that step on, a second ends
    the send. Returns None when every step was done, else what failed and why."""
    failures, i = 0, 0
    while i < len(steps):
        try:
            steps[i].do()
        except Exception as exc:  # noqa: BLE001 - whatever the client raises, the send ends with a reason
            failures += 1
            log.debug("MLflow step %r failed", steps[i].what, exc_info=True)
            if failures > 1:
                return f"{steps[i].what}: {_reason(exc)}"
            time.sleep(pause_s)
            continue
        i += 1
    return None


class _Plan:
    """The steps that log runs with one client; run ids are kept as they are made, so a retried step finds them."""

    def __init__(self, client: Any, experiment: str):
        self.client = client
        self.experiment = experiment
        self.ids: dict[str, str] = {}  # "experiment", "parent", "run-<n>" -> MLflow id
        self.steps: list[TrackingCall] = [TrackingCall(f"find the experiment {experiment!r}", self._experiment)]

    def _experiment(self) -> None:
        found = self.client.get_experiment_by_name(self.experiment)
        self.ids["experiment"] = found.experiment_id if found is not None else self.client.create_experiment(
            self.experiment)

    def _create(self, key: str, start_s: float | None, tags: dict[str, str]) -> None:
        if key not in self.ids:
            start = None if start_s is None else int(start_s * 1000)
            self.ids[key] = self.client.create_run(self.ids["experiment"], start_time=start, tags=tags).info.run_id

    def _batch(self, key: str, **entities: Any) -> None:
        self.client.log_batch(self.ids[key], **entities)

    def _text(self, key: str, text: Callable[[], str], artifact: str) -> None:
        self.client.log_text(self.ids[key], text(), artifact)

    def _end(self, key: str, status: str, end_s: float | None) -> None:
        self.client.set_terminated(self.ids[key], status=status, end_time=None if end_s is None else int(end_s * 1000))

    def run(self, key: str, run: RunRecord, parent: str | None = None) -> None:
        """The steps of one run: create it (a child of ``parent`` when given), its params and tags, its metrics in
        batches, its record and report, its end."""
        from mlflow.entities import Metric, Param

        name = f"#{run.id}" if run.id is not None else "the run"
        self.steps.append(TrackingCall(f"create the MLflow run of {name}", lambda: self._create(
            key, run.started_at or run.created_at,
            tags_of(run) | ({"mlflow.parentRunId": self.ids[parent]} if parent else {}))))
        self.steps.append(TrackingCall(f"log the params of {name}", lambda: self._batch(
            key, params=[Param(k, v) for k, v in params_of(run).items()])))
        points = epoch_points(run) + system_points(run)
        for start in range(0, len(points), BATCH_METRICS):
            chunk = [Metric(p.key, p.value, p.timestamp_ms, p.step) for p in points[start:start + BATCH_METRICS]]
            self.steps.append(TrackingCall(f"log the metrics of {name}", functools.partial(self._batch, key, metrics=chunk)))
        self.steps.append(TrackingCall(f"log the record of {name}", lambda: self._text(
            key, lambda: report.to_json(run), RECORD_ARTIFACT)))
        self.steps.append(TrackingCall(f"log the report of {name}", lambda: self._text(
            key, lambda: report.to_html(run), REPORT_ARTIFACT)))
        self.steps.append(TrackingCall(f"end the MLflow run of {name}", lambda: self._end(
            key, MLFLOW_STATUS[Status(run.status)], run.ended_at)))

    def parent(self, kind: str, runs: Sequence[RunRecord], headline: str, document: Callable[[], str]) -> None:
        """The steps of a group's parent run: its headline, the settings its runs share, its document."""
        from mlflow.entities import Param

        targets = " vs ".join(dict.fromkeys(compare.target(r) for r in runs))
        tags = {"mlflow.runName": f"{kind}: {targets}", "headline": headline,
                "mlflow.note.content": headline, "bench.kind": kind}
        starts = [t for r in runs if (t := r.started_at or r.created_at) is not None]
        self.steps.append(TrackingCall(f"create the MLflow run of the {kind}", lambda: self._create(
            "parent", min(starts, default=None), tags)))
        self.steps.append(TrackingCall(f"log the params of the {kind}", lambda: self._batch(
            "parent", params=[Param(k, v) for k, v in shared_params(runs).items()])))
        self.steps.append(TrackingCall(f"log the {kind} document", lambda: self._text(
            "parent", document, f"bench/{kind}.json")))

    def end_parent(self, kind: str, runs: Sequence[RunRecord]) -> None:
        ends = [r.ended_at for r in runs if r.ended_at is not None]
        status = "FINISHED" if all(r.status == Status.FINISHED for r in runs) else "FAILED"
        self.steps.append(TrackingCall(f"end the MLflow run of the {kind}", lambda: self._end(
            "parent", status, max(ends, default=None))))

    def outcome(self, uri: str, keys: Iterable[str], error: str | None) -> Outcome:
        return Outcome(uri=uri, run_ids=tuple(self.ids[k] for k in keys if k in self.ids),
                       parent_id=self.ids.get("parent"), error=error)


def log_run(uri: str, run: RunRecord, *, experiment: str | None = None, pause_s: float = RETRY_PAUSE_S) -> Outcome:
    """Log one run to the MLflow tracking server (or store) at ``uri``; never raises for a failing server."""
    try:
        plan = _Plan(_client(uri), experiment or settings.mlflow_experiment())
        plan.run("run", run)
    except Exception as exc:  # noqa: BLE001 - a client that cannot even be made is an outcome too
        return Outcome(uri=uri, error=_reason(exc))
    return plan.outcome(uri, ["run"], send(plan.steps, pause_s))


def log_group(uri: str, kind: str, runs: Sequence[RunRecord], *, headline: str, document: Callable[[], str],
              experiment: str | None = None, pause_s: float = RETRY_PAUSE_S) -> Outcome:
    """Log a comparison or sweep (``kind``) as a parent run with one child per run; never raises for a failing
    server. ``document``: the group's JSON text, made when it is sent."""
    keys = [f"run-{i}" for i in range(len(runs))]
    try:
        plan = _Plan(_client(uri), experiment or settings.mlflow_experiment())
        plan.parent(kind, runs, headline, document)
        for key, run in zip(keys, runs):
            plan.run(key, run, parent="parent")
        plan.end_parent(kind, runs)
    except Exception as exc:  # noqa: BLE001
        return Outcome(uri=uri, error=_reason(exc))
    return plan.outcome(uri, keys, send(plan.steps, pause_s))


def fetch_record(uri: str, run_id: str) -> bytes:
    """The ``bench.run/1`` record (or, for a comparison's parent run, the comparison) an MLflow run was logged with.

    Raises:
        RecordError: the run or its record cannot be read; the message says which and why.
    """
    client = _client(uri)
    with tempfile.TemporaryDirectory(prefix="bench-mlflow-") as folder:
        problems = []
        for artifact in (RECORD_ARTIFACT, "bench/comparison.json"):
            try:
                return Path(client.download_artifacts(run_id, artifact, folder)).read_bytes()
            except Exception as exc:  # noqa: BLE001 - said in the error below
                problems.append(f"{artifact}: {_reason(exc)}")
    raise records.RecordError(f"MLflow run {run_id!r} at {uri} gave no bench record ({'; '.join(problems)}); "
                              "import a run that `--mlflow` logged")


# -- the dashboard's logging ------------------------------------------------------------------------------------------
HOOK_NAME = "mlflow"


@dataclass
class DashboardLog:
    """The dashboard's MLflow logging, one per server: a finished-run hook of its run queue (called in a thread of
    its own), its URI set from the run form (BENCH_MLFLOW_URI the default; None logs nothing), the last outcome kept
    for the form to show."""

    uri: str | None = None
    last: str | None = None
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock, repr=False)

    def __call__(self, run: RunRecord) -> None:
        uri = self.uri
        if uri is None:
            return
        outcome = log_run(uri, run)
        stored = run.id is not None and run.id > 0
        later = (f"send it with `python -m bench export {run.id} --mlflow {uri}`" if stored
                 else "it is not in the store: download its record from the page and import it first")
        text = (f"run #{run.id} logged as MLflow run {outcome.run_ids[0]}" if outcome.ok and outcome.run_ids
                else f"run #{run.id} not logged ({outcome.error}); {later}")
        if not outcome.ok:
            log.warning("MLflow at %s: %s", uri, text)
        with self.lock:
            self.last = text

    def group(self, runs: list[RunRecord], document: records.Comparison | records.Sweep | None) -> None:
        """A comparison or sweep the dashboard ran, once its last run ended (its runs that trained and its document,
        built by the run queue as the CLI builds it): a parent run with a child per run, its headline a tag (the
        CLI's ``--mlflow`` way); the runs of another group (a lesson step), one MLflow run each."""
        uri = self.uri
        if uri is None:
            return
        if document is None:
            for run in runs:
                self(run)
            return
        kind, headline, text = _group_document(document)
        outcome = log_group(uri, kind, runs, headline=headline, document=text)
        ids = ", ".join(f"#{r.id}" for r in runs)
        text_said = (f"{kind} of runs {ids} logged as MLflow run {outcome.run_ids[0]} with {len(runs)} children"
                     if outcome.ok and outcome.run_ids else
                     f"{kind} of runs {ids} not logged ({outcome.error}); send each with "
                     f"`python -m bench export ID --mlflow {uri}`")
        if not outcome.ok:
            log.warning("MLflow at %s: %s", uri, text_said)
        with self.lock:
            self.last = text_said


def _group_document(document: records.Comparison | records.Sweep) -> tuple[str, str, Callable[[], str]]:
    """A group's kind as logged, its headline and its JSON document, as the CLI writes them for the same runs."""
    if isinstance(document, records.Comparison):
        return "comparison", comparison_headline(document), lambda: report.to_json(document)
    return "sweep", sweep_headline(document.rows), lambda: records.json_text(document.to_dict())


def dashboard_log(hooks: MutableMapping[str, Callable[[RunRecord], None]],
                  group_hooks: MutableMapping[str, Callable[[list[RunRecord], records.Comparison | records.Sweep | None],
                                                            None]] | None = None
                  ) -> DashboardLog:
    """The dashboard's :class:`DashboardLog` among a run queue's finished-run hooks (and its group hooks, so a
    comparison or sweep is logged as a parent with its children), added on first use with BENCH_MLFLOW_URI's URI
    (none when the variable is unset or not a URI: the form says so)."""
    found = hooks.get(HOOK_NAME)
    if isinstance(found, DashboardLog):
        if group_hooks is not None:
            group_hooks[HOOK_NAME] = found.group
        return found
    try:
        uri = settings.mlflow_uri()
        problem = None
    except ValueError as exc:
        uri, problem = None, str(exc)
    made = DashboardLog(uri=uri, last=problem)
    hooks[HOOK_NAME] = made
    if group_hooks is not None:
        group_hooks[HOOK_NAME] = made.group
    return made
