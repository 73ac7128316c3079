"""Run settings in the URL: a link opens the same form.

Query parameters are named after the run config (``dataset``, ``model``, ``size``, ``epochs``, ``batch_size``,
``device``, ``limit_samples``, ``seed``), plus ``preset`` (a seed preset by name) and, on Compare, ``targets``
(comma-separated, the first the baseline). Each value is checked by RunConfig's own validation; a bad or unknown
parameter is left out with a note saying why, and the form keeps its default. ``parse`` needs no Streamlit.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.plans import models
from bench.vocab.config import ConfigError, DeviceInventory, RunConfig
from bench.vocab.target import Target, canonical, plain
from ui import form_values
from ui.safe_text import code, escape

# URL field -> the form's widget key suffix (ui.config_form)
FORM_KEYS: dict[str, str] = {name: form_values.WIDGET_KEYS[name] for name in
                             ("dataset", "model", "size", "epochs", "batch_size", "device", "limit_samples", "seed")}
INT_FIELDS = ("epochs", "batch_size", "limit_samples", "seed")
TRAIN_FIELDS = tuple(FORM_KEYS)
COMPARE_FIELDS = tuple(f for f in FORM_KEYS if f != "device")
# A preset's name in a link -> the preset (bench.plans.models.PRESETS). One table, so a renamed preset keeps its old links.
PRESET_URL_NAMES: dict[str, str] = {name: name for name in models.PRESETS}
OTHER_PARAMS = ("preset", "targets", "present")

MAX_NOTES = 8  # a link with many bad parameters gets this many notes, then a count


@dataclass
class LinkState:
    """What a link asks for, every value already checked; ``notes`` says what was left out and why."""

    values: dict[str, Any] = field(default_factory=dict)  # URL field -> value for the form
    preset: str | None = None
    targets: list[str] | None = None
    notes: list[str] = field(default_factory=list)


def form_base(preset: str | None) -> dict[str, Any]:
    """The form's values before a link changes anything (ui.form_values): RunConfig's defaults, or those a preset
    sets."""
    values = form_values.form_values(preset)
    return {name: values[name] for name in FORM_KEYS}


def _base_config(base: Mapping[str, Any]) -> RunConfig:
    limit = base["limit_samples"] or None
    return RunConfig(dataset=base["dataset"], model=base["model"],
                     size=None if base["model"] in models.PRESETS else base["size"], epochs=base["epochs"],
                     batch_size=base["batch_size"], device=base["device"], limit_samples=limit, seed=base["seed"])


def _check(base: RunConfig, name: str, value: Any, hardware: DeviceInventory) -> str | None:
    """RunConfig's own message when ``name=value`` on top of ``base`` is invalid, else None."""
    changes = {name: (value or None) if name == "limit_samples" else value}
    if name == "model" and value in models.PRESETS:
        changes["size"] = None
    try:
        base.replace(**changes).validate(hardware)
    except ConfigError as exc:
        return "; ".join(exc.errors)
    return None


def _lookalike(text: str) -> str | None:
    """Why ``text`` only looks like a target (a Cyrillic "с", a zero-width space), named by its code point; None
    when it is plain text, a target or not."""
    try:
        plain(text)
    except ValueError as exc:
        return str(exc)
    return None


def parse(params: Mapping[str, str], *, fields: Sequence[str], hardware: DeviceInventory,
          devices: Sequence[str] | None = None, target_options: Sequence[str] | None = None) -> LinkState:
    """Read a page's query parameters into checked form values.

    Args:
        params: the query parameters (name -> text).
        fields: the URL fields this page's form has (TRAIN_FIELDS or COMPARE_FIELDS).
        hardware: a ``bench.hardware.devices.Hardware`` for device checks.
        devices: the device choices the form offers (Train).
        target_options: the targets the page offers (Compare); None when the page has no ``targets``.

    Returns:
        The values to set, the preset and targets when given, and one note per parameter left out.
    """
    state = LinkState()
    known = set(fields) | {"preset", "present"} | ({"targets"} if target_options is not None else set())
    for name in params:
        if name not in known:
            state.notes.append(f"{code(name)} is not a setting of this page, so it was ignored "
                               f"(this page reads {', '.join(code(k) for k in sorted(known - {'present'}))}).")

    preset_text = params.get("preset")
    if preset_text is not None:
        state.preset = PRESET_URL_NAMES.get(preset_text.strip())
        if state.preset is None:
            state.notes.append(f"preset {code(preset_text)} is unknown, so none was applied; the presets are "
                               f"{', '.join(code(n) for n in PRESET_URL_NAMES)}.")
    base = form_base(state.preset)
    base_config = _base_config(base)

    for name in fields:
        if name not in params:
            continue
        text = str(params[name]).strip()
        value: Any = text
        if name in INT_FIELDS:
            try:
                value = int(text)
            except ValueError:
                state.notes.append(f"{code(f'{name}={text}')} is not a whole number, so the default {code(base[name])} "
                                   f"is used.")
                continue
        if name == "model" and value in models.PRESETS and state.preset is None:
            state.preset = value
            base = form_base(value)
            base_config = _base_config(base)
            continue
        if name == "size" and (state.preset or base["model"] in models.PRESETS):
            state.notes.append(f"{code(f'size={text}')} was ignored: a seed preset has a fixed size.")
            continue
        error = _check(base_config, name, value, hardware)
        if error is None and name == "device":
            value = Target.from_device(value).device  # as the form offers it: " GPU:0" is gpu:0
        if error is None and name == "device" and devices is not None and value not in devices:
            error = f"device {value!r} is not offered here; pick one of {', '.join(devices)}"
        if error is not None:
            state.notes.append(f"{code(f'{name}={text}')} was ignored ({escape(error, limit=300)}), so the default "
                               f"{code(base[name])} is used.")
            continue
        state.values[name] = value

    if target_options is not None and "targets" in params:
        given = [t.strip() for t in str(params["targets"]).split(",") if t.strip()]
        lookalikes = {t: problem for t in given if (problem := _lookalike(t))}
        state.notes.extend(f"target {escape(problem, limit=300)}; it was left out." for problem in lookalikes.values())
        wanted = [canonical(t) for t in given if t not in lookalikes]
        good = list(dict.fromkeys(t for t in wanted if t in target_options))
        bad = [t for t in wanted if t not in target_options]
        if bad:
            state.notes.append(f"target(s) {', '.join(code(t) for t in bad)} are not offered on this machine, so "
                               "they were left out; the targets here are "
                               f"{', '.join(code(t) for t in target_options)}.")
        if good:
            state.targets = good
        elif not wanted:
            state.notes.append("`targets` named no target offered here, so the default targets are used.")
    return state


