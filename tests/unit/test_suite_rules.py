"""The suite's own rules, checked over every file of tests/ with ast (nothing is imported):

- every test asserts what it is for: an ``assert``, ``pytest.raises``/``warns``/``fail``, a call whose name starts
  with ``assert`` (``assert_outcomes``, ``np.testing.assert_allclose``) or Playwright's ``expect``, or a call into a
  helper under tests/ that does one of these (``wait_for`` of tests/polling.py fails the test on its timeout);
- no test waits on a clock: ``time.sleep``, ``asyncio.sleep`` with a delay and Playwright's ``wait_for_timeout`` are
  refused in a test function and a fixture (anything defined inside them included). Outside them a sleep is a
  stand-in's pace (a fake worker's epoch, a slow store) and says so with a ``# stand-in`` comment on its line.
  ``asyncio.sleep(0)`` yields to the event loop and waits on no clock. Code in strings (a child's ``-c`` script, a
  generated test file) is the child's, not the test's.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
PYTEST_CHECKS = {"raises", "warns", "deprecated_call", "fail"}
STAND_IN = "stand-in"  # the word a sleep's comment carries outside a test

Functions = dict[str, list[ast.AST]]  # every function defined under tests/, by name


def _sources(folder: Path = TESTS) -> Iterator[tuple[str, str]]:
    for path in sorted(folder.rglob("*.py")):
        yield str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")


@functools.cache
def _parsed(text: str) -> ast.Module:  # each file parsed once for both rules (about 1.3 MB of tests)
    return ast.parse(text)


def _called(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _of_pytest(call: ast.Call) -> bool:
    return isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name) and call.func.value.id == "pytest"


def asserts_itself(function: ast.AST) -> bool:
    """Whether ``function`` (anything defined inside it included) asserts without a helper."""
    for node in ast.walk(function):
        if isinstance(node, ast.Assert):
            return True
        if isinstance(node, ast.Raise) and node.exc is not None:
            raised = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(raised, ast.Name) and raised.id == "AssertionError":
                return True
        if isinstance(node, ast.Call):
            name = _called(node)
            if name and (name.startswith("assert") or name == "expect" or (_of_pytest(node) and name in PYTEST_CHECKS)):
                return True
    return False


def _calls(function: ast.AST) -> set[str]:
    return {name for node in ast.walk(function) if isinstance(node, ast.Call) and (name := _called(node))}


def asserting_helpers(functions: Functions) -> set[str]:
    """The names of the functions under tests/ that assert, themselves or through another such helper."""
    found = {name for name, defs in functions.items() if any(asserts_itself(d) for d in defs)}
    calls = {name: set().union(*map(_calls, defs)) for name, defs in functions.items() if name not in found}
    while more := {name for name, called in calls.items() if name not in found and called & found}:
        found |= more
    return found


def _is_test_file(where: str) -> bool:
    return Path(where).name.startswith("test_") and where.endswith(".py")


def collected_tests(tree: ast.Module) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The test functions pytest collects from a module: ``test*`` at the top and in ``Test*`` classes."""
    for node in tree.body:
        candidates = node.body if isinstance(node, ast.ClassDef) and node.name.startswith("Test") else [node]
        for item in candidates:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name.startswith("test"):
                yield item


def without_assertion(sources: Iterable[tuple[str, str]]) -> list[str]:
    """``file:line name`` of each test that asserts nothing, itself or through a helper under tests/."""
    trees = [(where, _parsed(text)) for where, text in sources]
    functions: Functions = {}
    for _, tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions.setdefault(node.name, []).append(node)
    helpers = asserting_helpers(functions)
    return [f"{where}:{test.lineno} {test.name}" for where, tree in trees if _is_test_file(where)
            for test in collected_tests(tree) if not asserts_itself(test) and not _calls(test) & helpers]


def _is_fixture(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    for decorator in function.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if (isinstance(target, ast.Name) and target.id == "fixture") or (
                isinstance(target, ast.Attribute) and target.attr == "fixture"):
            return True
    return False


def _sleep_kind(call: ast.Call) -> str | None:
    """``time.sleep``, ``asyncio.sleep`` with a delay, ``sleep`` (imported bare) or ``wait_for_timeout``; None when the
    call is none of these (``asyncio.sleep(0)``: a yield to the event loop)."""
    name = _called(call)
    owner = call.func.value.id if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name) else None
    if name == "wait_for_timeout":
        return "wait_for_timeout"
    if name != "sleep" or owner not in (None, "time", "asyncio"):
        return None
    if owner == "asyncio" and call.args and isinstance(call.args[0], ast.Constant) and call.args[0].value == 0:
        return None
    return f"{owner}.sleep" if owner else "sleep"


