"""Hypothesis strategies shared by the mutation tests (tests/unit/test_record_mutations.py and
tests/app/test_record_mutations_pages.py): valid records of each kind, each shipped with the project, and ONE change
at any place in one of them.

The seeds are read once at import and shrunk (2 runs, 3 epochs, 5 samples) so that an example stays quick. A change
(:class:`Mutation`) replaces one value by another JSON type, a huge or non-finite number, hostile or empty or very
long text; or deletes a key; or adds a key to a dict. Its ``where`` is the path written as the loader writes it
(``runs[0].epochs[2].epoch_seconds``), so a RecordError can be checked for naming it.
"""

from __future__ import annotations

import copy
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results"

# -- the hostile values -------------------------------------------------------------------------------------------------
TERMINAL_ATTACK = "\x1b[2J\x1b]8;;https://evil.example\x07x\x1b]8;;\x07\r@SUM(1+1)"
MARKUP_ATTACK = "[x](https://evil.example/x) ![i](https://evil.example/i.png) <script>1</script>"
LONG_TEXT = "y" * 10_000
SCRIPT = "<script>1</script>"
CONTROL_CHARS = ("\x1b", "\x07", "\r")

# simplest first: hypothesis shrinks a sampled value toward the start of the list
REPLACEMENTS: tuple[Any, ...] = (
    None, True, False, 0, 1, -1, 0.5, "", "x", [], {}, ["x", 5], {"x": 1},
    1e308, -1e308, 2**63, -(2**63) - 1, 10**30,
    math.nan, math.inf, -math.inf,
    TERMINAL_ATTACK, MARKUP_ATTACK, LONG_TEXT,
)


def describe(value: Any) -> str:
    """A value for a failure message: short, one line."""
    if value is LONG_TEXT or (isinstance(value, str) and len(value) > 80):
        return f"<text of {len(value):,} chars>"
    return repr(value)


# -- paths ------------------------------------------------------------------------------------------------------------
Path_ = tuple[Any, ...]


