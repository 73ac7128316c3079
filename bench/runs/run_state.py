"""One run's state: the mutable RunState its supervisor updates under the manager's lock, and the immutable
RunSnapshot every reader (pages, CLI, exports) gets a copy of."""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from bench.vocab import records
from bench.vocab.readings import Epoch, Sample
from bench.analysis import metrics, run_summary
from bench.vocab.record_types import RecordedHardware, RunSummary
from bench.vocab.config import RunConfig
from bench.hardware.peak_cache import PeakEntry
from bench.vocab.records import Status
from bench.vocab.run_info import RunError, RunInfo

TERMINAL = records.TERMINAL


@dataclass(frozen=True)
class Progress:
    """The last batch the worker reported: ``batch`` of ``batches`` in epoch ``epoch``."""

    epoch: int
    batch: int
    batches: int


@dataclass(frozen=True)
class GroupPeak:
    """One target's matmul peak as a group holds it: the figure, the peak cache's entry it came from (sizes, when it
    was measured), and the reason when the probe failed. ``GroupPeak()`` is a peak not measured yet."""

    gflops: float | None = None
    entry: PeakEntry | None = None
    error: str | None = None
    stale: bool = False  # a run achieved more than it: the figure is shown flagged until the new probe lands

    @property
    def reference(self) -> PeakEntry | float | None:
        """What a sweep point is measured against (bench.analysis.sweeps.sweep_row): the cache entry with its
        ``stale`` flag where there is one, else the figure (flagged stale: an entry of that figure)."""
        if not self.stale:
            return self.entry if self.entry is not None else self.gflops
        if self.entry is not None:
            return self.entry.updated(stale=True)
        return PeakEntry(peak_gflops=self.gflops, stale=True) if self.gflops is not None else None


@dataclass(frozen=True)
class RunGroup:
    """Several runs queued as one comparison, sweep or lesson step, shared by every browser session.

    A peak probed for the group lands in ``peaks`` (target -> GroupPeak). Frozen: the manager replaces it under its
    lock, and a reader keeps the copy it was handed."""

    id: int
    kind: str
    targets: tuple[str, ...]
    created_at: float
    run_ids: tuple[int, ...] = ()
    prices: Mapping[str, float] | None = None  # target -> hourly price, as the user entered it
    peaks: Mapping[str, GroupPeak] = field(default_factory=dict)

    def peak(self, target: str) -> GroupPeak:
        """``target``'s peak in this group (``GroupPeak()`` when the group probes none for it)."""
        return self.peaks.get(target) or GroupPeak()

    def with_peak(self, target: str, peak: float | None, entry: PeakEntry | None,
                  error: str | None) -> RunGroup:
        """This group once a probe of ``target`` ended: its figure, its cache entry, and the reason it failed."""
        stale = entry is not None and entry.stale
        return replace(self, peaks={**self.peaks, target: GroupPeak(gflops=peak, entry=entry, error=error, stale=stale)})

    def with_stale_peak(self, target: str) -> RunGroup:
        """This group once a run beat ``target``'s peak: the figure flagged stale until the new probe lands."""
        return replace(self, peaks={**self.peaks, target: replace(self.peak(target), stale=True)})


