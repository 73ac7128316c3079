"""The newest run of the store as this process sees it: after a restart, or a run another process (a CLI run, a
script's BenchCallback) writes there live. The store is asked at most every STORED_REFRESH_S whether that run changed,
and read again only when it did."""

from __future__ import annotations

import logging
import time

from bench.runs.run_state import TERMINAL, RunSnapshot
from bench.store import Store, StoreError

log = logging.getLogger("bench.runs.jobs")
STORED_REFRESH_S = 2.0  # a run of another process, shown from the store, is re-read at most this often


class StoredView:
    """The store's newest run as a snapshot (``latest``), re-read only when it changed; ``forget`` drops what was
    read (a run deleted)."""

    def __init__(self, store: Store | None):
        self._store = store
        self._view: tuple[float, RunSnapshot | None] | None = None  # (read at, latest stored run)
        self._version: tuple[int, str, int, int] | None = None

    def forget(self) -> None:
        """Read the store again next time."""
        self._view = self._version = None

    def latest(self) -> RunSnapshot | None:
        """The newest run in the store as a snapshot (it grows live while another process runs it); None without a
        store or runs."""
        now = time.monotonic()
        view = self._view
        if view is not None and now - view[0] < STORED_REFRESH_S:
            return view[1]
        snap = view[1] if view is not None else None
        store = self._store
        if store is not None:
            try:
                if snap is not None and snap.active:
                    store.owners.mark_orphans_interrupted()  # the other process may have died meanwhile
                version = store.latest_run_version()
                if version is None:
                    snap = None
                elif version != self._version:
                    run = store.get_run(version[0])
                    owner = None
                    if run is not None and run.status not in TERMINAL:
                        found = store.owners.owner_of(version[0])
                        owner = f"process {found.pid} on {found.host}" if found is not None else "another process"
                    snap = RunSnapshot.from_stored(run, owner=owner) if run is not None else None
                self._version = version
            except StoreError as exc:
                log.debug("latest stored run unavailable: %s", exc)
        self._view = (now, snap)
        return snap
