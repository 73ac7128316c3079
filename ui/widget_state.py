"""A keyed widget's value, seeded in session state, sent to the browser on every script run."""

from __future__ import annotations

import streamlit as st


def resend(key: str) -> None:
    """Write widget ``key``'s value (when it has one) back to session state, before the widget is drawn, so that
    this run sends it to the browser.

    Streamlit sends a keyed widget's value from session state only on the script run that wrote it; a browser that
    first draws the widget on a later run (the writing run cut short by a rerun, on a busy server) shows the widget's
    own default (a number box's minimum, a selectbox's first option) and sends it back with the next click: a sweep at
    1 epoch and batch 1, a CPU run on one thread, another machine than the one picked."""
    if key in st.session_state:
        st.session_state[key] = st.session_state[key]
