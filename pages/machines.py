"""Machines: every measured machine (bundles shipped, imported, uploaded or made here by `bench suite`) side by side,
and which machine is fastest and cheapest for the user's model. The page's state lives in its link."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from bench.vocab import limits
from bench.analysis import machines as M
from bench.analysis import pricing
from bench.vocab.errors import RecordError
from bench.output import gallery
from bench.output import ranking as R
from bench.store import StoreError
from bench.plans import models
from ui import common, present, widget_state
from ui.results import CHART_CONFIG
from ui.safe_text import code, escape

common.page_setup()
manager = common.get_manager()

st.title("Machines")
st.caption("Which machine for this model? Each bundle is one machine measured by the same suite "
           "(`python -m bench suite`); add yours with `python -m bench import bundle.json` or the upload below.")
common.store_warning()

with st.expander("Add a machine bundle", icon=":material/upload_file:"):
    upload = st.file_uploader("A bundle made by `python -m bench suite --out FILE`", type=["json"], key="mach_upload")
    if upload is not None and st.session_state.get("mach_uploaded") != upload.file_id:
        try:
            bundle = gallery.read_bundle(upload.getvalue(), name=upload.name)
            if manager.store is None:
                st.error("The run store is not available, so the bundle cannot be kept.")
            else:
                with common.store_errors():
                    manager.store.bundles.add(bundle.to_dict())
                    st.session_state["mach_uploaded"] = upload.file_id
                    st.toast(f"Added {escape(M.machine_name(bundle), limit=200)}")
        except RecordError as exc:
            st.error(f"This file is not a machine bundle: {escape(exc, limit=600)}")

try:
    machines, problems = gallery.gallery(manager.store)
except StoreError as exc:
    machines, problems = gallery.shipped_machines()[0], [str(exc)]
for problem in problems:
    st.warning(f"A bundle could not be read: {escape(problem, limit=400)}")
if not machines:
    st.info("No machine bundle yet: run `python -m bench suite --quick --out bundle.json`, then import it.")
    st.stop()

names = {m.key: m.name for m in machines}
pairs = [f"{m.key}|{t}" for m in machines for t in M.targets_of(m)]
choices = M.model_choices(machines)
params = st.query_params


def _from_link(key: str, options: list[Any], cast: Any = str) -> None:
    """A widget's first value from the page's link, when it is one of the options (a bad value is ignored, with a
    note). Its value, the link's or one picked before, is sent to the browser again on this run."""
    if key in st.session_state or key not in params:
        widget_state.resend(key, options)
        return
    try:
        value = cast(params[key])
    except ValueError:
        value = None
    if value in options:
        st.session_state[key] = value
    else:
        st.caption(f"The link's {code(key)} {code(params[key], limit=60)} is not one of the choices here; left out.")


def _start(key: str, options: list[Any], wanted: Any) -> int:
    """A selectbox's start index: 0 (which Streamlit then ignores) where this session already holds one of its
    options (from the link, or picked before), so that the widget never has both a default and a set value."""
    if st.session_state.get(key) in options:
        return 0
    return options.index(wanted) if wanted in options else 0


_from_link("mach_base", pairs)
_from_link("mach_model", list(choices))
_from_link("mach_size", list(models.SIZES))
_from_link("mach_batch", sorted({b for v in choices.values() for b in v}), int)

st.subheader("The machines")
st.table(pd.DataFrame([{  # a table's cells are markdown: a bundle's words are shown escaped
    "machine": escape(m.name, limit=200), "from": escape(m.source, limit=200), "suite": escape(m.suite),
    "backend": escape(m.bundle.machine.backend or "?"),
    "targets": ", ".join(escape(t) for t in M.targets_of(m)), "runs": len(m.bundle.runs),
    "notes": escape(m.bundle.notes or "", limit=160)} for m in machines]))

c1, c2 = st.columns([2, 3])
baseline_text = c1.selectbox("Baseline (the speed-ups are against it, e.g. your laptop)", pairs, key="mach_base",
                             format_func=lambda p: f"{names.get(p.split('|')[0], p)} · {p.split('|')[1]}")
base_key, _, base_target = (baseline_text or "").partition("|")
baseline = (base_key, base_target) if base_target else None
with c2.expander("Hourly prices (for the cost per 1,000 samples)", icon=":material/payments:"):
    entered: dict[tuple[str, str], float] = {}
    own = M.prices_of(machines)
    link_prices = dict(p.split("=", 1) for p in params.get("mach_prices", "").split(";") if "=" in p)
    for pair in pairs:  # keyed by the pair: a bundle added or gone never moves a price to another machine
        key, (machine_key, _, target) = f"mach_price_{pair}", pair.partition("|")
        if key not in st.session_state:  # a link's or a bundle's price out of bounds starts as no price
            try:
                first = float(link_prices.get(pair, "") or own.get((machine_key, target), 0.0))
            except ValueError:
                first = 0.0
            st.session_state[key] = pricing.usable_price(first) or 0.0
        widget_state.resend(key)
        value = st.number_input(f"{escape(names[machine_key], limit=200)} · {escape(target)} (0 = no price)",
                                min_value=0.0, max_value=limits.PRICE_PER_HOUR_MAX, step=0.1, key=key, format="%.2f")
        if value and pricing.usable_price(value) is None:  # 0.0000001, a subnormal: not a price, never "cheapest"
            st.caption(f":material/warning: {escape(names[machine_key], limit=200)} · {escape(target)}: "
                       f"{escape(limits.entered_problem(value, 'price_per_hour'))}; counted as no price.")
        elif value:
            entered[(machine_key, target)] = float(value)
