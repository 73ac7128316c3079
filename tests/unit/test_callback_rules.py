"""BenchCallback under the record rules: what a notebook passes it is checked when it is built (the bounds a stored
run is held to: bench.vocab.config's rules and bench.vocab.limits' types, the device against this machine's own
discovery), a name from outside is made one line (bench.vocab.safe_text.one_line, the one rule a run's label is made
with) so the run reads back and shows live, a sampler that cannot start costs the samples and never the epochs, and a
failure in any hook costs the record, never the training. The tests that build a callback load Keras: slow."""

from __future__ import annotations

import logging
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from bench.hardware import devices
from bench.vocab.record_types import GpuSpec
from bench.runs.jobs import JobManager
from bench.store import Store
from bench.vocab import limits, safe_text
from bench.vocab.config import ConfigError, RunConfig
from tests.fixtures import NO_GPU
from tests.polling import wait_for

TWO_GPUS = devices.Hardware(
    cpu=NO_GPU.cpu,
    gpus=[GpuSpec(index=i, name="Fake GPU", mem_total_mib=16384.0, driver="1", cuda_driver_version="12.4",
                          uuid=f"GPU-{i}") for i in range(2)],
    gpu_reason=None, framework="tensorflow", framework_version="0", framework_cuda=True, hostname="t",
    platform="linux",
)
LINE = TypeAdapter(limits.Line)
NAME = TypeAdapter(limits.Name)
HOSTILE_NAMES = ["two\nlines", "\x1b[2J\x1b[31mred", "bell\x07", "tab\there", "\u202eevil", "x" * 10_000,
                 "C1 \x9b control", ""]


def _model_and_data(keras, samples: int = 256, name: str = "mine"):
    import numpy as np

    rng = np.random.default_rng(0)
    x = rng.random((samples, 28, 28, 1), dtype="float32")
    y = rng.integers(0, 10, samples)
    model = keras.Sequential([keras.Input((28, 28, 1)), keras.layers.Flatten(), keras.layers.Dense(10)], name=name)
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model, x, y


# -- the one cleaning rule: any text becomes a name a record holds, and a label always reads back ---------------------
@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(), st.binary(), st.text(alphabet=st.characters(codec="utf-8"), min_size=190)))
def test_any_outside_text_cleaned_is_a_name_a_record_holds(raw) -> None:
    cleaned = safe_text.one_line(raw, limits.NAME_MAX)
    if cleaned is not None:
        assert NAME.validate_python(cleaned) == cleaned
        assert not any(safe_text.unsafe(c) for c in cleaned)


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=limits.LINE_MAX), st.text(max_size=limits.LINE_MAX))
def test_a_runs_label_is_one_line_whatever_its_names(model: str, dataset: str) -> None:
    """A config holds names that are Lines (a newline is refused where it is made); its label, which joins them, is
    still one Line."""
    try:
        config = RunConfig(model=model, dataset=dataset, size=None)
    except ConfigError as exc:
        assert not (LINE_OK(model) and LINE_OK(dataset)), exc  # refused only for a name that is not a Line
        return
    label = config.label()
    assert LINE.validate_python(label) == label
    assert LINE.validate_python(RunConfig(model="x" * limits.LINE_MAX, dataset="x" * limits.LINE_MAX).label())
    with pytest.raises(ConfigError, match="model"):
        RunConfig(model="two\nlines")


def LINE_OK(text: str) -> bool:  # noqa: N802 - reads as the type it checks
    try:
        LINE.validate_python(text)
    except ValidationError:
        return False
    return True


