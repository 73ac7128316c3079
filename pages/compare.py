"""Compare: one config on two or more targets, run one after the other; the honest speed-up headline."""

from __future__ import annotations

import streamlit as st

from bench.analysis import compare, pricing
from bench.plans import models
from bench.vocab.config import ConfigError
from ui import common, config_form, present, results, url_state, widget_state
from ui.safe_text import escape

common.page_setup()
manager = common.get_manager()
hardware = common.get_hardware()

st.title("Compare")
st.caption("The same data, seed, precision and batch size on each target, one run after the other. "
           "Speed-up = median steady-state epoch time of the baseline / of the other; epoch 1 (tracing) is apart.")
common.store_warning()

st.markdown("**Seed presets**: the articles' own models, one click each.")
cols = st.columns(len(models.PRESETS))
for col, (name, preset) in zip(cols, models.PRESETS.items()):
    col.button(escape(preset.title), key=f"preset_{name}", on_click=config_form.apply_preset, args=(name, "cmp"),
               help=escape(preset.description, limit=400), width="stretch")

options = common.target_options(hardware)
default = ["cpu", "gpu:0"] if "gpu:0" in options else [options[0], "cpu"]
url_state.load("cmp", fields=url_state.COMPARE_FIELDS, hardware=hardware, target_options=options)
with st.expander("Settings", expanded=not present.is_on(), icon=":material/tune:"):
    config = config_form.config_form(hardware, prefix="cmp", with_device=False, disabled=not common.can_control())
if config.model in models.PRESETS and config.dataset != models.PRESETS[config.model].dataset:
    st.caption(f"{escape(models.PRESETS[config.model].dataset)} is not cached here, so its synthetic twin of the same "
               "shape is used: training time depends on the shapes, not on the pixel values.")

widget_state.seed("cmp_targets", default)
targets = st.multiselect("Targets (the first is the baseline)", options, key="cmp_targets",
                         help="cpu = all cores, cpu/N = N threads pinned to N cores, gpu:N = one GPU, gpus = all GPUs")
if not hardware.gpus:
    st.info(f"No GPU target is offered: {escape(hardware.gpu_reason, limit=400)} Compare CPU threads here, or load a "
            "result saved on a GPU machine below.", icon=":material/info:")
url_state.save("cmp", config, fields=url_state.COMPARE_FIELDS, targets=targets, default_targets=default)
url_state.copy_link_button()

st.caption("Hourly price per target (optional): with a price, the headline gives the cost per steady epoch and per run; "
           "blank means no price, and none is assumed.")
price_cols = st.columns(max(len(targets), 1))
price_texts = {t: col.text_input(f"Price per hour, {escape(t)}", key=f"cmp_price_{t}", placeholder="e.g. 2.50")
               for t, col in zip(targets, price_cols)}

if st.button("Start comparison", type="primary", icon=":material/compare_arrows:", key="start_compare",
             disabled=not common.can_control()):
    try:
        configs = compare.target_configs(config, compare.parse_targets(targets), hardware)
        if len(configs) < 2:
            raise ConfigError(["pick at least two targets"])
        prices, price_errors = {}, []
        for name, text in price_texts.items():
            try:
                value = pricing.price_value(text, f"price of {name}")
            except ConfigError as exc:
                price_errors.extend(exc.errors)
                continue
            if value is not None:
                prices[name] = value
        if price_errors:
            raise ConfigError(price_errors)
        group = manager.groups.submit("compare", configs, targets=targets, prices=prices)
        st.toast(f"Comparison queued: {len(configs)} runs")
    except ConfigError as exc:
        st.error("This comparison cannot start:\n\n" + "\n".join(f"- {escape(e, limit=400)}" for e in exc.errors))

st.divider()
results.live_group(manager, "compare")

if present.is_on():  # a room watches the live comparison; imports are for the presenter's own screen
    st.stop()
st.divider()
st.subheader("A result saved on another machine")
uploaded = st.file_uploader("JSON from `python -m bench compare --json` or an export", type=["json"],
                            key="cmp_import")
if uploaded is not None:
    results.show_imported(uploaded.getvalue())
bundled = results.bundled_results()
if bundled:
    choice = st.selectbox("Or one measured by this project on an NVIDIA H100 (docs/GPU.md)", ["—", *bundled],
                          key="cmp_bundled")
    if choice != "—":
        results.show_imported(bundled[choice].read_bytes(), key="bundled")
