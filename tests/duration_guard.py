"""The guard that keeps the `slow` marker honest: a test not marked slow or e2e that takes longer than a bound fails
the run, so `make test-fast` (``-m "not slow and not e2e"``) stays fast as tests are added.

A test's time is its setup, call and teardown together, as the controller sees them: under pytest-xdist every worker
sends its reports to the controller (``pytest_runtest_logreport``), which alone registers the guard
(tests/conftest.py), so the bound holds for the whole run whatever process ran the test. ``BENCH_FAST_TEST_BOUND_S``
sets the bound in seconds (0 turns the guard off, e.g. under a debugger); docs/TESTING.md says why its default is what
it is. The bound is for a machine whose cores the run has to itself: where the one-minute load average says the
machine was booked several times over when a test ended, that test's bound stretches by as much, so a noisy shared
machine slows the tests without failing them.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Collection, Mapping

import pytest

BOUND_ENV = "BENCH_FAST_TEST_BOUND_S"
# On the 2-core test machine, its load taken out, the slowest fast test takes about 3 s and the quickest test that
# loads the framework about 6.5 s (docs/TESTING.md): 5 s lies between, and a busy machine stretches it (load_factor).
DEFAULT_BOUND_S = 5.0
EXEMPT_MARKERS = ("slow", "e2e")


def bound_from(environ: Mapping[str, str]) -> float | None:
    """The bound in seconds that ``environ`` sets; None when the guard is off.

    Raises:
        pytest.UsageError: when the variable is not a number of seconds.
    """
    text = environ.get(BOUND_ENV, "").strip()
    if not text:
        return DEFAULT_BOUND_S
    try:
        bound_s = float(text)
    except ValueError:
        raise pytest.UsageError(f"{BOUND_ENV}={text!r} is not a number of seconds; set it to e.g. 5, or 0 to turn "
                                "the guard on unmarked slow tests off") from None
    if bound_s != bound_s or bound_s < 0:
        raise pytest.UsageError(f"{BOUND_ENV}={text!r} must be a number of seconds from 0 (off) up")
    return bound_s or None


def register(config: pytest.Config, environ: Mapping[str, str] = os.environ) -> None:
    """Register the guard where every test's report arrives: the controller under pytest-xdist, else this process."""
    bound_s = bound_from(environ)
    if bound_s is not None and not hasattr(config, "workerinput"):
        config.pluginmanager.register(DurationGuard(bound_s), "duration-guard")


def load_factor(load_1m: float, cores: int | None) -> float:
    """How many times over its cores the machine was booked, at least 1: the factor a test's bound stretches by."""
    return max(1.0, load_1m / max(cores or 1, 1))


def too_slow(durations_s: Mapping[str, float], exempt: Collection[str], bound_s: float,
             factors: Mapping[str, float] | None = None) -> list[tuple[str, float]]:
    """The tests that took longer than their bound and are not exempt (marked slow or e2e), slowest first.

    Args:
        durations_s: each test's node id and its time in seconds.
        exempt: the node ids of the tests that may take long.
        bound_s: the longest time, in seconds, a test that is not exempt may take on a machine of its own.
        factors: each test's :func:`load_factor` (1 when absent): its bound is ``bound_s`` times that.
    """
    factors = factors or {}
    over = [(nodeid, seconds) for nodeid, seconds in durations_s.items()
            if seconds > bound_s * factors.get(nodeid, 1.0) and nodeid not in exempt]
    return sorted(over, key=lambda item: (-item[1], item[0]))


class DurationGuard:
    """Collects each test's time from its reports and fails the session when a test that is not exempt was slow."""

    def __init__(self, bound_s: float) -> None:
        self.bound_s = bound_s
        self.durations_s: defaultdict[str, float] = defaultdict(float)
        self.factors: defaultdict[str, float] = defaultdict(lambda: 1.0)
        self.exempt: set[str] = set()
        self.offenders: list[tuple[str, float]] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.durations_s[report.nodeid] += report.duration
        factor = load_factor(os.getloadavg()[0], os.cpu_count())
        self.factors[report.nodeid] = max(self.factors[report.nodeid], factor)
        if any(marker in report.keywords for marker in EXEMPT_MARKERS):
            self.exempt.add(report.nodeid)

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self.offenders = too_slow(self.durations_s, self.exempt, self.bound_s, self.factors)
        if self.offenders and exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.offenders:
            return
        terminalreporter.section("tests slower than the fast-test bound", sep="=", red=True, bold=True)
        for nodeid, seconds in self.offenders:
            terminalreporter.line(f"{seconds:6.1f} s  {nodeid}  (bound {self.bound_s * self.factors[nodeid]:.1f} s)")
        terminalreporter.line(
            f"Each took longer than {self.bound_s:g} s ({BOUND_ENV}; more where the machine was busy) without the "
            "`slow` marker: mark it "
            "@pytest.mark.slow if it trains a real model, starts a real worker or loads the ML framework, else make it "
            "faster, so that "
            "`make test-fast` stays fast.")
