"""Train: pick a dataset, model, size, epochs, batch size and device; Start; watch it live."""

from __future__ import annotations

import streamlit as st

from bench.config import ConfigError
from ui import common, config_form, live

manager = common.get_manager()
hardware = common.get_hardware()

st.title("Train")
st.caption("One training run, live: time per epoch beside CPU and GPU utilization.")
common.store_warning()

config = config_form.config_form(hardware)
if st.button("Start", type="primary", icon=":material/play_arrow:", key="start_run"):
    try:
        run_id = manager.submit(config)
        st.toast(f"Run #{run_id} queued")
    except ConfigError as exc:
        st.error("This run cannot start:\n\n" + "\n".join(f"- {e}" for e in exc.errors))

st.divider()
live.live_panel(manager)