@dataclass(frozen=True)
class RunSnapshot:
    """An immutable copy of one run's live state, safe to read from any thread."""

    id: int
    config: RunConfig
    status: str
    created_at: float
    started_at: float | None
    ended_at: float | None
    phase: str
    info: RunInfo
    progress: Progress | None
    epochs: tuple[Epoch, ...]
    samples: tuple[Sample, ...]
    error: RunError | None
    store_error: str | None
    hardware: RecordedHardware
    queue_position: int | None
    saved: bool = True  # everything measured so far is in the store
    owner: str | None = None  # set when another process runs this run (shown from the store; it cannot be stopped here)

    @property
    def active(self) -> bool:
        return self.status not in TERMINAL

    @functools.cached_property
    def summary(self) -> RunSummary:
        """The run's summary block, computed once per snapshot: an ended run's panel reads it three times a refresh
        (the result line, the diagnosis, the energy line), and with a long run each costs tens of milliseconds."""
        return run_summary.summarize(self.epochs, self.samples, info=self.info, config=self.config)

    def energy(self) -> RunSummary:
        """The energy part of ``summary`` alone (run_summary.energy_summary), without the utilization means and the
        diagnosis over every sample: what the live header shows at each refresh."""
        return run_summary.energy_summary(self.epochs, self.samples, self.info, self.config)

    def elapsed_s(self, now: float | None = None) -> float | None:
        if self.started_at is None:
            return None
        end = self.ended_at if self.ended_at is not None else (now or time.time())
        return end - self.started_at

    # -- progress: the one home of its arithmetic (the live header, the sidebar and the ETA read it) ---------------
    def epoch_fraction(self) -> float:
        """How much of the epoch under way its finished batches make: 0 between epochs, before the first batch, or
        when the worker has not said how many batches an epoch has."""
        p = self.progress
        if p is None or not p.batches or p.epoch != len(self.epochs) + 1:
            return 0.0
        return min(1.0, p.batch / p.batches)

    def current_epoch(self) -> int | None:
        """The epoch under way as "epoch N of total" counts it (never past the total); None before the first batch
        (or for a run read from the store, which has no progress)."""
        return min(self.progress.epoch, self.config.epochs) if self.progress is not None else None

    def fraction_done(self) -> float:
        """How much of the run is done, 0..1: the epochs done and the share of the one under way; 1 once finished; an
        ended run that did not finish stays where it stopped."""
        if self.status == Status.FINISHED:
            return 1.0
        in_epoch = self.epoch_fraction() if self.active else 0.0
        return min(1.0, (len(self.epochs) + in_epoch) / max(self.config.epochs, 1))

    def eta_s(self) -> float | None:
        """Seconds left, from the steady epoch time (or the first epoch) and the batch progress."""
        per_epoch = metrics.steady_epoch_seconds(self.epochs) or (
            self.epochs[-1].epoch_seconds if self.epochs else None
        )
        if per_epoch is None or not self.active:
            return None
        return max(0.0, (self.config.epochs - len(self.epochs) - self.epoch_fraction()) * per_epoch)

    @classmethod
    def from_stored(cls, run: records.RunRecord, *, owner: str | None = None) -> RunSnapshot:
        """A run read back from the store (``Store.get_run``): after a restart, or one another process runs."""
        return cls(
            id=int(run.id or 0), config=run.config, status=run.status,
            created_at=float(run.created_at or 0.0), started_at=run.started_at, ended_at=run.ended_at,
            phase=str(run.status), info=run.info, progress=None, epochs=run.epochs, samples=run.samples,
            error=run.error, store_error=None, hardware=run.hardware, queue_position=None, saved=True,
            owner=owner)

    def record(self) -> records.RunRecord:
        """The ``bench.run/1`` record the CLI writes and exports use, with this snapshot's own summary rather than a
        second one computed from the same epochs and samples."""
        return records.RunRecord(
            id=self.id, status=Status(self.status), config=self.config, hardware=self.hardware,
            info=self.info, created_at=self.created_at, started_at=self.started_at, ended_at=self.ended_at,
            error=self.error, store_error=self.store_error, epochs=self.epochs,
            samples=self.samples, summary=self.summary)


@dataclass
class RunState:
    """A run as its supervisor sees it; read and written only under the JobManager's lock."""

    id: int
    config: RunConfig
    created_at: float
    hardware: RecordedHardware
    status: str = Status.QUEUED
    started_at: float | None = None
    ended_at: float | None = None
    phase: str = Status.QUEUED.value
    info: RunInfo = field(default_factory=RunInfo)  # replaced whole as the run learns (RunInfo.updated)
    progress: Progress | None = None  # the last batch the worker reported
    epochs: list[Epoch] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    error: RunError | None = None
    store_error: str | None = None
    stop_requested_at: float | None = None
    pending_status: str | None = None  # the outcome, set before it is stored and shown
    stored: bool = True  # the run has a row in the store (False: the store was not there when it was queued)
    dirty: bool = False  # the store failed a write: writes wait for the next whole re-write (_resync)
    dirty_mark: int = 0  # counts the writes that waited, so a re-write knows whether it caught up with them
    # samples not yet in the store, each with its number in the run (the store keeps one row per number)
    unsaved_samples: list[tuple[int, Sample]] = field(default_factory=list)
    samples_in_flight: int = 0  # taken out of unsaved_samples by a write that has not returned yet
    next_sample_seq: int = 0
    # each of ``samples``' number in the run, thinned with it (Recorder.on_sample): a run whose row the store lost
    # writes every sample it still holds again, each under its number
    sample_seqs: list[int] = field(default_factory=list)
    rewrite_whole: bool = False  # the store lost the run's row: the next re-write writes every sample held in memory
    store_id: int | None = None  # the run's row when it is not ``id`` (its row came to hold another run: RunWriter)




def snapshot_of(state: RunState, *, queue_position: int | None, store_attached: bool) -> RunSnapshot:
    """An immutable copy of ``state`` (call under the lock that guards it)."""
    return RunSnapshot(
        id=state.id, config=state.config, status=state.status, created_at=state.created_at,
        started_at=state.started_at, ended_at=state.ended_at, phase=state.phase, info=state.info,
        progress=state.progress, epochs=tuple(state.epochs), samples=tuple(state.samples),
        error=state.error, store_error=state.store_error,
        hardware=state.hardware, queue_position=queue_position,
        saved=(store_attached and state.stored and not state.dirty and not state.unsaved_samples
               and not state.samples_in_flight),
    )


def finish(state: RunState, status: str) -> None:
    """Mark a run ended (call under the lock)."""
    state.status = status
    state.phase = status
    state.ended_at = state.ended_at or time.time()
