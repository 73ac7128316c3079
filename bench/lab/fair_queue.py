"""The fair queue between a lab's students: round robin by runs handed. The next run handed is the oldest queued
run of the student who has been handed the fewest runs so far (ties: whose oldest queued run came first), so a
student's second run waits until every student with one queued has had a first, and a student who queues five
runs at once gets them one round apart. A student holds at most ``cap`` queued runs. Pure: no clock, no thread,
no run queue; bench.lab.room drives it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")


class CapReached(ValueError):
    """The student already holds ``cap`` queued runs."""


@dataclass(frozen=True)
class Ticket(Generic[T]):
    """One queued run: its number (in the order runs were queued), its student's key and what it is."""

    id: int
    student: str
    item: T


@dataclass
class FairQueue(Generic[T]):
    cap: int
    _queues: dict[str, list[Ticket[T]]] = field(default_factory=dict)  # student -> queued tickets, oldest first
    _served: Counter[str] = field(default_factory=Counter)  # student -> runs handed so far (0 for one not served)
    _next_id: int = 1

    def add(self, student: str, item: T) -> Ticket[T]:
        """Queue ``item`` for ``student``. Raises CapReached when the student already holds ``cap`` queued runs."""
        held = self._queues.setdefault(student, [])
        if len(held) >= self.cap:
            raise CapReached(f"you already have {len(held)} run{'s' * (len(held) != 1)} queued (at most "
                             f"{self.cap}): wait for one to start")
        ticket = Ticket(self._next_id, student, item)
        self._next_id += 1
        held.append(ticket)
        return ticket

    def queued(self, student: str) -> int:
        return len(self._queues.get(student, ()))

    def served(self, student: str) -> int:
        return self._served[student]

    def __len__(self) -> int:
        return sum(len(q) for q in self._queues.values())

    def _picks(self) -> Iterator[Ticket[T]]:
        """The tickets in the order they will be handed, without handing them."""
        heads = {s: 0 for s, q in self._queues.items() if q}
        served = {s: self._served[s] for s in heads}
        while heads:
            student = min(heads, key=lambda s: (served[s], self._queues[s][heads[s]].id))
            yield self._queues[student][heads[student]]
            served[student] += 1
            heads[student] += 1
            if heads[student] == len(self._queues[student]):
                del heads[student]

    def order(self) -> list[Ticket[T]]:
        """Every queued ticket, in the order they will be handed (if no one queues more meanwhile)."""
        return list(self._picks())

    def position(self, ticket_id: int) -> int | None:
        """How many tickets go before ``ticket_id`` (0: it is next), None when it is not queued."""
        return next((i for i, t in enumerate(self._picks()) if t.id == ticket_id), None)

    def pop(self) -> Ticket[T] | None:
        """Hand the next ticket (None when none is queued): it leaves the queue and counts as its student's."""
        ticket = next(self._picks(), None)
        if ticket is not None:
            self._queues[ticket.student].remove(ticket)
            self._served[ticket.student] += 1
        return ticket

    def remove(self, ticket_id: int) -> Ticket[T] | None:
        """Take a queued ticket out (stopped before it started); None when it is not queued."""
        for held in self._queues.values():
            for ticket in held:
                if ticket.id == ticket_id:
                    held.remove(ticket)
                    return ticket
        return None

    def drop_student(self, student: str) -> list[Ticket[T]]:
        """Every queued ticket of ``student``, taken out; the student is forgotten (a name taken again starts
        from no runs)."""
        self._served.pop(student, None)
        return self._queues.pop(student, [])

    def clear(self) -> list[Ticket[T]]:
        """Every queued ticket, taken out (the lab closed)."""
        dropped = [t for q in self._queues.values() for t in q]
        self._queues.clear()
        return dropped
