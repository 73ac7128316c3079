"""Stand-ins the overhead harness plugs into a real JobManager: a 30-minute run's worker events and samples,
replayed in seconds, and a sampler that does nothing (the "sampler off" side); and a small run replayed at its own
pace for the dashboard's browser tests.

They go through JobManager's own arguments (``worker_target``, ``peak_target``, ``sampler_factory``); nothing of the
engine is patched. The worker stand-in is a module-level function, so a spawned process can import it.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import random
import threading
import time
from collections.abc import Callable
from typing import Any

from bench.hardware import lifetime
from bench.hardware.peak_cache import REPLAYED, PeakEntry
from bench.runs import events

SIMULATED_RUN_S = 1800.0  # the memory figure is for a 30-minute run
SIMULATED_INTERVAL_S = 0.5
SIMULATED_EPOCHS = 36  # 50 s each over 30 minutes
SIMULATED_SAMPLES = int(SIMULATED_RUN_S / SIMULATED_INTERVAL_S)


def fake_long_worker(config: dict[str, Any], queue: Any, stop_event: Any, log_path: str | None = None, *,
                     real_s: float = 10.0, hold: bool = False) -> None:
    """Worker stand-in (spawned by JobManager, through :class:`ReplayedWorker`): a 30-minute run's events, replayed
    in ``real_s`` seconds.

    Emits started, ~10 progress events per replayed epoch and ``config['epochs']`` epoch events whose wall times
    span SIMULATED_RUN_S seconds. With ``hold`` it then keeps reporting progress until Stop, so the run stays live
    for the render timing.
    """
    def emit(kind: str, **data: Any) -> None:
        events.emit(queue, kind, **data)

    if multiprocessing.parent_process() is not None:
        lifetime.exit_with_parent()  # as the real worker: never outlive the process that started it
    epochs = int(config["epochs"])
    sim_epoch_s = SIMULATED_RUN_S / epochs
    t0 = time.time()
    emit("started", pid=os.getpid(), framework="tensorflow (replayed)", backend="tensorflow",
         devices_seen=["/device:CPU:0"], placement="/job:localhost/replica:0/task:0/device:CPU:0", replicas=1,
         replica_devices=["/device:CPU:0"], params=203530, flops_per_sample=1.2e6,
         model_description="MLP s (replayed)", dataset_description="synthetic (replayed)", n_train=40000,
         n_test=8000, precision="float32", jit_compile=False, threads=2)
    batches = 313
    for epoch in range(1, epochs + 1):
        for step in range(10):
            if stop_event.is_set():
                emit("finished", status="stopped")
                return
            time.sleep(real_s / epochs / 10)
            emit("progress", epoch=epoch, batch=(step + 1) * batches // 10, batches=batches)
        loss = 2.3 / (1 + epoch)
        emit("epoch", epoch=epoch, epoch_seconds=sim_epoch_s * random.uniform(0.95, 1.05),
             samples_per_s=40000 / sim_epoch_s, loss=loss, accuracy=1 - loss / 3, val_loss=loss * 1.1,
             val_accuracy=1 - loss / 2.8, includes_tracing=epoch == 1, started_wall=t0 + (epoch - 1) * sim_epoch_s,
             ended_wall=t0 + epoch * sim_epoch_s)
    if hold:
        batch = 0
        while not stop_event.wait(0.1):
            batch = batch % batches + 1
            emit("progress", epoch=epochs, batch=batch, batches=batches)
        emit("finished", status="stopped")
        return
    emit("finished", status="finished")


@dataclasses.dataclass
class ReplayedWorker:
    """A JobManager ``worker_target`` that runs :func:`fake_long_worker` with these settings. Picklable, so a spawned
    process gets it; the settings may change between runs (they are read when a run's process starts)."""

    real_s: float = 10.0
    hold: bool = False

    def __call__(self, config: dict[str, Any], queue: Any, stop_event: Any, log_path: str | None = None) -> None:
        fake_long_worker(config, queue, stop_event, log_path, real_s=self.real_s, hold=self.hold)


@dataclasses.dataclass
class PacedWorker:
    """A JobManager ``worker_target`` that replays a small CPU run at its own pace, without the framework: ``step_s``
    seconds a batch of the run's own size (``limit_samples`` / ``batch_size`` batches, 60,000 samples for the whole
    set), each epoch from ``min_epoch_s`` to ``max_epoch_s`` seconds. The dashboard's browser tests start their
    servers with it (BENCH_WORKER_TARGET=benchmarks.standins:PACED_WORKER), so that the pages draw, queue, stop and
    compare runs in seconds; one browser test and the unit tests train real models.

    Its figures are the replay's own: an epoch's seconds are its wall time here, and it names itself "replayed".
    Picklable, so a spawned process gets it.

    A test that must see a run while it is live holds it: while the file named by ``BENCH_REPLAY_HOLD`` exists, a
    replay waits before its last epoch (still live, still sampled, and still stoppable), however slowly the machine
    runs the test; removing the file lets it finish.
    """

    step_s: float = 0.001
    min_epoch_s: float = 0.5
    max_epoch_s: float = 10.0

    def __call__(self, config: dict[str, Any], queue: Any, stop_event: Any, log_path: str | None = None) -> None:
        def emit(kind: str, **data: Any) -> None:
            events.emit(queue, kind, **data)

        if multiprocessing.parent_process() is not None:  # a spawned worker, not a replay in the caller's process
            lifetime.exit_with_parent()  # as the real worker: never outlive the process that started it
        n_train = int(config.get("limit_samples") or 60000)
        batches = max(1, -(-n_train // int(config.get("batch_size") or 128)))
        epoch_s = min(self.max_epoch_s, max(self.min_epoch_s, batches * self.step_s))
        updates = max(1, round(epoch_s / 0.1))  # progress at most ~10 times a second, as the worker reports it
        replicas = int(config.get("devices") or 1)  # the devices the run asked for, replayed at one device's pace
        names = [f"/device:CPU:{i}" for i in range(replicas)]
        batch_size = int(config.get("batch_size") or 128)
        emit(events.STARTED, pid=os.getpid(), framework="replayed (no framework)", backend="replayed",
             devices_seen=names, placement="/device:CPU:0", replicas=replicas, replica_devices=names,
             distribution="replayed" if replicas > 1 else None, global_batch_size=batch_size,
             per_device_batch_size=batch_size // replicas,
             params=203530, flops_per_sample=1_221_180, model_description="MLP s (replayed)",
             dataset_description="replayed", n_train=n_train, n_test=n_train // 5, precision="float32",
             jit_compile=False, threads=int(config.get("cpu_threads") or os.cpu_count() or 1))
        epochs = int(config["epochs"])
        for epoch in range(1, epochs + 1):
            if epoch == epochs and not _wait_while_held(stop_event):
                emit(events.FINISHED, status="stopped")
                return
            started = time.time()
            for step in range(1, updates + 1):
                if stop_event.wait(epoch_s / updates):
                    emit(events.FINISHED, status="stopped")
                    return
                emit(events.PROGRESS, epoch=epoch, batch=step * batches // updates, batches=batches)
            ended = time.time()
            loss = 2.3 / (1 + epoch)
            emit(events.EPOCH, epoch=epoch, epoch_seconds=ended - started, samples_per_s=n_train / (ended - started),
                 loss=loss, accuracy=1 - loss / 3, val_loss=loss * 1.1, val_accuracy=1 - loss / 2.8,
                 includes_tracing=epoch == 1, started_wall=started, ended_wall=ended)
        emit(events.FINISHED, status="finished")


PACED_WORKER = PacedWorker()
PACED_WORKER_TARGET = "benchmarks.standins:PACED_WORKER"  # its name for BENCH_WORKER_TARGET (dashboard and CLI)
# One second an epoch, whatever the run's size: the overhead pass's watched window (a run held live for as long as the
# pass watches it) and its smallest configuration (every side replayed, for the test suite's smoke run)
STEADY_WORKER = PacedWorker(min_epoch_s=1.0, max_epoch_s=1.0)
STEADY_WORKER_TARGET = "benchmarks.standins:STEADY_WORKER"
# A tenth of a second an epoch: the smoke runs of commands that loop over many runs (`bench suite`)
BRISK_WORKER = PacedWorker(min_epoch_s=0.1, max_epoch_s=0.1)
BRISK_WORKER_TARGET = "benchmarks.standins:BRISK_WORKER"
HOLD_ENV = "BENCH_REPLAY_HOLD"
# Above what any PacedWorker replay achieves (at most 60,000 samples in 0.5 s x 1.22 MFLOP a sample: 147 GFLOP/s), so
# a replayed run's share of it reads as a share, and no run beats it (which would flag it for a new probe)
REPLAYED_PEAK_GFLOPS = 500.0


def replayed_peak(device: str = "cpu", *, cpu_threads: int | None = None, refresh: bool = False) -> PeakEntry:
    """A peak stand-in (BENCH_PEAK_TARGET=benchmarks.standins:replayed_peak), called where the run queue would probe
    a device's matmul peak (bench.hardware.probe.cached_peak, which loads the framework in a child): the browser
    tests' servers replay their runs, so their sweeps take this figure instead of measuring one. Its entry names
    itself replayed (backend bench.hardware.peak_cache.REPLAYED), and the pages say so; it is never cached."""
    return PeakEntry(peak_gflops=REPLAYED_PEAK_GFLOPS, device=device.strip().lower(), backend=REPLAYED,
                     framework="replayed (no framework)", threads=cpu_threads, measured_at=time.time(),
                     from_cache=False)


REPLAYED_PEAK_TARGET = "benchmarks.standins:replayed_peak"  # its name for BENCH_PEAK_TARGET (dashboard and CLI)


def _wait_while_held(stop_event: Any) -> bool:
    """Wait while the hold file exists; False if the run was stopped meanwhile."""
    hold = os.environ.get(HOLD_ENV)
    while hold and os.path.exists(hold):
        if stop_event.wait(0.1):
            return False
    return True


def realistic_sample(i: int, cores: int, gpus: int, interval_s: float = SIMULATED_INTERVAL_S) -> Any:
    """Sample i of a run on a machine with ``cores`` cores and ``gpus`` GPUs, built through the real Sample types."""
    from bench.hardware.monitor import GpuReading, Sample

    per_core = [round(random.uniform(0, 100), 1) for _ in range(cores)]
    readings = [GpuReading(index=k, name="NVIDIA H100 80GB HBM3", util_percent=float(random.randint(0, 100)),
                           mem_util_percent=float(random.randint(0, 100)), mem_used_mib=random.uniform(1e3, 8e4),
                           mem_total_mib=81559.0, power_w=random.uniform(60, 700), temp_c=float(random.randint(30, 80)),
                           sm_clock_mhz=float(random.choice((1755, 1980))))
                for k in range(gpus)]
    return Sample(t_s=i * interval_s, cpu_percent=sum(per_core) / max(cores, 1), cpu_per_core=tuple(per_core),
                  process_cpu_percent=random.uniform(0, 100 * cores), process_rss_mib=random.uniform(500, 4000),
                  ram_used_mib=random.uniform(4000, 60000), gpus=tuple(readings))


class ReplaySampler:
    """Hands ``count`` realistic samples to JobManager's on_sample over ``real_s`` seconds, then ends."""

    def __init__(self, interval_s: float, on_sample: Callable[[Any], None], *, count: int, cores: int, gpus: int,
                 real_s: float) -> None:
        self.interval_s = interval_s
        self._on_sample = on_sample
        self._count, self._cores, self._gpus, self._real_s = count, cores, gpus, real_s
        self._hurry = threading.Event()
        self._thread: threading.Thread | None = None

    def set_pid(self, pid: int | None) -> None:
        pass

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="bench-sampler-replay", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        t0 = time.monotonic()
        pace_s = 0.8 * self._real_s / self._count  # planned to end before the replayed worker does
        for i in range(self._count):
            self._on_sample(realistic_sample(i, self._cores, self._gpus, self.interval_s))
            if not self._hurry.is_set():
                self._hurry.wait(max(0.0, t0 + (i + 1) * pace_s - time.monotonic()))

    def stop(self, timeout_s: float = 2.0) -> None:
        """Hand over the samples not replayed yet at once, then end: the run gets all of them."""
        self._hurry.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(60.0)


def replay_sampler(count: int, cores: int, gpus: int, real_s: float) -> Callable[[float, Callable[[Any], None]], Any]:
    """A JobManager ``sampler_factory`` whose runs get ``count`` replayed samples over ``real_s`` seconds."""
    def factory(interval_s: float, on_sample: Callable[[Any], None]) -> ReplaySampler:
        return ReplaySampler(interval_s, on_sample, count=count, cores=cores, gpus=gpus, real_s=real_s)

    return factory


class NullSampler:
    """The sampler switched off: started and stopped like the real one, it takes no samples."""

    def set_pid(self, pid: int | None) -> None:
        pass

    def start(self) -> None:
        pass

    def stop(self, timeout_s: float = 2.0) -> None:
        pass


def null_sampler(interval_s: float, on_sample: Callable[[Any], None]) -> NullSampler:
    """A JobManager ``sampler_factory`` for runs with the sampler off."""
    return NullSampler()


class SamplerChoice:
    """A JobManager ``sampler_factory`` that builds what ``factory`` builds now: one manager, whose runs the harness
    starts with the real sampler, a replayed one or none, without patching anything in the engine."""

    def __init__(self, factory: Callable[[float, Callable[[Any], None]], Any]) -> None:
        self.factory = factory

    def __call__(self, interval_s: float, on_sample: Callable[[Any], None]) -> Any:
        return self.factory(interval_s, on_sample)
