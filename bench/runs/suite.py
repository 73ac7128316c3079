"""The machine suite: a fixed, versioned set of workloads run on every target of this machine (each CPU configuration
worth showing and each GPU), and the machine bundle (``bench.bundle/1``) that holds its fingerprint and every run.

The workloads are a table (:data:`WORKLOADS`), one row per workload and variant: the three seed presets, an MLP
size sweep at two batch sizes, one CNN and one text size. ``quick`` trains fewer samples and sizes (within 10 minutes
on a 2-core machine); ``full`` more (within 45 minutes on a GPU machine); ``smoke`` every kind of row once at its
smallest (the sweep's smallest size alone, a few batches each), so that the test suite walks the whole loop in
seconds. Bump :data:`SUITE_VERSION` whenever a row
changes: bundles of different versions are flagged as unequal beside the figures they affect.
"""

from __future__ import annotations

import platform
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bench.vocab.record_types import Fingerprint, GpuSpec
from bench.vocab import records
from bench.analysis import run_summary
from bench.vocab.config import ConfigError, DeviceInventory, RunConfig, preset_training
from bench.hardware import devices
from bench.vocab.records import Status
from bench.vocab.target import Target
from bench.plans import models

SUITE_VERSION = "2"  # 2: the seed presets train with their articles' optimizer and learning rate (1: Adam)
VARIANTS = ("quick", "full", "smoke")
SWEEP_BATCH_SIZES = (128, 2048)  # the shipped H100 records hold batch 128 (xs..xl) and 2048 (xs, m, xl)


@dataclass(frozen=True)
class Workload:
    """One workload of the suite: what trains, on which synthetic set, for how long."""

    key: str  # "seed-mnist-dense", "mlp/s/b128": the same key on every machine, how bundles line up
    kind: str  # "preset", "mlp sweep", "cnn", "text"
    model: str  # a family or a seed preset
    size: str | None
    batch_size: int
    dataset: str
    epochs: int
    limit_samples: int

    def config(self) -> RunConfig:
        """This workload as a run config on the CPU (``with_target`` moves it)."""
        return RunConfig(model=self.model, size=self.size or "s", batch_size=self.batch_size, dataset=self.dataset,
                         epochs=self.epochs, limit_samples=self.limit_samples, device="cpu",
                         **preset_training(self.model))


def workload_key(model: str, size: str | None, batch_size: int) -> str:
    """The key of a workload from what a run trained: a preset's name, else ``family/size/bBATCH``."""
    return model if model in models.PRESETS else f"{model}/{size}/b{batch_size}"


def _preset(name: str, epochs: int, limit: int) -> Workload:
    preset = models.PRESETS[name]
    return Workload(name, "preset", name, None, preset.batch_size, f"synthetic-{preset.dataset}", epochs, limit)


def _family(kind: str, model: str, size: str, batch: int, dataset: str, epochs: int, limit: int) -> Workload:
    return Workload(workload_key(model, size, batch), kind, model, size, batch, dataset, epochs, limit)


# variant -> (epochs, samples for presets, CNN and text, samples for the MLP sweep, MLP sizes)
_SCALE: dict[str, tuple[int, int, int, tuple[str, ...]]] = {
    "quick": (3, 4096, 32768, ("xs", "s", "m")),
    "full": (3, 20000, 20000, ("xs", "s", "m", "l", "xl")),
    "smoke": (3, 512, 4096, ("xs",)),
}


def workloads(variant: str) -> tuple[Workload, ...]:
    """The suite's workloads for ``quick``, ``full`` or ``smoke``, in run order.

    Raises:
        ConfigError: an unknown variant.
    """
    if variant not in _SCALE:
        raise ConfigError([f"unknown suite variant {variant!r}; pick one of {', '.join(VARIANTS)}"])
    epochs, small, sweep, sizes = _SCALE[variant]
    out = [_preset(name, epochs, small) for name in models.PRESETS]
    out += [_family("mlp sweep", "mlp", size, batch, "synthetic-mnist", epochs, sweep)
            for batch in SWEEP_BATCH_SIZES for size in sizes]
    out.append(_family("cnn", "cnn", "s", 128, "synthetic-cifar10", epochs, small))
    out.append(_family("text", "text", "s", 128, "synthetic-imdb", epochs, small))
    return tuple(out)


def suite_targets(hw: devices.Hardware) -> list[Target]:
    """Every target of this machine worth showing: all CPU cores, one CPU core (when there are more), each GPU."""
    found = [Target.parse("cpu")]
    if devices.all_cores() > 1:
        found.append(Target.parse("cpu/1"))
    if hw.gpu_reason is None:
        found += [Target.parse(f"gpu:{gpu.index}") for gpu in hw.gpus]
    return found


