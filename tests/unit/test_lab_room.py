"""bench.lab.room: a lab's runs handed to a real JobManager (stand-in workers: spawned processes, no framework)
one at a time in round-robin order, marked in the store with the lab and the student, read back after a restart;
the teacher's stop, remove and close; the student's refusals (a taken name, the cap, the lab closed)."""

from __future__ import annotations

import pytest

from bench.lab.assignment import Assignment, Choice, LabError
from bench.lab.room import LabRoom
from bench.runs.jobs import JobManager
from bench.store import Store
from tests.fixtures import NO_GPU
from tests.polling import wait_for
from tests.unit import fake_workers

LAB = Assignment(title="Test lab", families=("mlp",), sizes=("xs", "s"), epochs_min=1, epochs_max=2, batch_min=32,
                 batch_max=256, targets=("cpu",), cap=2, limit_samples=256)


def choice(student: str, token: str | None = None, **change: object) -> Choice:
    fields: dict[str, object] = {"student": student, "family": "mlp", "size": "xs", "batch_size": 64, "epochs": 1,
                                 "target": "cpu", "token": token, **change}
    return Choice(**fields)


@pytest.fixture
def lab(isolated_store):
    manager = JobManager(Store(isolated_store), hardware=NO_GPU, worker_target=fake_workers.quick)
    room = LabRoom(manager)
    room.open(LAB)
    yield room
    room.shutdown()
    manager.shutdown()


def _rows_done(room: LabRoom, n: int):
    room.publish()
    rows = room.board().rows
    return rows if sum(r.status == "finished" for r in rows) == n else None


def test_three_students_runs_start_round_robin_and_land_in_the_store_marked(lab, isolated_store):
    a = lab.submit(choice("Ana"))
    assert a.position == 0 and a.student == "Ana"
    a2 = lab.submit(choice("ana", token=a.token, size="s"))  # the same student: the name's key and its token
    b = lab.submit(choice("Ben"))
    c = lab.submit(choice("Cleo", batch_size=128))
    assert a2.student == "Ana", "the lab shows the name as it first saw it"
    rows = wait_for(lambda: _rows_done(lab, 4), timeout_s=120, what="the four runs to finish")
    started = sorted((r for r in rows), key=lambda r: r.started_at or 0)
    assert [r.student for r in started] == ["Ana", "Ben", "Cleo", "Ana"], "Ana's second run waits for Ben and Cleo"
    assert [r.ticket for r in started] == [a.ticket, b.ticket, c.ticket, a2.ticket]
    for first, second in zip(started, started[1:]):
        assert second.started_at >= first.ended_at, "one run at a time, each alone on the CPU"
    assert all(r.samples_per_s and r.params and r.node == "test" and r.device == "cpu" for r in rows)
    stored = [r for r in Store(isolated_store).list_runs() if r.info.lab is not None]
    assert sorted((r.info.lab.student, r.config.batch_size) for r in stored) == [
        ("Ana", 64), ("Ana", 64), ("Ben", 64), ("Cleo", 128)]
    assert {r.info.lab.lab for r in stored} == {lab.board().lab}


def test_a_restart_keeps_the_lab_and_its_finished_runs(lab, isolated_store):
    lab.submit(choice("Ana"))
    lab.submit(choice("Ben"))
    wait_for(lambda: _rows_done(lab, 2), timeout_s=90, what="both runs to finish")
    before = lab.board()
    lab.shutdown()
    lab.manager.shutdown()
    manager = JobManager(Store(isolated_store), hardware=NO_GPU, worker_target=fake_workers.quick)
    again = LabRoom(manager, thread=False)
    try:
        after = again.board()
        assert (after.lab, after.state, after.assignment) == (before.lab, "open", LAB)
        assert sorted((r.student, r.status, r.run_id) for r in after.rows) == sorted(
            (r.student, r.status, r.run_id) for r in before.rows)
        assert all(r.samples_per_s for r in after.rows)
        again.submit(choice("Cleo"))  # the lab takes runs again
        assert again.pump(), "a run is handed after the restart"
    finally:
        manager.shutdown()


def test_a_taken_name_the_cap_and_a_closed_lab_are_refused_naming_why(lab):
    first = lab.submit(choice("Zoë", epochs=2))
    with pytest.raises(LabError) as taken:
        lab.submit(choice("ZOE\u0308"))  # another person, the same name
    assert taken.value.status == 409 and taken.value.field == "student"
    lab.submit(choice("Zoë", token=first.token, epochs=2))
    with pytest.raises(LabError) as capped:  # two queued (or one under way and one queued) and one more
        lab.submit(choice("Zoë", token=first.token, epochs=2))
        lab.submit(choice("Zoë", token=first.token, epochs=2))
    assert capped.value.status == 429 and "at most 2" in str(capped.value)
    with pytest.raises(LabError) as outside:
        lab.submit(choice("Max", size="xl"))
    assert outside.value.field == "size"
    assert lab.close() >= 0
    with pytest.raises(LabError, match="not open") as closed:
        lab.submit(choice("Max"))
    assert closed.value.status == 409


def test_the_teacher_stops_a_run_and_removes_a_student(isolated_store):
    manager = JobManager(Store(isolated_store), hardware=NO_GPU, worker_target=fake_workers.quick)
    room = LabRoom(manager, thread=False)  # driven step by step: nothing is handed until pump()
    try:
        room.open(LAB)
        a = room.submit(choice("Ana", epochs=2))
        b = room.submit(choice("Ben"))
        b2 = room.submit(choice("Ben", token=b.token))
        c = room.submit(choice("Cleo"))
        assert room.stop(c.ticket)
        [run_id] = room.pump()  # one lane: Ana's run
        assert room.remove("BEN") == 2
        room.publish()
        rows = {r.ticket: r for r in room.board().rows}
        assert rows[c.ticket].status == "cancelled" and "teacher" in (rows[c.ticket].message or "")
        assert b.ticket not in rows and b2.ticket not in rows, "a removed student's rows leave the board"
        assert room.stop(a.ticket)
        wait_for(lambda: not manager.snapshot(run_id).active, timeout_s=60, what="Ana's run to stop")
        room.publish()
        assert {r.ticket: r.status for r in room.board().rows}[a.ticket] == "stopped"
        assert room.pump() == [], "nothing is left to hand"
        assert room.submit(choice("ben")).student == "ben", "a removed name is free again"
    finally:
        manager.shutdown()
