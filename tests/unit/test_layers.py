"""The layers of docs/ARCHITECTURE.md, checked: every import of every module under bench/, ui/ and pages/ (and app.py)
points down the list below or stays in its own layer, and no page reaches the hardware layer itself.

Imports inside functions count as much as those at the top: a lazy import that reaches up a layer is a circle
waiting (STYLE.md, habit 17), whatever start-up time it saves. So do imports under ``if TYPE_CHECKING:``: a type
from above is a dependency on above. The test parses the sources (ast) and imports none of them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[2]

# Lowest first. A module belongs to the layer of the longest prefix that names it; it may import its own layer and
# the layers below.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("vocabulary", ("bench", "bench.errors", "bench.limits", "bench.settings", "bench.record_base", "bench.readings",
                    "bench.target", "bench.safe_text")),
    ("plans", ("bench.training.models", "bench.training.datasets")),  # what a model and a data set are, no framework
    ("config", ("bench.config",)),
    # the records: pydantic models that hold what they are given and compute nothing (no analysis below them)
    ("record types", ("bench.record_types", "bench.run_info", "bench.records")),
    ("hardware and frameworks", ("bench.hardware", "bench.training")),
    ("analysis", ("bench.analysis",)),
    # the documents the analysis reads and the store keeps
    ("documents", ("bench.analysis.machines", "bench.store")),
    ("runs", ("bench.runs",)),
    # a script's own training recorded as a run: its process plays the worker, a Supervisor folds its events
    ("integrations", ("bench.integrations",)),
    ("cluster", ("bench.cluster",)),  # runs placed on a Ray cluster: above the runs it hands to the supervisor
    ("output", ("bench.output", "bench.schemas")),
    ("cli", ("bench.cli", "bench.cli_args", "bench.cli_cluster", "bench.cli_machines", "bench.cli_store",
             "bench.__main__")),
    ("ui", ("ui",)),
    ("pages", ("pages", "app")),
)
# what a layer may never import, whatever its place: the engine is headless; a page reaches the machine through
# ui (ui.machine, ui.common), never bench.hardware itself
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "bench": ("streamlit",),
    # the probe and the worker share one public framework set-up (bench.training.framework): the hardware layer,
    # probe included, never reaches into the run queue or the worker
    "bench.hardware": ("bench.runs",),
    "pages": ("bench.hardware", "bench.runs"),
}
PROJECT = ("bench", "ui", "pages", "app")


class Import(NamedTuple):
    module: str  # the importing module, e.g. "bench.config"
    imported: str  # the module imported, e.g. "bench.hardware.devices"
    line: int


def layer_of(module: str) -> int | None:
    """The index in LAYERS of ``module``'s layer (its longest matching prefix), None when no layer names it."""
    best: tuple[int, int] | None = None  # (prefix length, layer)
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and (best is None or len(prefix) > best[0]):
                best = (len(prefix), index)
    return best[1] if best is not None else None


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def problems(imports: Iterable[Import]) -> list[str]:
    """Every import that reaches up a layer or into what its layer must not touch, as ``module -> imported``."""
    found = []
    for imp in imports:
        for owner, banned in FORBIDDEN.items():
            if _within(imp.module, owner):
                found += [f"{imp.module} -> {imp.imported} (line {imp.line}): {owner} never imports {ban}"
                          for ban in banned if _within(imp.imported, ban)]
        if imp.imported.split(".")[0] not in PROJECT:
            continue
        low, high = layer_of(imp.module), layer_of(imp.imported)
        if low is None or high is None:
            missing = imp.module if low is None else imp.imported
            found.append(f"{imp.module} -> {imp.imported} (line {imp.line}): {missing} is in no layer; add it to "
                         f"LAYERS here and to the picture in docs/ARCHITECTURE.md")
        elif high > low:
            found.append(f"{imp.module} -> {imp.imported} (line {imp.line}): {LAYERS[low][0]} reaches up to "
                         f"{LAYERS[high][0]}")
    return found