def suite_configs(variant: str, targets: Sequence[Target], hw: DeviceInventory) -> list[RunConfig]:
    """Every (workload, target) of the suite as a validated config, workload-major (a workload's targets run back
    to back, so noise hits every side of a speed-up alike).

    Raises:
        ConfigError: every problem, each naming its workload and target.
    """
    configs = [w.config().with_target(t) for w in workloads(variant) for t in targets]
    errors: list[str] = []
    for config in configs:
        try:
            config.validate(hw)
        except ConfigError as exc:
            errors += [f"{config.label()}: {e}" for e in exc.errors]
    if errors:
        raise ConfigError(errors)
    return configs


def fingerprint(hw: devices.Hardware) -> Fingerprint:
    """What makes a machine this machine, for a bundle: CPU model and cores, RAM, GPU models, memory and driver, OS,
    Python, framework (the Keras backend) and its version. No hostname: a bundle is made to be shared."""
    return Fingerprint(
        cpu=hw.cpu,  # detected as a record describes it: model, cores, RAM
        gpus=tuple(GpuSpec(name=g.name, mem_total_mib=g.mem_total_mib, driver=g.driver,
                           cuda_driver_version=g.cuda_driver_version) for g in hw.gpus),
        gpu_reason=hw.gpu_reason,
        os=hw.platform or platform.platform(),
        python=platform.python_version(),
        framework="keras",
        framework_version=_keras_version(),
        backend=hw.framework,
        backend_version=hw.framework_version,
        backend_cuda=hw.framework_cuda,
    )


def _keras_version() -> str | None:
    from importlib import metadata

    try:
        return metadata.version("keras")
    except metadata.PackageNotFoundError:
        return None


@dataclass(frozen=True)
class SuiteResult:
    """What a suite run gave: the run records in order, whether the store holds each, and whether Ctrl-C ended it."""

    runs: tuple[records.RunRecord, ...]
    saved: tuple[bool, ...]
    interrupted: bool
    wall_s: float


def run_suite(configs: Sequence[RunConfig], run_one: Callable[[RunConfig], tuple[records.RunRecord, bool]],
              say: Callable[[str], None], stop_requested: Callable[[], bool] = lambda: False) -> SuiteResult:
    """Run each config with ``run_one`` (the CLI's foreground run), saying what runs and what is left before each.
    Ctrl-C ends the suite and keeps what finished before it: ``stop_requested()`` true after a run (the CLI's
    handler saw Ctrl-C; the run it cut short, stopped or failed by the same signal in its worker, is left out), a
    run that ends ``stopped``, or KeyboardInterrupt between runs."""
    runs: list[records.RunRecord] = []
    saved: list[bool] = []
    started = time.monotonic()
    interrupted = False
    try:
        for i, config in enumerate(configs, 1):
            say(f"== suite {i}/{len(configs)}: {config.label()} · {len(configs) - i} left after it · "
                f"{_elapsed(time.monotonic() - started)} so far")
            record, ok = run_one(config)
            if stop_requested() or record.status == Status.STOPPED:
                interrupted = True
                say("   stopped: the suite ends here; the runs that finished are kept")
                break
            runs.append(record)
            saved.append(ok)
            if record.status != Status.FINISHED:
                say(f"   run ended {record.status}: {record.error.headline if record.error else ''}")
    except KeyboardInterrupt:
        interrupted = True
        say("\nstopped: the suite ends here; the runs that finished are kept")
    return SuiteResult(tuple(runs), tuple(saved), interrupted, time.monotonic() - started)


def _elapsed(seconds: float) -> str:
    return f"{int(seconds // 60)} min {int(seconds % 60):02d} s"


def bundle(result: SuiteResult, *, machine: Fingerprint, variant: str, label: str | None,
           prices: Mapping[str, float], peaks_gflops: Mapping[str, float | None], notes: str | None = None
           ) -> dict[str, Any]:
    """The suite's ``bench.bundle/1`` document: finished runs only (a failed run says nothing about the machine;
    the command reports it), the fingerprint, prices and peaks."""
    finished = [r for r in result.runs if r.status == Status.FINISHED]
    wall = f"suite wall time {_elapsed(result.wall_s)}" + (" (stopped early with Ctrl-C)" if result.interrupted else "")
    # runs are kept without their samples: the summary each carries holds what the gallery reads
    runs = tuple(run_summary.with_summary(r).model_copy(update={"samples": ()}) for r in finished)
    return records.MachineBundle(machine=machine, suite=records.SuiteSpec(version=SUITE_VERSION, variant=variant),
                                 runs=runs, label=label, notes="; ".join(n for n in (notes, wall) if n),
                                 created_at=time.time(), prices=dict(prices), peaks_gflops=dict(peaks_gflops)
                                 ).to_dict()