def clock_waits(sources: Iterable[tuple[str, str]]) -> list[str]:
    """``file:line what``: each sleep in a test or a fixture, and each sleep elsewhere that does not say it is a
    stand-in's pace."""
    found = []
    for where, text in sources:
        lines = text.splitlines()

        def visit(node: ast.AST, inside: str | None) -> None:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and inside is None:
                if node.name.startswith("test") and _is_test_file(where):
                    inside = f"test {node.name}"
                elif _is_fixture(node):
                    inside = f"fixture {node.name}"
            if isinstance(node, ast.Call) and (kind := _sleep_kind(node)):
                comment = lines[node.lineno - 1].partition("#")[2]
                if inside is not None:
                    found.append(f"{where}:{node.lineno} {kind} in {inside}: wait on the condition (tests/polling.py)")
                elif STAND_IN not in comment:
                    found.append(f"{where}:{node.lineno} {kind} outside a test without '# {STAND_IN}: ...'")
            for child in ast.iter_child_nodes(node):
                visit(child, inside)

        visit(_parsed(text), None)
    return found


# -- the suite -----------------------------------------------------------------------------------------------------
def test_every_test_asserts_what_it_is_for() -> None:
    found = without_assertion(_sources())
    assert not found, "tests that assert nothing (assert, pytest.raises, expect, or a helper that asserts):\n" + \
        "\n".join(found)


def test_no_test_waits_on_a_clock() -> None:
    found = clock_waits(_sources())
    assert not found, "fixed waits in tests:\n" + "\n".join(found)


# -- the checkers themselves ---------------------------------------------------------------------------------------
HELPERS = '''
def check_row(row):
    assert row

def check_rows(rows):
    for row in rows:
        check_row(row)
'''


def test_the_assertion_check_names_a_test_that_asserts_nothing_and_follows_helpers() -> None:
    source = '''
import pytest
from tests.unit.helpers import check_rows

def test_only_calls():
    compute()

def test_asserts():
    assert compute() == 1

def test_raises():
    with pytest.raises(ValueError):
        compute()

def test_through_a_helper_of_a_helper():
    check_rows([1])

def test_playwright(page):
    expect(page.get_by_text("x")).to_be_visible()

def test_numpy():
    np.testing.assert_allclose(compute(), 1.0)

class TestGroup:
    def test_method_without(self):
        compute()
'''
    found = without_assertion([("tests/unit/helpers.py", HELPERS), ("tests/unit/test_x.py", source)])
    assert found == ["tests/unit/test_x.py:5 test_only_calls", "tests/unit/test_x.py:25 test_method_without"]


def test_the_clock_check_refuses_a_sleep_in_a_test_or_fixture_and_an_unmarked_one_elsewhere() -> None:
    source = '''
import asyncio, time
import pytest
from time import sleep

def slow_worker(queue):
    time.sleep(0.1)  # stand-in: one epoch's work

def unmarked_helper():
    time.sleep(0.1)

@pytest.fixture
def server():
    time.sleep(1)

def test_sleeps():
    time.sleep(0.5)

def test_sleeps_in_a_nested_stand_in():
    def fake():
        sleep(1)  # stand-in: not in a test

async def test_yields():
    await asyncio.sleep(0)
    await asyncio.sleep(0.1)

def test_pauses_a_page(page):
    page.wait_for_timeout(500)

def test_runs_a_child():
    run("import time; time.sleep(60)")
'''
    assert clock_waits([("tests/unit/test_x.py", source)]) == [
        "tests/unit/test_x.py:10 time.sleep outside a test without '# stand-in: ...'",
        "tests/unit/test_x.py:14 time.sleep in fixture server: wait on the condition (tests/polling.py)",
        "tests/unit/test_x.py:17 time.sleep in test test_sleeps: wait on the condition (tests/polling.py)",
        "tests/unit/test_x.py:21 sleep in test test_sleeps_in_a_nested_stand_in: wait on the condition (tests/polling.py)",
        "tests/unit/test_x.py:25 asyncio.sleep in test test_yields: wait on the condition (tests/polling.py)",
        "tests/unit/test_x.py:28 wait_for_timeout in test test_pauses_a_page: wait on the condition (tests/polling.py)",
    ]
