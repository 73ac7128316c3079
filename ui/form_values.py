"""The run form's values, Streamlit-free: what it starts from (RunConfig's defaults, or what a seed preset sets), what
a config looks like in its terms, and which widget key holds each setting. The one home of the form's defaults, for
the form (ui.config_form) and the links that fill it (ui.url_state).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench.vocab.config import RunConfig, preset_training
from bench.plans import datasets, models

# RunConfig field -> the form widget's key suffix (a widget's key is "<page prefix>_<suffix>")
WIDGET_KEYS: dict[str, str] = {
    "dataset": "dataset", "model": "model", "size": "size", "epochs": "epochs", "batch_size": "batch",
    "device": "device", "limit_samples": "limit", "seed": "seed", "precision": "precision", "jit_compile": "jit",
    "optimizer": "optimizer", "learning_rate": "lr", "sample_interval_s": "interval",
    "steps_per_execution": "steps", "devices": "devices",
}
# what a seed preset sets in the form (the rest keeps its value)
PRESET_FIELDS = ("model", "dataset", "limit_samples", "epochs", "batch_size", "optimizer", "learning_rate")
PRESET_DEMO_LIMIT = 5000  # a preset's training samples in the form: a demo-sized share of its data set


def preset_dataset(name: str) -> str:
    """The preset's real dataset when it is cached here, else its synthetic twin of the same shape."""
    real = models.PRESETS[name].dataset
    if datasets.find_cache(real):
        return real
    twin = {"cifar10": "synthetic-cifar10", "mnist": "synthetic-mnist", "imdb": "synthetic-imdb"}.get(real)
    return twin or real


def config_values(config: RunConfig) -> dict[str, Any]:
    """A config in the form's terms, by RunConfig field: 0 for no sample limit, 0.0 for the optimizer's own learning
    rate, 1 for one device."""
    return {"dataset": config.dataset, "model": config.model, "size": config.size, "epochs": config.epochs,
            "batch_size": config.batch_size, "device": config.device, "limit_samples": config.limit_samples or 0,
            "seed": config.seed, "precision": config.precision, "jit_compile": config.jit_compile,
            "optimizer": config.optimizer, "learning_rate": config.learning_rate or 0.0,
            "sample_interval_s": config.sample_interval_s, "steps_per_execution": config.steps_per_execution,
            "devices": config.devices or 1}


def form_values(preset: str | None = None) -> dict[str, Any]:
    """The form's values before anyone changes them, by RunConfig field: RunConfig's defaults, or with ``preset``
    (a seed preset's name) what that preset sets: its model, dataset (or the synthetic twin), epochs, batch size,
    optimizer and learning rate, with a demo-sized sample limit."""
    values = config_values(RunConfig())
    if preset:
        p = models.PRESETS[preset]
        training = preset_training(preset)
        values.update(model=preset, dataset=preset_dataset(preset), limit_samples=PRESET_DEMO_LIMIT, epochs=p.epochs,
                      batch_size=p.batch_size, optimizer=training["optimizer"],
                      learning_rate=float(training["learning_rate"]))
    return values


def widget_values(values: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    """Form values by RunConfig field -> the same values by widget key (``<prefix>_<suffix>``)."""
    return {f"{prefix}_{WIDGET_KEYS[name]}": value for name, value in values.items()}


def preset_widgets(name: str, prefix: str) -> dict[str, Any]:
    """The widget values a seed preset sets (:data:`PRESET_FIELDS`), by widget key."""
    values = form_values(name)
    return widget_values({field: values[field] for field in PRESET_FIELDS}, prefix)
