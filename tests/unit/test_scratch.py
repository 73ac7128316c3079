"""benchmarks.common.scratch: a benchmark's scratch folders are gone when it exits, and kept, named, when it fails."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from benchmarks.common import ROOT


def _run(code: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp)})


def test_a_scratch_folder_and_what_is_in_it_are_removed_when_the_process_exits(tmp_path: Path) -> None:
    done = _run("from benchmarks.common import scratch\n"
                "for prefix in ('one-', 'two-'):\n"
                "    folder = scratch(prefix)\n"
                "    (folder / 'log').write_text('a server log')\n"
                "    print(folder)\n", tmp_path)
    assert done.returncode == 0, done.stderr
    made = [Path(line) for line in done.stdout.split()]
    assert len(made) == 2 and all(folder.parent == tmp_path for folder in made), made
    assert list(tmp_path.iterdir()) == [], "nothing left behind"


def test_a_scratch_folder_is_kept_and_named_when_an_uncaught_exception_ends_the_process(tmp_path: Path) -> None:
    done = _run("from benchmarks.common import scratch\n"
                "folder = scratch('failed-')\n"
                "(folder / 'log').write_text('why it failed')\n"
                "raise RuntimeError('the pass failed')\n", tmp_path)
    assert done.returncode == 1
    kept = list(tmp_path.iterdir())
    assert len(kept) == 1 and (kept[0] / "log").read_text() == "why it failed", kept
    assert f"kept for its logs: {kept[0]}" in done.stderr, done.stderr
