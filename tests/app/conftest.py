"""AppTest fixtures: every test gets a server of its own (a fresh JobManager on its own store), as a restarted
dashboard would; st.cache_resource would otherwise hand one test's manager, and its stored runs, to the next."""

from __future__ import annotations

import pytest
import streamlit as st

from tests.app import page_seams


@pytest.fixture(autouse=True)
def fresh_server_resources(monkeypatch: pytest.MonkeyPatch):
    """A fresh JobManager, and with it a fresh live publisher (ui.live_feed.install makes one per manager)."""
    from ui import live_feed

    st.cache_resource.clear()
    yield
    publisher = live_feed.installed()
    if publisher is not None:
        publisher.close()
    st.cache_resource.clear()


@pytest.fixture(scope="session", autouse=True)
def component_scan_once():
    """Streamlit's scan for component manifests once per test process, not once per AppTest (tests/app/page_seams.py)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(*page_seams.component_scan_once())
        yield


@pytest.fixture(autouse=True)
def quick_framework_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    """The System page's checklist gets the framework's answer at once (tests/app/page_seams.py);
    tests/unit/test_doctor.py runs the real one."""
    from bench.hardware import devices

    monkeypatch.setattr(devices, "probe_framework", page_seams.cpu_only)
