"""Process-wide resources for every page (one JobManager, one Store, the hardware) and the page preamble."""

from __future__ import annotations

import streamlit as st

from bench import devices
from bench.jobs import JobManager
from bench.store import Store, StoreError


@st.cache_resource(show_spinner=False)
def get_manager() -> JobManager:
    """The one job queue of this server process, shared by every browser session."""
    try:
        store: Store | None = Store()
    except StoreError as exc:
        st.session_state["_store_error"] = str(exc)
        store = None
    return JobManager(store, hardware=get_hardware().to_dict())


@st.cache_resource(show_spinner=False)
def get_hardware() -> devices.Hardware:
    """What this machine has; discovered once per server process (no framework import)."""
    return devices.discover()


def store_warning() -> None:
    """Say plainly when results cannot be saved."""
    manager = get_manager()
    if manager.store is None:
        st.warning("The run store could not be opened, so results are kept in memory only. "
                   "Set BENCH_STORE to a writable file and restart to keep them.")
