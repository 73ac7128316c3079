"""ui.lab_routes: the lab's JSON API through Starlette's test client (no Streamlit server), on a room over a real
JobManager with stand-in workers: open behind the presenter key, a submission answered with its place or refused
naming the field (nothing queued), the board waiting for a new version, the exports, the two pages."""

from __future__ import annotations

import json

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from bench.lab.board import Board, Refusal, SubmitAnswer
from bench.lab.room import LabRoom
from bench.runs.jobs import JobManager
from bench.store import Store
from tests.fixtures import NO_GPU
from tests.polling import wait_for
from tests.unit import fake_workers
from ui import lab_routes

ASSIGNMENT = {"title": "Week 3", "families": ["mlp"], "sizes": ["xs", "s"], "epochs_min": 1, "epochs_max": 2,
              "batch_min": 32, "batch_max": 256, "targets": ["cpu"], "cap": 2, "limit_samples": 256}
GOOD = {"student": "Ana", "family": "mlp", "size": "xs", "batch_size": 64, "epochs": 1, "target": "cpu"}


@pytest.fixture
def client(isolated_store, monkeypatch):
    monkeypatch.setattr(lab_routes, "presenter_key", lambda: "sesame")
    manager = JobManager(Store(isolated_store), hardware=NO_GPU, worker_target=fake_workers.quick)
    room = LabRoom(manager)
    lab_routes.install(room)
    yield TestClient(Starlette(routes=lab_routes.routes()))
    lab_routes.install(None)
    room.shutdown()
    manager.shutdown()


def opened(client: TestClient) -> None:
    answer = client.post("/lab/api/open", json=ASSIGNMENT, headers={"X-Presenter-Key": "sesame"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["lab"].startswith("lab-")


def test_opening_needs_the_presenter_key_and_a_valid_assignment(client):
    assert client.post("/lab/api/open", json=ASSIGNMENT).status_code == 403
    assert client.post("/lab/api/open", json=ASSIGNMENT, headers={"X-Presenter-Key": "wrong"}).status_code == 403
    bad = client.post("/lab/api/open", json={**ASSIGNMENT, "cap": 0}, headers={"X-Presenter-Key": "sesame"})
    assert bad.status_code == 422 and Refusal.model_validate(bad.json()).field == "cap"
    assert client.post("/lab/api/submit", json=GOOD).status_code == 409, "no lab is open yet"
    opened(client)
    assert Board.model_validate(client.get("/lab/api/board").json()).state == "open"


@pytest.mark.parametrize("change, field, status", [
    ({"size": "xl"}, "size", 422), ({"batch_size": 4096}, "batch_size", 422), ({"epochs": 0}, "epochs", 422),
    ({"target": "gpu:0"}, "target", 422), ({"family": "cnn"}, "family", 422), ({"student": "a\u202eb"}, "student", 422),
    ({"student": ""}, "student", 422), ({"batch_size": "64"}, "batch_size", 422), ({"extra": 1}, "extra", 422),
])
def test_a_submission_outside_the_assignment_is_refused_naming_the_field_and_queues_nothing(client, change, field,
                                                                                          status):
    opened(client)
    answer = client.post("/lab/api/submit", json={**GOOD, **change})
    assert answer.status_code == status, answer.text
    refusal = Refusal.model_validate(answer.json())
    assert refusal.field == field and refusal.error
    assert Board.model_validate(client.get("/lab/api/board").json()).rows == ()


def test_a_body_that_is_not_json_or_too_big_is_refused(client):
    opened(client)
    assert client.post("/lab/api/submit", content=b"{nope").status_code == 400
    assert client.post("/lab/api/submit", content=b"[" * 20_000).status_code == 413


def test_submissions_answer_their_place_and_the_board_follows_them_to_their_end(client):
    opened(client)
    first = SubmitAnswer.model_validate(client.post("/lab/api/submit", json=GOOD).json())
    second = client.post("/lab/api/submit", json={**GOOD, "student": "Ben"})
    assert second.status_code == 200 and first.student == "Ana"
    taken = client.post("/lab/api/submit", json={**GOOD, "student": "ANA"})
    assert taken.status_code == 409 and taken.json()["field"] == "student"
    again = client.post("/lab/api/submit", json={**GOOD, "student": "ana", "token": first.token})
    assert again.status_code == 200 and again.json()["position"] >= 1, "Ana's second run waits for Ben's first"
    version = -1
    for _ in range(200):  # each answer is a new version: the request waits for it, no sleep here
        board = Board.model_validate(client.get(f"/lab/api/board?after={version}").json())
        assert board.version > version
        version = board.version
        if sum(r.status == "finished" for r in board.rows) == 3:
            break
    assert [r.student for r in sorted(board.rows, key=lambda r: r.started_at or 0)] == ["Ana", "Ben", "Ana"]
    assert all(r.samples_per_s and r.run_id for r in board.rows)
    fig = client.get("/lab/api/figure").json()
    assert sum(len(t["x"]) for t in fig["data"]) == 6, "three runs, each a point on both charts"
    csv = client.get("/lab/api/export?format=csv")
    assert csv.status_code == 200 and csv.text.count("\r\n") == 4 and "attachment" in csv.headers["content-disposition"]
    assert "<table" in client.get("/lab/api/export?format=html").text
    assert Board.model_validate(client.get("/lab/api/export?format=json").json()).version == version
    assert client.get("/lab/api/export?format=xml").status_code == 400


def test_the_teacher_actions_need_the_key(client):
    opened(client)
    ticket = client.post("/lab/api/submit", json={**GOOD, "epochs": 2}).json()["ticket"]
    assert client.post("/lab/api/stop", json={"ticket": ticket}).status_code == 403
    key = {"X-Presenter-Key": "sesame"}
    assert client.post("/lab/api/stop", json={"ticket": "x"}, headers=key).json()["field"] == "ticket"
    assert client.post("/lab/api/stop", json={"ticket": ticket}, headers=key).json() == {"done": True}
    assert client.post("/lab/api/remove", json={"student": "ana"}, headers=key).status_code == 200
    assert client.post("/lab/api/close", headers=key).status_code == 200
    assert client.post("/lab/api/close", headers=key).status_code == 409
    assert client.post("/lab/api/fly", headers=key).status_code == 404


def test_a_board_version_that_is_not_a_number_is_refused(client):
    assert client.get("/lab/api/board?after=abc").json()["field"] == "after"


def test_the_pages_are_static_and_draw_names_as_text(client):
    student = client.get("/lab")
    assert student.status_code == 200 and 'dir="auto"' in student.text and "innerHTML" not in student.text
    assert "<bdi>" not in student.text and 'el("bdi"' in student.text, "every name drawn in its own bdi"
    board = client.get("/lab/board", headers={"Accept-Encoding": "gzip"})
    assert board.headers["content-encoding"] == "gzip" and "plotly-basic.min.js" in board.text
    assert "innerHTML" not in board.text


def test_a_device_the_assignment_allows_but_this_machine_lacks_is_refused_before_it_is_queued(client):
    key = {"X-Presenter-Key": "sesame"}
    assert client.post("/lab/api/open", json={**ASSIGNMENT, "targets": ["cpu", "gpu:0"]}, headers=key).status_code == 200
    answer = client.post("/lab/api/submit", json={**GOOD, "target": "gpu:0"})
    assert answer.status_code == 422 and answer.json()["field"] == "target", answer.text
    assert "cannot train here" in answer.json()["error"]
    assert Board.model_validate(client.get("/lab/api/board").json()).rows == ()