def path_text(path: Path_) -> str:
    """``('runs', 0, 'epochs', 2, 'epoch_seconds')`` -> ``runs[0].epochs[2].epoch_seconds`` (as the loader names it)."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def paths(value: Any, prefix: Path_ = ()) -> list[Path_]:
    """Every place in a document (the root included, as ``()``)."""
    out = [prefix]
    if isinstance(value, dict):
        for key, inner in value.items():
            out += paths(inner, (*prefix, key))
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            out += paths(inner, (*prefix, i))
    return out


def keys_in(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in keys_in(v)}
    if isinstance(value, list):
        return {k for v in value for k in keys_in(v)}
    return set()


def at(doc: Any, path: Path_) -> Any:
    for part in path:
        doc = doc[part]
    return doc


# -- the seeds ----------------------------------------------------------------------------------------------------------
def _read(name: str) -> dict[str, Any]:
    return json.loads((RESULTS / name).read_text(encoding="utf-8"))


def _small_run(run: dict[str, Any]) -> dict[str, Any]:
    run = dict(run)
    run["epochs"] = list(run.get("epochs") or [])[:3]
    if "samples" in run:
        run["samples"] = list(run["samples"])[:5]
    return run


def _small_runs(doc: dict[str, Any]) -> dict[str, Any]:
    doc = dict(doc)
    doc["runs"] = [_small_run(r) for r in doc["runs"][:2]]
    return doc


def _small_sweep(doc: dict[str, Any]) -> dict[str, Any]:
    doc = _small_runs(doc)
    kept = {r.get("id") for r in doc["runs"]}
    rows = [r for r in doc["rows"] if r.get("run_id") in kept][:3]
    doc["rows"] = rows or doc["rows"][:2]
    return doc


def _run_seed(doc: dict[str, Any], index: int) -> dict[str, Any]:
    return {"schema": "bench.run/1", **_small_run(doc["runs"][index])}


_FULL = {name: _read(name) for name in ("h100-seed-cifar10-mlp.json", "verify/issue2.json", "h100-sweep-sizes.json",
                                        "verify/sweep.json", "bundle-h100.json", "bundle-cpu-2core.json")}

SEEDS: dict[str, dict[str, dict[str, Any]]] = {
    "run": {
        "gpu run (h100-seed-cifar10-mlp runs[1])": _run_seed(_FULL["h100-seed-cifar10-mlp.json"], 1),
        "cpu run (bundle-cpu-2core runs[0])": _run_seed(_FULL["bundle-cpu-2core.json"], 0),
    },
    "comparison": {
        "h100-seed-cifar10-mlp": _small_runs(_FULL["h100-seed-cifar10-mlp.json"]),
        "verify/issue2": _small_runs(_FULL["verify/issue2.json"]),
    },
    "sweep": {
        "h100-sweep-sizes": _small_sweep(_FULL["h100-sweep-sizes.json"]),
        "verify/sweep": _small_sweep(_FULL["verify/sweep.json"]),
    },
    "bundle": {
        "bundle-h100": _small_runs(_FULL["bundle-h100.json"]),
        "bundle-cpu-2core": _small_runs(_FULL["bundle-cpu-2core.json"]),
    },
}
KINDS = tuple(SEEDS)

# key names an added key takes: every key any shipped document uses (so that an optional field a seed lacks, e.g.
# info.cluster, is tried too), and a few odd ones
KNOWN_KEYS = sorted(set().union(*(keys_in(doc) for doc in _FULL.values()))
                    | {"cluster", "members", "label", "imported", "stored_status", "prices", "energy_j",
                       "throttle_reasons", "diagnosis", "error", "store_error"})
ODD_KEYS = ("", "x", "a.b", "[0]", TERMINAL_ATTACK, MARKUP_ATTACK)
SEED_PATHS = {kind: {name: paths(doc) for name, doc in seeds.items()} for kind, seeds in SEEDS.items()}


def pattern(path: Path_) -> str:
    """A path with its list indexes left out (``samples[*].gpus[*].power_watts``): one field, whichever element."""
    return path_text(tuple("*" if isinstance(p, int) else p for p in path)).replace("[*]", "[]")


def _by_pattern(all_paths: list[Path_]) -> dict[str, list[Path_]]:
    out: dict[str, list[Path_]] = {}
    for path in all_paths:
        out.setdefault(pattern(path), []).append(path)
    return out


# a field is picked first, then which element holds it: the 5 samples' dozens of readings do not crowd out the
# one-off fields (machine.gpus, info.cluster, comparison.pairs[0].target)
SEED_FIELDS = {kind: {name: _by_pattern(p) for name, p in seeds.items()} for kind, seeds in SEED_PATHS.items()}


# -- one change -------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Mutation:
    """One change to a seed: ``replace`` the value at ``path``, ``delete`` the key at ``path``, or ``add`` the key
    ``key`` (with ``value``) to the dict at ``path``."""

    kind: str
    seed: str
    action: str
    path: Path_
    value: Any = None
    key: str | None = None

    @property
    def changed(self) -> Path_:
        """The path of the value that changed (the added key's own path for an add)."""
        return (*self.path, self.key) if self.action == "add" else self.path

    @property
    def where(self) -> str:
        return path_text(self.changed)

    def apply(self) -> Any:
        doc = copy.deepcopy(SEEDS[self.kind][self.seed])
        if self.action == "none":
            pass
        elif self.action == "add":
            at(doc, self.path)[self.key] = copy.deepcopy(self.value)
        elif self.action == "delete":
            del at(doc, self.path[:-1])[self.path[-1]]
        else:
            at(doc, self.path[:-1])[self.path[-1]] = copy.deepcopy(self.value)
        return doc

    def __str__(self) -> str:
        if self.action == "none":
            change = "unchanged"
        elif self.action == "delete":
            change = "deleted"
        elif self.action == "add":
            existed = isinstance(at(SEEDS[self.kind][self.seed], self.path), dict) \
                and self.key in at(SEEDS[self.kind][self.seed], self.path)
            change = f"{'set (the key existed)' if existed else 'added'} = {describe(self.value)}"
        else:
            change = f"{describe(at(SEEDS[self.kind][self.seed], self.path))} -> {describe(self.value)}"
        return f"{self.kind} seed {self.seed!r}: {self.where or '(root)'} {change}"

    def names_it(self, message: str) -> bool:
        """Whether an error message names the changed path, one of its ancestors (not the root), or a path inside
        the changed value (a list put in a number's place: ``epochs[0] must be ...``), as a whole field path."""
        changed = self.changed
        candidates = [path_text(changed[:n]) for n in range(1, len(changed) + 1)]
        for n, text in enumerate(candidates, 1):
            if not text:
                continue
            # the changed place itself, a path inside it, or an ancestor followed by a key the loader writes as ['key']
            inside = r"(?:[.\[][^\s]*)?" if n == len(changed) else r"(?:\[[^\s]*)?"
            if re.search(r"(?:^|(?<=[\s:'\"`(]))" + re.escape(text) + inside + r"(?=$|[\s:;,'\"`)])", message):
                return True
        return False


def as_file_text(doc: Any) -> str:
    """A document as a file holds it: Python's json writes NaN and Infinity (JSON extensions json.loads reads)."""
    return json.dumps(doc, allow_nan=True)


# -- the ways out: hostile values for what a page, an export or a listing shows ----------------------------------------
# Text with lone surrogates, control characters, bidi marks and line breaks; huge, subnormal, negative and non-finite
# numbers; the numbers a vendor library gives for "not supported". tests/unit/test_vendor_bounds.py feeds them to the
# GPU sources, tests/unit/test_ways_out.py and tests/app/test_hostile_ways_out.py to every listing, export and page.
# Their budget: BENCH_FUZZ_WAYS_OUT_EXAMPLES (docs/TESTING.md).
LONE_SURROGATES = ("\ud800", "\udfff", "a\udc80b")
CONTROLS = ("\x00", "\x07", "\x1b[2J", "\x1b]8;;https://evil.example\x07", "\r", "\n", "\t", "\x7f", "\x85", "\x9b")
BIDI_MARKS = ("\u202e", "\u202d", "\u2066", "\u2067", "\u2068", "\u2069", "\u200e", "\u200f", "\u061c", "\u2028",
              "\u2029")
HOSTILE_PIECES = (*LONE_SURROGATES, *CONTROLS, *BIDI_MARKS, "[x](https://evil.example)", "<script>1</script>", "=1+1",
                  "\ufeff", "\u0000", "é", "名前")
HUGE_NUMBERS = (1e308, -1e308, 1.7976931348623157e308, 1e30, 2**63 - 1, -(2**63 - 1), 2**64 - 1, 10**20)
SUBNORMAL_NUMBERS = (5e-324, -5e-324, 2.2250738585072009e-308, 1e-310)
NON_FINITE = (math.nan, math.inf, -math.inf)
# what vendor libraries answer for "no value": all-ones of each width (AMD SMI's UINT16/32/64_MAX, NVML's
# NVML_VALUE_NOT_AVAILABLE), the signed maxima, and -1 where a C int says "not supported"
VENDOR_SENTINELS = (2**16 - 1, 2**32 - 1, 2**64 - 1, 2**31 - 1, 2**63 - 1, -1)


def hostile_text(max_size: int = 40) -> st.SearchStrategy[str]:
    """Text that a page, a terminal or a CSV must show as text: pieces of :data:`HOSTILE_PIECES` among any characters
    (lone surrogates, controls and bidi marks included: no category is left out)."""
    anything = st.text(st.characters(codec=None), max_size=max_size)
    pieces = st.lists(st.sampled_from(HOSTILE_PIECES) | anything, min_size=1, max_size=4).map("".join)
    return pieces | anything


def hostile_number() -> st.SearchStrategy[float | int]:
    """A number no figure should show as it is: huge, subnormal, negative, non-finite, or any float at all."""
    return (st.sampled_from((*HUGE_NUMBERS, *SUBNORMAL_NUMBERS, *NON_FINITE, -1, -0.0, 0))
            | st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True))


