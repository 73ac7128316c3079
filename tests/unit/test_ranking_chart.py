"""The Machines ranking as a picture (bench.output.ranking): bars fastest (and cheapest) first, a figure read between
sizes drawn apart from a measured one, the baseline marked, the caveats on the bar that carries them, no cost panel
without prices; and the tables' notes, each reason said once with the machines it holds for."""

from __future__ import annotations

from typing import Any

from bench.analysis import machines as M
from bench.output import ranking as R

RAPL = "cpu: RAPL not readable here: /sys/class/powercap is absent (no powercap driver, as in most VMs and containers)."
JAX = "backend jax (baseline tensorflow)"
SUITE = "suite records/h100-results (baseline 1/quick)"


def _row(machine: str, target: str, seconds: float, *, how: str = M.MEASURED, price: float | None = None,
         flags: tuple[str, ...] = (), energy: float | None = None, energy_note: str | None = RAPL,
         name: str | None = None) -> M.Row:
    return M.Row(machine=machine, machine_name=name or machine, target=target, how=how, note="how it was found",
                 seconds_per_1k=seconds, samples_per_s=1000 / seconds, energy_j_per_1k=energy,
                 energy_note=energy_note, price_per_hour=price,
                 cost_per_1k=M.cost_per_1k(seconds, price), flags=flags)


def _ranking(rows: list[M.Row]) -> M.Ranking:
    timed = tuple(sorted(rows, key=lambda r: r.seconds_per_1k or 0))
    costed = tuple(sorted((r for r in timed if r.cost_per_1k is not None), key=lambda r: r.cost_per_1k or 0))
    return M.Ranking(model="mlp", size="s", batch_size=128, by_time=timed, by_cost=costed, unranked=())


def _bars(fig: Any, axis: str = "x") -> list[dict[str, Any]]:
    """Every bar of one panel with its own look: label, value, text, trace name, colour, pattern, outline."""
    out = []
    for trace in fig.data:
        if trace.xaxis != axis:
            continue
        colours, shapes = trace.marker.color, trace.marker.pattern.shape
        for i, (label, value, text) in enumerate(zip(trace.y, trace.x, trace.text)):
            out.append({"label": label, "value": value, "text": text, "name": trace.name,
                        "colour": colours[i] if isinstance(colours, (list, tuple)) else colours,
                        "pattern": shapes[i] if isinstance(shapes, (list, tuple)) else shapes,
                        "outline": trace.marker.line.width or 0})
    return out


def _top_down(fig: Any, axis: str = "y") -> list[str]:
    """The panel's labels from top to bottom (a reversed axis draws its first category at the top)."""
    layout_axis = fig.layout[axis.replace("y", "yaxis")]
    order = list(layout_axis.categoryarray)
    return order if layout_axis.autorange == "reversed" else order[::-1]


LAPTOP = _row("laptop", "cpu", 9.0, price=0.10)
ONE_CORE = _row("laptop", "cpu/1", 12.0, price=0.10)
H100 = _row("h100", "gpu:0", 1.8, how=M.INTERPOLATED, price=4.0, flags=(JAX, SUITE), energy=3.5,
            energy_note="integrated from power samples (gpu:0)")


def test_bars_are_ranked_fastest_at_the_top_and_cheapest_at_the_top() -> None:
    fig = R.ranking_figure(_ranking([ONE_CORE, LAPTOP, H100]))
    top_down = _top_down(fig)
    assert [label.rsplit(" · ", 1)[1] for label in top_down] == ["gpu:0", "cpu", "cpu/1"]
    values = {b["label"]: b["value"] for b in _bars(fig)}
    assert [values[label] for label in top_down] == [1.8, 9.0, 12.0]
    cheapest_first = [label.rsplit(" · ", 1)[1] for label in _top_down(fig, "y2")]
    assert cheapest_first == ["cpu", "cpu/1", "gpu:0"]  # the H100 is fastest but dearest


def test_a_figure_read_between_sizes_is_drawn_apart_and_named_so() -> None:
    fig = R.ranking_figure(_ranking([LAPTOP, H100]))
    bars = {b["label"].rsplit(" · ", 1)[1]: b for b in _bars(fig)}
    measured, estimated = bars["cpu"], bars["gpu:0"]
    assert (measured["colour"], measured["pattern"]) == (R.MEASURED_COLOUR, "")
    assert (estimated["colour"], estimated["pattern"]) == (R.ESTIMATE_COLOUR, R.ESTIMATE_PATTERN)
    assert estimated["name"] == R.ESTIMATE_NAME and measured["name"] == R.MEASURED_NAME
    assert estimated["text"].startswith("≈") and not measured["text"].startswith("≈")
    assert "estimate" in R.ESTIMATE_NAME
    legend = [t.name for t in fig.data if t.showlegend is not False]
    assert legend.count(R.ESTIMATE_NAME) == 1 and legend.count(R.MEASURED_NAME) == 1  # once, not once per panel


