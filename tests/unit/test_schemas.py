"""docs/schemas/: the JSON Schemas generated from the record models (`make schemas`), up to date with the
declarations; every shipped record's parts valid against them and read by the checker; hostile parts refused by both."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from bench.output import schemas
from bench.vocab.errors import RecordError
from bench.vocab.record_types import Fingerprint
from bench.vocab.run_info import RunError, RunInfo

ROOT = Path(__file__).resolve().parents[2]


def _runs(doc: Any) -> list[dict[str, Any]]:
    if not isinstance(doc, dict):
        return []
    if doc.get("schema") == "bench.run/1":
        return [doc, *doc.get("members", [])]
    return [r for r in doc.get("runs") or [] if isinstance(r, dict)]


def _shipped() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for path in sorted((ROOT / "docs").rglob("*.json")):
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            continue
        if isinstance(doc, dict) and str(doc.get("schema", "")).startswith("bench."):
            found.append((str(path.relative_to(ROOT)), doc))
    return found


SHIPPED = _shipped()


@pytest.mark.parametrize("name", sorted(schemas.SCHEMAS))
def test_each_schema_file_is_the_one_its_declaration_generates(name: str) -> None:
    on_disk = (schemas.FOLDER / name).read_text(encoding="utf-8")
    assert on_disk == schemas.text(name), f"docs/schemas/{name} is out of date: run `make schemas`"
    jsonschema.Draft202012Validator.check_schema(json.loads(on_disk))


def test_every_shipped_records_parts_are_valid_against_the_schemas_and_read_by_the_checker() -> None:
    info = jsonschema.Draft202012Validator(schemas.schema("run-info.schema.json"))
    error = jsonschema.Draft202012Validator(schemas.schema("run-error.schema.json"))
    machine = jsonschema.Draft202012Validator(schemas.schema("bundle-machine.schema.json"))
    parts = 0
    assert len(SHIPPED) >= 10, [p for p, _ in SHIPPED]
    for path, doc in SHIPPED:
        for i, run in enumerate(_runs(doc)):
            if run.get("info") is not None:
                info.validate(run["info"])
                RunInfo.model_validate(run["info"], f"{path} runs[{i}].info")
                parts += 1
            if run.get("error"):
                error.validate(run["error"])
                RunError.model_validate(run["error"], f"{path} runs[{i}].error")
                parts += 1
        if doc.get("schema") == "bench.bundle/1":
            machine.validate(doc["machine"])
            Fingerprint.model_validate(doc["machine"])
            parts += 1
    assert parts >= 20


@pytest.mark.parametrize(("name", "part", "path"), [
    ("run-info.schema.json", {"cluster": "x"}, "info.cluster"),
    ("run-info.schema.json", {"cluster": ["a", "b"]}, "info.cluster"),
    ("run-info.schema.json", {"n_train": "5"}, "info.n_train"),
    ("run-info.schema.json", {"phases": [{"phase": 3, "t_s": 0.0}]}, "info.phases[0].phase"),
    ("run-info.schema.json", {"energy_reasons": {"cpu": 5}}, "info.energy_reasons.cpu"),
    ("run-error.schema.json", {"message": ["x"]}, "error.message"),
    ("bundle-machine.schema.json", {"cpu": {}, "gpus": ["x", 5]}, "machine.gpus[0]"),
    ("bundle-machine.schema.json", {"gpus": []}, "machine.cpu"),
])
def test_a_hostile_part_is_refused_by_the_schema_and_by_the_checker_naming_its_path(
        name: str, part: dict[str, Any], path: str) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(part, schemas.schema(name))
    cls = schemas.SCHEMAS[name][0]
    with pytest.raises(RecordError, match=path.replace("[", r"\[").replace("]", r"\]").replace(".", r"\.")):
        cls.model_validate(part)


_DOCUMENT = {"bench.run/1": "run.schema.json", "bench.comparison/1": "comparison.schema.json",
             "bench.sweep/1": "sweep.schema.json", "bench.bundle/1": "bundle.schema.json"}


def test_every_shipped_record_validates_against_its_documents_schema() -> None:
    checked = 0
    for path, doc in SHIPPED:
        name = _DOCUMENT.get(doc["schema"])
        if name is None:
            continue
        errors = sorted(jsonschema.Draft202012Validator(schemas.schema(name)).iter_errors(doc), key=str)
        assert not errors, f"{path}: {errors[0].json_path}: {errors[0].message}"
        checked += 1
    assert checked >= 10


@pytest.mark.parametrize(("change", "where"), [
    (lambda d: d["runs"][0]["info"].update(cluster="x"), "$.runs[0].info.cluster"),
    (lambda d: d["runs"][0]["epochs"][0].update(epoch="1"), "$.runs[0].epochs[0].epoch"),
    (lambda d: d["runs"][0]["samples"].append({"t_s": "soon"}), "$.runs[0].samples"),
    (lambda d: d["runs"][1].update(status="exploded"), "$.runs[1].status"),
    (lambda d: d["comparison"]["pairs"][0].update(target=5), "$.comparison.pairs[0].target"),
])
def test_a_hostile_comparison_is_refused_by_its_schema_where_the_checker_refuses_it(change, where) -> None:
    doc = json.loads((ROOT / "docs/results/h100-mlp-s.json").read_text(encoding="utf-8"))
    change(doc)
    errors = list(jsonschema.Draft202012Validator(schemas.schema("comparison.schema.json")).iter_errors(doc))
    # an error inside a value that may be null is reported at that value (anyOf), its causes below it
    paths = [c.json_path for e in errors for c in (e, *(e.context or ()))]
    assert errors and any(p.startswith(where) for p in paths), paths
    from bench.vocab import records

    with pytest.raises(RecordError):
        records.load(doc)


def test_unknown_keys_are_kept_for_the_round_trip() -> None:
    raw = {"placement": "cpu", "from_a_later_version": {"x": [1, 2]}, "cluster": {"id": "a", "index": 0, "size": 2,
                                                                             "later": True}}
    assert RunInfo.model_validate(raw).to_dict() == raw


def test_an_old_key_read_under_a_new_name_is_refused_under_its_own_name() -> None:
    """``power_watts`` (written before ``power_w``) holding a non-number is named as the file names it (the property
    tests found it named ``power_w``, a key the file does not have)."""
    from bench.vocab.readings import GpuReading

    with pytest.raises(RecordError, match=r"gpu\.power_watts must be a number or null, got True"):
        GpuReading.model_validate({"index": 0, "power_watts": True})
    assert GpuReading.model_validate({"index": 0, "power_watts": 71.5}).power_w == 71.5
