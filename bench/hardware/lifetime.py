"""A child process's lifetime: the training worker, the peak probe's child and the stand-ins end when the process
that started them dies (kill -9, a crash, a test's server stopped), so none goes on measuring or training unseen,
skewing the next run's timing or holding a GPU's memory."""

from __future__ import annotations

import multiprocessing
import os
import threading
import time

PARENT_CHECK_INTERVAL_S = 1.0  # how often a child checks that the process which started it is still there
# set by a process that starts a child with ``subprocess`` (parent_env): the child's parent even if that parent died
# before the child asked (os.getppid() would then name whoever adopted it)
PARENT_ENV = "BENCH_PARENT_PID"


def parent_env() -> dict[str, str]:
    """What a ``subprocess`` child's environment carries so that :func:`exit_with_parent` knows this process."""
    return {PARENT_ENV: str(os.getpid())}


def exit_with_parent() -> None:
    """End this process when the one that started it dies. Works for a spawned process (multiprocessing) and for a
    ``subprocess`` child alike: the parent is the one that spawned this process, even if it died before this call."""
    known = multiprocessing.parent_process()
    told = os.environ.pop(PARENT_ENV, "")  # names this process's parent only: no child of this one inherits it
    parent = known.pid if known is not None and known.pid is not None else int(told) if told.isdigit() else os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_CHECK_INTERVAL_S)
        os._exit(1)

    threading.Thread(target=watch, name="bench-parent-watch", daemon=True).start()
