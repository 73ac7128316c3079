"""One home for the test doubles many test files share: a tiny run and a scripted machine with no GPU.

A file that needs another shape derives it from these, so that what it changes is what it says:
``dataclasses.replace(TINY, epochs=2)``, ``dataclasses.replace(NO_GPU, gpus=[...], gpu_reason=None)``.
"""

from __future__ import annotations

from bench.config import RunConfig
from bench.hardware import devices

# A run a real worker trains in seconds (synthetic data, the smallest MLP, 512 samples), sampled often enough that
# even so short a run leaves samples; the stand-in workers (tests/unit/fake_workers.py) read only its epochs.
TINY = RunConfig(dataset="synthetic-mnist", model="mlp", size="xs", epochs=3, batch_size=64, limit_samples=512,
                 sample_interval_s=0.2)

# A two-core machine with no usable GPU, as devices.discover() would describe one. JobManager and the records take
# the dict a run stores (NO_GPU.to_dict(): a fresh one per call, so no test sees another's changes).
NO_GPU = devices.Hardware(
    cpu=devices.CpuInfo(model="test cpu", physical_cores=2, logical_cores=2, ram_total_mib=1024.0),
    gpus=[], gpu_reason="No NVIDIA driver found (test).", framework="tensorflow", framework_version="0",
    framework_cuda=False, hostname="test", platform="linux",
)
