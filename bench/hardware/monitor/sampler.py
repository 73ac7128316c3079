"""The sampler: one background thread that reads the CPU and GPU collectors every ``interval_s`` seconds.

Runs in the SERVER process (Streamlit or the CLI) and watches the training worker by pid. Modelled on MLflow's system
metrics monitor: one collector per source, the GPU collector from whichever GPU source answers (sources.py; when none
does this is logged ONCE and sampling goes on with ``gpus=[]``), a named daemon thread that waits on ``Event.wait`` so ``stop()`` is
immediate. Each :class:`Sample` is handed to ``on_sample``; buffering and storage are the caller's job.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from bench.hardware.monitor.cpu import CpuCollector
from bench.hardware.monitor import sources
from bench.hardware.monitor.rapl import POWERCAP_ROOT, RaplReader
from bench.hardware.monitor.source_types import Collector, SourceInfo
from bench.vocab.readings import Sample  # the one sample type, shared with the records

__all__ = ["Sample", "Sampler"]

logger = logging.getLogger(__name__)

THREAD_NAME = "bench-sampler"
GPU_MONITORING_OFF_REASON = "GPU monitoring is turned off for this run."


class Sampler:
    """Samples CPU (host + worker tree) and GPUs every ``interval_s`` seconds in a daemon thread.

    Args:
        interval_s: seconds between samples (> 0; the run config limits it to 0.1..10).
        pid: the worker process to watch (can be set later with :meth:`set_pid`).
        on_sample: called in the sampler thread with each Sample; its exceptions are logged and sampling goes on.
        gpu_indices: GPU indices (as the source numbers them: NVML's on NVIDIA) to read; None reads every GPU.
        monitor_gpus: False skips the GPU sources entirely.
        clock: monotonic seconds; ``t_s`` is measured from ``start()``.
        powercap_root: where RAPL's powercap tree is read (a fake tree in tests).

    Raises:
        ValueError: ``interval_s`` is not a positive number, or a GPU index does not exist.
    """

    def __init__(
        self,
        interval_s: float = 0.5,
        *,
        pid: int | None = None,
        on_sample: Callable[[Sample], None] | None = None,
        gpu_indices: list[int] | None = None,
        monitor_gpus: bool = True,
        clock: Callable[[], float] = time.monotonic,
        powercap_root: Any = POWERCAP_ROOT,
    ) -> None:
        if not interval_s > 0:  # also rejects NaN
            raise ValueError(f"interval_s must be a positive number of seconds, got {interval_s!r}.")
        self.interval_s = float(interval_s)
        self._on_sample = on_sample
        self._clock = clock
        self._t0_s: float = clock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._collect_lock = threading.Lock()
        self._sample_errors = 0
        self._callback_errors = 0
        self._cpu = CpuCollector(pid)
        self._rapl = RaplReader(powercap_root)
        if self._rapl.reason is not None:
            logger.info("CPU energy is not measured: %s", self._rapl.reason)
        self._gpu: Collector | None = None
        self._gpu_reason: str | None = None
        self._gpu_source: SourceInfo | None = None
        if not monitor_gpus:
            self._gpu_reason = GPU_MONITORING_OFF_REASON
        else:  # whichever source answers: NVML, AMD SMI (sysfs), Apple's IOAccelerator (macmon)
            found = sources.find()
            if found.source is None:
                self._gpu_reason = found.reason or "no GPU source answered"
                logger.info("GPU metrics are skipped: %s", self._gpu_reason)
            else:
                self._gpu = found.source.collector(gpu_indices)
                self._gpu_source = found.source.info

    @property
    def gpu_reason(self) -> str | None:
        """Why no GPU readings are taken (no GPU source answers, or monitoring off); None when GPUs are sampled."""
        return self._gpu_reason

    @property
    def energy_reasons(self) -> dict[str, str]:
        """Why energy cannot be read: ``"cpu"`` (RAPL) and ``"gpu"`` (the GPU source: none, or one that gives neither
        power nor an energy counter) -> a plain sentence; empty when both can."""
        reasons = {}
        if self._rapl.reason is not None:
            reasons["cpu"] = self._rapl.reason
        if self._gpu_reason is not None:
            reasons["gpu"] = self._gpu_reason
        elif self._gpu_source is not None and {"power_w", "energy_j"} <= set(self._gpu_source.not_measured):
            reasons["gpu"] = self._gpu_source.not_measured["power_w"]
        return reasons

    @property
    def gpu_source(self) -> SourceInfo | None:
        """The source the GPU readings come from (None without one)."""
        return self._gpu_source

    @property
    def gpm_reasons(self) -> dict[str, str]:
        """``"gpu:N"`` -> why that GPU's GPM figures (SM, tensor, DRAM activity) are None; ``"gpu"`` without NVML."""
        if self._gpu is None:
            return {"gpu": self._gpu_reason or ""}
        return self._gpu.gpm_reasons

    @property
    def not_measured(self) -> dict[str, dict[str, str]]:
        """``"gpu:N"`` -> {reading: why} for each figure of that GPU's latest reading that its bounds refused (a
        vendor's "not supported" value, a negative power, ...): None in the sample, the reason here."""
        return self._gpu.not_measured if self._gpu is not None else {}

    @property
    def is_running(self) -> bool:
        """Whether the sampler thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def set_pid(self, pid: int | None) -> None:
        """Watch ``pid`` (and its descendants) from the next sample on; None stops watching."""
        self._cpu.set_pid(pid)

    def start(self) -> None:
        """Start the daemon thread "bench-sampler"; the first sample is taken at once, ``t_s`` counts from now.

        Raises:
            RuntimeError: the sampler was already started.
        """
        if self._thread is not None:
            raise RuntimeError("This Sampler was already started; create a new one for each run.")
        self._t0_s = self._clock()
        self._thread = threading.Thread(target=self._run, name=THREAD_NAME, daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 2.0) -> None:
        """Stop the thread (it wakes at once) and wait up to ``timeout_s`` for it; safe to call more than once."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)
            if thread.is_alive():
                logger.warning("Sampler thread did not stop within %.1f s", timeout_s)
                return
        if self._gpu is not None:
            with self._collect_lock:
                self._gpu.close()

    def sample_once(self) -> Sample:
        """Take one sample now (thread-safe)."""
        with self._collect_lock:
            t_s = self._clock() - self._t0_s
            cpu = self._cpu.collect()
            gpus = tuple(self._gpu.collect()) if self._gpu is not None else ()
            cpu_energy_j = self._rapl.read_j()
        return Sample(
            t_s=t_s,
            cpu_percent=cpu.cpu_percent,
            cpu_per_core=tuple(cpu.cpu_per_core),
            process_cpu_percent=cpu.process_cpu_percent,
            process_rss_mib=cpu.process_rss_mib,
            ram_used_mib=cpu.ram_used_mib,
            gpus=gpus,
            cpu_energy_j=cpu_energy_j,
        )

    def _run(self) -> None:
        """Thread body: sample, hand over, wait for the next tick (on a fixed grid, so there is no drift)."""
        next_tick_s = self._clock()
        try:
            while not self._stop.is_set():
                self._tick()
                next_tick_s += self.interval_s
                now_s = self._clock()
                if next_tick_s < now_s:  # sampling ran late: skip the missed ticks rather than bursting
                    next_tick_s = now_s
                self._stop.wait(next_tick_s - now_s)
        finally:
            logger.debug("Sampler thread stopped")

    def _tick(self) -> None:
        try:
            sample = self.sample_once()
        except Exception:
            self._sample_errors += 1
            _log_repeated(self._sample_errors, "Taking a sample failed")
            return
        if self._on_sample is None:
            return
        try:
            self._on_sample(sample)
        except Exception:
            self._callback_errors += 1
            _log_repeated(self._callback_errors, "on_sample raised; sampling goes on")


def _log_repeated(count: int, message: str) -> None:
    """Log the first failure with its traceback, later ones at debug level (no log flood at 2 samples/s)."""
    if count == 1:
        logger.exception(message)
    else:
        logger.debug("%s (failure %d)", message, count, exc_info=True)
