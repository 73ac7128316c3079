"""Property-based fuzzing (hypothesis) of what reads outside input: the record loader, the link parser, the .npz
checker and the command line. Each must answer with a result or the project's own error, never anything else.

A small budget runs in the suite; ``BENCH_FUZZ_EXAMPLES=2000 pytest tests/unit/test_fuzz.py`` runs longer.
"""

from __future__ import annotations

import copy
import io
import json
import math
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.cli import main as cli
from bench.vocab import limits, records
from bench.plans import datasets
from bench.vocab.config import RunConfig
from bench.hardware.devices import Hardware
from bench.vocab.record_types import CpuSpec
from ui import url_state

EXAMPLES = int(os.environ.get("BENCH_FUZZ_EXAMPLES", "40"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                             HealthCheck.too_slow])

JSON_LEAF = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
                      st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20))
JSON_VALUE = st.recursive(JSON_LEAF, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                             st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                          max_leaves=12)


def valid_record() -> dict[str, Any]:
    return {"schema": "bench.run/1", "id": 3, "status": "finished", "config": RunConfig().to_dict(),
            "hardware": {"cpu": {"model": "x", "logical_cores": 2}, "gpus": []}, "info": {},
            "created_at": 1_764_000_000.0, "started_at": 1_764_000_001.0, "ended_at": 1_764_000_009.0,
            "epochs": [{"epoch": 1, "epoch_seconds": 1.0, "includes_tracing": True, "loss": 1.0},
                       {"epoch": 2, "epoch_seconds": 0.5, "includes_tracing": False, "loss": 0.5,
                        "energy_j": {"cpu": 3.0}, "throttle_reasons": []}],
            "samples": [{"t_s": 0.5, "cpu_percent": 50.0, "cpu_per_core": [40.0, 60.0],
                         "gpus": [{"index": 0, "util_percent": 10.0, "power_w": 80.0}]}]}


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a nested record a mutation can land."""
    out = [prefix]
    if isinstance(value, dict):
        for key, inner in value.items():
            out += _paths(inner, (*prefix, key))
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            out += _paths(inner, (*prefix, i))
    return out


@st.composite
def mutated_records(draw: st.DrawFn) -> Any:
    record = valid_record()
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        places = [p for p in _paths(record) if p]
        if not places:
            break
        place = draw(st.sampled_from(places))
        parent = record
        for key in place[:-1]:
            parent = parent[key]
        action = draw(st.sampled_from(["replace", "delete", "add"]))
        if action == "delete" and isinstance(parent, dict):
            parent.pop(place[-1], None)
        elif action == "add" and isinstance(parent, dict):
            parent[draw(st.text(max_size=8))] = draw(JSON_VALUE)
        else:
            parent[place[-1]] = draw(JSON_VALUE)
    return record


@FUZZ
@given(mutated_records())
def test_the_record_loader_returns_a_record_or_says_what_is_wrong(record: Any) -> None:
    try:
        loaded = records.load(copy.deepcopy(record))
    except records.RecordError as exc:
        assert str(exc), "an error says what is wrong"
        return
    # what is accepted is usable: strict JSON out, and every time and number within its bounds
    json.loads(records.json_text(loaded.to_dict()))
    assert isinstance(loaded, records.RunRecord)
    for key in ("created_at", "started_at", "ended_at"):
        value = getattr(loaded, key)
        assert value is None or limits.TIME_MIN_S <= value <= limits.TIME_MAX_S, (key, value)
    assert all(1 <= e.epoch <= limits.EPOCH_MAX for e in loaded.epochs)
    assert all(math.isfinite(s.t_s) for s in loaded.samples)


@FUZZ
@given(st.binary(max_size=300))
def test_the_file_loader_never_fails_with_anything_but_its_own_error(data: bytes) -> None:
    from bench.output import report

    try:
        loaded = report.load_record_file(data)
    except records.RecordError as exc:
        assert str(exc), "a refusal says why"
    else:
        assert isinstance(loaded, (records.RunRecord, records.Comparison)), type(loaded)


HARDWARE = Hardware(cpu=CpuSpec("x", 2, 2, 1024.0), gpu_reason="no GPU in this test")
PARAM_NAMES = st.sampled_from([*url_state.TRAIN_FIELDS, "preset", "present", "targets", "colour"]) | st.text(max_size=12)


@FUZZ
@given(st.dictionaries(PARAM_NAMES, st.text(max_size=40), max_size=8))
def test_the_link_parser_returns_checked_values_and_notes(params: dict[str, str]) -> None:
    state = url_state.parse(params, fields=url_state.TRAIN_FIELDS, hardware=HARDWARE, devices=["cpu"],
                            target_options=["cpu/1", "cpu"])
    base = url_state.form_base(state.preset)
    config = {**base, **state.values}
    config["limit_samples"] = config.get("limit_samples") or None  # the form's 0: the whole set
    RunConfig.model_validate({k: v for k, v in config.items() if k in RunConfig.model_fields}).validate(HARDWARE)
    for note in state.notes:
        assert "](" not in note.replace("` ", "`").split("`")[0], note  # running text never opens a link


def _npz(**arrays: Any) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


GOOD_NPZ = _npz(x_train=np.zeros((8, 4, 4), np.float32), y_train=np.arange(8) % 2,
                x_test=np.zeros((4, 4, 4), np.float32), y_test=np.arange(4) % 2)


@st.composite
def damaged_npz(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["bytes", "flip", "truncate", "member"]))
    if kind == "bytes":
        return draw(st.binary(max_size=400))
    data = bytearray(GOOD_NPZ)
    if kind == "flip":
        for _ in range(draw(st.integers(1, 8))):
            i = draw(st.integers(0, len(data) - 1))
            data[i] = draw(st.integers(0, 255))
        return bytes(data)
    if kind == "truncate":
        return bytes(data[: draw(st.integers(0, len(data)))])
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(GOOD_NPZ)) as source, zipfile.ZipFile(out, "w") as target:
        for name in source.namelist():
            member = bytearray(source.read(name))
            if draw(st.booleans()) and len(member) > 10:  # a forged .npy header: shape, dtype, order
                start = draw(st.integers(8, min(len(member) - 1, 120)))
                member[start:start + 4] = draw(st.binary(min_size=4, max_size=4))
            target.writestr(name, bytes(member))
    return out.getvalue()


@FUZZ
@given(damaged_npz())
def test_the_npz_checker_accepts_or_refuses_with_its_own_error(tmp_path_factory: pytest.TempPathFactory,
                                                               data: bytes) -> None:
    path = Path(tmp_path_factory.mktemp("npz")) / "f.npz"
    path.write_bytes(data)
    try:
        info = datasets.check_npz(str(path))
    except datasets.DatasetError as exc:
        assert str(exc)
        return
    assert info.num_classes >= 2


CLI_WORDS = st.sampled_from(["--epochs", "--batch-size", "--size", "--model", "--dataset", "--device", "--targets",
                             "--sizes", "--batch-sizes", "--price", "--json", "--limit-samples", "--cpu-threads",
                             "--sample-interval", "--steps-per-execution", "--format", "--out", "-h", "0", "-1", "2",
                             "1e309", "nan", "cpu", "cpu,cpu", "gpu:0", "gpus", "xs", "xl", "mlp", "seed-text",
                             "synthetic-mnist", "npz", "=", ",", "cpu=x", "99999999999999999999999"])
COMMAND = st.sampled_from(["run", "compare", "sweep", "export", "import", "runs"])


class WouldTrain(Exception):
    """The arguments passed every check: the command would start training here (the fuzz stops it)."""


@FUZZ
@given(COMMAND, st.lists(CLI_WORDS | st.text(max_size=10), max_size=6))
def test_the_command_line_answers_with_an_exit_code_never_a_traceback(monkeypatch_session: Any, command: str,
                                                                      argv: list[str]) -> None:
    try:
        code = cli.main([command, *argv])
    except SystemExit as exc:  # argparse: usage errors exit 2, --help exits 0
        assert exc.code in (0, 2), exc.code
        return
    except WouldTrain:
        return
    assert code in (0, 1, 2, cli.EXIT_NOT_STORED), code


@pytest.fixture(scope="module")
def monkeypatch_session() -> Any:
    """No fuzz case trains or writes outside the test's store: training entry points raise WouldTrain."""
    patch = pytest.MonkeyPatch()

    def stop(*args: Any, **kwargs: Any) -> Any:
        raise WouldTrain()

    patch.setattr(cli, "execute_run", stop)
    patch.setattr(cli, "_run_many", stop)
    patch.setattr(cli, "_write_json", stop)
    from bench.runs.peaks import PeakQueue

    patch.setattr(PeakQueue, "queue", stop)
    yield patch
    patch.undo()


