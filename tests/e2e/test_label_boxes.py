"""Real Chromium: the utilization chart's phase and epoch names never overlap, in the figure as the server builds it
(drawn by st.plotly_chart and in exported reports, where no script of this project thins them), at a desktop's and a
phone's width, and in the projector view's styling on a room's screen, for a 2-epoch and a 200-epoch run."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bench.output import charts
from bench.vocab.readings import epochs_of, samples_of
from bench.vocab.run_info import Phase
from ui import present, static_files

pytestmark = pytest.mark.e2e

PHASES = [Phase("importing tensorflow", 0.2), Phase("loading data", 4.0), Phase("building model", 5.0),
          Phase("first step", 6.0), Phase("training", 6.8)]
FIRST_EPOCH_START_S = 6.8
EPOCH_S = 2.0
WIDTHS = {False: (1280, 390), True: (1280, 1920)}  # the projector view: a room's screen, never a phone
# every name drawn, as a box in page pixels (a hidden name is not drawn; an empty group has no width)
BOXES = """() => [...document.querySelectorAll('#chart .annotation')].map((a) => {
    const r = a.getBoundingClientRect();
    return {text: a.textContent, left: r.left, right: r.right, top: r.top, bottom: r.bottom};
}).filter((r) => r.right > r.left && r.bottom > r.top)"""


def run_series(n_epochs: int) -> charts.Series:
    """A run as its record holds it: start-up phases, ``n_epochs`` epochs of 2 s, a sample every 0.5 s with the
    process's CPU and memory and one GPU."""
    epochs = [{"epoch": e, "epoch_seconds": EPOCH_S, "includes_tracing": e == 1, "samples_per_s": 1000.0,
               "loss": 1.0 / e, "t_start_s": FIRST_EPOCH_START_S + EPOCH_S * (e - 1),
               "t_end_s": FIRST_EPOCH_START_S + EPOCH_S * e} for e in range(1, n_epochs + 1)]
    end_s = FIRST_EPOCH_START_S + EPOCH_S * n_epochs
    samples = [{"t_s": i * 0.5, "cpu_percent": 40.0 + i % 50, "process_cpu_percent": 150.0, "process_rss_mib": 900.0,
                "ram_used_mib": 4000.0, "gpus": [{"index": 0, "util_percent": 30.0 + i % 60}]}
               for i in range(int(end_s / 0.5) + 2)]
    return charts.Series("#1", epochs_of(epochs), samples_of(samples), PHASES)


def figure_json(n_epochs: int, projector: bool) -> dict[str, Any]:
    fig = charts.utilization_figure([run_series(n_epochs)])
    return json.loads((present.style_figure(fig) if projector else fig).to_json())


def overlapping(boxes: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:]
            if a["left"] < b["right"] and b["left"] < a["right"] and a["top"] < b["bottom"] and b["top"] < a["bottom"]]


@pytest.fixture(scope="module")
def chart_page(browser: Any) -> Any:
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    page.set_content("<!doctype html><html><head><meta charset='utf-8'></head>"
                     "<body style='margin:0;font-family:sans-serif'><div id='chart' style='width:100%'></div></body></html>")
    page.add_script_tag(path=str(static_files._plotly_path()))
    page.wait_for_function("() => typeof window.Plotly === 'object'")
    yield page
    page.context.close()


@pytest.mark.parametrize("projector", [False, True], ids=["plain", "projector"])
@pytest.mark.parametrize("n_epochs", [2, 200])
def test_no_two_names_overlap_at_a_desktops_or_a_phones_width(chart_page, n_epochs, projector):
    spec = figure_json(n_epochs, projector)
    names = [a["text"] for a in spec["layout"].get("annotations", [])]
    epoch_names = [n for n in names if n.startswith("epoch")]
    assert epoch_names, "the run's epochs are named"
    assert len(epoch_names) <= 20, f"a bounded number of epoch names, not one per epoch: {len(epoch_names)}"
    if n_epochs == 2:
        assert "epoch 1 (tracing)" in names and "framework" in names, names
    for width in WIDTHS[projector]:
        chart_page.set_viewport_size({"width": width, "height": 900})
        chart_page.evaluate("""(spec) => { window.__drawn = false; const gd = document.getElementById('chart');
            window.Plotly.purge(gd);
            return window.Plotly.newPlot(gd, spec.data, spec.layout, {responsive: true, displaylogo: false})
                .then(() => { window.__drawn = true; }); }""", spec)
        chart_page.wait_for_function(f"""() => window.__drawn && document.querySelectorAll('#chart .annotation').length
            === {len(names)} && Math.abs(document.querySelector('#chart .main-svg').getBoundingClientRect().width
            - {width}) < 2""")
        boxes = chart_page.evaluate(BOXES)
        assert len(boxes) == len(names), (width, [b["text"] for b in boxes], names)
        clashes = overlapping(boxes)
        assert not clashes, (f"{n_epochs} epochs, {'projector' if projector else 'plain'}, {width} px: "
                             f"{[(a['text'], b['text']) for a, b in clashes]}; boxes {clashes[:3]}")
