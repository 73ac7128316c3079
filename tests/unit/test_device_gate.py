"""A device or target that only looks like one (a Cyrillic "с", a zero-width space, a word joiner, an Arabic digit)
is refused at every way in, by the one rule of bench.vocab.target.plain, with its code point named; one that is the
same text once NFKC-normalised (full width, upper case, blanks at its ends) reads as that text. So no headline can
read "cpu and сpu are about as fast"."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.analysis import compare
from bench.cli import main as cli
from bench.hardware import devices
from bench.lab.assignment import Assignment, Choice, LabError, read
from bench.vocab import records
from bench.vocab.config import ConfigError, RunConfig
from bench.vocab.errors import RecordError
from bench.vocab.record_types import CpuSpec, Fingerprint, GpuSpec
from bench.vocab.target import FORMS, Target, plain
from tests.fixtures import NO_GPU
from ui import url_state

# each spelling and the code point its refusal names
LOOKALIKES = [("\u0441pu", "U+0441"), ("cpu\u200b", "U+200B"), ("cpu\u2060", "U+2060"), ("gpu:\u0660", "U+0660"),
              ("\u200bgpus", "U+200B"), ("gpu:\u0661\u0662", "U+0661")]
IDS = [ascii(text) for text, _ in LOOKALIKES]
TWO_GPUS = devices.Hardware(
    cpu=NO_GPU.cpu, gpus=[GpuSpec(index=i, name="Fake GPU", mem_total_mib=16384.0, driver="1",
                                          cuda_driver_version="12.4", uuid=f"GPU-{i}") for i in range(2)],
    gpu_reason=None, framework="tensorflow", framework_version="0", framework_cuda=True, hostname="t",
    platform="linux")
SAME = [("\uff43\uff50\uff55", "cpu"), (" GPU:0 ", "gpu:0"), ("\uff47\uff50\uff55\uff53", "gpus"), ("CPU/\uff12", "cpu/2")]


def says(text: str, point: str) -> str:
    return re.escape(f"{text!r} holds {point}")


def run_doc(device: str) -> dict[str, Any]:
    return {"schema": "bench.run/1", "id": 1, "status": "finished", "config": {**RunConfig().to_dict(), "device": device},
            "hardware": {"cpu": {"model": "x", "logical_cores": 2}, "gpus": []}, "info": {},
            "epochs": [{"epoch": 1, "epoch_seconds": 1.0, "includes_tracing": True}], "samples": []}


# -- the one rule ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, point", LOOKALIKES, ids=IDS)
def test_the_parser_refuses_a_lookalike_naming_its_code_point(text: str, point: str) -> None:
    with pytest.raises(ConfigError, match=f"^target {says(text, point)}"):
        Target.parse(text)
    with pytest.raises(ValueError, match=f"^Device {says(text, point)}"):
        Target.from_device(text)
    with pytest.raises(ValueError, match=re.escape(point)):
        plain(text)


@pytest.mark.parametrize("text, canonical", SAME)
def test_what_nfkc_makes_the_same_text_reads_as_that_text(text: str, canonical: str) -> None:
    assert str(Target.parse(text)) == canonical


@settings(derandomize=True, max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from("cpugs:/0123456789 \u0441\u0440\u200b\u2060\u0660\uff43\u00a0\u2028\ufeff"),
               max_size=8))
def test_a_target_parsed_is_plain_ascii_and_its_text_parses_to_it(text: str) -> None:
    try:
        target = Target.parse(text)
    except ConfigError as exc:
        assert any(s in str(exc) for s in ("holds U+", FORMS, "thread count")), exc
        return
    assert str(target).isascii() and Target.parse(str(target)) == target


# -- every way in ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, point", LOOKALIKES, ids=IDS)
def test_the_cli_refuses_a_lookalike_device_and_target(text: str, point: str, capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["run", "--device", text], ["compare", "--targets", f"cpu,{text}"]):
        try:
            code = cli.main(argv)
        except SystemExit as exc:
            code = exc.code
        err = capsys.readouterr().err
        assert code == 2 and point in err and "Traceback" not in err, (argv, err)


@pytest.mark.parametrize("text, point", LOOKALIKES, ids=IDS)
def test_a_run_config_refuses_a_lookalike_device(text: str, point: str) -> None:
    """What the pages' forms, the CLI and the lab build a run from."""
    with pytest.raises(ConfigError, match=f"device {says(text, point)}"):
        RunConfig(device=text)


