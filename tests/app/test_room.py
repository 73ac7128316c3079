"""AppTest: links open the form they describe, a bad parameter gives a note and the default, the projector switch
follows ?present=1, and the lesson page shows each step."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from bench.hardware import devices
from ui import lesson

ROOT = Path(__file__).resolve().parents[2]


def opened(page: str, **params: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / page), default_timeout=60)
    for name, value in params.items():
        at.query_params[name] = value
    return at.run()


def test_train_link_sets_the_form_and_the_projector_view():
    at = opened("pages/train.py", epochs="7", size="m", present="1")
    assert not at.exception
    assert at.number_input(key="cfg_epochs").value == 7
    assert at.select_slider(key="cfg_size").value == "m"
    assert at.session_state["present_mode"] is True
    assert not at.warning
    assert at.query_params["epochs"] == "7" and at.query_params["present"] == "1"


def test_bad_parameter_shows_a_note_and_keeps_the_default():
    at = opened("pages/train.py", epochs="-3", colour="red")
    assert not at.exception
    assert at.number_input(key="cfg_epochs").value == 5
    text = " ".join(w.value for w in at.warning)
    assert "epochs=-3" in text and "from 1 to 1,000" in text and "` colour `" in text
    assert "epochs" not in at.query_params  # the link is rewritten to what the form shows


def test_changing_the_form_writes_the_link():
    at = opened("pages/train.py")
    assert "epochs" not in at.query_params
    at.number_input(key="cfg_epochs").set_value(9).run()
    assert at.query_params["epochs"] == "9"


def test_compare_link_opens_the_preset_with_those_targets():
    at = opened("pages/compare.py", preset="seed-cifar10-mlp", targets="cpu/1,cpu")
    assert not at.exception
    assert at.selectbox(key="cmp_model").value == "seed-cifar10-mlp"
    assert at.number_input(key="cmp_batch").value == 32
    assert at.multiselect(key="cmp_targets").value == ["cpu/1", "cpu"]
    assert not at.warning


def test_compare_link_with_an_unknown_target_keeps_the_rest():
    at = opened("pages/compare.py", preset="seed-text", targets="gpu:9,cpu")
    assert at.selectbox(key="cmp_model").value == "seed-text"
    assert at.multiselect(key="cmp_targets").value == ["cpu"]
    assert any("gpu:9" in w.value for w in at.warning)


def test_projector_view_hides_the_imports_on_compare():
    at = opened("pages/compare.py", present="1")
    assert not at.exception
    assert not at.subheader or all("another machine" not in s.value for s in at.subheader)
    plain = opened("pages/compare.py")
    assert any("another machine" in s.value for s in plain.subheader)


@pytest.mark.parametrize("step", [s.key for s in lesson.STEPS])
def test_lesson_step_renders_with_its_text_and_one_button(step):
    at = AppTest.from_file(str(ROOT / "pages/lesson.py"), default_timeout=60).run()
    at.radio(key="lesson_step").set_value(step).run()
    assert not at.exception
    assert at.header[0].value == lesson.STEP_BY_KEY[step].title
    assert at.button(key=f"lesson_run_{step}")
    if not lesson.gpu_target(devices.discover()):
        assert any(lesson.SHIPPED_LABEL in m.value for m in at.markdown), "the H100 figures say where they are from"


def test_the_lessons_h100_figures_name_the_samples_their_runs_held():
    """The shipped size sweep trained 30,000 samples an epoch: the caption says so, from the records (it said 60,000)."""
    sweep = lesson.shipped_sweep(lesson.SWEEP_SIZES)
    assert sweep is not None
    held = {r.info.n_train for r in sweep.runs}
    for size in ("xs", "xl"):
        found = lesson.shipped_speedup(size)
        assert found is not None and found["epoch_samples"] in held and found["epoch_samples"] == 30000
    at = AppTest.from_file(str(ROOT / "pages/lesson.py"), default_timeout=60).run()
    if not lesson.gpu_target(devices.discover()):
        assert any("30,000 samples an epoch" in c.value for c in at.caption), [c.value for c in at.caption]


def test_lesson_steps_fit_this_machine():
    hardware = devices.discover()
    for step in lesson.STEPS:
        configs = lesson.step_configs(step, hardware)
        assert len(configs) == 2
        for config in configs:
            config.validate(hardware)
            assert config.epochs <= 3 and (config.limit_samples or 10**9) <= 4000
