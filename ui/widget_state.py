"""A keyed widget's value, seeded in session state, sent to the browser on every script run."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import streamlit as st


def resend(key: str, options: Collection[Any] | None = None) -> None:
    """Write widget ``key``'s value (when it has one, and it is one of ``options`` where given) back to session
    state, before the widget is drawn, so that this run sends it to the browser.

    Streamlit sends a keyed widget's value from session state only on the script run that wrote it; a browser that
    first draws the widget on a later run (most likely: the writing run cut short by a rerun, on a busy server) shows
    the widget's own default (a number box's minimum, a selectbox's or radio's first option) and sends it back with the
    next click: a sweep at 1 epoch and batch 1, a CPU run on one thread, a link's GPU run started on the CPU, another
    machine than the one picked. A value no longer among ``options`` is left to the widget."""
    if key in st.session_state and (options is None or st.session_state[key] in options):
        st.session_state[key] = st.session_state[key]


def seed(key: str, value: Any) -> None:
    """Give widget ``key`` its first value in session state (kept once it has one) and send it on this run
    (:func:`resend`)."""
    st.session_state.setdefault(key, value)
    resend(key)
