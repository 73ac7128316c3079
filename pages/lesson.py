"""Lesson: the CPU-vs-GPU story in four steps, each one click, explained for a class."""

from __future__ import annotations

import streamlit as st

from bench.vocab.config import ConfigError
from ui import common, lesson
from ui.safe_text import escape

common.page_setup()
manager = common.get_manager()
hardware = common.get_hardware()

st.title("Lesson: when does a GPU train faster?")
st.caption("Four steps, one click each. Read the explanation, press the button, watch what happens.")
common.store_warning()

gpu = lesson.gpu_target(hardware)
if gpu:
    st.info(f"Each step runs live on this machine: its CPU (all cores) against {gpu}.", icon=":material/bolt:")
else:
    st.info("This machine has no GPU, so each step shows the GPU side as **measured on an NVIDIA H100 by this "
            "project, not live**, and its live button runs the CPU side here: one core against all cores.",
            icon=":material/info:")

step_key = st.radio("Step", [s.key for s in lesson.STEPS], key="lesson_step", horizontal=True,
                    format_func=lambda k: lesson.STEP_BY_KEY[k].title, label_visibility="collapsed")
step = lesson.STEP_BY_KEY[step_key]
st.header(step.title)
st.markdown(step.text)

if not gpu:
    lesson.show_shipped(step)
    st.divider()

runs = ", ".join(escape(c.label(), limit=200) for c in lesson.step_configs(step, hardware))
control = common.can_control()
if st.button("Run this step live" if gpu else "Run the CPU side live here", key=f"lesson_run_{step.key}",
             type="primary", icon=":material/play_arrow:", disabled=not control,
             help=f"Queues: {runs}. Small on purpose: a step ends in about a minute."):
    try:
        lesson.start_step(manager, step, hardware)
    except ConfigError as exc:
        st.error("This step cannot start here:\n\n" + "\n".join(f"- {escape(e, limit=400)}" for e in exc.errors))
if not control:
    st.caption("View only: the presenter starts the steps.")


@st.fragment  # no timer: the group's stream reruns it when a run of the step ends
def live_panel() -> None:
    lesson.show_live(manager, step)


live_panel()

if gpu:
    with st.expander(f"The same step {lesson.SHIPPED_LABEL.lower()}"):
        lesson.show_shipped(step)
