"""AppTest fixtures: every test gets a server of its own (a fresh JobManager on its own store), as a restarted
dashboard would; st.cache_resource would otherwise hand one test's manager, and its stored runs, to the next."""

from __future__ import annotations

import pytest
import streamlit as st


@pytest.fixture(autouse=True)
def fresh_server_resources():
    st.cache_resource.clear()
    yield
    st.cache_resource.clear()
