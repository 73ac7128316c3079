"""Display text: short device names, and "—" for a reading that does not exist."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from bench.output import display


@pytest.mark.parametrize("raw, short", [
    ("/job:localhost/replica:0/task:0/device:CPU:0", "CPU:0"),
    ("/job:localhost/replica:0/task:0/device:GPU:1", "GPU:1"),
    ("/device:CPU:0", "CPU:0"),
    ("cuda:0", "GPU:0"),
    ("TFRT_CPU_0", "CPU:0"),
    ("CudaDevice(id=2)", "GPU:2"),
    ("cpu", "CPU"),
    ("/device:GPU:0,/device:GPU:1", "GPU:0, GPU:1"),
    ("something else", "something else"),
    (None, "—"),
    ("", "—"),
])
def test_short_device(raw, short):
    assert display.short_device(raw) == short


@pytest.mark.parametrize("value", [None, math.nan, float("nan"), pd.NA])
def test_a_missing_reading_is_a_dash(value):
    assert display.missing(value)
    assert display.cell(value, "{:.0f}") == "—"


def test_a_reading_is_formatted_and_zero_is_kept():
    assert display.cell(0.0, "{:.0f}") == "0", "zero is a reading, not a missing one"
    assert display.cell(12345.6, "{:,.0f}") == "12,346"
    assert display.cell("cpu") == "cpu"
    assert not display.missing("text")