def vendor_raw() -> st.SearchStrategy[Any]:
    """A raw value a vendor library might return for one figure: a sentinel, a hostile number, digits as text (sysfs),
    "N/A", None, or hostile text."""
    return st.one_of(st.sampled_from(VENDOR_SENTINELS), hostile_number(),
                     st.sampled_from(VENDOR_SENTINELS).map(lambda n: f"{n}\n"), st.just("N/A"), st.none(),
                     hostile_text(12))


@st.composite
def mutations(draw: st.DrawFn, kind: str) -> Mutation:
    """One change at any place of one seed of ``kind``."""
    seed = draw(st.sampled_from(sorted(SEEDS[kind])))
    doc = SEEDS[kind][seed]
    fields = SEED_FIELDS[kind][seed]
    path = draw(st.sampled_from(fields[draw(st.sampled_from(sorted(fields)))]))
    target = at(doc, path)
    parent = at(doc, path[:-1]) if path else None
    actions = []
    if path:
        actions.append("replace")
        if isinstance(parent, dict):
            actions.append("delete")
    if isinstance(target, dict):
        actions.append("add")
    action = draw(st.sampled_from(actions))
    if action == "delete":
        return Mutation(kind, seed, action, path)
    value = draw(st.sampled_from(REPLACEMENTS))
    if action == "add":
        key = draw(st.sampled_from(ODD_KEYS) | st.sampled_from(KNOWN_KEYS))
        return Mutation(kind, seed, action, path, value=value, key=key)
    return Mutation(kind, seed, action, path, value=value)


