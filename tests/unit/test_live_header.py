"""The live header's data (ui.live.header_data) says what the ended run's Streamlit elements say: the same status
words, progress text and tiles, built by the same functions."""

from __future__ import annotations

import functools
from types import SimpleNamespace

from bench.analysis.run_summary import RunSummary
from bench.vocab.config import RunConfig
from bench.vocab.readings import epochs_of, samples_of
from bench.vocab.run_info import RunInfo
from bench.runs.run_state import Progress, RunSnapshot
from ui import live


def snap(**over):
    base = {"id": 3, "status": "running", "config": RunConfig(epochs=5), "info": RunInfo(placement="/device:CPU:0"),
            "owner": None, "phase": "training", "active": True, "queue_position": None, "summary": RunSummary(),
            "store_error": None, "error": None,
            "epochs": [{"epoch": 1, "epoch_seconds": 2.5, "samples_per_s": 8000.0, "includes_tracing": True},
                       {"epoch": 2, "epoch_seconds": 2.0, "samples_per_s": 10000.0, "includes_tracing": False}],
            "samples": [{"t_s": 1.0, "cpu_percent": 97.0, "gpus": []}],
            "progress": Progress(epoch=3, batch=10, batches=40)}
    base.update(over)
    # a RunSnapshot holds its readings typed, as tuples
    base["epochs"], base["samples"] = epochs_of(base["epochs"]), samples_of(base["samples"])
    s = SimpleNamespace(**base)
    s.eta_s = lambda: 7.0
    for name in ("epoch_fraction", "current_epoch", "fraction_done"):  # the progress arithmetic: RunSnapshot's own
        setattr(s, name, functools.partial(getattr(RunSnapshot, name), s))
    s.energy = lambda: s.summary  # the energy keys of the summary (RunSnapshot.energy)
    return s


def test_the_header_data_holds_the_same_words_as_the_elements():
    s = snap()
    data = live.header_data(s)
    words = "".join(text for text, _ in data["status"]["parts"])
    assert words.startswith("Run #3 running · ") and words.endswith(" · trained on CPU:0"), words
    # the same parts as markdown, each escaped (a label or device may be an imported record's words)
    line = live.status_line(s)
    assert line.startswith(live.STATUS_ICON["running"] + " Run \\#3 **running** · "), line
    assert line.endswith(" · trained on **CPU\\:0**"), line
    assert data["status"]["icon"] == "directions_run"
    assert data["progress"] == {"fraction": (2 + 10 / 40) / 5, "text": "Epoch 3/5 · batch 10/40 · ETA 7.00 s"}
    assert [(t["label"], t["value"]) for t in data["tiles"]] == [
        ("Last epoch", "2.00 s"), ("Samples/s", "10,000"), ("CPU", "97 %"), ("GPU", "n/a")]
    assert data["tiles"][0]["note"] == "steady median 2.00 s"


def test_a_throttled_epoch_is_a_warning_line():
    s = snap(epochs=[{"epoch": 1, "epoch_seconds": 2.0, "throttle_reasons": ["power cap"], "includes_tracing": False}])
    kinds = [line["kind"] for line in live.header_data(s)["lines"]]
    assert "warning" in kinds
