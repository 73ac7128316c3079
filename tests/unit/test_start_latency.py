"""What makes Start answer sooner: the spare worker's prepared run is used only for a run it fits, and a starting
run's progress bar says what it waits for."""

from __future__ import annotations

from bench.vocab.config import RunConfig
from bench.runs.worker import AFTER_PREPARATION, same_preparation
from ui.live import starting_text


def test_a_prepared_run_fits_a_run_differing_only_in_epochs_or_sampling():
    base = RunConfig().to_dict()
    assert same_preparation(base, RunConfig(epochs=base["epochs"] + 3, sample_interval_s=1.0).to_dict())
    assert set(AFTER_PREPARATION) <= set(base)


def test_a_prepared_run_does_not_fit_other_data_model_or_seed():
    base = RunConfig().to_dict()
    for change in ({"batch_size": 64}, {"size": "m"}, {"seed": 7}, {"limit_samples": 1000}, {"optimizer": "sgd"}):
        assert not same_preparation(base, {**base, **change}), change


def test_a_starting_run_says_what_it_waits_for():
    assert starting_text("importing tensorflow") == "Loading the framework (tensorflow)"
    assert starting_text("loading data") == "Building the data"
    assert starting_text("training") == "Tracing the first step"
    assert starting_text("starting worker") == "Starting the worker"
    assert starting_text("queued") == "Queued"