# -- construction: every argument checked before fit ------------------------------------------------------------------
REFUSED = [
    ({"batch_size": 10**18}, "batch_size", "from 1 to 65,536"),
    ({"batch_size": 0}, "batch_size", "from 1 to 65,536"),
    ({"batch_size": True}, "batch_size", "whole number"),
    ({"batch_size": 64.0}, "batch_size", "whole number"),
    ({"batch_size": "64"}, "batch_size", "whole number"),
    ({"samples": -3}, "samples", "from 1 to 1,000,000,000"),
    ({"samples": 0}, "samples", "from 1 to"),
    ({"samples": 10**18}, "samples", "from 1 to"),
    ({"samples": 2.5}, "samples", "whole number"),
    ({"sample_interval_s": 0}, "sample_interval_s", "from 0.1 to 10"),
    ({"sample_interval_s": -1.0}, "sample_interval_s", "from 0.1"),
    ({"sample_interval_s": math.nan}, "sample_interval_s", "from 0.1"),
    ({"sample_interval_s": math.inf}, "sample_interval_s", "from 0.1"),
    ({"sample_interval_s": 1e9}, "sample_interval_s", "from 0.1"),
    ({"sample_interval_s": "1"}, "sample_interval_s", "from 0.1"),
    ({"dataset": "two\nlines"}, "dataset", "no control characters"),
    ({"dataset": "\x1b[31mred\x1b[0m"}, "dataset", "no control characters"),
    ({"dataset": "x" * 10_000}, "dataset", f"at most {limits.NAME_MAX} characters"),
    ({"dataset": 42}, "dataset", "one line"),
    ({"device": "gpu:99"}, "device", "does not exist here; pick one of cpu, gpu:0, gpu:1"),
    ({"device": "tpu:0"}, "device", "not understood"),
    ({"device": 0}, "device", "must be text"),
    ({"store": 3}, "store", "a path or a Store"),
]


@pytest.mark.slow
@pytest.mark.parametrize("kwargs, argument, says", REFUSED, ids=[f"{a}={list(k.values())[0]!r:.20}"
                                                                  for k, a, _ in REFUSED])
def test_an_argument_outside_the_record_rules_is_refused_when_the_callback_is_built(kwargs, argument, says,
                                                                                   monkeypatch):
    pytest.importorskip("keras")
    from bench.integrations.keras import BenchCallback

    monkeypatch.setattr(devices, "discover", lambda: TWO_GPUS)
    given_kwargs = {"batch_size": 64, **kwargs}
    with pytest.raises(ValueError, match=f"^BenchCallback {argument}: ") as info:
        BenchCallback(**given_kwargs)
    assert says in str(info.value)


@pytest.mark.slow
def test_a_gpu_is_refused_where_none_is_usable_and_accepted_where_it_exists(monkeypatch):
    pytest.importorskip("keras")
    from bench.integrations.keras import BenchCallback

    monkeypatch.setattr(devices, "discover", lambda: NO_GPU)
    with pytest.raises(ValueError, match="^BenchCallback device: .*none is usable here: No NVIDIA driver found"):
        BenchCallback(64, device="gpu:0")
    monkeypatch.setattr(devices, "discover", lambda: TWO_GPUS)
    assert BenchCallback(64, device="gpu:1").device == "gpu:1"
    assert BenchCallback(64, device="cpu", samples=1000, sample_interval_s=0.1, dataset="my digits").samples == 1000


# -- names from outside: the run reads back and shows live ------------------------------------------------------------
@pytest.mark.slow
def test_a_model_named_with_10000_characters_is_a_run_that_reads_back_and_shows_live(isolated_store):
    keras = pytest.importorskip("keras")
    from bench.integrations.keras import BenchCallback

    long_name = "my.model-" + "x" * 10_000  # a name every backend trains (TensorFlow's scopes refuse control ones)
    model, x, y = _model_and_data(keras, name=long_name)
    seen = {}

    class Look(keras.callbacks.Callback):  # what a dashboard on the same store sees while the fit runs
        def on_epoch_end(self, epoch, logs=None):
            if epoch == 1:
                listing = Store(isolated_store).listing()
                seen["unreadable"] = [u.message for u in listing.unreadable]
                seen["running"] = [r.id for r in listing.runs if r.status == "running"]
                dashboard = JobManager(Store(isolated_store), hardware=NO_GPU)
                try:
                    seen["current"] = dashboard.current()
                finally:
                    dashboard.shutdown()

    callback = BenchCallback(64, sample_interval_s=0.1)
    model.fit(x, y, batch_size=64, epochs=2, callbacks=[callback, Look()], verbose=0)
    assert seen["unreadable"] == [], "the live run is readable by a dashboard"
    assert seen["running"] == [callback.run_id]
    assert seen["current"] is not None and seen["current"].id == callback.run_id and seen["current"].active
    run = Store(isolated_store).get_run(callback.run_id)
    assert run is not None and run.status == "finished" and len(run.epochs) == 2
    assert run.config.model == long_name[:limits.NAME_MAX]
    assert LINE.validate_python(run.label) == run.label