prices = M.prices_of([], entered)  # as entered here: a bundle's own prices are the inputs' first values

st.subheader("For your model")
d1, d2, d3 = st.columns(3)
model = d1.selectbox("Model", list(choices), key="mach_model", index=_start("mach_model", list(choices), "mlp"),
                     format_func=lambda m: models.FAMILIES.get(m, m))
preset = model in models.PRESETS
size = d2.selectbox("Size", list(models.SIZES), key="mach_size", index=_start("mach_size", list(models.SIZES), "s"),
                    disabled=preset,
                    help="Sizes between two measured ones are read between them; none past the measured range.")
batches = choices.get(model) or [128]
usual = M.usual_batch(machines, model)
batch = d3.selectbox("Batch size", batches, key="mach_batch", index=_start("mach_batch", batches, usual),
                     help="The first offered is the batch size the most machines measured this model at.")
ranked = M.ranking(machines, model, None if preset else size, int(batch), prices=prices, baseline=baseline)


def _table(rows: tuple[M.Row, ...] | list[M.Row], notes: R.TableNotes) -> pd.DataFrame:
    """The rows as a table: a missing figure is "—" and a caveat a mark, their words said once under it (_notes)."""
    return pd.DataFrame([{
        "machine": escape(r.machine_name, limit=200), "target": escape(r.target),
        "figure": escape(r.how_text, limit=300),
        "how": escape(r.note, limit=600),
        "s per 1,000 samples": R.cell(r.seconds_per_1k, ".4g"),
        "samples/s": R.cell(r.samples_per_s, ",.0f"),
        "energy J per 1,000": R.cell(r.energy_j_per_1k, ".3g", notes.energy_mark(r)),
        "cost per 1,000": R.cell(r.cost_per_1k, ".3g"),
        "speed-up vs baseline": R.cell(r.speedup, ".2f"),
        "unequal to the baseline": escape(notes.caveats(r))} for r in rows])


def _notes(notes: R.TableNotes) -> None:
    """Under a table, once each: why figures are missing (and where), then the notes its marks point at."""
    lines = [f"**{escape(m.figure)}** {escape(m.text.removeprefix(m.figure), limit=700)}" for m in notes.missing]
    lines += [f"{escape(mark)} {escape(text, limit=300)}" for mark, text in notes.notes]
    if lines:
        st.caption("  \n".join(lines))


def _ranked_table(rows: tuple[M.Row, ...]) -> None:
    notes = R.table_notes(rows)
    st.table(_table(rows, notes))
    _notes(notes)


point = model if preset else f"{model} {size}"
if ranked.by_time:
    st.plotly_chart(present.styled(R.ranking_figure(ranked, baseline=baseline)), key="mach_ranking_chart",
                    config=CHART_CONFIG)
st.markdown(f"**By time**: {escape(point)} at batch {int(batch)}, fastest first")
if ranked.by_time:
    _ranked_table(ranked.by_time)
else:
    st.info("No machine has a figure for this model: pick another size or batch size.")
st.markdown("**By cost**, cheapest first")
if ranked.by_cost:
    _ranked_table(ranked.by_cost)
else:
    st.caption("No measured machine has an hourly price: enter prices above.")
for row in ranked.unranked:
    st.caption(f"{escape(row.machine_name)} · {escape(row.target)}: no figure: {escape(row.note, limit=600)}")

st.subheader("Workload by workload")
workloads = M.workloads_of(machines)
_from_link("mach_workload", workloads)
workload = st.selectbox("Workload", workloads, key="mach_workload")
rows = M.workload_rows(machines, workload, prices=prices, baseline=baseline)
workload_notes = R.table_notes(rows)
table = _table(rows, workload_notes).drop(columns=["figure", "how"])
table.insert(2, "steady epoch", [
    R.MISSING if r.steady_epoch_seconds is None
    else f"{r.steady_epoch_seconds:.3g} s" + (f" ({r.epoch_samples:,} samples)" if r.epoch_samples else "")
    for r in rows])
st.table(table)
_notes(workload_notes)


def _report() -> str:
    """The HTML report, made when the button is clicked (it carries plotly.js, a few MiB)."""
    return gallery.to_html(machines, ranked, {w: M.workload_rows(machines, w, prices=prices, baseline=baseline)
                                              for w in workloads}, baseline=baseline)


st.download_button("Download the gallery (HTML report)", data=_report, file_name="machines.html", mime="text/html",
                   key="mach_html", icon=":material/download:")

# the page's state in its link: a presenter sends "this is what each machine does for our model"
state = {"mach_base": baseline_text, "mach_model": model, "mach_batch": str(int(batch)), "mach_workload": workload}
if not preset:
    state["mach_size"] = size
if entered:
    state["mach_prices"] = ";".join(f"{k}|{t}={p:g}" for (k, t), p in entered.items())
if any(params.get(k) != state.get(k) for k in {*state, "mach_size", "mach_prices"}):  # a price zeroed leaves the link
    for key in ("mach_size", "mach_prices"):
        if key not in state and key in params:
            del params[key]
    params.update(state)