# -- the record parser's ways in: hostile text, numbers and nesting (tests/strategies.py's last block) --------------
# Each way in either takes a document whole (then it reads back, exports as strict UTF-8 JSON and reads again the
# same) or refuses it with a RecordError naming the field. ``BENCH_FUZZ_EXAMPLES`` sets the budget (see TESTING.md).
from bench.store import rows as store_rows  # noqa: E402
from bench.output import gallery, report  # noqa: E402
from tests import strategies  # noqa: E402


def _named(mutation: strategies.Mutation, message: str) -> bool:
    """Whether a refusal names the field (or, for a key that is not text at all, says so where it sits)."""
    key_not_text = mutation.key is not None and any(0xD800 <= ord(c) <= 0xDFFF for c in mutation.key)
    return (mutation.names_it(message) or "appears twice" in message
            or (key_not_text and "surrogate" in message)
            or (mutation.key is not None and repr(mutation.key) in message))


def _exports_cleanly(document: Any) -> None:
    text = records.json_text(document.to_dict())
    text.encode("utf-8")  # no lone surrogate survives an import
    json.loads(text, parse_constant=lambda token: pytest.fail(f"not strict JSON: {token}"))
    again = records.load_json(text) if not isinstance(document, records.MachineBundle) \
        else records.load_bundle_json(text)
    assert records.json_text(again.to_dict()) == text, "an accepted document reads back as it was written"


