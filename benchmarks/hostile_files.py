"""Hostile model files and the check a dashboard runs on an upload, measured in a fresh process: shared by
benchmarks/flop_sources.py and the tests of model files (tests/unit/test_model_file.py, tests/e2e/test_own_model.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

# what the dashboard's server does on an upload, in a process of its own: what it said, how long it took, its own
# peak memory (VmHWM: ru_maxrss would carry the forking parent's over the exec)
REFUSAL_CHECK = """
import json, sys, time
from bench.plans import model_file
start = time.monotonic()
try:
    model_file.check_model_file(sys.argv[1], (28, 28, 1), 10)
    said = None
except model_file.ModelFileError as exc:
    said = str(exc)
peak_kib = int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0])
print(json.dumps({"said": said, "seconds": time.monotonic() - start, "peak_mib": peak_kib / 1024}))
"""


def zip_bomb(path: Path) -> Path:
    """A .keras whose config.json inflates to 1 GiB (4.7 MB on disk), written as a stream: never 1 GiB in memory."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        archive.writestr("metadata.json", '{"keras_version": "3.15.1"}')
        with archive.open("config.json", "w", force_zip64=True) as member:
            member.write(b'{"class_name": "Functional", "config": {"name": "')
            chunk = b"a" * (16 << 20)
            for _ in range(64):
                member.write(chunk)
            member.write(b'"}}')
    return path


def refused_in_a_process(path: Path, timeout_s: float = 240.0) -> dict[str, Any]:
    """REFUSAL_CHECK run on ``path`` by a fresh Python from the checkout: {"said", "seconds", "peak_mib"}."""
    done = subprocess.run([sys.executable, "-c", REFUSAL_CHECK, str(path)], capture_output=True, text=True,
                          timeout=timeout_s, cwd=ROOT)
    if done.returncode != 0:
        raise RuntimeError(f"the check exited {done.returncode}: {done.stderr[-2000:]}")
    answer: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return answer
