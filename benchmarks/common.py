"""Small helpers shared by the harness's modules: the checkout root, waiting, CPU time, helper subprocesses, scratch
folders."""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bench.runs.jobs import JobManager
    from bench.runs.run_state import RunSnapshot

ROOT = Path(__file__).resolve().parents[1]  # the checkout: bench/, benchmarks/, app.py, docs/


def scratch(prefix: str) -> Path:
    """A new folder under the temporary directory for a pass's servers, stores and logs, removed when this process
    exits; kept, and named on stderr, when an uncaught exception ends it, so that the logs of a failed pass can be read.
    A benchmark run a hundred times leaves nothing behind in /tmp."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(_remove_scratch, folder)
    return folder


def _remove_scratch(folder: Path) -> None:
    if getattr(sys, "last_value", None) is not None:  # the interpreter printed an uncaught exception before exiting
        print(f"kept for its logs: {folder}", file=sys.stderr)
        return
    shutil.rmtree(folder, ignore_errors=True)


def wait_for(predicate: Callable[[], Any], timeout_s: float, what: str, poll_s: float = 0.1) -> Any:
    """Poll ``predicate`` until it returns something truthy (returned), or raise TimeoutError naming ``what``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(poll_s)
    raise TimeoutError(f"timed out after {timeout_s:.0f} s waiting for {what}")


def own_snapshot(manager: JobManager, run_id: int) -> RunSnapshot:
    """The snapshot of a run the benchmark submitted to ``manager`` itself (JobManager.snapshot is None only for a
    run it does not hold, and no benchmark deletes its own runs)."""
    snap = manager.snapshot(run_id)
    assert snap is not None, f"run #{run_id} was submitted to this JobManager, which no longer holds it"
    return snap


def cpu_seconds(proc: Any) -> float:
    """User + system CPU seconds of a psutil.Process."""
    times = proc.cpu_times()
    return times.user + times.system


def checkout_python_path() -> str:
    """The checkout first, then any PYTHONPATH this process was given (a GPU machine's carried wheels live there)."""
    return os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)


def run_child(module: str, args: Sequence[str], *, timeout_s: float, log_path: Path) -> None:
    """Run ``module.child_main(args)`` in a fresh interpreter from the checkout; its output goes to log_path.

    The bare baseline, the memory replay and the AppTest render timing each run this way, so that neither
    TensorFlow nor Streamlit is ever imported by the process that drives the pass.
    """
    code = f"import sys; from {module} import child_main; child_main(sys.argv[1:])"
    with log_path.open("w", encoding="utf-8") as log:
        proc = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                              env={**os.environ, "PYTHONPATH": checkout_python_path()}, timeout=timeout_s)
    if proc.returncode != 0:
        tail = log_path.read_text(encoding="utf-8")[-1500:]
        raise RuntimeError(f"overhead child {module} {args[0] if args else ''} exited {proc.returncode}: {tail}")
