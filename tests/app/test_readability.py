"""Tables read by a room: a reading that does not exist is "—" (never "None" or "nan"), the device a run trained
on is a short label with the framework's full name kept in a hidden column, and the Sweep's defaults give epochs
longer than its sampling interval."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from streamlit.testing.v1 import AppTest

from bench.vocab import records
from bench.store import Store

ROOT = Path(__file__).resolve().parents[2]
RAW_DEVICE = "/job:localhost/replica:0/task:0/device:CPU:0"


def app(path: str) -> AppTest:
    return AppTest.from_file(str(ROOT / path), default_timeout=30)


def no_missing_words(frame: pd.DataFrame) -> list[str]:
    """Cells that would print as None/nan/NaN/<NA> in the browser."""
    bad = []
    for col in frame.columns:
        for value in frame[col]:
            if value is None or (isinstance(value, float) and value != value) or str(value) in ("None", "nan",
                                                                                                  "NaN", "<NA>"):
                bad.append(f"{col}: {value!r}")
    return bad


def column_config(element) -> dict:
    return json.loads(element.proto.columns or "{}")


def stored_cpu_run(path: Path) -> int:
    store = Store(path)
    run_id = store.create_run({"dataset": "synthetic-mnist", "model": "mlp", "size": "xs", "epochs": 3,
                               "device": "cpu"}, status=records.Status.RUNNING, label="mlp xs")
    store.update_run(run_id, info={"placement": RAW_DEVICE})
    for n in (1, 2, 3):
        store.add_epoch(run_id, {"epoch": n, "epoch_seconds": 1.0, "includes_tracing": n == 1,
                                 "samples_per_s": 4000.0, "t_start_s": float(n), "t_end_s": n + 1.0})
    # CPU samples only: no GPU was sampled, so "mean GPU %" does not exist
    store.add_samples(run_id, [{"t_s": 1.0 + i * 0.5, "cpu_percent": 60.0, "gpus": []} for i in range(8)])
    store.update_run(run_id, status=records.Status.FINISHED)
    return run_id


def test_history_prints_a_dash_for_a_missing_reading_and_a_short_device(isolated_store):
    run_id = stored_cpu_run(isolated_store)
    at = app("pages/history.py").run()
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    assert no_missing_words(table) == []
    row = table[table["id"] == run_id].iloc[0]
    assert row["mean GPU %"] == "—", "no GPU was sampled"
    assert row["mean CPU %"] == "60" and row["samples/s"] == "4,000"
    assert row["trained on"] == "CPU:0"
    assert row["device (full name)"] == RAW_DEVICE
    config = column_config(at.dataframe[0])
    assert config["device (full name)"]["hidden"] is True, "the full name is one click away, not in the way"
    assert "full device name" in config["trained on"]["help"]


def test_sweep_tables_print_no_none(isolated_store):
    at = app("pages/sweep.py").run()
    choice = at.selectbox(key="swp_bundled")
    choice.select(next(o for o in choice.options if o.startswith("MLP xs..xl"))).run()
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    assert no_missing_words(table) == []
    assert "SM active %" in table.columns, "a sweep with a GPU target shows the GPM columns"
    assert (table["SM active %"] == "—").all(), "the file predates GPM readings: none exists"
    assert table["GPU %"].str.fullmatch(r"\d+").all(), "NVML readings, rounded"


def test_sweep_defaults_sample_steady_epochs():
    at = app("pages/sweep.py").run()
    assert not at.exception, at.exception
    limit = at.number_input(key="swp_limit").value
    interval = at.slider(key="swp_interval").value
    batch = at.number_input(key="swp_batch").value
    # on a 2-core machine the xs MLP trains about 55,000 samples/s at batch 128 (measured): its epoch must hold
    # at least two samples
    assert batch == 128
    assert limit / 55_000 >= 2 * interval, (limit, interval)
