"""The JSON Schemas of the records, generated from the pydantic models themselves (``model_json_schema``):
``make schemas`` (``python -m bench.output.schemas``) rewrites docs/schemas/; tests/unit/test_schemas.py fails when a file
is out of date, and checks that every shipped record validates against its schema and that hostile ones do not.

A schema says the types, the bounds, the required keys and which objects keep unknown keys; what it cannot say (an
epoch numbered twice, a run config's own rules) the model that reads the record says, with the field's path.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from bench.lab.assignment import Assignment, Choice
from bench.lab.board import Board, Opened, Refusal, SubmitAnswer
from bench.vocab.record_types import Fingerprint
from bench.vocab.records import Comparison, MachineBundle, RunRecord, Sweep
from bench.vocab.run_info import RunError, RunInfo

FOLDER = Path(__file__).resolve().parents[2] / "docs" / "schemas"
SCHEMAS: dict[str, tuple[type[Any], str]] = {  # file name -> (model, what it describes)
    "run.schema.json": (RunRecord, "bench.run/1"),
    "comparison.schema.json": (Comparison, "bench.comparison/1"),
    "sweep.schema.json": (Sweep, "bench.sweep/1"),
    "bundle.schema.json": (MachineBundle, "bench.bundle/1"),
    "run-info.schema.json": (RunInfo, "bench.run/1 info"),
    "run-error.schema.json": (RunError, "bench.run/1 error"),
    "bundle-machine.schema.json": (Fingerprint, "bench.bundle/1 machine"),
    # the lab's JSON API (ui/lab_routes.py, docs/LAB.md): requests and answers
    "lab-assignment.schema.json": (Assignment, "POST /lab/api/open: the assignment"),
    "lab-opened.schema.json": (Opened, "POST /lab/api/open: the answer"),
    "lab-choice.schema.json": (Choice, "POST /lab/api/submit: a student's choice"),
    "lab-submit-answer.schema.json": (SubmitAnswer, "POST /lab/api/submit: the answer"),
    "lab-refusal.schema.json": (Refusal, "the lab API's 4xx answer"),
    "lab-board.schema.json": (Board, "GET /lab/api/board"),
}


def schema(name: str) -> dict[str, Any]:
    model, where = SCHEMAS[name]
    body = model.model_json_schema(by_alias=True, mode="validation")
    body.pop("title", None)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": name, "title": where, **body}


def text(name: str) -> str:
    return json.dumps(schema(name), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    folder = Path(argv[0]) if argv else FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    for name in SCHEMAS:
        (folder / name).write_text(text(name), encoding="utf-8")
        print(f"wrote {folder / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