def test_the_baseline_is_marked_and_no_other_bar() -> None:
    fig = R.ranking_figure(_ranking([LAPTOP, ONE_CORE, H100]), baseline=("laptop", "cpu"))
    bars = {b["label"].replace("<b>", "").replace("</b>", "").rsplit(" · ", 1)[1]: b for b in _bars(fig)}
    base = bars["cpu"]
    assert base["outline"] > 0 and "baseline" in base["text"] and base["label"].startswith("<b>")
    assert base["name"] == R.BASELINE_NAME
    for other in ("cpu/1", "gpu:0"):
        assert bars[other]["outline"] == 0 and "· baseline" not in bars[other]["text"], bars[other]
        assert not bars[other]["label"].startswith("<b>")
    unmarked = R.ranking_figure(_ranking([LAPTOP, ONE_CORE, H100]))
    assert all(b["outline"] == 0 and b["name"] != R.BASELINE_NAME for b in _bars(unmarked))


def test_the_caveats_are_said_short_on_the_bar_that_carries_them() -> None:
    fig = R.ranking_figure(_ranking([LAPTOP, ONE_CORE, H100]), baseline=("laptop", "cpu"))
    texts = {b["label"].rsplit(" · ", 1)[1].removesuffix("</b>"): b["text"] for b in _bars(fig)}
    assert "backend jax" in texts["gpu:0"] and "other suite" in texts["gpu:0"]
    assert "records/h100-results" not in texts["gpu:0"]  # a long value is said as "other suite"
    assert all("backend" not in texts[t] and "suite" not in texts[t] for t in ("cpu", "cpu/1"))
    hover = next(t for t in fig.data if "gpu:0" in t.y[0]).customdata[0]
    assert any(JAX in str(cell) for cell in hover)  # in full on hover


def test_no_cost_panel_without_prices() -> None:
    unpriced = [_row("laptop", "cpu", 9.0), _row("h100", "gpu:0", 1.8)]
    fig = R.ranking_figure(_ranking(unpriced))
    assert {t.xaxis for t in fig.data} == {"x"}
    assert not any("Cost" in (a.text or "") for a in fig.layout.annotations)
    priced = R.ranking_figure(_ranking([LAPTOP, H100]))
    assert {t.xaxis for t in priced.data} == {"x", "x2"}
    assert any("Cost" in (a.text or "") for a in priced.layout.annotations)


def test_outside_text_is_no_markup_in_the_figure() -> None:
    hostile = _row("x", "cpu", 5.0, name="<a href='https://example.com'>click</a>")
    fig = R.ranking_figure(_ranking([hostile, LAPTOP]))
    labels = [b["label"] for b in _bars(fig)]
    assert not any("<a " in label for label in labels) and any("&lt;a" in label for label in labels)


def test_two_machines_with_one_name_keep_two_bars() -> None:
    fig = R.ranking_figure(_ranking([_row("a", "cpu", 5.0, name="laptop"), _row("b", "cpu", 6.0, name="laptop")]))
    assert len({b["label"] for b in _bars(fig)}) == 2


def test_short_caveats() -> None:
    assert R.short_caveat(JAX) == "backend jax"
    assert R.short_caveat("XLA on (baseline off)") == "XLA on"
    assert R.short_caveat(SUITE) == "other suite"
    assert R.short_caveat(M.BASELINE_READ_BETWEEN) == M.BASELINE_READ_BETWEEN


def test_a_reason_is_said_once_with_the_machines_it_holds_for() -> None:
    rows = [LAPTOP, ONE_CORE, _row("desk", "cpu", 7.0, name="desk"), H100]
    notes = R.table_notes(rows)
    energy = [m for m in notes.missing if m.figure == "Energy"]
    assert len(energy) == 1 and energy[0].reason == RAPL
    assert energy[0].where_text == "laptop · cpu, cpu/1; desk · cpu"
    assert energy[0].text == f"Energy — {RAPL.rstrip('.')} — on laptop · cpu, cpu/1; desk · cpu"
    cost = next(m for m in notes.missing if m.figure == "Cost")
    assert cost.reason == "no price entered" and cost.where_text == "desk · cpu"
    assert [m.figure for m in notes.missing] == ["Energy", "Cost", "Speed-up"]
    assert R.cell(None, ".3g") == R.MISSING and RAPL not in R.cell(None, ".3g")


def test_caveats_and_energy_remarks_become_numbered_marks() -> None:
    other = _row("tpu", "gpu:0", 2.0, flags=(SUITE,), energy_note=None)
    notes = R.table_notes([LAPTOP, H100, other])
    assert notes.notes == (("¹", JAX), ("²", SUITE), ("³", "integrated from power samples (gpu:0)"))
    assert notes.caveats(H100) == "¹ ²" and notes.caveats(other) == "²" and notes.caveats(LAPTOP) == ""
    assert notes.energy_mark(H100) == "³" and notes.energy_mark(LAPTOP) == ""
    assert R.cell(3.5, ".3g", notes.energy_mark(H100)) == "3.5 ³"
    assert R.mark(12) == "¹²"
