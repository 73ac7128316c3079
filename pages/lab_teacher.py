"""Lab: every student trains. The teacher opens a lab (the assignment), the class submits from /lab on their phones,
a fair queue runs their runs, and the board fills in (docs/LAB.md)."""

from __future__ import annotations

import streamlit as st

from ui import common, lab_panel, lab_routes

common.page_setup()
st.title("Lab: every student trains")
st.caption("Open the lab, show the code: each student picks a model and a batch size, the queue takes turns "
           "between them, and each run lands on the class's chart as it ends.")
common.store_warning()

room = lab_routes.room()
board = room.board()
if lab_panel.can_control():
    with st.expander("Open a lab" if board.state != "open" else "Open a new lab (closes this one)",
                     expanded=board.state != "open"):
        lab_panel.assignment_form(common.lab_targets())
        board = room.board()
else:
    st.info("View only: the presenter opens the lab and runs it.", icon=":material/lock:")
lab_panel.status()

left, right = st.columns([1, 3])
with left:
    lab_panel.share()
with right:
    if board.state == "open" and lab_panel.can_control():
        lab_panel.controls(board)
    if board.rows:
        lab_panel.exports(board)
lab_panel.board_frame()