# -- reading the sources ------------------------------------------------------------------------------------------
def _module_files() -> Iterator[tuple[str, Path]]:
    for folder in ("bench", "ui", "pages"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path
    yield "app", ROOT / "app.py"


def _resolve(name: str, known: set[str]) -> str:
    """``from package import name``: the module ``package.name`` when there is one, else the package."""
    return name if name in known else name.rsplit(".", 1)[0]


def imports_of(module: str, source: str, known: set[str], *, is_package: bool = False) -> list[Import]:
    """Every import in ``source`` (at any depth: in functions, under ``if TYPE_CHECKING:``), as the modules named."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [Import(module, alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the importing module's package
                package = module.split(".")
                package = package if is_package else package[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join([*package, base] if base else package)
            out += [Import(module, _resolve(f"{base}.{alias.name}", known), node.lineno) for alias in node.names]
    return out


def all_imports() -> list[Import]:
    files = list(_module_files())
    known = {name for name, _ in files}
    out = []
    for name, path in files:
        out += imports_of(name, path.read_text(encoding="utf-8"), known, is_package=path.name == "__init__.py")
    return out


# -- the tests ----------------------------------------------------------------------------------------------------
def test_no_import_reaches_up_a_layer() -> None:
    found = problems(all_imports())
    assert not found, "imports against the layers (docs/ARCHITECTURE.md):\n" + "\n".join(found)


def test_every_module_has_a_layer() -> None:
    loose = [name for name, _ in _module_files() if layer_of(name) is None]
    assert not loose, f"modules in no layer: {loose}; add them to LAYERS and to docs/ARCHITECTURE.md"


def test_the_checker_reports_an_upward_import_even_inside_a_function() -> None:
    known = {"bench.config", "bench.hardware.devices", "bench.readings", "pages.train", "ui.machine"}
    source = "from bench.readings import is_int\n\ndef f():\n    from bench.hardware import devices\n"
    found = problems(imports_of("bench.config", source, known))
    assert found == ["bench.config -> bench.hardware.devices (line 4): config reaches up to hardware and frameworks"]
    page = problems(imports_of("pages.train", "from ui import machine\nimport bench.hardware.devices\n", known))
    assert page == ["pages.train -> bench.hardware.devices (line 2): pages never imports bench.hardware"]
    engine = problems(imports_of("bench.readings", "import streamlit as st\n", known))
    assert engine == ["bench.readings -> streamlit (line 1): bench never imports streamlit"]


def test_the_checker_reads_relative_imports_and_names_a_module_in_no_layer() -> None:
    known = {"bench.analysis.compare", "bench.analysis.metrics", "bench.runs.jobs"}
    relative = imports_of("bench.analysis.compare", "from . import metrics\nfrom ..runs import jobs\n", known)
    assert [i.imported for i in relative] == ["bench.analysis.metrics", "bench.runs.jobs"]
    assert problems(relative) == ["bench.analysis.compare -> bench.runs.jobs (line 2): analysis reaches up to runs"]
    assert "is in no layer" in problems([Import("scripts.tool", "bench.config", 1)])[0]


def test_the_probe_shares_the_framework_set_up_and_never_imports_the_worker() -> None:
    known = {"bench.hardware.probe", "bench.runs.worker", "bench.training.framework"}
    found = problems(imports_of("bench.hardware.probe", "def f():\n    from bench.runs import worker\n", known))
    assert "bench.hardware.probe -> bench.runs.worker (line 2): bench.hardware never imports bench.runs" in found
    assert not problems(imports_of("bench.hardware.probe", "from bench.training import framework\n", known))
    probe = [i.imported for i in all_imports() if i.module == "bench.hardware.probe"]
    assert "bench.training.framework" in probe and not any(_within(m, "bench.runs") for m in probe)
def test_records_compute_nothing() -> None:
    """The records hold what they are given: no module that declares a record imports the analysis (a summary, a
    comparison's block and a sweep's rows are computed by bench.analysis, which builds the documents)."""
    holders = ("bench.records", "bench.record_types", "bench.readings", "bench.run_info", "bench.record_base",
               "bench.config", "bench.limits")
    found = [f"{i.module} -> {i.imported} (line {i.line})" for i in all_imports()
             if i.module in holders and _within(i.imported, "bench.analysis")]
    assert not found, "records that compute:\n" + "\n".join(found)
    assert layer_of("bench.records") < layer_of("bench.analysis"), "the records sit below the analysis that fills them"
