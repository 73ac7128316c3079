"""A worker process's handles: starting one without re-running the parent's __main__, ending one, and the spare
worker's handle (a process that has imported the framework and waits for its run). Shared by the supervisor and the
spare pool, so neither imports the other.
"""

from __future__ import annotations

import multiprocessing.spawn as mp_spawn
import threading
from dataclasses import dataclass
from typing import Any

_SPAWN_LOCK = threading.Lock()


def start_worker_process(process: Any) -> None:
    """Start a spawned process WITHOUT re-running the parent's __main__ in it.

    Under `streamlit run`, __main__ is the dashboard script itself; a spawned child would execute every page in bare
    mode before training. The worker needs nothing from __main__ (its target lives in bench.runs.worker), so the
    main-module entries are dropped from the spawn preparation data while this process starts.
    """
    original = mp_spawn.get_preparation_data

    def without_main(name: str) -> dict[str, Any]:
        data = original(name)
        data.pop("init_main_from_path", None)
        data.pop("init_main_from_name", None)
        return data

    with _SPAWN_LOCK:
        mp_spawn.get_preparation_data = without_main
        try:
            process.start()
        finally:
            mp_spawn.get_preparation_data = original


def kill(process: Any) -> None:
    """Terminate, then kill, a worker process."""
    process.terminate()
    process.join(timeout=3)
    if process.is_alive():
        process.kill()
        process.join(timeout=3)


@dataclass
class Spare:
    """A pre-started worker waiting for its run (see worker.spare_main)."""

    key: tuple[Any, ...]
    process: Any
    inbox: Any
    events: Any
    stop_event: Any
    ready: Any