@pytest.mark.slow
@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_a_models_name_is_recorded_as_one_line_by_the_label_rule(name):
    """JAX and torch train a model named with a newline or an escape sequence (TensorFlow's scopes refuse one): the
    run records the name made one line, never the text a record cannot hold."""
    pytest.importorskip("keras")
    from types import SimpleNamespace

    from bench.integrations.keras import DEFAULT_MODEL, model_name

    recorded = model_name(SimpleNamespace(name=name))
    assert NAME.validate_python(recorded) == recorded
    assert recorded == (safe_text.one_line(name, limits.NAME_MAX) or DEFAULT_MODEL)
    assert LINE.validate_python(RunConfig(model=recorded, dataset="own data", size=None).label())


# -- a sampler that cannot start ------------------------------------------------------------------------------------
class _Broken:
    """A sampler whose start fails (as a sampler that cannot read this machine)."""

    energy_reasons: dict[str, str] = {}
    gpm_reasons: dict[str, str] = {}

    def __init__(self, interval_s, on_sample) -> None:
        pass

    def set_pid(self, pid) -> None:
        pass

    def start(self) -> None:
        raise RuntimeError("no sampler on this machine (test)")

    def stop(self) -> None:
        pass


@pytest.mark.slow
@pytest.mark.parametrize("fails_at", ["built", "started"])
def test_a_sampler_that_cannot_start_says_so_and_the_run_still_records_its_epochs(fails_at, isolated_store,
                                                                                  monkeypatch, caplog):
    keras = pytest.importorskip("keras")
    from bench.integrations import keras as integration

    def broken(interval_s, on_sample):
        if fails_at == "built":
            raise ValueError(f"interval_s must be a positive number of seconds, got {interval_s!r}.")
        return _Broken(interval_s, on_sample)

    monkeypatch.setattr(integration, "default_sampler", broken)
    model, x, y = _model_and_data(keras)
    callback = integration.BenchCallback(64)
    with caplog.at_level(logging.WARNING, logger="bench.integrations.keras"):
        history = model.fit(x, y, batch_size=64, epochs=2, callbacks=[callback], verbose=0)
    assert len(history.history["loss"]) == 2
    assert any("no CPU/GPU samples" in r.getMessage() for r in caplog.records), caplog.text
    run = Store(isolated_store).get_run(callback.run_id)
    assert run is not None and run.status == "finished", "never 'interrupted, 0 epochs'"
    assert [e.epoch for e in run.epochs] == [1, 2] and not run.samples


# -- a failure in any hook costs the record, never the training -------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("fails", ["every event", "epoch events", "the model's size"])
def test_a_failure_inside_any_hook_is_a_warning_and_the_fit_goes_on(fails, isolated_store, monkeypatch, caplog):
    keras = pytest.importorskip("keras")
    from bench.integrations.keras import BenchCallback
    from bench.runs import events
    from bench.training import keras_build

    emit = events.emit

    def failing_emit(queue, kind, **fields):
        if fails == "every event" or kind == events.EPOCH:
            raise RuntimeError("recording broke (test)")
        emit(queue, kind, **fields)

    def failing_size(model):
        raise RuntimeError("no size for this model (test)")

    if fails == "the model's size":
        monkeypatch.setattr(keras_build, "own_model", failing_size)
    else:
        monkeypatch.setattr(events, "emit", failing_emit)
    model, x, y = _model_and_data(keras)
    callback = BenchCallback(64)
    with caplog.at_level(logging.WARNING, logger="bench.integrations.keras"):
        history = model.fit(x, y, batch_size=64, epochs=3, callbacks=[callback], verbose=0)
    assert len(history.history["loss"]) == 3, "the training went on"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings and all("the training goes on" in w for w in warnings), warnings
    assert len(warnings) <= 4, "said once per hook, not once per batch"
    if callback.run_id is not None:  # what was recorded is closed, never left live
        run = wait_for(lambda: Store(isolated_store).get_run(callback.run_id), 10, "the run to read back")
        assert run.status in ("finished", "failed")


# -- the callback has no stand-in process and no supervisor -----------------------------------------------------------
@pytest.mark.slow
def test_the_callback_records_through_the_recorder_without_a_stand_in_process():
    pytest.importorskip("keras")
    from bench.integrations import keras as integration

    assert not hasattr(integration, "_ThisProcess") and not hasattr(integration, "Supervisor")
    assert integration.Recorder.__module__ == "bench.runs.recorder"
