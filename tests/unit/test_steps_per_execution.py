"""steps_per_execution: the config field, its refusal under torch, and Stop within one execution (a finished real run
with it: tests/unit/test_backends.py).

JAX runs with XLA on, as the docs tell a user to (eager JAX took twice as long here for the same steps)."""

from __future__ import annotations

import importlib.util
import multiprocessing as mp
import queue as queue_module

import pytest

from bench.vocab.config import ConfigError, RunConfig
from bench.runs import events as worker_events
from tests.fixtures import NO_GPU

from . import fake_workers


def test_default_is_one_and_old_configs_load():
    old = RunConfig().to_dict()
    del old["steps_per_execution"]
    assert RunConfig.model_validate(old).steps_per_execution == 1
    assert "steps/exec" not in RunConfig().label()
    assert "8 steps/exec" in RunConfig(steps_per_execution=8).label()


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "8", 100000])
def test_bad_values_are_refused_with_the_range(bad):
    with pytest.raises(ConfigError, match="steps_per_execution must be a whole number from 1 to 1,024"):
        RunConfig(steps_per_execution=bad, backend="tensorflow")


def test_torch_refuses_more_than_one_step_per_execution():
    with pytest.raises(ConfigError, match="needs the TensorFlow or JAX backend.*under torch"):
        RunConfig(steps_per_execution=8, backend="torch").validate(NO_GPU)
    RunConfig(steps_per_execution=1, backend="torch").validate(NO_GPU)
    RunConfig(steps_per_execution=8, backend="jax").validate(NO_GPU)


def _need(backend: str) -> None:
    if importlib.util.find_spec(backend) is None:
        pytest.skip(f"{backend} is not installed (requirements-dev.txt installs it)")


# A real run at 8 steps an execution, finished and said so in its record and diagnosis:
# tests/unit/test_backends.py::test_a_run_with_8_steps_per_execution_finishes_and_says_so, on the one run per backend
# that test_run_under_each_backend reads as well.


@pytest.mark.parametrize("backend", ["tensorflow", "jax"])
@pytest.mark.slow
def test_stop_ends_the_run_within_one_execution(backend):
    """Stop read at the third execution's start: that execution is the last, so exactly 3 x N steps ran."""
    _need(backend)
    n = 8
    config = RunConfig(model="mlp", size="xs", epochs=3, batch_size=32, limit_samples=2048, backend=backend,
                       steps_per_execution=n, jit_compile=backend == "jax").to_dict()
    ctx = mp.get_context("spawn")
    events = ctx.Queue()
    proc = ctx.Process(target=fake_workers.stop_within_execution, args=(config, events, 3))
    proc.start()
    got, progress = None, []
    try:
        while got is None:
            event = events.get(timeout=240)
            if isinstance(event, worker_events.BatchEnded):
                progress.append(event)
            elif isinstance(event, dict) and event["type"] == "result":  # the test worker's own report
                got = event
    except queue_module.Empty:
        pytest.fail("the worker reported nothing")
    finally:
        proc.join(timeout=60)
        if proc.is_alive():
            proc.kill()
    assert got["compiled_steps_per_execution"] == n
    assert got["stopped"] is True
    assert got["batch_starts"] == 3  # no execution began after the Stop
    assert got["iterations"] == 3 * n  # two full executions and the one under way, none after
    assert all(p.batch % n == 0 and 0 < p.batch <= p.batches == 64 for p in progress)
