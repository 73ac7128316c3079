"""Process-wide resources for every page (one JobManager, one Store, the hardware) and the page preamble."""

from __future__ import annotations

import hmac
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import streamlit as st

from bench.vocab import settings, target
from bench.vocab.target import Target
from bench.output import charts
from bench.hardware import devices
from bench.runs.jobs import JobManager
from bench.store import Store, StoreError
from ui import present
from ui.safe_text import escape

PAGES_DIR = Path(__file__).resolve().parents[1] / "pages"  # the page scripts app.py navigates


@st.cache_resource(show_spinner=False)
def get_manager() -> JobManager:
    """The one job queue of this server process, shared by every browser session."""
    store_error = None
    try:
        store: Store | None = Store()
    except StoreError as exc:
        store, store_error = None, str(exc)
    threading.Thread(target=charts.warm_up, name="bench-chart-warmup", daemon=True).start()
    from ui import cluster

    launcher, _ = cluster.launcher()  # BENCH_RAY_ADDRESS: runs go to the cluster (System page says why not)
    if launcher is not None:
        return JobManager(store, hardware=launcher.machine, store_error=store_error,
                          worker_target=settings.worker_target(), peak_target=settings.peak_target(), launcher=launcher)
    return JobManager(store, hardware=get_hardware(), prestart=settings.prestart_worker(), store_error=store_error,
                      worker_target=settings.worker_target(), peak_target=settings.peak_target())


@st.cache_resource(show_spinner=False)
def get_hardware() -> devices.Hardware:
    """What this machine has; discovered once per server process (no framework import)."""
    return devices.discover()


@contextmanager
def store_errors() -> Iterator[None]:
    """Around a page's reads and writes of the store: a store that fails (damaged, deleted, locked, full) shows
    what went wrong and what to do, and the page stops there, instead of an error page for every viewer."""
    try:
        yield
    except StoreError as exc:
        st.error(f"The run store cannot be used right now. {escape(exc, limit=800)}", icon=":material/database:")
        st.stop()


def store_warning() -> None:
    """Say plainly when results cannot be saved."""
    manager = get_manager()
    if manager.store is None:
        st.warning(f"The run store could not be opened, so results are kept in memory only. "
                   f"{escape(store_unavailable(manager), limit=800)}")


def store_unavailable(manager: JobManager) -> str:
    """Why this server has no store and what to do (from opening it), then that a restart picks up the fix."""
    why = manager.store_error or "Point BENCH_STORE at a writable file."
    return f"{why} Then restart the dashboard to keep results."


def presenter_key() -> str | None:
    """The configured presenter key: BENCH_PRESENTER_KEY, else `presenter_key` in .streamlit/secrets.toml."""
    key = os.environ.get("BENCH_PRESENTER_KEY")
    if key:
        return key
    try:
        value = st.secrets.get("presenter_key")
    except (FileNotFoundError, KeyError, AttributeError, st.errors.StreamlitSecretNotFoundError):
        value = None
    return str(value) if value else None


def can_control() -> bool:
    """Whether this browser session may start, stop and delete runs.

    Without a presenter key everyone may (as on a laptop). With one, only a session that entered it may; everyone
    else gets a read-only view of the same live runs.
    """
    key = presenter_key()
    if not key:
        return True
    given = st.session_state.get("presenter_key_given", "")
    return hmac.compare_digest(given.encode(), key.encode())


def presenter_sidebar() -> None:
    """The unlock box, shown only when a presenter key is configured."""
    if not presenter_key():
        return
    if can_control():
        st.caption(":material/lock_open: Presenter controls unlocked.")
        return
    st.caption(":material/lock: View only: the presenter starts and stops runs.")
    with st.form("presenter_form", border=False):
        given = st.text_input("Presenter key", type="password", key="presenter_key_input")
        if st.form_submit_button("Unlock"):
            st.session_state["presenter_key_given"] = given
            if not can_control():
                st.error("That key is not right.")
            else:
                st.rerun()


def target_options(hardware: devices.Hardware) -> list[str]:
    """Compare/Sweep targets on this machine: cpu/1 .. cpu/N-1, cpu (all cores), each GPU, and gpus."""
    cores = hardware.cpu.logical_cores or 1
    offered = [Target.parse(c) for c in devices.offered_devices(hardware)]
    candidates = [Target("cpu", threads=n) for n in sorted({1, max(1, cores // 2)})] + offered
    # each what it trains on once (bench.vocab.target.duplicates): "cpu" and "gpus" win over their equals, e.g. cpu/2 on 2
    kept = set(target.distinct(sorted(candidates, key=lambda t: t.threads is not None or t.kind == "gpu"), hardware))
    return [str(t) for t in candidates if t in kept]


def lab_targets() -> list[str]:
    """The targets a lab's assignment may allow: where the dashboard's runs train. On a Ray cluster the cluster's
    devices (``cpu``: a node's cores, ``gpu:0``: a whole GPU of a node that has one, whatever this machine holds);
    else this machine's (:func:`target_options`)."""
    manager = get_manager()
    if manager.launcher is not None:
        return list(manager.machine.device_choices())
    return target_options(get_hardware())


def page_setup() -> None:
    """First call of every page.

    Streamlit ignores the pages/ folder once any session has called st.navigation (st.navigation's documented
    behaviour), but a page URL (e.g. /compare?epochs=3) that is the first request after a server start comes before
    any: Streamlit then runs the page script directly in its folder mode, never app.py (no navigation, no sidebar
    status, no presenter box). app.py marks every run it makes; a page reached without that mark calls st.navigation
    itself, hidden and over the same pages/ scripts the folder mode offers (so the requested page is found), which
    ends the folder mode for every session, and reruns once: the rerun keeps the page and its query parameters and
    goes through app.py. Also applies the projector view (ui.present) to the page.
    """
    present.sync()
    present.inject_css()
    if st.session_state.get("_via_app") or st.session_state.get("_setup_rerun"):
        return
    st.session_state["_setup_rerun"] = True
    # st.navigation serves its default page at the root alone ("" its address): a page of pages/ made the default
    # would not be found under its own name and Streamlit would say "Page not found"; a stand-in takes that place
    pages = [st.Page(_switching, title="Start", url_path="start", default=True)]
    st.navigation(pages + [st.Page(path) for path in sorted(PAGES_DIR.glob("*.py"))], position="hidden")
    st.rerun()


def _switching() -> None:
    """The default page of page_setup's navigation: never run (the root goes through app.py), named for clarity."""
