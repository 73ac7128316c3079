"""The live elements' browser modules (ui/static/*.js): their own tests (tests/js/, node:test on the pure modules),
a syntax check of every module, and none of them leans on Streamlit's DOM or Plotly's private members."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ui import static_files

ROOT = Path(__file__).resolve().parents[2]
NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="node is not installed: the browser modules' own tests need it")


@needs_node
def test_the_modules_own_tests_pass():
    done = subprocess.run([NODE, "--test", "tests/js/"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert re.search(r"# pass [1-9]", done.stdout), done.stdout[-1000:]


@needs_node
@pytest.mark.parametrize("name", static_files.MODULES)
def test_every_module_parses(name):
    done = subprocess.run([NODE, "--check", str(static_files.STATIC / name)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr


@needs_node
def test_the_syntax_check_catches_a_broken_module(tmp_path):
    (tmp_path / "package.json").write_text('{"type": "module"}')
    broken = tmp_path / "broken.js"
    broken.write_text("export function f( {\n")
    assert subprocess.run([NODE, "--check", str(broken)], capture_output=True, timeout=60).returncode != 0


def test_no_module_leans_on_streamlit_or_plotly_internals():
    found = [f"{path.name}: {m.group(0)}" for path in sorted(static_files.STATIC.glob("*.js"))
             for m in re.finditer(r"data-testid|stSkeleton|_fullLayout|l2p", path.read_text(encoding="utf-8"))]
    assert not found, found


def test_every_module_is_served_and_imports_its_siblings_by_version():
    for name in static_files.MODULES:
        assert static_files.static_file(name) is not None, name
    entry = static_files.static_file("live.js")
    assert entry is not None
    imports = re.findall(rb'from "\./(live[a-z-]*\.js)\?v=([0-9a-f]+)"', entry.body)
    assert {name.decode() for name, _ in imports} == {"live-plan.js", "live-feed.js", "live-header.js",
                                                       "live-charts.js"}
    for name, version in imports:
        served = static_files.static_file(name.decode())
        assert served is not None and served.etag == version.decode()
