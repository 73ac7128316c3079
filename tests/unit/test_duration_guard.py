"""tests/duration_guard.py: a test not marked slow or e2e that takes longer than the bound fails the run."""

from __future__ import annotations

import textwrap

import pytest

from tests import duration_guard
from tests.duration_guard import BOUND_ENV, DEFAULT_BOUND_S, bound_from, load_factor, too_slow

pytest_plugins = ["pytester"]


def test_only_unmarked_tests_over_the_bound_are_named_slowest_first() -> None:
    durations = {"a.py::fast": 0.4, "a.py::slow_unmarked": 3.0, "a.py::slower_unmarked": 9.0,
                 "a.py::marked": 60.0, "a.py::at_the_bound": 2.0}
    assert too_slow(durations, exempt={"a.py::marked"}, bound_s=2.0) == [
        ("a.py::slower_unmarked", 9.0), ("a.py::slow_unmarked", 3.0)]
    assert too_slow(durations, exempt=set(durations), bound_s=0.1) == []
    assert too_slow({}, exempt=(), bound_s=1.0) == []


def test_a_busy_machine_stretches_the_bound_of_the_tests_it_slowed() -> None:
    assert load_factor(1.5, 2) == 1.0 and load_factor(0.0, None) == 1.0, "a machine of its own: the bound as set"
    assert load_factor(12.0, 2) == 6.0
    durations = {"a.py::during_a_busy_minute": 20.0, "a.py::on_a_quiet_machine": 20.0}
    assert too_slow(durations, exempt=(), bound_s=8.0, factors={"a.py::during_a_busy_minute": 6.0}) == [
        ("a.py::on_a_quiet_machine", 20.0)]


@pytest.mark.parametrize(("value", "bound_s"), [(None, DEFAULT_BOUND_S), ("", DEFAULT_BOUND_S), ("2.5", 2.5),
                                                ("0", None)])
def test_the_bound_comes_from_the_environment(value: str | None, bound_s: float | None) -> None:
    assert bound_from({} if value is None else {BOUND_ENV: value}) == bound_s


@pytest.mark.parametrize("value", ["fast", "-1", "nan"])
def test_a_bad_bound_says_what_to_set(value: str) -> None:
    with pytest.raises(pytest.UsageError, match=BOUND_ENV):
        bound_from({BOUND_ENV: value})


@pytest.fixture
def guarded(pytester: pytest.Pytester) -> pytest.Pytester:
    """A project of its own whose conftest registers the guard as tests/conftest.py does. Its stand-in tests take the
    time their ``takes(seconds, when)`` marker says: the duration their report gives, with no clock run down."""
    pytester.makeconftest(textwrap.dedent("""
        import pytest
        from tests import duration_guard

        def pytest_configure(config):
            config.addinivalue_line("markers", "slow: trains real models")
            config.addinivalue_line("markers", "e2e: real-browser tests")
            config.addinivalue_line("markers", "takes(seconds, when='call'): the phase's reported duration")
            duration_guard.register(config)

        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_makereport(item, call):
            report = (yield).get_result()
            takes = item.get_closest_marker("takes")
            if takes is not None and report.when == takes.kwargs.get("when", "call"):
                report.duration = takes.args[0]
    """))
    return pytester


def test_an_unmarked_slow_test_fails_a_run_that_passed(guarded: pytest.Pytester,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    guarded.makepyfile(test_guarded=textwrap.dedent("""
        import pytest

        def test_quick():
            pass

        @pytest.mark.takes(0.5)
        def test_slow_unmarked():
            pass

        @pytest.mark.slow
        @pytest.mark.takes(0.5)
        def test_slow_marked_slow():
            pass

        @pytest.mark.e2e
        @pytest.mark.takes(0.5)
        def test_slow_marked_e2e():
            pass
    """))
    monkeypatch.setenv(BOUND_ENV, "0.3")
    monkeypatch.setattr(duration_guard.os, "getloadavg", lambda: (0.0, 0.0, 0.0))  # as on a machine of its own
    result = guarded.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    summary = result.stdout.str().split("tests slower than the fast-test bound", 1)[1]
    assert "test_guarded.py::test_slow_unmarked" in summary and "mark it @pytest.mark.slow" in summary
    assert "::test_slow_marked" not in summary and "::test_quick" not in summary


def test_a_slow_fixture_counts_and_turning_the_guard_off_passes(guarded: pytest.Pytester,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    guarded.makepyfile(textwrap.dedent("""
        import pytest

        @pytest.fixture
        def slow_setup():
            pass

        @pytest.mark.takes(0.5, when="setup")
        def test_with_a_slow_setup(slow_setup):
            pass
    """))
    monkeypatch.setenv(BOUND_ENV, "0.3")
    monkeypatch.setattr(duration_guard.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    assert guarded.runpytest_inprocess("-p", "no:cacheprovider").ret == pytest.ExitCode.TESTS_FAILED
    monkeypatch.setenv(BOUND_ENV, "0")
    assert guarded.runpytest_inprocess("-p", "no:cacheprovider").ret == pytest.ExitCode.OK


def test_a_worker_process_leaves_the_guard_to_the_controller(pytestconfig: pytest.Config,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    class Worker:
        workerinput = {"workerid": "gw0"}
        pluginmanager = pytestconfig.pluginmanager

    registered: list[object] = []
    monkeypatch.setattr(pytestconfig.pluginmanager, "register", lambda plugin, name=None: registered.append(plugin))
    duration_guard.register(Worker(), {})  # type: ignore[arg-type]
    assert registered == []
