"""Train: pick a dataset, model, size, epochs, batch size and device; Start; watch it live."""

from __future__ import annotations

import streamlit as st

from bench.vocab.config import ConfigError
from ui import common, config_form, live, machine, present, url_state
from ui.safe_text import escape

common.page_setup()
manager = common.get_manager()
hardware = common.get_hardware()

st.title("Train")
# The projector's first screen shows the run while one is live: its panel comes first, the settings after it
projecting_live = present.is_on() and (live_now := manager.current()) is not None and live_now.active
if not projecting_live:
    st.caption("One training run, live: time per epoch beside CPU and GPU utilization.")
common.store_warning()
if projecting_live:
    live.live_panel(manager, can_control=common.can_control())
    st.divider()

control = common.can_control()
started = st.session_state.get("train_last_started")
if "train_joined_live" not in st.session_state:  # this session's first look: was a run live when it opened the page?
    current = manager.current()
    st.session_state["train_joined_live"] = current.id if current is not None and current.active else None
joined = st.session_state["train_joined_live"]
# after Start the settings fold away so the live charts fit on one screen; a new label makes a new, folded expander.
# A viewer who opens the page (or a link) while a run is live meets them folded too, the run's panel on the first
# screen, as the presenter does after Start; the label stays the same for the session, so the page never jumps.
if started:
    label = f"Run settings (run #{started:d} started; open to change)"
elif joined is not None:
    label = f"Run settings (run #{joined:d} was live when you came; open to change)"
else:
    label = "Run settings"
device_choices = machine.offered_devices(hardware)
url_state.load("cfg", fields=url_state.TRAIN_FIELDS, hardware=hardware, devices=device_choices)
with st.expander(label, expanded=started is None and joined is None and not present.is_on(), icon=":material/tune:"):
    config = config_form.config_form(hardware, disabled=not control)
url_state.save("cfg", config, fields=url_state.TRAIN_FIELDS)
if not control:
    st.caption("View only: enter the presenter key in the sidebar to start or stop runs.")
# the controls as one row, side by side (the Copy link's frame stretches: room for "Copy failed: ..."); in the projector
# view the join code stands beside them
controls_col, qr_col = st.columns(2) if present.is_on() else (st.container(), None)
controls = controls_col.container(horizontal=True, vertical_alignment="center", gap="small", key="train_controls")
start = controls.button("Start", type="primary", icon=":material/play_arrow:", key="start_run", disabled=not control)
with controls:
    url_state.copy_link_button()
if qr_col is not None:
    with qr_col:
        present.share_qr()
if start:
    try:
        warm = manager.pool.state() == "ready"
        run_id = manager.submit(config)
        if warm:  # the redraw this click causes shows the first batch, not the one a refresh later
            manager.wait_first_batch(run_id, live.FIRST_BATCH_WAIT_S)
        st.session_state["train_last_started"] = run_id
        st.session_state["train_started"] = run_id
        st.rerun()
    except ConfigError as exc:
        st.error("This run cannot start:\n\n" + "\n".join(f"- {escape(e, limit=400)}" for e in exc.errors))
if "train_started" in st.session_state:
    st.toast(f"Run #{st.session_state.pop('train_started'):d} queued")

if not projecting_live:
    st.divider()
    live.live_panel(manager, can_control=control)
