"""This machine and its runs in Prometheus's text format: the GPUs under DCGM exporter's names and units, the CPU and
memory, and each run's figures labelled by run id, model and target.

The text is made by ``prometheus_client`` (one :class:`ScrapeCollector` in a ``CollectorRegistry``, written by
``generate_latest``) from plain typed data handed to it: the readings the monitor takes (``readings.Sample``,
``readings.GpuReading``) and each run as :class:`RunFigures` (its caller makes them from what it holds: the
dashboard from its run queue's snapshot and from the store's live runs of other processes, ui/metrics_route.py).
A figure that was not measured is absent from the text, never 0.

:class:`Exporter` is what a server holds: every scrape within ``MAX_AGE_S`` is handed the same bytes, made from one
reading (and one look at the runs). While a run this process samples is live, that reading is the run's latest sample
(the sampler already took it: the run's ``worker`` sample); otherwise the exporter takes one itself, at most once per
``MAX_AGE_S``.

DCGM's names: ``DCGM_FI_DEV_*`` in DCGM's units (%, MiB, W, mJ, C, MHz), ``DCGM_FI_PROF_*`` as ratios 0..1, each with
DCGM's labels ``gpu`` (the NVML index), ``UUID``, ``modelName`` and ``Hostname``; NVIDIA GPUs (readings from NVML) only. A dashboard built over them also
reads a real DCGM exporter (docs/grafana/bench.json).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeGuard

from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.metrics_core import (CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric,
                                            UnknownMetricFamily)
from prometheus_client.registry import Collector, CollectorRegistry

from bench.hardware.devices import Hardware
from bench.hardware.monitor.gpu import SOURCE as NVML_SOURCE
from bench.hardware.monitor.sampler import Sampler
from bench.vocab.readings import Epoch, GpuReading, Sample
from bench.vocab.records import Status

__all__ = ["CONTENT_TYPE", "DCGM_FIELDS", "Exporter", "MAX_AGE_S", "SERIES", "RunFigures", "Scrape",
           "ScrapeCollector", "exposition"]

CONTENT_TYPE = CONTENT_TYPE_LATEST
MAX_AGE_S = 1.0  # every scrape within this long of a reading is handed the same bytes
_MIB = 2**20
DCGM_LABELS = ("gpu", "UUID", "modelName", "Hostname")
RUN_LABELS = ("run_id", "model", "target")
# bench_epoch_seconds' buckets: from a tiny model's epoch on a GPU to a large one's on a CPU
EPOCH_BUCKETS_S = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0)


def _ratio(percent: float | None) -> float | None:
    return None if percent is None else percent / 100.0


def _milli(value: float | None) -> float | None:
    return None if value is None else value * 1000.0


def _bytes(mib: float | None) -> float | None:
    return None if mib is None else mib * _MIB


@dataclass(frozen=True)
class DcgmField:
    """One GPU figure under DCGM's name: how to read it from a GPU reading, in DCGM's unit.

    ``counter``: DCGM declares it a counter. prometheus_client writes a counter's samples with ``_total`` appended,
    which is not DCGM's name, so it is written untyped under DCGM's exact name (PromQL's ``rate`` reads it the same).
    """

    name: str
    help: str
    read: Callable[[GpuReading], float | None]
    counter: bool = False


# The GPU reading's figures under DCGM's field names, in DCGM's units; a table, one row a figure.
DCGM_FIELDS: tuple[DcgmField, ...] = (
    DcgmField("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", lambda g: g.util_percent),
    DcgmField("DCGM_FI_DEV_MEM_COPY_UTIL", "Memory utilization (in %).", lambda g: g.mem_util_percent),
    DcgmField("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", lambda g: g.mem_used_mib),
    DcgmField("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", lambda g: g.power_w),
    DcgmField("DCGM_FI_DEV_ENFORCED_POWER_LIMIT", "Current power limit for the device (in W).",
              lambda g: g.power_limit_w),
    DcgmField("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
              "Total energy consumption since the driver was last loaded (in mJ); a counter.",
              lambda g: _milli(g.energy_j), counter=True),
    DcgmField("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", lambda g: g.temp_c),
    DcgmField("DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", lambda g: g.sm_clock_mhz),
    DcgmField("DCGM_FI_PROF_SM_ACTIVE", "The ratio of cycles an SM has at least 1 warp assigned (ratio 0-1).",
              lambda g: _ratio(g.sm_active_percent)),
    DcgmField("DCGM_FI_PROF_SM_OCCUPANCY", "The ratio of number of warps resident on an SM (ratio 0-1).",
              lambda g: _ratio(g.sm_occupancy_percent)),
    DcgmField("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "Ratio of cycles the tensor (HMMA) pipe is active (ratio 0-1).",
              lambda g: _ratio(g.tensor_active_percent)),
    DcgmField("DCGM_FI_PROF_PIPE_FP32_ACTIVE", "Ratio of cycles the fp32 pipes are active (ratio 0-1).",
              lambda g: _ratio(g.fp32_active_percent)),
    DcgmField("DCGM_FI_PROF_PIPE_FP16_ACTIVE", "Ratio of cycles the fp16 pipes are active (ratio 0-1).",
              lambda g: _ratio(g.fp16_active_percent)),
    DcgmField("DCGM_FI_PROF_DRAM_ACTIVE",
              "Ratio of cycles the device memory interface is active sending or receiving data (ratio 0-1).",
              lambda g: _ratio(g.dram_active_percent)),
)


# Another vendor's GPU (AMD SMI, amdgpu sysfs, Apple's IOAccelerator, libtpu, Level Zero): not one DCGM reads, so its
# figures go under this project's names, labelled with the source that read them (what its "utilization" means
# differs by source: docs/GPU.md), never under NVIDIA's.
VENDOR_LABELS = ("gpu", "source", "modelName", "Hostname")
VENDOR_FIELDS: tuple[DcgmField, ...] = (
    DcgmField("bench_gpu_utilization_percent", "GPU utilization as its source measures it (in %, 0-100).",
              lambda g: g.util_percent),
    DcgmField("bench_gpu_memory_used_bytes", "GPU memory in use (in bytes).", lambda g: _bytes(g.mem_used_mib)),
    DcgmField("bench_gpu_power_watts", "GPU power draw (in W).", lambda g: g.power_w),
    DcgmField("bench_gpu_tensor_active_ratio", "Share of time the tensor units worked (ratio 0-1; a TPU's "
              "TensorCore utilization).", lambda g: _ratio(g.tensor_active_percent)),
)


@dataclass(frozen=True)
class SampleField:
    """One figure of the machine (or of the run's worker) from a sample, under this project's name."""

    name: str
    help: str
    read: Callable[[Sample], float | None]


MACHINE_FIELDS: tuple[SampleField, ...] = (
    SampleField("bench_cpu_utilization_percent", "Host CPU utilization, the mean over its cores (in %, 0-100).",
                lambda s: s.cpu_percent),
    SampleField("bench_memory_used_bytes", "Host memory in use (in bytes).", lambda s: _bytes(s.ram_used_mib)),
)
WORKER_FIELDS: tuple[SampleField, ...] = (
    SampleField("bench_worker_cpu_percent",
                "CPU of the run's worker process and its children (in %, 100 = one core).",
                lambda s: s.process_cpu_percent),
    SampleField("bench_worker_resident_bytes", "Resident memory of the run's worker process and its children "
                "(in bytes).", lambda s: _bytes(s.process_rss_mib)),
)
CORE_SERIES = "bench_cpu_core_utilization_percent"
MEMORY_TOTAL_SERIES = "bench_memory_total_bytes"
CPU_ENERGY_SERIES = "bench_cpu_energy_joules"  # written as bench_cpu_energy_joules_total (a counter)
RUN_SERIES = ("bench_run_status", "bench_run_epoch", "bench_run_epochs_planned", "bench_run_progress_ratio",
              "bench_samples_per_second", "bench_first_epoch_seconds")
EPOCH_HISTOGRAM = "bench_epoch_seconds"

# every series name the endpoint may serve (a histogram's as its _bucket, _sum and _count): what a dashboard's queries
# may name (tests/unit/test_grafana.py)
SERIES: frozenset[str] = frozenset(
    [f.name for f in DCGM_FIELDS + VENDOR_FIELDS] + [f.name for f in MACHINE_FIELDS + WORKER_FIELDS]
    + [CORE_SERIES, MEMORY_TOTAL_SERIES, f"{CPU_ENERGY_SERIES}_total", *RUN_SERIES]
    + [f"{EPOCH_HISTOGRAM}{suffix}" for suffix in ("_bucket", "_sum", "_count")]
)


@dataclass(frozen=True)
class GpuIdentity:
    """DCGM's labels of one GPU besides its index."""

    uuid: str
    model_name: str


@dataclass(frozen=True)
class RunFigures:
    """One run as the text shows it, handed over by its caller.

    Args:
        id, model, target: its labels (``target`` as the run's config names it, e.g. ``gpu:0``).
        status: a ``records.Status`` value.
        epoch: the epoch under way, else the epochs it finished.
        epochs_planned: the epochs it was started for.
        progress_ratio: how much of it is done, 0..1.
        epochs: its finished epochs.
        worker: the run's own latest sample when this process samples the live run (its worker's CPU and memory
            belong to the run, and the sample stands for the machine); None otherwise.
    """

    id: int
    model: str
    target: str
    status: str
    epoch: int
    epochs_planned: int
    progress_ratio: float
    epochs: tuple[Epoch, ...] = ()
    worker: Sample | None = None

    @property
    def labels(self) -> list[str]:
        """``run_id``, ``model`` and ``target``."""
        return [str(self.id), self.model, self.target]


@dataclass(frozen=True)
class Scrape:
    """What one scrape shows: this machine at one instant and its runs.

    Args:
        hostname: DCGM's ``Hostname`` label.
        gpus: NVML index -> the GPU's UUID and model (from discovery); a GPU read but not listed there (hidden by
            CUDA_VISIBLE_DEVICES) is labelled with the name its reading carries and no UUID.
        ram_total_mib: the host's memory, None when unknown.
        sample: the machine at one instant, None when none could be taken.
        runs: the runs shown (the current one, live or the latest, and the live runs of other processes), none when
            there are none.
    """

    hostname: str
    gpus: Mapping[int, GpuIdentity] = field(default_factory=dict)
    ram_total_mib: float | None = None
    sample: Sample | None = None
    runs: tuple[RunFigures, ...] = ()

    @classmethod
    def of(cls, machine: Hardware, sample: Sample | None, runs: Sequence[RunFigures] = ()) -> Scrape:
        """A scrape of ``machine`` (as discovered: its hostname, its GPUs' UUIDs and models, its memory)."""
        gpus = {g.index: GpuIdentity(uuid=g.uuid or "", model_name=g.name or "") for g in machine.gpus
                if g.index is not None}
        return cls(hostname=machine.hostname, gpus=gpus, ram_total_mib=machine.cpu.ram_total_mib, sample=sample,
                   runs=tuple(runs))


def _measured(value: float | None) -> TypeGuard[float]:
    """Whether a figure was measured: a number, not None (nor NaN, nor infinite)."""
    return value is not None and math.isfinite(value)


def _gpu_labels(scrape: Scrape, reading: GpuReading) -> list[str]:
    known = scrape.gpus.get(reading.index)
    if known is not None:
        return [str(reading.index), known.uuid, known.model_name, scrape.hostname]
    return [str(reading.index), "", reading.name or "", scrape.hostname]


def is_nvml(reading: GpuReading) -> bool:
    """Whether a reading came from NVML (as DCGM's do): only those are served under DCGM's names (a reading from
    before readings named their source came from NVML, the one source there was)."""
    return reading.source in (None, NVML_SOURCE)


def gpu_families(scrape: Scrape) -> Iterator[Metric]:
    """One family per DCGM field that some NVIDIA GPU measured; a GPU that did not measure it has no sample there.
    Another vendor's GPU (AMD SMI, Apple's IOAccelerator) is not one DCGM reads, and is not served under its names."""
    readings = [r for r in scrape.sample.gpus or () if is_nvml(r)] if scrape.sample is not None else []
    for spec in DCGM_FIELDS:
        values = [(reading, spec.read(reading)) for reading in readings]
        measured = [(reading, value) for reading, value in values if _measured(value)]
        if not measured:
            continue
        family: GaugeMetricFamily | UnknownMetricFamily = (
            UnknownMetricFamily(spec.name, spec.help, labels=DCGM_LABELS) if spec.counter
            else GaugeMetricFamily(spec.name, spec.help, labels=DCGM_LABELS))
        for reading, value in measured:
            family.add_metric(_gpu_labels(scrape, reading), value)
        yield family


def vendor_families(scrape: Scrape) -> Iterator[Metric]:
    """One family per figure some other vendor's GPU measured, under this project's names with its source named."""
    readings = [r for r in scrape.sample.gpus or () if not is_nvml(r)] if scrape.sample is not None else []
    for spec in VENDOR_FIELDS:
        measured = [(reading, value) for reading in readings if _measured(value := spec.read(reading))]
        if measured:
            family = GaugeMetricFamily(spec.name, spec.help, labels=VENDOR_LABELS)
            for reading, value in measured:
                index, _, model_name, hostname = _gpu_labels(scrape, reading)
                family.add_metric([index, reading.source or "", model_name, hostname], value)
            yield family


def _gauge(name: str, help_text: str, value: float | None) -> Iterator[Metric]:
    if _measured(value):
        yield GaugeMetricFamily(name, help_text, value=value)


def machine_families(scrape: Scrape) -> Iterator[Metric]:
    """The host: CPU (the mean and each core), memory, and the CPU package's energy counter (RAPL) where read."""
    yield from _gauge(MEMORY_TOTAL_SERIES, "Host memory (in bytes).", _bytes(scrape.ram_total_mib))
    sample = scrape.sample
    if sample is None:
        return
    for spec in MACHINE_FIELDS:
        yield from _gauge(spec.name, spec.help, spec.read(sample))
    cores = [(i, v) for i, v in enumerate(sample.cpu_per_core or ()) if _measured(v)]
    if cores:
        family = GaugeMetricFamily(CORE_SERIES, "Utilization of one CPU core (in %, 0-100).", labels=("core",))
        for index, value in cores:
            family.add_metric([str(index)], value)
        yield family
    if _measured(sample.cpu_energy_j):
        yield CounterMetricFamily(CPU_ENERGY_SERIES, "CPU package energy since the counter started (RAPL, in J).",
                                  value=sample.cpu_energy_j)


class _Families:
    """The run families of one scrape, each made once and given a line per run (a name twice is not Prometheus)."""

    def __init__(self) -> None:
        self.gauges: dict[str, GaugeMetricFamily] = {}
        self.epochs: HistogramMetricFamily | None = None

    def gauge(self, name: str, help_text: str, labels: Sequence[str], value: float,
              extra: tuple[str, ...] = ()) -> None:
        family = self.gauges.get(name)
        if family is None:
            family = self.gauges[name] = GaugeMetricFamily(name, help_text, labels=(*RUN_LABELS, *extra))
        family.add_metric(list(labels), value)

    def histogram(self, labels: Sequence[str], seconds: Sequence[float]) -> None:
        if self.epochs is None:
            self.epochs = HistogramMetricFamily(EPOCH_HISTOGRAM, "Training time of each steady epoch of the run "
                                                "(epochs 2..N; validation excluded; in s).", labels=RUN_LABELS)
        buckets: list[tuple[str, float]] = [(repr(bound), float(sum(1 for s in seconds if s <= bound)))
                                            for bound in EPOCH_BUCKETS_S]
        buckets.append(("+Inf", float(len(seconds))))
        self.epochs.add_metric(list(labels), buckets, sum_value=float(sum(seconds)))

    def all(self) -> Iterator[Metric]:
        yield from self.gauges.values()
        if self.epochs is not None:
            yield self.epochs


def run_families(runs: Sequence[RunFigures]) -> Iterator[Metric]:
    """The runs' figures, each family once with a line per run: its status (one series per status, 1 for the run's),
    the epoch under way, the epochs planned, its progress, the last epoch's samples/s, the first epoch's time (it
    includes graph tracing) and the steady epochs' times as a histogram; with its ``worker`` sample, its worker's
    CPU and memory."""
    out = _Families()
    for run in runs:
        _add_run(out, run)
    yield from out.all()


def _add_run(out: _Families, run: RunFigures) -> None:
    labels = run.labels
    for name in Status:
        out.gauge("bench_run_status", "A run's status: 1 for the status it is in, 0 for the others.",
                  [*labels, name.value], 1.0 if run.status == name.value else 0.0, extra=("status",))
    out.gauge("bench_run_epoch", "The epoch the run is in (the epochs it finished, between epochs or once ended).",
              labels, float(run.epoch))
    out.gauge("bench_run_epochs_planned", "The epochs the run was started for.", labels, float(run.epochs_planned))
    out.gauge("bench_run_progress_ratio", "How much of the run is done (ratio 0-1).", labels, run.progress_ratio)
    last = run.epochs[-1].samples_per_s if run.epochs else None
    if _measured(last):
        out.gauge("bench_samples_per_second", "Training samples per second in the run's last finished epoch.",
                  labels, last)
    first = [e.epoch_seconds for e in run.epochs if e.includes_tracing]
    if first:
        out.gauge("bench_first_epoch_seconds", "Training time of the run's first epoch, which includes graph "
                  "tracing (in s).", labels, first[0])
    steady = [e.epoch_seconds for e in run.epochs if not e.includes_tracing and _measured(e.epoch_seconds)]
    if steady:
        out.histogram(labels, steady)
    if run.worker is not None:
        for spec in WORKER_FIELDS:
            value = spec.read(run.worker)
            if _measured(value):
                out.gauge(spec.name, spec.help, labels, value)


class ScrapeCollector(Collector):
    """prometheus_client's view of a scrape: the GPUs, the machine, the run."""

    def __init__(self, scrape: Scrape | None = None) -> None:
        self.scrape = scrape

    def collect(self) -> Iterator[Metric]:
        scrape = self.scrape
        if scrape is None:
            return
        yield from gpu_families(scrape)
        yield from vendor_families(scrape)
        yield from machine_families(scrape)
        yield from run_families(scrape.runs)


def exposition(scrape: Scrape) -> bytes:
    """The scrape in Prometheus's text format."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ScrapeCollector(scrape))
    return generate_latest(registry)


class Exporter:
    """The text every scrape is handed: made at most once per ``MAX_AGE_S`` from one reading, whatever the number of
    scrapers.

    Args:
        machine: this machine as discovered (hostname, the GPUs' UUIDs and models, memory).
        runs: the runs to show, asked once per text made; None while there are none to ask for.
        reader: makes the sampler the exporter reads the machine with when no live run of this process supplies a
            reading (tests pass a fake).
        clock: monotonic seconds.
    """

    def __init__(self, machine: Hardware, runs: Callable[[], Sequence[RunFigures]] | None = None, *,
                 reader: Callable[[], Sampler] = lambda: Sampler(MAX_AGE_S),
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.machine = machine
        self._runs = runs
        self._make_reader = reader
        self._reader: Sampler | None = None
        self._clock = clock
        self._lock = threading.Lock()
        self._made: tuple[float, bytes] | None = None
        self.renders = 0  # how many times the text was made (the tests' view of the sharing)
        self.readings = 0  # how many readings the exporter took itself

    def fresh(self) -> bytes | None:
        """The text made within ``MAX_AGE_S``, or None: a caller may hand it out without waiting for the lock."""
        made = self._made
        if made is not None and self._clock() - made[0] < MAX_AGE_S:
            return made[1]
        return None

    def text(self) -> bytes:
        """The current text: the one made within ``MAX_AGE_S``, else made now (one caller makes it; the others wait
        for it and are handed the same bytes)."""
        with self._lock:
            made = self._made
            now = self._clock()
            if made is not None and now - made[0] < MAX_AGE_S:
                return made[1]
            data = exposition(self._scrape())
            self._made = (now, data)
            self.renders += 1
            return data

    def close(self) -> None:
        """Free the exporter's own sampler (its GPM buffers); safe to call more than once."""
        with self._lock:
            self._drop_reader()

    def _scrape(self) -> Scrape:
        runs = tuple(self._runs()) if self._runs is not None else ()
        sample = next((run.worker for run in runs if run.worker is not None), None)
        if sample is not None:
            self._drop_reader()  # the run's sampler reads the machine now; a reading after it starts afresh
            return Scrape.of(self.machine, sample, runs)
        if self._reader is None:
            self._reader = self._make_reader()
        self.readings += 1
        return Scrape.of(self.machine, self._reader.sample_once(), runs)

    def _drop_reader(self) -> None:
        if self._reader is not None:
            self._reader.stop()
            self._reader = None
