"""No import circles in bench/ and ui/, counting imports inside functions and under TYPE_CHECKING: a function-level
import that closes a circle is a circle all the same, only one that fails later."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("bench", "ui")


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _imports(path: Path, known: set[str]) -> dict[str, int]:
    """The project modules ``path`` imports anywhere in its body, each with the first line that does."""
    edges: dict[str, int] = {}

    def add(name: str, line: int) -> None:
        while name and name not in known:  # bench.hardware.monitor.nvml.read -> bench.hardware.monitor.nvml
            name = name.rpartition(".")[0]
        if name:
            edges.setdefault(name, line)

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                add(full if full in known else node.module, node.lineno)
    return edges


def _graph() -> dict[str, dict[str, int]]:
    modules = _modules()
    known = set(modules)
    return {name: {t: line for t, line in _imports(path, known).items() if t != name}
            for name, path in modules.items()}


def _circles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, {}):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_finder_sees_a_circle_through_a_function_level_import(tmp_path: Path) -> None:
    """The checker itself: two modules that import each other, one of them inside a function, form a circle."""
    (tmp_path / "a.py").write_text("import b\n", encoding="utf-8")
    (tmp_path / "b.py").write_text("def f():\n    from a import x\n", encoding="utf-8")
    known = {"a", "b"}
    graph = {name: _imports(tmp_path / f"{name}.py", known) for name in known}
    assert _circles(graph) == [["a", "b"]]


def test_no_import_circles_in_bench_and_ui() -> None:
    graph = _graph()
    assert len(graph) > 40, f"the walk found only {sorted(graph)}"
    circles = _circles(graph)
    if circles:
        lines = []
        for members in circles:
            lines.append("circle: " + ", ".join(members))
            for module in members:
                for target, line in graph[module].items():
                    if target in members:
                        lines.append(f"  {_modules()[module].relative_to(ROOT)}:{line} imports {target}")
        pytest.fail("\n".join(lines))