def to_params(values: Mapping[str, Any], *, fields: Sequence[str], targets: Sequence[str] | None = None,
              default_targets: Sequence[str] | None = None) -> dict[str, str]:
    """The query parameters that reopen a form showing ``values`` (URL field -> form value): only what differs from
    the form's defaults (or the preset's), so links stay short."""
    model = values.get("model")
    preset = model if model in models.PRESETS else None
    base = form_base(preset)
    out: dict[str, str] = {"preset": preset} if preset else {}
    for name in fields:
        if preset and name in ("model", "size"):
            continue
        value = values.get(name)
        if value is not None and value != base[name]:
            out[name] = str(value)
    if targets is not None and list(targets) != list(default_targets or []):
        out["targets"] = ",".join(targets)
    return out


# -- Streamlit side ---------------------------------------------------------------------------------------------------
def _applied_key(prefix: str) -> str:
    return f"_url_written_{prefix}"


def load(prefix: str, *, fields: Sequence[str], hardware: DeviceInventory, devices: Sequence[str] | None = None,
         target_options: Sequence[str] | None = None) -> None:
    """Before the form is drawn: when the URL is not the one this session last wrote (a link was opened), set the
    form's widgets from it; show the notes of the last link read."""
    import streamlit as st

    ss = st.session_state
    params = st.query_params.to_dict()
    if params != ss.get(_applied_key(prefix)):
        state = parse(params, fields=fields, hardware=hardware, devices=devices, target_options=target_options)
        if state.preset:
            ss.update(form_values.preset_widgets(state.preset, prefix))
        for name, value in state.values.items():
            ss[f"{prefix}_{FORM_KEYS[name]}"] = value
        if state.targets is not None:
            ss[f"{prefix}_targets"] = state.targets
        ss[f"_url_notes_{prefix}"] = state.notes
        ss[f"_url_fresh_{prefix}"] = True
    notes = ss.get(f"_url_notes_{prefix}") or []
    if notes:
        shown = notes[:MAX_NOTES] + ([f"and {len(notes) - MAX_NOTES} more."] if len(notes) > MAX_NOTES else [])
        st.warning("Some settings in this link were left out:\n\n" + "\n".join(f"- {n}" for n in shown),
                   icon=":material/link_off:")


def save(prefix: str, config: RunConfig, *, fields: Sequence[str], targets: Sequence[str] | None = None,
         default_targets: Sequence[str] | None = None) -> None:
    """After the form is drawn: write its settings into the URL (only when they changed)."""
    import streamlit as st

    from ui import present

    ss = st.session_state
    values = {name: value for name, value in form_values.config_values(config).items() if name in FORM_KEYS}
    params = to_params(values, fields=fields, targets=targets, default_targets=default_targets)
    params.update(present.query_value())
    if not ss.pop(f"_url_fresh_{prefix}", False) and params != ss.get(_applied_key(prefix)):
        ss[f"_url_notes_{prefix}"] = []  # the form was changed since the link was read: its notes are old news
    if params != st.query_params.to_dict():
        st.query_params.from_dict(params)
    ss[_applied_key(prefix)] = params


COPY_HTML = """
<button id="copy" title="Copy this page's link, settings included"
  style="font:400 16px 'Source Sans Pro','Source Sans 3',sans-serif;padding:7px 14px;border-radius:8px;
         border:1px solid rgba(49,51,63,0.2);background:#fff;color:rgb(49,51,63);cursor:pointer;white-space:nowrap"
  >Copy link</button>
<script>
const button = document.getElementById("copy");
button.addEventListener("click", async () => {
  let url = %s;
  try { url = window.parent.location.href; } catch (e) {}
  let done = false;
  try { await navigator.clipboard.writeText(url); done = true; } catch (e) {}
  if (!done) {
    const area = document.createElement("textarea");
    area.value = url; document.body.appendChild(area); area.select();
    try { done = document.execCommand("copy"); } catch (e) {}
    area.remove();
  }
  button.textContent = done ? "\\u2713 Link copied" : "Copy failed: use the address bar";
  button.dataset.url = url;
});
</script>
"""


def copy_link_button() -> None:
    """A "Copy link" button that copies the page's address, settings included."""
    import streamlit as st

    try:
        fallback = str(st.context.url or "")
    except AttributeError:  # pragma: no cover - a Streamlit without st.context.url
        fallback = ""
    st.iframe(COPY_HTML % json.dumps(fallback).replace("</", "<\\/"), height=46)
