"""Dashboard entry point: page navigation and the sidebar status of the current run; nothing else."""

from __future__ import annotations

import streamlit as st
import streamlit.delta_generator

from bench.records import Status
from ui import common, live, present

# Streamlit's first element of a process checks whether it runs in a REPL, to warn those who do not use `streamlit
# run`; the check walks every loaded module's file (0.10 s of the 2-core server's first page, docs/PERFORMANCE.md).
# Under `streamlit run` the warning can never show, so it is marked shown already.
streamlit.delta_generator._use_warning_has_been_displayed = True

# an emoji icon: Streamlit draws it in the page; a :material/...: one is fetched from fonts.gstatic.com (none offline)
st.set_page_config(page_title="CPU vs GPU training bench", page_icon="⚡", layout="wide",
                   initial_sidebar_state="collapsed" if present.requested() else "auto")

st.session_state["_via_app"] = True  # see ui.common.page_setup
train = st.Page("pages/train.py", title="Train", icon=":material/model_training:", url_path="train")


def _root() -> None:
    """The app's root opens Train with the link's settings. Train keeps its own address, /train: as the default page
    Streamlit would serve it at the root only, and a /train link (the README's, a copied one) met "Page not found"."""
    st.switch_page(train, query_params=st.query_params.to_dict())


root = st.Page(_root, title="Train", url_path="start", default=True, visibility="hidden")
pages = [
    root,
    train,
    st.Page("pages/compare.py", title="Compare", icon=":material/compare_arrows:"),
    st.Page("pages/sweep.py", title="Sweep", icon=":material/stacked_line_chart:"),
    st.Page("pages/machines.py", title="Machines", icon=":material/dns:"),
    st.Page("pages/history.py", title="History", icon=":material/history:"),
    st.Page("pages/system.py", title="System", icon=":material/memory:"),
    st.Page("pages/lesson.py", title="Lesson", icon=":material/school:", url_path="lesson"),
]
page = st.navigation(pages)
if page is root:
    # Switch before anything is drawn: a run that is about to be replaced must send no element, least of all the
    # sidebar's timed fragment. Drawn first, on a loaded server its timer could fire into the Train page's run and the
    # browser's front end failed ("Bad delta path index"), leaving that viewer a blank page (5 of 40 loads of the
    # root with 5 viewers on 2 busy cores; none of 20 from /train).
    page.run()


# The sidebar line changes at an epoch's end at most (and when a run starts or ends), so it follows the charts' slower
# refresh: at the live panel's pace it was a second fragment run per viewer per second (a script run on the server,
# its messages and the front end's rerun bookkeeping in every browser).
@st.fragment(run_every=live.CHART_REFRESH_S)
def sidebar_status() -> None:
    manager = common.get_manager()
    snap = manager.current()
    if snap is None:
        st.caption("No run yet.")
    else:
        line = f"{live.STATUS_ICON.get(Status(snap.status), '')} Run #{snap.id}: {snap.status}"
        if snap.active and snap.progress:
            line += f" · epoch {snap.progress['epoch']}/{snap.config.epochs}"
        st.caption(line)
    if (snap is None or not snap.active) and manager.spare_state() == "ready":
        st.caption(":material/bolt: Worker ready: the next run like the last starts without loading the framework.")


with st.sidebar:
    present.sidebar_toggle()
    st.markdown("**Current run**")
    sidebar_status()
    common.presenter_sidebar()

page.run()
