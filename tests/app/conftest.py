"""AppTest fixtures: every test gets a server of its own (a fresh JobManager on its own store), as a restarted
dashboard would; st.cache_resource would otherwise hand one test's manager, and its stored runs, to the next."""

from __future__ import annotations

import pytest
import streamlit as st


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


@pytest.fixture(autouse=True)
def quick_framework_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    """The System page's checklist asks the framework for its devices in a child process (seconds, as the doctor
    does); page tests get its answer for this CPU-only machine at once. tests/unit/test_doctor.py runs the real one."""
    from bench.hardware import devices

    def cpu_only(backend: str | None = None, timeout_s: float = 60) -> devices.FrameworkProbe:
        return devices.FrameworkProbe(backend=backend or "tensorflow", version="test", devices=["CPU:0"])

    monkeypatch.setattr(devices, "probe_framework", cpu_only)
