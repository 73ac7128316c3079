"""The layers of docs/ARCHITECTURE.md, checked: every import of every module under bench/, ui/ and pages/ (and app.py)
points down the list below or stays in its own layer, and no page reaches the hardware layer itself.

Imports inside functions count as much as those at the top: a lazy import that reaches up a layer is a circle
waiting (STYLE.md, habit 17), whatever start-up time it saves. So do imports under ``if TYPE_CHECKING:``: a type
from above is a dependency on above. The test parses the sources (ast) and imports none of them.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[2]

# Lowest first: each layer is a package (or two) of bench/, ui/ or pages/. A module belongs to the layer of the
# longest prefix that names it; it may import its own layer and the layers below. No prefix is a catch-all: a new
# package belongs to no layer until it is named here and in docs/ARCHITECTURE.md's picture (test_the_picture_...).
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("plans", ("bench.plans",)),  # what a model and a data set are, no framework
    # what a run, a reading, a config and a record are (pydantic models that hold what they are given and compute
    # nothing), the bounds, settings, errors and outside text: discovers and computes nothing
    ("vocabulary", ("bench.vocab",)),
    ("hardware and frameworks", ("bench.hardware", "bench.training")),
    ("analysis", ("bench.analysis",)),
    ("store", ("bench.store",)),
    ("runs", ("bench.runs",)),
    # a script's own training recorded as a run: its process plays the worker, a Recorder folds its events
    ("integrations", ("bench.integrations",)),
    ("cluster", ("bench.cluster",)),  # runs placed on a Ray cluster: above the runs it hands to the supervisor
    # a class's lab: the assignment, the students, the fair queue between them, handing runs to the run queue
    ("lab", ("bench.lab",)),
    ("output", ("bench.output",)),
    ("cli", ("bench.cli", "bench.__main__")),
    ("ui", ("ui",)),
    ("pages", ("pages", "app")),
)
# modules named by their exact name alone, never as a prefix: the package ``bench`` itself (its docstring and
# version) sits with the lowest layer and holds nothing else
EXACT: dict[str, str] = {"bench": "plans"}
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
    module: str  # the importing module, e.g. "bench.vocab.config"
    imported: str  # the module imported, e.g. "bench.hardware.devices"
    line: int


def layer_of(module: str) -> int | None:
    """The index in LAYERS of ``module``'s layer (its longest matching prefix), None when no layer names it."""
    if module in EXACT:
        return [name for name, _ in LAYERS].index(EXACT[module])
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
    known = {"bench.vocab.config", "bench.hardware.devices", "bench.vocab.readings", "pages.train", "ui.machine"}
    source = "from bench.vocab.readings import is_int\n\ndef f():\n    from bench.hardware import devices\n"
    found = problems(imports_of("bench.vocab.config", source, known))
    assert found == ["bench.vocab.config -> bench.hardware.devices (line 4): vocabulary reaches up to hardware and frameworks"]
    page = problems(imports_of("pages.train", "from ui import machine\nimport bench.hardware.devices\n", known))
    assert page == ["pages.train -> bench.hardware.devices (line 2): pages never imports bench.hardware"]
    engine = problems(imports_of("bench.vocab.readings", "import streamlit as st\n", known))
    assert engine == ["bench.vocab.readings -> streamlit (line 1): bench never imports streamlit"]


def test_the_checker_reads_relative_imports_and_names_a_module_in_no_layer() -> None:
    known = {"bench.analysis.compare", "bench.analysis.metrics", "bench.runs.jobs"}
    relative = imports_of("bench.analysis.compare", "from . import metrics\nfrom ..runs import jobs\n", known)
    assert [i.imported for i in relative] == ["bench.analysis.metrics", "bench.runs.jobs"]
    assert problems(relative) == ["bench.analysis.compare -> bench.runs.jobs (line 2): analysis reaches up to runs"]
    assert "is in no layer" in problems([Import("scripts.tool", "bench.vocab.config", 1)])[0]


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
    holders = ("bench.vocab.records", "bench.vocab.record_types", "bench.vocab.readings", "bench.vocab.run_info", "bench.vocab.record_base",
               "bench.vocab.config", "bench.vocab.limits")
    found = [f"{i.module} -> {i.imported} (line {i.line})" for i in all_imports()
             if i.module in holders and _within(i.imported, "bench.analysis")]
    assert not found, "records that compute:\n" + "\n".join(found)
    assert layer_of("bench.vocab.records") < layer_of("bench.analysis"), "the records sit below the analysis that fills them"


# -- the picture in docs/ARCHITECTURE.md ----------------------------------------------------------------------------
def picture_layers(text: str) -> list[str]:
    """The packages the layer picture of ARCHITECTURE.md names in its first column, top to bottom, as dotted
    prefixes (``bench/output/`` -> ``bench.output``, ``app.py`` -> ``app``)."""
    block = text.split("## Layers", 1)[1].split("```", 2)[1]
    names = []
    for line in block.splitlines():
        if not line or line[0] in " ─":
            continue
        for path in line[:20].split(","):
            path = path.strip()
            if path:
                names.append(path.removesuffix("/").removesuffix(".py").replace("/", "."))
    return names