def test_a_run_config_holds_the_normalised_device() -> None:
    assert RunConfig(device="\uff47\uff50\uff55:0").device == "gpu:0"
    assert RunConfig(device="tpu").device == "tpu", "a device this version does not know is kept as stored"


@pytest.mark.parametrize("text, point", LOOKALIKES, ids=IDS)
def test_a_link_names_a_lookalike_device_or_target_and_leaves_it_out(text: str, point: str) -> None:
    hardware = devices.discover()
    state = url_state.parse({"device": text}, fields=url_state.TRAIN_FIELDS, hardware=hardware, devices=["cpu"])
    assert "device" not in state.values and point in state.notes[0], state.notes
    state = url_state.parse({"targets": f"cpu,{text}"}, fields=url_state.COMPARE_FIELDS, hardware=hardware,
                            target_options=["cpu", "cpu/1"])
    assert state.targets == ["cpu"] and any(point in note for note in state.notes), state.notes


def test_a_link_reads_a_device_and_targets_as_normalised() -> None:
    hardware = devices.discover()
    state = url_state.parse({"device": " CPU "}, fields=url_state.TRAIN_FIELDS, hardware=hardware, devices=["cpu"])
    assert state.values == {"device": "cpu"} and not state.notes
    state = url_state.parse({"targets": "\uff43\uff50\uff55, CPU/1"}, fields=url_state.COMPARE_FIELDS,
                            hardware=hardware, target_options=["cpu", "cpu/1"])
    assert state.targets == ["cpu", "cpu/1"] and not state.notes


@pytest.mark.parametrize("text, point", LOOKALIKES, ids=IDS)
def test_an_imported_run_or_comparison_with_a_lookalike_device_is_refused(text: str, point: str) -> None:
    with pytest.raises(RecordError, match=f"config.device {says(text, point)}"):
        records.load(json.loads(json.dumps(run_doc(text))))
    good = [records.load(run_doc("cpu")), records.load(run_doc("cpu"))]
    comparison = compare.comparison_record(good).to_dict()  # type: ignore[arg-type]
    pair = comparison["comparison"]["pairs"][0]
    doc = {**comparison, "comparison": {**comparison["comparison"], "pairs": [{**pair, "target": text}]}}
    with pytest.raises(RecordError, match=re.escape(point)):
        records.load(doc)


@pytest.mark.parametrize("text, point", LOOKALIKES, ids=IDS)
def test_an_imported_bundle_with_a_lookalike_target_is_refused(text: str, point: str) -> None:
    good = records.bundle_record(machine=Fingerprint(cpu=CpuSpec()), suite_version="1", suite_variant="quick",
                                 runs=[records.load(run_doc("cpu"))], prices={"cpu": 1.0})  # type: ignore[list-item]
    for change in ({"prices": {text: 1.0}}, {"peaks_gflops": {text: 10.0}},
                   {"runs": [{**good["runs"][0], "config": {**good["runs"][0]["config"], "device": text}}]}):
        with pytest.raises(RecordError, match=re.escape(point)):
            records.load_bundle(json.loads(json.dumps({**good, **change})))


@pytest.mark.parametrize("text, point", LOOKALIKES, ids=IDS)
def test_the_lab_refuses_a_lookalike_target_in_the_assignment_and_the_choice(text: str, point: str) -> None:
    with pytest.raises(LabError, match=re.escape(point)) as caught:
        read(Assignment, {"targets": ["cpu", text]})
    assert caught.value.field == "targets"
    choice = {"student": "Ana", "family": "mlp", "size": "xs", "batch_size": 64, "epochs": 1, "target": text}
    with pytest.raises(LabError, match=re.escape(point)) as caught:
        read(Choice, choice)
    assert caught.value.field == "target"


def test_the_lab_holds_its_targets_normalised() -> None:
    lab = read(Assignment, {"targets": ["\uff43\uff50\uff55", " CPU/1"]})
    assert lab.targets == ("cpu", "cpu/1")
    choice = read(Choice, {"student": "Ana", "family": "mlp", "size": "xs", "batch_size": 64, "epochs": 1,
                           "target": "CPU/1"})
    assert choice.target == "cpu/1" and choice.problem(lab) is None


@pytest.mark.slow
@pytest.mark.parametrize("text, point", LOOKALIKES, ids=IDS)
def test_the_callback_refuses_a_lookalike_device(text: str, point: str, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("keras")
    from bench.integrations.keras import BenchCallback

    monkeypatch.setattr(devices, "discover", lambda: TWO_GPUS)
    with pytest.raises(ValueError, match="^BenchCallback device: ") as caught:
        BenchCallback(batch_size=64, device=text)
    assert point in str(caught.value)
