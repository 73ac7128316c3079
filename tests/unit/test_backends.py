"""The same engine under KERAS_BACKEND=jax and torch (CPU here): a real run finishes and reports its placement.

One real run per backend, read by each test here: the TensorFlow and JAX runs execute 8 steps per execution (torch
refuses more than one), so the same run shows steps_per_execution reaching the worker, the record and the diagnosis
(tests/unit/test_steps_per_execution.py holds the field's checks and Stop within one execution)."""

from __future__ import annotations

import importlib.util

import pytest

from bench.analysis import run_summary
from bench.vocab.config import RunConfig
from bench.runs.jobs import JobManager
from bench.runs.run_state import RunSnapshot
from tests.fixtures import NO_GPU

pytestmark = pytest.mark.slow  # every test here trains a real model


JIT = {"jax": True, "torch": False, "tensorflow": True}
STEPS_PER_EXECUTION = {"jax": 8, "torch": 1, "tensorflow": 8}


@pytest.fixture(scope="module")
def finished() -> dict[str, RunSnapshot]:
    """Each backend's one real run, made when a test first asks for it: two epochs of 1,000 samples in batches of 32.
    At 8 steps an execution the epoch's 32 batches run as 4 executions, the last ending on a partial batch."""
    return {}


def run_on(finished: dict[str, RunSnapshot], backend: str) -> RunSnapshot:
    if importlib.util.find_spec(backend) is None:
        pytest.skip(f"{backend} is not installed (requirements-dev.txt installs it)")
    if backend not in finished:
        manager = JobManager(None, hardware=NO_GPU)
        config = RunConfig(model="mlp", size="xs", epochs=2, batch_size=32, limit_samples=1000, backend=backend,
                           jit_compile=JIT[backend], steps_per_execution=STEPS_PER_EXECUTION[backend],
                           sample_interval_s=0.2)
        finished[backend] = manager.wait(manager.submit(config), timeout_s=240)
    return finished[backend]


@pytest.mark.parametrize("backend", ["jax", "torch", "tensorflow"])
def test_run_under_each_backend(finished, backend):
    snap = run_on(finished, backend)
    assert snap.status == "finished", snap.error
    assert snap.info.backend == backend
    assert (snap.info.framework or "").startswith(backend)
    assert "cpu" in (snap.info.placement or "").lower()
    assert [e.epoch for e in snap.epochs] == [1, 2]
    assert snap.epochs[-1].loss < snap.epochs[0].loss * 1.5


@pytest.mark.parametrize("backend", ["tensorflow", "jax"])
def test_a_run_with_8_steps_per_execution_finishes_and_says_so(finished, backend):
    """Moved from test_steps_per_execution.py: the backend's one run above, at 8 steps an execution."""
    snap = run_on(finished, backend)
    assert snap.status == "finished", snap.error
    assert snap.info.steps_per_execution == 8
    record = snap.record()
    assert record.config.steps_per_execution == 8
    diagnosis = run_summary.summary_of(record).diagnosis
    assert diagnosis is not None
    assert isinstance(diagnosis.verdict, str) and diagnosis.verdict
    assert diagnosis.evidence["steps_per_execution"] == 8
    # the progress reached the end of each epoch
    assert [e.epoch for e in snap.epochs] == [1, 2]