# == the record parser's ways in (bench.vocab.record_base, bench.vocab.records): hostile values ==================================
# Text a parser must refuse or keep whole: lone surrogates (a page that encodes one goes down), control characters
# where a line is expected, bidi marks and other format characters (kept: they are valid text), and numbers at and
# past every edge: 2^63-1 (SQLite's largest integer), 2^64-1 (a vendor's "not supported"), subnormal, huge,
# non-finite. Nesting past what the JSON parser allows (200) and far past what an export could recurse through.
LONE_SURROGATES = ("\ud800", "\udfff", "a\udc80b")
CONTROL_TEXT = ("line\nbreak", "\x00", "\x1b[2J", "\r", "\x7f", "\x85", "tab\there")
BIDI_TEXT = ("\u202eevil", "\u200f", "\u2066x\u2069", "\ufeff", "\u200b")
EDGE_NUMBERS: tuple[Any, ...] = (2**63 - 1, 2**63, 2**64 - 1, -(2**63 - 1), 5e-324, 2.2250738585072014e-308,
                                 1.7976931348623157e308, math.inf, -math.inf, math.nan, -0.0, 1e-6, 1e6)


def nested_list(depth: int) -> Any:
    """A list ``depth`` levels deep, built without recursion."""
    value: Any = []
    for _ in range(depth - 1):
        value = [value]
    return value


HOSTILE_TEXT = st.one_of(st.sampled_from((*LONE_SURROGATES, *CONTROL_TEXT, *BIDI_TEXT)),
                         st.text(st.characters(categories=("Cs", "Cc", "Cf", "Zl", "Zp")), min_size=1, max_size=4),
                         st.text(max_size=8))
HOSTILE_NUMBER = st.one_of(st.sampled_from(EDGE_NUMBERS), st.floats(), st.integers(min_value=-(2**70),
                                                                                   max_value=2**70))
HOSTILE_NESTING = st.sampled_from((5, 150, 201, 700)).map(nested_list)
HOSTILE_VALUE = st.one_of(HOSTILE_TEXT, HOSTILE_NUMBER, HOSTILE_NESTING, st.none(), st.booleans(),
                          st.lists(HOSTILE_TEXT | HOSTILE_NUMBER, max_size=3),
                          st.dictionaries(HOSTILE_TEXT, HOSTILE_TEXT | HOSTILE_NUMBER, max_size=2))


@st.composite
def hostile_mutations(draw: st.DrawFn, kind: str) -> Mutation:
    """One hostile value put at any place of one seed of ``kind`` (replacing a value, or added under a known or
    hostile key)."""
    seed = draw(st.sampled_from(sorted(SEEDS[kind])))
    fields = SEED_FIELDS[kind][seed]
    path = draw(st.sampled_from(fields[draw(st.sampled_from(sorted(fields)))]))
    target = at(SEEDS[kind][seed], path)
    value = draw(HOSTILE_VALUE)
    if isinstance(target, dict) and (not path or draw(st.booleans())):
        key = draw(st.sampled_from(KNOWN_KEYS) | HOSTILE_TEXT)
        return Mutation(kind, seed, "add", path, value=value, key=key)
    if not path:
        return Mutation(kind, seed, "none", path)
    return Mutation(kind, seed, "replace", path, value=value)
