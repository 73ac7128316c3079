"""Projector view: one switch (sidebar toggle or ``?present=1``) for reading the dashboard from the back of a room.

When it is on, chart text is enlarged (``style_figure``), the headline figures are shown large, the settings fold away
and what a viewer does not need (toolbar, chart mode bars, file imports) is hidden. The switch lives in session state
and is mirrored in the URL, so a link opens the same view.
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
import streamlit as st

from ui import widget_state

QUERY = "present"
STATE_KEY = "present_mode"
_URL_SEEN = "_present_url"
ON_VALUES = ("1", "true", "on", "yes")

# Sizes in CSS pixels at 1920x1080, read from the last row of a room.
TICK_PX = 18
TITLE_PX = 24
LEGEND_PX = 18
AXIS_TITLE_PX = 20
FIGURE_HEIGHT_PX = 500

# Streamlit's header (the sidebar's button, the toolbar) is fixed over the page's top: 3.75rem high in Streamlit 1.67
# (71 px at this view's 19 px rem), opaque. The main block starts below it, or the header hides the title's top.
HEADER_REM = 3.75
CSS = """
<style>
html { font-size: 19px; }
[data-testid="stMainBlockContainer"] { max-width: none; padding: calc(HEADER_REMrem + 1rem) 2.5rem 2rem 2.5rem; }
[data-testid="stMetricValue"] { font-size: 3.2rem; font-weight: 700; line-height: 1.1; }
[data-testid="stMetricLabel"] p { font-size: 1.4rem; font-weight: 600; }
[data-testid="stCaptionContainer"], [data-testid="stCaptionContainer"] p { font-size: 1rem; }
[data-testid="stProgress"] p { font-size: 1.3rem; }
.bench-live-header .blh-value { font-size: 3.2rem; font-weight: 700; line-height: 1.1; }
.bench-live-header .blh-label { font-size: 1.4rem; font-weight: 600; }
.bench-live-header .blh-note, .bench-live-header .blh-caption, .bench-live-view .blv-note { font-size: 1rem; }
.bench-live-header .blh-progress-text { font-size: 1.3rem; }
[data-testid="stAlertContainer"] p { font-size: 1.25rem; }
h1 { font-size: 2.6rem !important; }
[data-testid="stRadio"] label p, [data-testid="stExpander"] summary p { font-size: 1.1rem; }
[data-testid="stDecoration"], .modebar-container { display: none !important; }
</style>
""".replace("HEADER_REM", str(HEADER_REM))


def requested() -> bool:
    """Whether the URL asks for the projector view (read before the page is set up, e.g. to fold the sidebar)."""
    return str(st.query_params.get(QUERY, "")).strip().lower() in ON_VALUES


def is_on() -> bool:
    """Whether this browser session shows the projector view."""
    return bool(st.session_state.get(STATE_KEY, False))


def sync() -> None:
    """Take the switch from ``?present=`` when the URL's value is new to this session; keep it in the URL while on.

    Runs before the toggle is drawn (app.py) and again at the top of each page (for pages run without app.py).
    """
    ss = st.session_state
    raw = st.query_params.get(QUERY)
    if raw is not None and raw != ss.get(_URL_SEEN):
        ss[_URL_SEEN] = raw
        ss[STATE_KEY] = raw.strip().lower() in ON_VALUES
    elif raw is None and is_on():
        st.query_params[QUERY] = "1"
        ss[_URL_SEEN] = "1"


def _on_toggle() -> None:
    on = is_on()
    st.session_state[_URL_SEEN] = "1" if on else "0"
    if on:
        st.query_params[QUERY] = "1"
    elif QUERY in st.query_params:
        del st.query_params[QUERY]


def sidebar_toggle() -> None:
    """The switch in the sidebar (call inside ``with st.sidebar``)."""
    sync()
    widget_state.resend(STATE_KEY)  # a link's ?present=1 shown as on, never the switch's own off
    st.toggle("Projector view", key=STATE_KEY, on_change=_on_toggle,
              help="Large chart text and headline figures, settings folded away: for a demo or a lecture. "
                   "Also opened by adding ?present=1 to a link.")


def query_value() -> dict[str, str]:
    """The URL parameter that keeps the projector view in a link ({} when off)."""
    return {QUERY: "1"} if is_on() else {}


def inject_css() -> None:
    """Large headline figures and hidden chrome, when the projector view is on."""
    if is_on():
        st.html(CSS)


def _font(obj: Any, size: int, *, at_least: bool = False) -> dict[str, Any]:
    current = getattr(getattr(obj, "font", None), "size", None) if obj is not None else None
    return {"size": max(size, current or 0) if at_least else size}


def style_figure(fig: go.Figure) -> go.Figure:
    """A copy of ``fig`` with text sized for a projector: ticks and legend 18 px, axis titles 20 px, title 24 px.

    The original is left alone (figures are cached and shared by every viewer's session).
    """
    out = go.Figure(fig)
    margin = out.layout.margin
    out.update_layout(
        font={"size": LEGEND_PX},
        title={"font": {"size": TITLE_PX}},
        legend={"font": {"size": LEGEND_PX}},
        hoverlabel={"font": {"size": LEGEND_PX}},
        height=max(out.layout.height or 0, FIGURE_HEIGHT_PX),
        margin={"l": max(margin.l or 0, 80), "r": max(margin.r or 0, 20), "t": max(margin.t or 0, 80),
                "b": max(margin.b or 0, 140)},
    )
    axes = {"tickfont": {"size": TICK_PX}, "title": {"font": {"size": AXIS_TITLE_PX}}}
    out.update_xaxes(**axes)
    out.update_yaxes(**axes)
    for ann in out.layout.annotations or ():
        before = getattr(getattr(ann, "font", None), "size", None)
        ann.update(font=_font(ann, LEGEND_PX, at_least=True))
        if ann.yshift and before:  # a name in a row (the utilization chart's): its row grows with its font
            ann.update(yshift=ann.yshift * ann.font.size / before)
    return out


def styled(fig: go.Figure) -> go.Figure:
    """``style_figure(fig)`` when the projector view is on, else ``fig`` itself."""
    return style_figure(fig) if is_on() else fig


def share_link() -> str:
    """The address a class opens: the watch page (ui/watch.py: the live run alone, no dashboard session per phone,
    the dashboard one click away) on this server, as this browser reached it."""
    from urllib.parse import urlsplit

    from ui import static_files, watch

    parts = urlsplit(str(st.context.url or ""))
    if not parts.scheme or not parts.netloc:
        return ""
    return f"{parts.scheme}://{parts.netloc}{static_files.base_path()}{watch.PATH}"


def share_qr() -> None:
    """The watch page's link as a QR code (segno) and as text, for the projector view: a class joins the live run
    in seconds."""
    link = share_link()
    if not link:
        return
    st.image(qr_data_uri(link), width=140)
    host = link.split("//", 1)[-1].split("/", 1)[0].rsplit(":", 1)[0]
    if host in ("localhost", "127.0.0.1", "[::1]"):
        st.caption("This code says localhost: open the dashboard by this machine's address on the room's network "
                   "(docs/CLASSROOM.md) for a link the class can use.")
    else:
        st.caption("Scan to watch live, or open:")
    st.code(link, language=None, wrap_lines=True)


def qr_data_uri(link: str) -> str:
    """``link`` as a QR code: an SVG data URI, dark on white (a projector washes out light-on-dark codes)."""
    import segno

    return str(segno.make(link, error="m").svg_data_uri(scale=4, border=2, dark="#0b1220", light="#ffffff"))