def test_the_picture_in_architecture_md_is_drawn_from_these_layers() -> None:
    drawn = picture_layers((ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8"))
    wanted = [prefix for _, prefixes in reversed(LAYERS) for prefix in prefixes]
    assert sorted(drawn) == sorted(wanted), f"ARCHITECTURE.md names {drawn}; LAYERS holds {wanted}"
    order = [layer_of(name) for name in drawn]
    assert order == sorted(order, reverse=True), f"ARCHITECTURE.md draws the layers out of order: {drawn}"


def test_the_picture_check_names_a_package_drawn_out_of_place() -> None:
    picture = "## Layers\n\n```\nbench/vocab/        x\nbench/runs/         y\n```\n"
    drawn = picture_layers(picture)
    assert drawn == ["bench.vocab", "bench.runs"]
    order = [layer_of(name) for name in drawn]
    assert order != sorted(order, reverse=True), "the vocabulary drawn above the runs must read as out of order"


def test_bench_keeps_at_most_ten_modules_at_its_top() -> None:
    top = sorted(p.name for p in (ROOT / "bench").glob("*.py"))
    assert len(top) <= 10, f"bench/ holds {len(top)} modules at its top ({top}); put them in the layer's package"


def public_methods(source: str) -> dict[str, int]:
    """Each class of ``source`` with the number of its public methods (properties and class methods included)."""
    counts = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef):
            counts[node.name] = sum(1 for f in node.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                                    and not f.name.startswith("_"))
    return counts


PUBLIC_METHODS_MAX = 12


def test_no_class_in_bench_or_ui_holds_more_than_twelve_public_methods() -> None:
    big = [f"{path.relative_to(ROOT)}: {name} has {n}" for folder in ("bench", "ui")
           for path in sorted((ROOT / folder).rglob("*.py"))
           for name, n in public_methods(path.read_text(encoding="utf-8")).items() if n > PUBLIC_METHODS_MAX]
    assert not big, (f"classes doing more than one thing (at most {PUBLIC_METHODS_MAX} public methods; split them by "
                     "what each part does):\n" + "\n".join(big))
    wide = "class Wide:\n" + "".join(f"    def m{i}(self): ...\n" for i in range(13))
    assert public_methods(wide) == {"Wide": 13}, "the count must see a class of thirteen"


def class_names(sources: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    """Each class name defined more than once in ``sources`` ((where, source) pairs), with where each is, as
    ``where:line``; classes nested in a function or another class count, private ones too."""
    found: dict[str, list[str]] = {}
    for where, source in sources:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ClassDef):
                found.setdefault(node.name, []).append(f"{where}:{node.lineno}")
    return {name: places for name, places in sorted(found.items()) if len(places) > 1}


def test_each_class_name_in_bench_ui_and_pages_means_one_thing() -> None:
    twice = class_names((str(path.relative_to(ROOT)), path.read_text(encoding="utf-8"))
                        for _, path in _module_files())
    assert not twice, ("one name, several classes (name each for what it is: the worker's PhaseBegan, the run's "
                       "Phase):\n" + "\n".join(f"{name}: {', '.join(places)}" for name, places in twice.items()))
    sample = [("a.py", "class Phase:\n    pass\nclass Only:\n    pass\n"),
              ("b.py", "def f():\n    class Phase:\n        pass\n")]
    assert class_names(sample) == {"Phase": ["a.py:1", "b.py:2"]}, "the check must see a name defined twice"


# pydantic's own members (its fields set, extra dict, validator, init marker) and the constructor that skips
# validation: none is read or written by the engine or the dashboard; its public API says the same (model_extra,
# model_fields_set, model_copy, model_validate, PrivateAttr)
PYDANTIC_PRIVATE = re.compile(r"__pydantic_\w*|\bmodel_construct\b|object\.__setattr__")


def private_pydantic_uses(source: str) -> list[tuple[int, str]]:
    """(line, text) of each use of pydantic's private members (or of object.__setattr__) in ``source``."""
    return [(n, line.strip()) for n, line in enumerate(source.splitlines(), 1) if PYDANTIC_PRIVATE.search(line)]


def test_no_pydantic_private_member_is_borrowed() -> None:
    found = [f"{path.relative_to(ROOT)}:{n}: {text}" for folder in ("bench", "ui")
             for path in sorted((ROOT / folder).rglob("*.py"))
             for n, text in private_pydantic_uses(path.read_text(encoding="utf-8"))]
    assert not found, "pydantic's private members used (use its public API):\n" + "\n".join(found)
    sample = 'x.__pydantic_extra__\nobject.__setattr__(m, "a", 1)\nM.model_construct(a=1)\nm.model_extra\n'
    assert [n for n, _ in private_pydantic_uses(sample)] == [1, 2, 3], "the check must see each kind"


# Past the way in the engine reads typed models, not dicts (docs/ARCHITECTURE.md, "Typed inside"): what is left of
# .get( reads a typed mapping with a fallback, a table, the environment, a queue or Ray. The bound only ever goes down.
GET_CALLS_MAX = 119
GET_CALL = re.compile(r"\.get\(")


def get_calls(source: str) -> int:
    """The lines of ``source`` that call ``.get(`` (as ``git grep -c`` counts them)."""
    return sum(1 for line in source.splitlines() if GET_CALL.search(line))


def test_the_engine_reads_few_values_by_get() -> None:
    counts = {path.relative_to(ROOT): get_calls(path.read_text(encoding="utf-8"))
              for path in sorted((ROOT / "bench").rglob("*.py"))}
    total = sum(counts.values())
    most = sorted(((n, str(p)) for p, n in counts.items() if n), reverse=True)[:5]
    assert total <= GET_CALLS_MAX, (f"bench/ calls .get( on {total} lines (at most {GET_CALLS_MAX}): read the typed "
                                    f"model instead of its dict; most in {most}")
    assert get_calls("a.get(1)\nb = {}\nc.get(2); d.get(3)\n") == 2, "the count must be of lines, as git grep's"
