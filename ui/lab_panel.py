"""The Lab page's parts (pages/lab_teacher.py stays a list of calls): the assignment form, the students' link as a QR code,
the board (the static board page, ui/lab_pages.py, in a frame: one renderer for the projector and the page), the
teacher's controls and the exports. The lab itself is the server's one room (ui.lab_routes.room)."""

from __future__ import annotations

from urllib.parse import urlsplit

import streamlit as st

from bench.lab.assignment import Assignment, LabError, read
from bench.lab.board import Board
from bench.plans import datasets, models
from bench.vocab.config import BATCH_MAX
from bench.output import lab_report
from ui import common, lab_routes, present, static_files
from ui.safe_text import escape

BATCHES = [2**i for i in range(0, 17) if 2**i <= BATCH_MAX]
BOARD_HEIGHT_PX = 1100


def student_link() -> str:
    """The student page's address on this server, as this browser reached it ("" when it cannot tell)."""
    parts = urlsplit(str(st.context.url or ""))
    if not parts.scheme or not parts.netloc:
        return ""
    return f"{parts.scheme}://{parts.netloc}{static_files.base_path()}/lab"


def assignment_form(targets: list[str]) -> None:
    """The assignment, and Open: a new lab (one already open is closed, its queued runs cancelled)."""
    with st.form("lab_open"):
        title = st.text_input("Title", value="Lab", max_chars=120)
        data = [name for name, info in datasets.DATASETS.items() if info.synthetic] or list(datasets.DATASETS)
        dataset = st.selectbox("Data set", data, index=0)
        cols = st.columns(2)
        families = cols[0].multiselect("Model families", list(models.FAMILIES), default=["mlp"])
        sizes = cols[1].multiselect("Sizes", list(models.SIZES), default=["xs", "s", "m"])
        epochs = cols[0].slider("Epochs", 1, 20, (1, 3))
        batch = cols[1].select_slider("Batch size", BATCHES, value=(32, 512))
        chosen = cols[0].multiselect("Devices", targets, default=targets[:2])
        cap = cols[1].number_input("Runs a student may queue", 1, 20, 2)
        limit = st.number_input("Samples each run trains on", 64, 1_000_000, 2000, step=500)
        if not st.form_submit_button("Open the lab", type="primary", icon=":material/play_arrow:"):
            return
    try:
        assignment = read(Assignment, {"title": title, "dataset": dataset, "families": families, "sizes": sizes,
                                       "epochs_min": epochs[0], "epochs_max": epochs[1], "batch_min": batch[0],
                                       "batch_max": batch[1], "targets": chosen, "cap": int(cap),
                                       "limit_samples": int(limit)})
    except LabError as exc:
        st.error(f"The lab was not opened: {escape(exc, limit=400)}")
        return
    lab_routes.room().open(assignment)


def status() -> None:
    """The open lab's line, outside the form's expander (which folds once a lab is open), on every run of the page."""
    room = lab_routes.room()
    room.publish()  # the board as of now: a lab opened in this run shows at once, not at the room's next look
    board = room.board()
    if board.state == "open" and board.lab:
        st.success(f"Lab {escape(board.lab)} is open: the students can submit.")


def share() -> None:
    """The students' link as a QR code (segno, as the projector view's) and as text."""
    link = student_link()
    if not link:
        return
    st.image(present.qr_data_uri(link), width=180)
    st.caption("Students scan this, or open:")
    st.code(link, language=None, wrap_lines=True)


def controls(board: Board) -> None:
    """Stop a run, remove a student, close the lab."""
    room = lab_routes.room()
    going = [r for r in board.rows if r.ticket is not None and r.status in ("queued", "starting", "running")]
    cols = st.columns(3)
    with cols[0]:
        ticket = st.selectbox("Run", [r.ticket for r in going], key="lab_stop_ticket",
                              format_func=lambda t: next(f"#{t} {r.student} · {r.family} {r.size} · {r.status}"
                                                         for r in going if r.ticket == t))
        if st.button("Stop this run", key="lab_stop", disabled=ticket is None) and ticket is not None:
            room.stop(int(ticket))
    with cols[1]:
        students = sorted({r.student for r in board.rows})
        who = st.selectbox("Student", students, key="lab_remove_student")
        if st.button("Remove this student", key="lab_remove", disabled=who is None) and who is not None:
            room.remove(who)
    with cols[2]:
        st.write("")
        if st.button("Close the lab", key="lab_close", disabled=board.state != "open"):
            try:
                room.close()
            except LabError as exc:
                st.error(escape(exc, limit=200))


def board_frame() -> None:
    """The board page in a frame: it redraws itself when the board changes (this page reruns on no timer)."""
    st.iframe(f"{static_files.base_path()}/lab/board", height=BOARD_HEIGHT_PX)


def exports(board: Board) -> None:
    name = board.lab or "lab"
    cols = st.columns(3)
    cols[0].download_button("JSON", lab_report.to_json(board), f"{name}.json", "application/json", key="lab_json")
    cols[1].download_button("CSV", lab_report.to_csv(board), f"{name}.csv", "text/csv", key="lab_csv")
    cols[2].download_button("HTML report", lab_report.to_html(board), f"{name}.html", "text/html", key="lab_html")


def can_control() -> bool:
    return common.can_control()
