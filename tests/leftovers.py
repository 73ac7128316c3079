"""The check that no process of the suite outlives it: a test that leaves a child process alive fails, by name.

Every pytest process (the controller, or each pytest-xdist worker) marks its environment with its own id
(``MARK_ENV``), which every process it starts inherits, however deep. At the end of each test module (its module
fixtures torn down) the processes still alive that this one started, under it or orphaned since, are noted, each with
the test during which it was created (by its start time: no look at the process table between tests). One no
longer under this process (orphaned: its parent died, as a worker stand-in of a killed CLI once was) is a leak; at
the end of the session (every fixture torn down) so is any process still under this one. Each leak is reported as an error in the teardown of the test that was running
when it appeared, naming it and the process, and the process is killed so that it cannot disturb what runs next.

Processes that live as long as the interpreter by design (multiprocessing's resource tracker and fork server) are not
leaks.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import psutil
import pytest

from benchmarks.common import wait_for

MARK_ENV = "BENCH_TEST_PROCESS"
GRACE_S = 5.0  # a process told to stop is given this long to end before it counts as left alive
IMMORTAL = ("multiprocessing.resource_tracker", "multiprocessing.forkserver")


@dataclass(frozen=True)
class Seen:
    pid: int
    created: float
    test: str  # the test running when it was first seen
    command: str

    def alive(self) -> psutil.Process | None:
        try:
            proc = psutil.Process(self.pid)
            if proc.create_time() != self.created or proc.status() == psutil.STATUS_ZOMBIE:
                return None
            return proc
        except psutil.Error:
            return None

    def described(self) -> str:
        return f"process {self.pid} ({self.command[:160]})"


def _command(proc: psutil.Process) -> str:
    try:
        return " ".join(proc.cmdline()) or proc.name()
    except psutil.Error:
        return "?"


def _ours(proc: psutil.Process, mark: str) -> bool:
    try:
        return proc.environ().get(MARK_ENV) == mark
    except psutil.Error:
        return False


@dataclass
class Leftovers:
    """The processes this pytest process started, by the test during which each appeared."""

    me: psutil.Process = field(default_factory=psutil.Process)
    mark: str = field(default_factory=lambda: f"{os.getpid()}-{time.time():.0f}")
    seen: dict[tuple[int, float], Seen] = field(default_factory=dict)
    started: float = field(default_factory=time.time)  # when the current test began

    def install(self) -> None:
        os.environ[MARK_ENV] = self.mark

    def note(self, tests: list[tuple[str, float, float]]) -> None:
        """Note the processes under this one now, each with the test during whose window it was created."""
        for proc in self._descendants():
            try:
                created = proc.create_time()
            except psutil.Error:
                continue
            self._add(proc, _during(tests, created))

    def orphans(self, tests: list[tuple[str, float, float]]) -> None:
        """Note the processes this one started that are no longer under it (their parent died), each with the test
        during whose window it was created (it looks at every process of this process group)."""
        try:
            group = os.getpgid(0)
        except OSError:
            return
        for proc in psutil.process_iter(["pid", "create_time"]):
            try:
                if proc.pid == self.me.pid or os.getpgid(proc.pid) != group:
                    continue
            except OSError:
                continue
            key = (proc.pid, proc.info["create_time"])
            if key in self.seen or not _ours(proc, self.mark):
                continue
            self._add(proc, _during(tests, proc.info["create_time"]))

    def left_alive(self, *, under_me_too: bool, grace_s: float = GRACE_S) -> list[Seen]:
        """The noted processes still alive after ``grace_s``: orphans only, or every one with ``under_me_too``."""
        under = {p.pid for p in self._descendants()}

        def alive() -> list[Seen]:
            return [s for s in self.seen.values() if s.alive() is not None and (under_me_too or s.pid not in under)]

        try:
            wait_for(lambda: not alive(), grace_s, "the noted processes to end", poll_s=0.2)
        except TimeoutError:
            pass
        return alive()

    def end(self, leaks: Iterable[Seen]) -> None:
        """Kill the leaked processes (each alone, by its pid) and forget them."""
        for leak in leaks:
            proc = leak.alive()
            if proc is not None:
                try:
                    proc.kill()
                except psutil.Error:
                    pass
            self.seen.pop((leak.pid, leak.created), None)

    def _descendants(self) -> Iterator[psutil.Process]:
        try:
            children = self.me.children(recursive=True)
        except psutil.Error:
            return
        for proc in children:
            yield proc

    def _add(self, proc: psutil.Process, test: str) -> None:
        try:
            key = (proc.pid, proc.create_time())
        except psutil.Error:
            return
        if key in self.seen:
            return
        command = _command(proc)
        if any(name in command for name in IMMORTAL):
            return
        self.seen[key] = Seen(pid=proc.pid, created=key[1], test=test, command=command)


def _boot_skew_s() -> float:
    """How far psutil's process start times lie behind the wall clock: Linux gives the boot time in whole seconds,
    so a process's create_time() is early by the boot time's lost fraction (up to a second)."""
    try:
        with open("/proc/uptime", encoding="ascii") as f:
            uptime_s = float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0.0
    return (time.time() - uptime_s) - psutil.boot_time()


BOOT_SKEW_S = _boot_skew_s()


def _during(tests: list[tuple[str, float, float]], created: float) -> str:
    """The test (node id, start, end) during which a process created at ``created`` (psutil's clock) appeared; the
    last one that began before it when none holds it (created in a teardown between two tests)."""
    at = created + BOOT_SKEW_S
    found = next((name for name, start, end in tests if start - 0.02 <= at <= end + 0.02), None)
    if found is not None:
        return found
    before = [name for name, start, _ in tests if start <= at]
    return before[-1] if before else (tests[0][0] if tests else "?")


def report(leaks: list[Seen], when: str) -> str:
    by_test: dict[str, list[Seen]] = {}
    for leak in leaks:
        by_test.setdefault(leak.test, []).append(leak)
    return "\n".join(f"{test} left {', '.join(s.described() for s in found)} alive {when} (killed now): end every "
                     f"process a test starts, and make a stand-in worker exit with its parent "
                     f"(bench.hardware.lifetime.exit_with_parent)" for test, found in by_test.items())


class Plugin:
    """pytest's side: note after each test, judge at each module's end and at the session's."""

    def __init__(self) -> None:
        self.leftovers = Leftovers()
        self.leftovers.install()
        self.tests: list[tuple[str, float, float]] = []  # this module's tests so far: (node id, start, end)
        self.started = 0.0  # when the test under way began
        self.module_ended = False

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
        self.started = time.time()
        try:
            return (yield)
        finally:
            if self.module_ended:
                self.tests, self.module_ended = [], False
            else:
                self.tests.append((item.nodeid, self.started, time.time()))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
        result = yield
        if nextitem is not None and nextitem.path == item.path:
            return result
        self.module_ended = True
        tests = [*self.tests, (item.nodeid, self.started, time.time())]
        leftovers = self.leftovers
        leftovers.note(tests)
        leftovers.orphans(tests)
        leaks = leftovers.left_alive(under_me_too=nextitem is None)
        if not leaks:
            return result
        leftovers.end(leaks)
        when = "after the session" if nextitem is None else f"after its module ({item.path.name})"
        raise AssertionError(report(leaks, when))


def register(config: pytest.Config) -> None:
    """Install the check in this pytest process (the controller without xdist, each worker with it)."""
    if not config.pluginmanager.has_plugin("bench-leftovers"):
        config.pluginmanager.register(Plugin(), "bench-leftovers")
