"""Run settings in a link: parsing, checking by RunConfig's own validation, and writing back only what differs."""

from __future__ import annotations

import pytest

from bench.hardware import devices
from bench.plans import models
from ui import url_state

TARGETS = ["cpu/1", "cpu"]


@pytest.fixture(scope="module")
def hardware() -> devices.Hardware:
    return devices.discover()


def test_every_preset_has_a_url_name_and_the_quoted_name_is_one():
    assert set(url_state.PRESET_URL_NAMES.values()) == set(models.PRESETS)
    assert url_state.PRESET_URL_NAMES["seed-cifar10-mlp"] == "seed-cifar10-mlp"


def test_good_train_link_gives_typed_values(hardware):
    state = url_state.parse({"epochs": "7", "size": "m", "batch_size": "64", "limit_samples": "0", "present": "1"},
                            fields=url_state.TRAIN_FIELDS, hardware=hardware, devices=["cpu"])
    assert state.values == {"epochs": 7, "size": "m", "batch_size": 64, "limit_samples": 0}
    assert state.notes == []


@pytest.mark.parametrize("params, field, words", [
    ({"epochs": "-3"}, "epochs", "epochs must be a whole number from 1 to 1,000"),
    ({"epochs": "many"}, "epochs", "not a whole number"),
    ({"size": "huge"}, "size", "Unknown size 'huge'"),
    ({"dataset": "nope"}, "dataset", "dataset 'nope' is unknown"),
    ({"batch_size": "0"}, "batch_size", "batch\\_size must be a whole number from 1 to 65,536"),
    ({"device": "tpu"}, "device", "device=tpu"),
])
def test_bad_value_is_left_out_with_a_note_naming_it(hardware, params, field, words):
    state = url_state.parse(params, fields=url_state.TRAIN_FIELDS, hardware=hardware, devices=["cpu"])
    assert field not in state.values
    assert len(state.notes) == 1 and words in state.notes[0] and "default" in state.notes[0]


def test_unknown_parameter_is_named_in_a_note(hardware):
    state = url_state.parse({"colour": "red", "epochs": "4"}, fields=url_state.TRAIN_FIELDS, hardware=hardware)
    assert state.values == {"epochs": 4}
    assert len(state.notes) == 1 and "` colour `" in state.notes[0]


def test_targets_only_on_a_page_that_has_them(hardware):
    state = url_state.parse({"targets": "cpu"}, fields=url_state.TRAIN_FIELDS, hardware=hardware)
    assert state.targets is None and "` targets `" in state.notes[0]


def test_compare_link_with_preset_and_targets(hardware):
    state = url_state.parse({"preset": "seed-cifar10-mlp", "targets": "cpu/1,cpu"},
                            fields=url_state.COMPARE_FIELDS, hardware=hardware, target_options=TARGETS)
    assert state.preset == "seed-cifar10-mlp"
    assert state.targets == ["cpu/1", "cpu"]
    assert state.notes == []


def test_unknown_preset_and_targets_are_noted_and_dropped(hardware):
    state = url_state.parse({"preset": "seed-nope", "targets": "gpu:7,cpu,cpu"},
                            fields=url_state.COMPARE_FIELDS, hardware=hardware, target_options=TARGETS)
    assert state.preset is None
    assert state.targets == ["cpu"]
    assert any("seed-nope" in n for n in state.notes) and any("gpu:7" in n for n in state.notes)


def test_size_is_ignored_for_a_preset(hardware):
    state = url_state.parse({"preset": "seed-text", "size": "xl"}, fields=url_state.COMPARE_FIELDS,
                            hardware=hardware, target_options=TARGETS)
    assert "size" not in state.values and "fixed size" in state.notes[0]


def test_to_params_writes_only_what_differs_and_round_trips(hardware):
    values = {**url_state.form_base(None), "epochs": 7, "size": "m"}
    params = url_state.to_params(values, fields=url_state.TRAIN_FIELDS)
    assert params == {"size": "m", "epochs": "7"}
    back = url_state.parse(params, fields=url_state.TRAIN_FIELDS, hardware=hardware, devices=["cpu"])
    assert back.values == {"size": "m", "epochs": 7} and not back.notes


def test_to_params_of_a_preset_names_the_preset_and_targets_when_not_default():
    values = {**url_state.form_base("seed-cifar10-mlp"), "epochs": 3}
    params = url_state.to_params(values, fields=url_state.COMPARE_FIELDS, targets=["cpu", "cpu/1"],
                                 default_targets=["cpu/1", "cpu"])
    assert params == {"preset": "seed-cifar10-mlp", "epochs": "3", "targets": "cpu,cpu/1"}
    same = url_state.to_params(url_state.form_base("seed-cifar10-mlp"), fields=url_state.COMPARE_FIELDS,
                               targets=["cpu/1", "cpu"], default_targets=["cpu/1", "cpu"])
    assert same == {"preset": "seed-cifar10-mlp"}
