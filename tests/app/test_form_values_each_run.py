"""The run form hands its values to the browser on every script run, not only on the run that seeded them.

Streamlit sends a keyed widget's value from session state only on the script run that wrote it (the element's
`set_value`); on later runs the browser keeps what it has. A browser that first draws the widget on a later run (most
likely the seeding run was cut short by another rerun: a first visit while the server is busy) has nothing, so it shows the
widget's own default, its minimum, and sends that back with the next click: a sweep then started at 1 epoch, batch
size 1, no samples, or a CPU run on one thread. Seen once in a whole `make test`: the Sweep page showed Epochs 1,
Batch size 1, Training samples 0 and refused "batch size 1 does not split evenly over 2 devices". The same holds for
Compare's targets (an empty list) and the Machines page's choices and prices (the first machine, no price).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]

PAGES = [("pages/train.py", "cfg"), ("pages/sweep.py", "swp"), ("pages/compare.py", "cmp")]
NUMBER_BOXES = ("epochs", "batch", "limit", "seed")


@pytest.mark.parametrize(("page", "prefix"), PAGES)
def test_every_run_sends_the_forms_values_so_a_late_browser_never_shows_the_minimums(page: str, prefix: str):
    at = AppTest.from_file(str(ROOT / page), default_timeout=30).run()
    assert not at.exception
    seeded = {name: at.number_input(key=f"{prefix}_{name}").value for name in NUMBER_BOXES}
    at.run()  # a second run with nothing changed, as after a rerun the browser asked for
    assert not at.exception
    for name in NUMBER_BOXES:
        box = at.number_input(key=f"{prefix}_{name}")
        assert box.value == seeded[name], f"{name}: the value is kept"
        assert box.proto.set_value, f"{name}: sent again, so a browser drawing it now shows {seeded[name]}"
        assert box.proto.value == seeded[name], f"{name}: the value sent is the form's"
    threads = at.slider(key=f"{prefix}_threads")
    assert threads.proto.set_value, "the CPU threads: sent again (its minimum, 1, would run on one thread)"


def test_compares_targets_are_sent_on_every_run():
    at = AppTest.from_file(str(ROOT / "pages/compare.py"), default_timeout=30).run()
    targets = at.multiselect(key="cmp_targets")
    seeded = list(targets.value)
    assert seeded, "Compare starts with its default targets"
    at.run()
    targets = at.multiselect(key="cmp_targets")
    assert list(targets.value) == seeded
    assert targets.proto.set_value, "the targets sent again: a browser drawing them now never shows none"


def test_the_machines_choices_and_prices_are_sent_on_every_run():
    at = AppTest.from_file(str(ROOT / "pages/machines.py"), default_timeout=30).run()
    assert not at.exception
    chosen = {box.key: box.value for box in at.selectbox}
    prices = {box.key: box.value for box in at.number_input if box.key.startswith("mach_price_")}
    assert {"mach_base", "mach_workload"} <= set(chosen) and prices, "the shipped bundles give choices and prices"
    at.run()
    for key, value in chosen.items():
        box = at.selectbox(key=key)
        assert box.value == value and box.proto.set_value, f"{key}: sent again, never the first option instead"
    for key, value in prices.items():
        box = at.number_input(key=key)
        assert box.value == value and box.proto.set_value, f"{key}: sent again"


def _sidebar_switch() -> None:
    import streamlit as st

    from ui import present

    with st.sidebar:
        present.sidebar_toggle()


def test_the_projector_switch_from_a_link_is_sent_on_every_run():
    from ui import present

    at = AppTest.from_function(_sidebar_switch, default_timeout=30)
    at.query_params[present.QUERY] = "1"
    at.run()
    assert not at.exception
    assert at.toggle(key=present.STATE_KEY).value is True, "?present=1 turns the projector view on"
    at.run()
    switch = at.toggle(key=present.STATE_KEY)
    assert switch.value is True
    assert switch.proto.set_value, "sent again: a browser drawing the switch now shows it on, not off"


def test_a_links_device_is_sent_on_every_run():
    at = AppTest.from_file(str(ROOT / "pages/train.py"), default_timeout=30)
    at.query_params["device"] = "cpu"
    at.run()
    assert not at.exception
    assert at.radio(key="cfg_device").value == "cpu"
    at.run()
    device = at.radio(key="cfg_device")
    assert device.value == "cpu"
    assert device.proto.set_value, "sent again: a browser drawing it now shows the link's device, not the first one"
