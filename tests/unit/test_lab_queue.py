"""bench.lab's pure core: the fair queue's round-robin order and cap, a student's name, the assignment and a
choice checked against it (no run queue, no thread, no clock)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.lab import names
from bench.lab.assignment import Assignment, Choice, LabError, read
from bench.lab.fair_queue import CapReached, FairQueue


def handed(queue: FairQueue[str]) -> list[str]:
    out = []
    while (ticket := queue.pop()) is not None:
        out.append(ticket.item)
    return out


def test_a_students_second_run_waits_until_every_student_with_one_queued_had_a_first():
    q: FairQueue[str] = FairQueue(cap=3)
    for item in ("a1", "a2", "a3"):
        q.add("a", item)
    q.add("b", "b1")
    q.add("c", "c1")
    q.add("c", "c2")
    assert [t.item for t in q.order()] == ["a1", "b1", "c1", "a2", "c2", "a3"]
    assert handed(q) == ["a1", "b1", "c1", "a2", "c2", "a3"]


def test_a_newcomer_goes_before_the_second_runs_of_those_already_served():
    q: FairQueue[str] = FairQueue(cap=2)
    q.add("a", "a1")
    q.add("a", "a2")
    assert q.pop().item == "a1"
    q.add("b", "b1")
    assert q.position(q.order()[0].id) == 0
    assert [t.item for t in q.order()] == ["b1", "a2"], "b has had no run yet; a has had one"


def test_the_cap_counts_queued_runs_and_frees_a_place_when_one_starts():
    q: FairQueue[str] = FairQueue(cap=2)
    q.add("a", "a1")
    q.add("a", "a2")
    with pytest.raises(CapReached, match="2 runs queued"):
        q.add("a", "a3")
    q.add("b", "b1")  # another student is not held by a's cap
    assert q.pop().item == "a1"
    q.add("a", "a3")
    assert q.queued("a") == 2 and q.served("a") == 1


def test_remove_and_drop_student_take_only_their_tickets():
    q: FairQueue[str] = FairQueue(cap=3)
    a1 = q.add("a", "a1")
    q.add("a", "a2")
    q.add("b", "b1")
    assert q.remove(a1.id) == a1 and q.remove(a1.id) is None
    assert [t.item for t in q.drop_student("a")] == ["a2"]
    assert [t.item for t in q.clear()] == ["b1"] and len(q) == 0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from("abcde"), min_size=1, max_size=40))
def test_any_arrival_order_is_handed_round_robin(arrivals):
    """Against the ideal: whatever order the students queue in (before any is handed), the k-th round holds every
    student with at least k runs, each once, and a student's own runs keep their order."""
    q: FairQueue[tuple[str, int]] = FairQueue(cap=40)
    counts: dict[str, int] = {}
    for s in arrivals:
        counts[s] = counts.get(s, 0) + 1
        q.add(s, (s, counts[s]))
    out = handed(q)
    assert sorted(out) == sorted((s, k) for s, n in counts.items() for k in range(1, n + 1)), "nothing lost"
    rounds = [k for _, k in out]
    assert rounds == sorted(rounds), f"a later round went before an earlier one: {out}"


@pytest.mark.parametrize("a, b", [("Zoë", "Zoe\u0308"), ("ZOË", "zoë"), ("  Ana   Lu ", "ana lu"),
                                  ("Ｂｅｎ", "Ben"), ("Straße", "STRASSE")])
def test_two_spellings_of_one_name_are_one_student(a, b):
    assert names.student(a).key == names.student(b).key


@pytest.mark.parametrize("text, why", [("", "empty"), ("   ", "empty"), ("a\nb", "U\\+000A"),
                                       ("evil\u202egnp", "U\\+202E"), ("x" * 41, "at most 40"),
                                       ("\u2066Bob", "U\\+2066"), ("a\u200bb", "U\\+200B"), (42, "text")])
def test_a_name_that_is_not_plain_text_is_refused_saying_why(text, why):
    with pytest.raises(names.NameRefused, match=why):
        names.student(text)


def test_a_name_keeps_how_it_was_written():
    assert names.student("  Zoe\u0308  van  Dijk ").name == "Zoë van Dijk"
    assert names.student("👩‍🔬 Ada").name == "👩‍🔬 Ada", "an emoji joined with ZWJ is a name's character"


def test_the_assignment_refuses_what_the_project_does_not_have_naming_the_field():
    for data, field in [({"families": ["rnn"]}, "families"), ({"sizes": ["huge"]}, "sizes"), ({"cap": 0}, "cap"),
                        ({"epochs_min": 3, "epochs_max": 2}, "epochs_max"), ({"targets": ["tpu"]}, "targets"),
                        ({"dataset": "nope"}, "dataset"), ({"batch_min": "x"}, "batch_min"),
                        ({"colour": "red"}, "colour"), ({"families": ["text"]}, "families")]:
        with pytest.raises(LabError) as caught:
            read(Assignment, data)
        assert caught.value.field == field, (data, str(caught.value))


def test_a_choice_outside_the_assignment_names_its_field():
    lab = read(Assignment, {"families": ["mlp"], "sizes": ["xs", "s"], "batch_min": 32, "batch_max": 256,
                            "epochs_max": 2, "targets": ["cpu"]})
    good = {"student": "Ana", "family": "mlp", "size": "xs", "batch_size": 64, "epochs": 1, "target": "cpu"}
    assert read(Choice, good).problem(lab) is None
    for change, field in [({"family": "cnn"}, "family"), ({"size": "m"}, "size"), ({"batch_size": 512}, "batch_size"),
                          ({"epochs": 3}, "epochs"), ({"target": "gpu:0"}, "target")]:
        problem = read(Choice, {**good, **change}).problem(lab)
        assert problem is not None and problem.field == field
    with pytest.raises(LabError) as caught:
        read(Choice, {**good, "batch_size": -1})
    assert caught.value.field == "batch_size"
    config = read(Choice, good).config(lab)
    assert (config.model, config.size, config.batch_size, config.epochs, config.device) == ("mlp", "xs", 64, 1, "cpu")
    assert config.limit_samples == lab.limit_samples
