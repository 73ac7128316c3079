"""One home for the test doubles and fixtures many test files share: a tiny run, a scripted machine with no GPU,
NVML's state reset around a test, a store in the test's own folder, a run queue of quick stand-in workers (the
fixtures ``fresh_nvml``, ``store`` and ``manager``: a test file imports the one it uses).

A file that needs another shape derives it from these, so that what it changes is what it says:
``dataclasses.replace(TINY, epochs=2)``, ``NO_GPU.updated(gpus=[...], gpu_reason=None)``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.vocab.config import RunConfig
from bench.hardware import devices
from bench.hardware.monitor import nvml
from bench.vocab.record_types import CpuSpec
from bench.runs.jobs import JobManager
from bench.store import Store

# A run a real worker trains in seconds (synthetic data, the smallest MLP, 512 samples), sampled often enough that
# even so short a run leaves samples; the stand-in workers (tests/unit/fake_workers.py) read only its epochs.
TINY = RunConfig(dataset="synthetic-mnist", model="mlp", size="xs", epochs=3, batch_size=64, limit_samples=512,
                 sample_interval_s=0.2)

# A two-core machine with no usable GPU, as devices.discover() would describe one. JobManager and the records take
# the dict a run stores (NO_GPU.to_dict(): a fresh one per call, so no test sees another's changes).
NO_GPU = devices.Hardware(
    cpu=CpuSpec(model="test cpu", physical_cores=2, logical_cores=2, ram_total_mib=1024.0),
    gpus=[], gpu_reason="No NVIDIA driver found (test).", framework="tensorflow", framework_version="0",
    framework_cuda=False, hostname="test", platform="linux",
)


@pytest.fixture
def fresh_nvml() -> Iterator[None]:
    """NVML's module state (the scripted module a test sets, its lazy start) reset before and after the test: a file
    of NVML tests uses it with ``pytestmark = pytest.mark.usefixtures("fresh_nvml")``."""
    nvml.reset()
    yield
    nvml.reset()


@pytest.fixture
def store(isolated_store: Path) -> Store:
    """The test's own store (tests/conftest.py's isolated_store)."""
    return Store(isolated_store)


@pytest.fixture
def manager(isolated_store: Path) -> Iterator[JobManager]:
    """A run queue on the test's own store whose runs are replayed in a blink (tests/unit/fake_workers.quick)."""
    from tests.unit import fake_workers

    manager = JobManager(Store(isolated_store), hardware=NO_GPU, worker_target=fake_workers.quick)
    yield manager
    manager.shutdown()
