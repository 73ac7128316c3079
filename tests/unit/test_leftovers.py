"""tests/leftovers.py: a process a test leaves alive is found, named with the test during which it appeared, and
ended; one that ends in time is not a leak."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil

from tests import leftovers
from tests.polling import wait_for

# a parent that starts a grandchild in the background and exits at once: the grandchild, which lives until it is
# killed, is orphaned (parent 1)
ORPHANING = ("import subprocess, sys; p = subprocess.Popen([sys.executable, '-c', 'import signal; signal.pause()'], "
             "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); print(p.pid, flush=True)")


def test_an_orphaned_grandchild_is_named_with_the_test_that_started_it_and_killed() -> None:
    check = leftovers.Leftovers()
    check.install()
    started = time.time()
    out = subprocess.run([sys.executable, "-c", ORPHANING], capture_output=True, text=True, timeout=30, check=True)
    orphan = int(out.stdout.split()[0])
    window = [("test_a", started, time.time())]
    check.note(window)  # the parent is gone already: the orphan is not under this process
    check.orphans(window)
    try:
        leaks = [s for s in check.left_alive(under_me_too=False, grace_s=0.5) if s.pid == orphan]
        assert [s.test for s in leaks] == ["test_a"]
        text = leftovers.report(leaks, "after its module")
        assert text.startswith(f"test_a left process {orphan} (") and "signal.pause()" in text
        check.end(leaks)
        wait_for(lambda: not psutil.pid_exists(orphan) or psutil.Process(orphan).status() == psutil.STATUS_ZOMBIE,
                 10, "the leaked process to be killed")
    finally:
        try:
            psutil.Process(orphan).kill()
        except psutil.Error:
            pass


def test_a_child_that_ends_within_the_grace_is_no_leak() -> None:
    check = leftovers.Leftovers()
    started = time.time()
    # a child that ends when its stdin closes: told to stop just before the check, it ends within the grace
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        check.note([("test_a", 0.0, started - 1), ("test_b", started, time.time() + 1)])
        assert [s.test for s in check.seen.values() if s.pid == child.pid] == ["test_b"]
        assert child.stdin is not None
        child.stdin.close()
        assert not [s for s in check.left_alive(under_me_too=True) if s.pid == child.pid]
    finally:
        child.kill()
        child.wait()


def test_a_process_is_named_with_the_test_it_was_created_in_on_the_wall_clock() -> None:
    """psutil's start times lie behind the wall clock by up to a second (a boot time in whole seconds): taken back
    to the wall clock, a process started early in a short test is that test's, not the one before."""
    tests = [("a", 100.0, 100.3), ("b", 100.3, 100.6), ("c", 100.6, 101.0)]
    assert leftovers._during(tests, 100.35 - leftovers.BOOT_SKEW_S) == "b"
    assert leftovers._during(tests, 100.9 - leftovers.BOOT_SKEW_S) == "c"
    assert leftovers._during(tests, 105.0 - leftovers.BOOT_SKEW_S) == "c", "after every window: the last test"
    assert 0.0 <= leftovers.BOOT_SKEW_S < 1.05
