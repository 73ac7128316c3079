"""The components-v2 elements of the live panels (the live view and the sidebar's line, ui.live), each registered once per process
from its script and style in ui/assets/."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

ASSETS = Path(__file__).with_name("assets")

_REGISTERED: dict[str, Any] = {}
_LOCK = threading.Lock()


def component(name: str, asset: str, *, styles: tuple[str, ...] = ()) -> Any:
    """The element ``name``, made from ui/assets/``asset``.js (a loader of ui/static/live.js) and ``asset``.css (and
    the ``styles`` named, for parts it shares with another element) into a ``<div class="bench-{asset}">`` the first
    time it is asked for. Its styles are not isolated: the page's fonts, colours and the projector view's sizes apply,
    and Plotly styles its modebar and hover labels from the document's head."""
    with _LOCK:
        if name not in _REGISTERED:
            import streamlit as st

            stem = asset.replace("_", "-")
            _REGISTERED[name] = st.components.v2.component(
                name, html=f'<div class="bench-{stem}"></div>',
                js=(ASSETS / f"{asset}.js").read_text(encoding="utf-8"),
                css="\n".join((ASSETS / f"{css}.css").read_text(encoding="utf-8") for css in (*styles, asset)),
                isolate_styles=False)
        return _REGISTERED[name]
