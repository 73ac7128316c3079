"""Nothing kept that nothing uses: every top-level function and class of the project's code is named somewhere else
(called, imported, registered by name or tested). A module-level name that only its own definition mentions is dead
code, which reads as a second way of doing something (a header renderer the pages stopped calling, a helper whose
callers moved)."""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CODE = ("bench", "ui", "pages", "benchmarks", "scripts")


def _sources() -> dict[Path, str]:
    found = {p: p.read_text() for d in CODE for p in (ROOT / d).rglob("*.py")}
    found[ROOT / "app.py"] = (ROOT / "app.py").read_text()
    return found


def test_every_top_level_function_and_class_is_named_somewhere_else() -> None:
    sources = _sources()
    everything = "\n".join([*sources.values(), *(p.read_text() for p in (ROOT / "tests").rglob("*.py")),
                            *(p.read_text() for p in (ROOT / "ui" / "static").glob("*.js"))])
    names = Counter(re.findall(r"\w+", everything))
    dead = []
    for path, text in sources.items():
        for node in ast.parse(text).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not node.name.startswith("__"):
                if names[node.name] <= 1:
                    dead.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}")
    assert not dead, f"defined and never named elsewhere (remove, or use): {dead}"
