"""Dashboard entry point: page navigation and the sidebar status of the current run; nothing else.

`streamlit run app.py` finds ``app = st.App(...)`` below and imports this file as a module (``__name__`` is "app"):
that import only builds the server, with the live stream and the static files beside Streamlit's routes
(ui/live_routes.py). Every page view then runs this file as Streamlit's script (``__name__`` is "__main__").
"""

from __future__ import annotations

import streamlit as st

from ui import common, lab_routes, live, live_routes, metrics_route, present


def page_view() -> None:
    """One page view: the navigation, the sidebar, the page."""
    # an emoji icon: Streamlit draws it in the page; a :material/...: one is fetched from fonts.gstatic.com
    st.set_page_config(page_title="CPU vs GPU training bench", page_icon="⚡", layout="wide",
                       initial_sidebar_state="collapsed" if present.requested() else "auto")

    st.session_state["_via_app"] = True  # see ui.common.page_setup
    train = st.Page("pages/train.py", title="Train", icon=":material/model_training:", url_path="train")

    def _root() -> None:
        """The app's root opens Train with the link's settings. Train keeps its own address, /train: as the default
        page Streamlit would serve it at the root only, and a /train link (the README's) met "Page not found"."""
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
        st.Page("pages/lab_teacher.py", title="Lab", icon=":material/science:", url_path="lab_teacher"),
    ]
    page = st.navigation(pages)
    if page is root:
        # Switch before anything is drawn: a run that is about to be replaced must send no element (a timed fragment
        # drawn first once fired into the Train page's run and left that viewer a blank page under load).
        page.run()

    with st.sidebar:
        present.sidebar_toggle()
        st.markdown("**Current run**")
        manager = common.get_manager()
        metrics_route.follow(manager)  # the current run joins /metrics
        live.sidebar_status(manager)
        common.presenter_sidebar()

    page.run()


if __name__ == "__main__":
    page_view()
else:  # imported by `streamlit run` to build the server: Streamlit's routes, the live stream and the static files
    app = st.App(__file__, routes=live_routes.routes() + lab_routes.routes(), lifespan=live_routes.lifespan)
