"""The project uses Streamlit through its public API only: no private attribute, no runtime internals set by hand.

A private name (``streamlit.delta_generator._something``, ``from streamlit.runtime... import``, ``PagesManager``) can
change or vanish in any Streamlit release without notice; the public API is what a pinned range promises.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ["app.py", "ui", "pages", "bench", "scripts", "benchmarks"]

PRIVATE_USES = {
    "a private attribute of a Streamlit module": re.compile(r"\b(streamlit|st)(\.\w+)*\._\w+"),
    "an import from Streamlit's runtime internals": re.compile(r"\b(from|import)\s+streamlit\.runtime\b"),
    "a private name imported from Streamlit":
        re.compile(r"\bfrom\s+streamlit(\.\w+)*\s+import\s+(\(\s*)?([\w\s,]*,\s*)?_\w+"),
    "Streamlit's internal pages manager": re.compile(r"\bPagesManager\b"),
}
SAMPLES = [  # private uses the patterns must catch, so this test can fail
    ("a private attribute of a Streamlit module", "streamlit.delta_generator._use_warning_has_been_displayed = True"),
    ("a private attribute of a Streamlit module", "x = st._main._block"),
    ("an import from Streamlit's runtime internals", "from streamlit.runtime.pages_manager import PagesManager"),
    ("an import from Streamlit's runtime internals", "import streamlit.runtime.scriptrunner as runner"),
    ("a private name imported from Streamlit", "from streamlit.elements.lib.utils import compute, _private_helper"),
    ("Streamlit's internal pages manager", "PagesManager.uses_pages_directory = False"),
]
PUBLIC_SAMPLES = ["import streamlit as st", "from streamlit.testing.v1 import AppTest", "st.session_state['_via_app']",
                  "streamlit.errors.StreamlitAPIException"]


def python_files() -> list[Path]:
    files: list[Path] = []
    for name in SOURCES:
        path = ROOT / name
        files.extend([path] if path.is_file() else sorted(path.rglob("*.py")))
    return files


def private_uses(text: str) -> list[tuple[int, str]]:
    """(line number, what) for each line of ``text`` that uses Streamlit's private API."""
    return [(number, what) for number, line in enumerate(text.splitlines(), 1)
            for what, pattern in PRIVATE_USES.items() if pattern.search(line)]


def test_the_patterns_catch_a_private_use_and_spare_public_ones() -> None:
    for what, sample in SAMPLES:
        assert (1, what) in private_uses(sample), f"the pattern for {what} misses {sample!r}"
    for sample in PUBLIC_SAMPLES:
        assert not private_uses(sample), f"a public use is flagged: {sample!r}"


def test_no_private_streamlit_use_in_the_project() -> None:
    files = python_files()
    assert ROOT / "app.py" in files and any(f.parent.name == "pages" for f in files), "the sources were not found"
    found = [f"{path.relative_to(ROOT)}:{number}: {what}" for path in files
             for number, what in private_uses(path.read_text(encoding="utf-8"))]
    assert not found, "Streamlit's private API is used (use its public API instead):\n" + "\n".join(found)
