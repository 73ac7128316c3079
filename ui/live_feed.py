"""One publisher of the current run for every viewer: what the live panel shows, computed once per change.

A class of a hundred watching one run must not make the server do a hundred times the work. The publisher reads the
current run's snapshot (at most every TICK_S), and when what a viewer would see changed it makes one event: the
header's words, the sidebar's line, each chart's new points and marks, the number watching. Each event is encoded to
bytes once and kept in a short ring; every subscriber of the stream (ui/live_routes.py) is handed the same bytes. A
viewer that joins gets one snapshot (each chart's figure whole, as drawn now, encoded once per change whoever asks),
then the increments after it. No Streamlit script runs for any of this: a page reruns only when the run's state
(``PageState``: which run, its status) changes, and the page draws from the same published state as the stream.

Charts come in two variants, as the pages draw them: ``plain`` and ``present`` (the projector view's styling); a
variant is computed only while someone watches it. Every chart is grown from the readings its run (or group) added
since it was last sent (``grow``: ui.live_chart for the Train page's charts and a group's), and built whole only for a
new run or a changed set of traces.

Two sides, one lock. The publishing side (the publisher's thread, a page's script thread, a joiner's snapshot made
in a worker thread) reads the run, which waits on the run's own lock while a training thread holds it, and builds
the events under ``Publisher._lock``. The stream's side runs on the server's event loop and never takes that lock,
nor waits on any lock held while work is done: it reads the sequence number and the rings of encoded events, which
the publishing side replaces whole (the rings first, then the number), and counts its subscribers in a list
(appending and popping are single steps).
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Optional, Protocol, Union

from pydantic import TypeAdapter

from bench.runs.changes import Listeners
from ui import live_chart, live_messages

log = logging.getLogger(__name__)

TICK_S = 1.0  # how often the publisher looks at the run unwoken (a run read from the store, the number watching)
COALESCE_S = 0.1  # a wake-up (ui.live: the run's epoch end, sample, phase, status) is published at most this often;
# the changes it finds in that time go as one event (docs/CLASSROOM.md)
CHART_S = TICK_S  # the longest a live run's charts wait for their new points: each look sends what changed
RING = 64  # increments kept; a subscriber further behind gets a snapshot instead
VARIANTS = ("plain", "present")
IDLE_STOP_S = 10.0  # the publisher's thread ends this long after its last subscriber left


class Snapshot(Protocol):
    """What the publisher reads of a run (bench.runs.run_state.RunSnapshot)."""

    @property
    def id(self) -> int: ...

    @property
    def created_at(self) -> float: ...

    @property
    def status(self) -> Any: ...

    @property
    def active(self) -> bool: ...


@dataclass(frozen=True)
class PageState:
    """What a page's Streamlit elements depend on: which run is current and its status. A page is redrawn (its
    fragment rerun) when this changes, never on a timer."""

    run: int | None = None
    created_at: float | None = None
    status: str | None = None
    active: bool = False
    stage: str = ""  # a group's runs ended so far ("1/2"): its headline, drawn by the page, changes with each

    @property
    def key(self) -> str:
        """The state as a page's elements depend on it: a live run's phases (starting, running) are one state (its
        header is the stream's); a run that is not live is drawn by its status."""
        if self.run is None:
            return "none"
        stage = f"+{self.stage}" if self.stage else ""
        return f"{self.run}@{self.created_at}:{'live' if self.active else self.status}{stage}"

    def message(self) -> live_messages.LiveState:
        """This state as the stream says it."""
        return live_messages.LiveState(key=self.key, run=self.run, status=self.status, active=self.active)

    @classmethod
    def of(cls, snap: Snapshot | None) -> PageState:
        if snap is None:
            return cls()
        return cls(run=snap.id, created_at=snap.created_at, status=str(snap.status), active=bool(snap.active),
                   stage=str(getattr(snap, "stage", "") or ""))


@dataclass
class _Variant:
    charts: dict[str, live_chart.Prepared] = field(default_factory=dict)  # each chart as last sent whole
    figures: dict[str, dict[str, Any]] = field(default_factory=dict)  # each as viewers hold it now (for joiners)
    sent: dict[str, Any] = field(default_factory=dict)  # what viewers hold of each chart (``grow``'s state)
    keys: dict[str, Hashable] = field(default_factory=dict)  # what each was built from
    wanted_at: float | None = None  # when a subscriber or a page last asked for this variant
    snapshot: tuple[int, bytes] | None = None  # (seq, encoded snapshot) for joiners


Header = Union[live_messages.RunHeader, live_messages.GroupHeader]
# a header or a sidebar line as the page's callables give it (their words as dicts, or typed already): typed once,
# where it enters the publisher
_HEADER: TypeAdapter[Header | None] = TypeAdapter(Optional[Header])
_LINE: TypeAdapter[live_messages.SidebarLine | None] = TypeAdapter(Optional[live_messages.SidebarLine])


def _scope_sig(scope: Any) -> str:
    """A run's part of a figure's signature (a new run's figures go whole)."""
    return live_chart._hash(scope)


def _whole(prep: live_chart.Prepared) -> live_messages.ChartFull:
    return live_messages.ChartFull(op="full", sig=prep.signature, figure={"data": prep.data, "layout": prep.layout})


class Publisher:
    """The current run as a stream of events, computed once per change for every viewer.

    Args:
        current: the run to show (the JobManager's ``current``).
        header: the header's words for a run (ui.live.header_data: in every state), None for none to show.
        line: the sidebar's line for a run or for none (None: nothing to say).
        charts: a run's charts by name, each with the key of what it draws (a chart whose key did not change is not
            built again: the epoch chart changes once an epoch, the utilization chart with every sample).
        figures: the named charts of a run, built whole for a variant ("plain" or "present").
        grow: ``(start, grow)``: what viewers hold of a chart once it was sent whole (``start(name, snap, layout)``),
            and its increment built from the readings the run added since (``grow(name, snap, sent)``: the change
            and what viewers hold after it, or None when it must go whole), never from its whole figure
            (ui.live_chart.start and grow over a run's or a group's series).
        clock: time source (tests).
    """

    def __init__(self, current: Callable[[], Snapshot | None], *, header: Callable[[Any], dict[str, Any] | None],
                 line: Callable[[Any], dict[str, Any] | None], charts: Callable[[Any], Mapping[str, Hashable]],
                 figures: Callable[[Any, str, set[str]], Mapping[str, Any]],
                 grow: tuple[Callable[..., Any], Callable[..., Any]],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._current = current
        self._header = header
        self._line = line
        self._charts = charts
        self._figures = figures
        self._grow = grow
        self._clock = clock
        self._lock = threading.RLock()  # the publishing side's alone: never taken on the event loop
        self.seq = 0  # raised after the rings hold its event
        self.state = PageState()
        self._header_now: Header | None = None
        self._line_now: live_messages.SidebarLine | None = None
        self._variants: dict[str, _Variant] = {name: _Variant() for name in VARIANTS}
        # per variant, the last RING events, oldest first: a tuple replaced whole at each publish, read without a lock
        self._rings: dict[str, tuple[tuple[int, bytes], ...]] = {name: () for name in VARIANTS}
        self._looked_at = -1e9
        self._poked = threading.Event()
        self._subscribers: list[None] = []  # one item per open stream
        self._viewers_sent = 0
        self._listeners = Listeners(log)
        self._thread: threading.Thread | None = None
        # held by the running loop; a subscriber tries it (never waits) to learn whether a loop must be started
        self._running = threading.Lock()
        self._stop = threading.Event()
        self.builds = 0  # how many looks changed a chart, grown or built whole (a test's view of the sharing)
        self.whole_builds = 0  # how many of them built a chart whole

    # -- reading ------------------------------------------------------------------------------------------------
    def refresh(self, *, force: bool = False) -> PageState:
        """Look at the run if TICK_S has passed (or ``force``), publish what changed; the state after."""
        with self._lock:
            now = self._clock()
            if force or now - self._looked_at >= TICK_S:
                self._looked_at = now
                self._publish(self._current(), now)
            return self.state

    def want(self, variant: str) -> None:
        """A page shows this variant's charts: keep it computed (one attribute set: no lock, any thread)."""
        self._variants[variant].wanted_at = self._clock()

    def snapshot(self, variant: str) -> tuple[int, bytes]:
        """The whole current picture for a joining viewer: (its sequence number, the encoded event), shared by every
        joiner until the next change."""
        with self._lock:
            held = self._variants[variant]
            now = self._clock()
            if variant not in self._live_variants(now):  # not kept up to date while nobody watched it
                self._build_charts(variant, self._current(), fresh=True)
            held.wanted_at = now
            if held.snapshot is None or held.snapshot[0] != self.seq:
                held.snapshot = (self.seq, live_messages.encode(self._snapshot_message(variant)))
            return held.snapshot

    def since(self, seq: int, variant: str) -> list[tuple[int, bytes]] | None:
        """The encoded increments after ``seq`` with their numbers, oldest first; None when some of them are no
        longer kept (the subscriber then takes a snapshot). No lock: the ring is read as it was last replaced, and
        it holds every event up to the number a subscriber has seen."""
        ring = self._rings[variant]
        if not ring or seq >= ring[-1][0]:
            return []
        if ring[0][0] > seq + 1:
            return None
        return [(n, data) for n, data in ring if n > seq]

    @property
    def header(self) -> Header | None:
        """The header's words as last published (None while there is none to show)."""
        return self._header_now

    # -- subscribers --------------------------------------------------------------------------------------------
    def subscribed(self, delta: int) -> int:
        """A stream opened (+1) or closed (-1); the number watching after. A subscriber starts the publisher's loop
        when none runs. Called on the event loop: no lock is waited for (the loop's token is only tried)."""
        for _ in range(abs(delta)):
            if delta > 0:
                self._subscribers.append(None)
            elif self._subscribers:
                try:
                    self._subscribers.pop()
                except IndexError:  # another stream closed at the same moment
                    break
        if self._subscribers:
            self._start_loop()
        return len(self._subscribers)

    def _start_loop(self) -> None:
        if self._running.acquire(blocking=False):  # no loop holds the token: this one starts one, which releases it
            self._stop.clear()
            self._thread = threading.Thread(target=self._loop, name="bench-live-feed", daemon=True)
            self._thread.start()

    @property
    def viewers(self) -> int:
        return len(self._subscribers)

    def on_publish(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` (from the publishing thread) after every new event. No lock: one append."""
        self._listeners.add(listener)

    def close(self) -> None:
        self._stop.set()

    def poke(self) -> None:
        """The run changed (an epoch ended, a sample came, a phase or status changed): publish it soon, at most every
        COALESCE_S. Cheap and safe from any thread (the supervisor's)."""
        self._poked.set()

    def _loop(self) -> None:
        """The publisher's thread: holds the running token from its start (taken by the subscriber that started it)
        until it ends."""
        holding = True
        try:
            holding = self._run()
        finally:
            if holding:
                self._running.release()

    def _run(self) -> bool:
        """Publish until stopped (True: the token still held) or idle long enough (False: the token given back)."""
        idle_since: float | None = None
        published_at = -1e9
        while not self._stop.is_set():
            poked = self._poked.wait(TICK_S)
            if self._stop.is_set():
                return True
            wait = COALESCE_S - (time.monotonic() - published_at)
            if poked and wait > 0 and self._stop.wait(wait):  # the changes of that time go as one event
                return True
            # cleared before the look: a change after it pokes again, and the look sees every change before it
            self._poked.clear()
            try:
                seq = self.seq
                self.refresh(force=poked)
                if self.seq != seq:
                    published_at = time.monotonic()
            except Exception:  # a failed look must not end the stream for everyone; the next tick tries again
                log.exception("live feed: reading the current run failed")
            if self._subscribers:
                idle_since = None
            elif idle_since is None:
                idle_since = self._clock()
            elif self._clock() - idle_since > IDLE_STOP_S:
                # ends; a subscriber that came meanwhile finds the token free and starts a loop of its own, or is
                # seen here after the token's release, and this loop takes the token back and goes on
                self._running.release()
                if not self._subscribers or not self._running.acquire(blocking=False):
                    return False
                idle_since = None
        return True

    # -- publishing ---------------------------------------------------------------------------------------------
    def _publish(self, snap: Snapshot | None, now: float) -> None:
        state = PageState.of(snap)
        changed_state = state.key != self.state.key
        # the header callable says for which states
        header = _HEADER.validate_python(self._header(snap)) if snap is not None else None
        line = _LINE.validate_python(self._line(snap))
        message: dict[str, Any] = {}  # the tick's fields that changed: only those are set, so only they are sent
        if changed_state:
            message["state"] = state.message()
        if header != self._header_now or changed_state:
            message["header"] = header
        if line != self._line_now or changed_state:
            message["line"] = line
        viewers = len(self._subscribers)
        if viewers != self._viewers_sent:
            message["viewers"] = viewers
        chart_changes: dict[str, dict[str, live_messages.ChartChange | None]] = {}
        for variant in self._live_variants(now):
            # a new run's figures differ in their signature (its id is in it): they go whole without forcing
            chart_changes[variant] = self._build_charts(variant, snap, fresh=False)
        if not message and not any(chart_changes.values()):
            return
        seq = self.seq + 1
        self.state, self._header_now, self._line_now, self._viewers_sent = state, header, line, viewers
        for variant in VARIANTS:  # kind and op given: a tick is written with the fields set (live_messages.encode)
            tick = live_messages.Tick(kind="tick", seq=seq, at=round(time.time(), 3), **message,
                                      charts=chart_changes[variant] if variant in chart_changes else {})
            self._rings[variant] = (*self._rings[variant], (seq, live_messages.encode(tick)))[-RING:]
        self.seq = seq  # after the rings: a stream that sees the number finds its event
        self._listeners.tell()

    def _live_variants(self, now: float) -> list[str]:
        return [name for name, v in self._variants.items()
                if name == "plain" or (v.wanted_at is not None and now - v.wanted_at <= IDLE_STOP_S)]

    def _build_charts(self, variant: str, snap: Snapshot | None, *,
                      fresh: bool) -> dict[str, live_messages.ChartChange | None]:
        """Each chart of ``variant`` whose readings changed in ``snap``: the changes to publish by chart name (the new
        points and marks grown from the new readings, or the whole figure where its traces changed or ``fresh``);
        the figures as viewers now hold them are kept for joiners."""
        held = self._variants[variant]
        if snap is None:
            dropped: dict[str, live_messages.ChartChange | None] = {name: None for name in held.charts}
            held.charts, held.figures, held.sent, held.keys = {}, {}, {}, {}
            return dropped
        keys = dict(self._charts(snap))
        due = {name for name, key in keys.items() if fresh or held.keys.get(name) != key or name not in held.charts}
        out: dict[str, live_messages.ChartChange | None] = {name: None for name in held.charts if name not in keys}
        for name in [n for n in held.charts if n not in keys]:
            held.charts.pop(name)
            held.figures.pop(name, None)
            held.sent.pop(name, None)
        scope = (snap.id, snap.created_at)
        whole = set(due)
        if due:
            self.builds += 1
        start, grow = self._grow
        for name in sorted(due) if not fresh else ():
            before = held.charts.get(name)
            sent = held.sent.get(name)
            if before is None or sent is None or before.signature.split("|")[0] != _scope_sig(scope):
                continue  # a chart not sent yet, or another run's: whole
            step = grow(name, snap, sent)
            if step is None:  # its traces or fixed layout changed: whole
                continue
            change, held.sent[name] = step
            whole.discard(name)
            if change is not None:
                live_chart.apply(held.figures[name], change)
                out[name] = live_messages.ChartExtend(op="extend", **change)
        if whole:
            self.whole_builds += 1
            for name, fig in self._figures(snap, variant, whole).items():
                prep = live_chart.prepare(fig, scope=scope)
                prep = replace(prep, signature=f"{_scope_sig(scope)}|{prep.signature}")
                out[name] = _whole(prep)
                held.sent[name] = start(name, snap, prep.layout)
                held.charts[name] = prep
                held.figures[name] = {"data": prep.data, "layout": prep.layout}
        held.keys = keys
        return out

    def _snapshot_message(self, variant: str) -> live_messages.LiveSnapshot:
        held = self._variants[variant]
        charts = {name: live_messages.ChartFull(op="full", sig=prep.signature, figure=held.figures[name])
                  for name, prep in held.charts.items()}
        return live_messages.LiveSnapshot(seq=self.seq, at=round(time.time(), 3), viewers=len(self._subscribers),
                                      state=self.state.message(), header=self._header_now, line=self._line_now,
                                      charts=charts, config=live_chart.CONFIG)


# -- the process's publishers: one per feed ("train": the current run; a group kind: its latest group) -------------
FEED_NAME = re.compile(r"^[a-z0-9_:-]{1,40}$")  # what a feed's name may be (it comes back in the stream's address)
_PUBLISHERS: dict[str, tuple[object, Publisher]] = {}
_INSTALL_LOCK = threading.Lock()


def install(feed: str, owner: object, make: Callable[[], Publisher]) -> Publisher:
    """The process's publisher of ``feed`` for ``owner``'s runs (the server's JobManager), made by ``make`` the first
    time a page draws it; a new owner (a server's resources made again) gets a new publisher, and the old one stops."""
    with _INSTALL_LOCK:
        held = _PUBLISHERS.get(feed)
        if held is None or held[0] is not owner:
            if held is not None:
                held[1].close()
            held = _PUBLISHERS[feed] = (owner, make())
        return held[1]


def installed(feed: str = "train") -> Publisher | None:
    """The process's publisher of ``feed``, None until a page made it (the stream then asks the browser to retry)."""
    held = _PUBLISHERS.get(feed)
    return held[1] if held is not None else None
