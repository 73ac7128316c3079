"""The same engine under KERAS_BACKEND=jax and torch (CPU here): a real run finishes and reports its placement."""

from __future__ import annotations

import importlib.util

import pytest

from bench.vocab.config import RunConfig
from bench.runs.jobs import JobManager
from tests.fixtures import NO_GPU

pytestmark = pytest.mark.slow  # every test here trains a real model


@pytest.mark.parametrize(("backend", "jit"), [("jax", True), ("torch", False), ("tensorflow", True)])
def test_run_under_each_backend(backend, jit):
    if importlib.util.find_spec(backend) is None:
        pytest.skip(f"{backend} is not installed (requirements-dev.txt installs it)")
    manager = JobManager(None, hardware=NO_GPU)
    config = RunConfig(model="mlp", size="xs", epochs=2, batch_size=64, limit_samples=1024, backend=backend,
                       jit_compile=jit, sample_interval_s=0.2)
    snap = manager.wait(manager.submit(config), timeout_s=240)
    assert snap.status == "finished", snap.error
    assert snap.info.backend == backend
    assert (snap.info.framework or "").startswith(backend)
    assert "cpu" in (snap.info.placement or "").lower()
    assert [e.epoch for e in snap.epochs] == [1, 2]
    assert snap.epochs[-1].loss < snap.epochs[0].loss * 1.5