@FUZZ
@given(strategies.hostile_mutations("run") | strategies.hostile_mutations("comparison")
       | strategies.hostile_mutations("sweep"))
def test_a_run_comparison_or_sweep_file_is_taken_whole_or_refused_naming_the_field(
        mutation: strategies.Mutation) -> None:
    text = strategies.as_file_text(mutation.apply())
    try:
        document = records.load_json(text)
    except records.RecordError as exc:
        assert _named(mutation, str(exc)), f"{mutation}: {exc}"
        return
    _exports_cleanly(document)


@FUZZ
@given(strategies.hostile_mutations("run") | strategies.hostile_mutations("comparison"))
def test_an_import_or_an_mlflow_artifacts_json_is_taken_whole_or_refused_naming_the_field(
        mutation: strategies.Mutation) -> None:
    """What ``bench import``, History's upload and ``bench import --mlflow`` (an artifact's bytes) read."""
    data = strategies.as_file_text(mutation.apply()).encode("utf-8")
    try:
        document = report.load_record_file(data)
    except records.RecordError as exc:
        assert _named(mutation, str(exc)), f"{mutation}: {exc}"
        return
    _exports_cleanly(document)


@FUZZ
@given(strategies.hostile_mutations("bundle"))
def test_a_bundle_is_taken_whole_or_refused_naming_the_field(mutation: strategies.Mutation) -> None:
    data = strategies.as_file_text(mutation.apply()).encode("utf-8")
    try:
        bundle = gallery.read_bundle(data)
    except records.RecordError as exc:
        assert _named(mutation, str(exc).removeprefix("the upload: ")), f"{mutation}: {exc}"
        return
    _exports_cleanly(bundle)


@FUZZ
@given(strategies.hostile_mutations("run"))
def test_a_store_row_reads_as_a_run_or_as_unreadable_with_the_field_never_raising(
        mutation: strategies.Mutation) -> None:
    doc = mutation.apply()
    row = {"id": 1, **{c: doc.get(c) for c in store_rows.RECORD_COLUMNS if c != "id"}}
    for column in store_rows.JSON_COLUMNS:
        if row[column] is not None:
            row[column] = json.dumps(row[column])
    epochs = [json.dumps(e) for e in doc.get("epochs") or []] if isinstance(doc.get("epochs"), list) else []
    samples = [json.dumps(s) for s in doc.get("samples") or []] if isinstance(doc.get("samples"), list) else []
    read = store_rows.read_run(store_rows.RunRow.of(row), epochs, samples)
    if isinstance(read, store_rows.UnreadableRun):
        assert read.reason and "Traceback" not in read.reason
        read.message.encode("utf-8")  # a listing prints it
        return
    _exports_cleanly(read)
