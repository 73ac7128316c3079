"""The run-settings form shared by Train, Compare and Sweep: widgets in, a RunConfig out (its types and rules
checked when made; ``validate`` checks it against this machine)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import streamlit as st

from bench.vocab import settings
from bench.output import mlflow_log
from bench.plans import datasets, models
from bench.plans import model_file as user_models
from bench.vocab.config import (BATCH_MAX, ConfigError, EPOCHS_MAX, INTERVAL_MAX_S, INTERVAL_MIN_S, LEARNING_RATE_MAX, OPTIMIZERS,
                          PRECISIONS, STEPS_PER_EXECUTION_BACKENDS, STEPS_PER_EXECUTION_MAX, RunConfig)
from bench.vocab.target import Target
from ui import common, form_values, machine, widget_state
from ui.safe_text import escape

def upload_dir() -> Path:
    """Where uploaded .npz files are kept for their runs (BENCH_UPLOAD_DIR; default ~/.cache/bench/uploads)."""
    return Path(os.environ.get("BENCH_UPLOAD_DIR", Path.home() / ".cache" / "bench" / "uploads"))


MODEL_CHOICES = list(models.FAMILIES) + list(models.PRESETS)


def _model_label(name: str) -> str:
    if name in models.FAMILIES:
        return models.FAMILIES[name]
    return f"Seed preset: {models.PRESETS[name].title}"


def _save_upload(uploaded: Any) -> str:
    data = uploaded.getvalue()
    digest = hashlib.sha256(data).hexdigest()[:16]
    folder = upload_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{digest}.npz"
    if not path.exists():
        path.write_bytes(data)
    return str(path)


def _save_model_upload(uploaded: Any) -> str:
    """An uploaded model file kept for its runs under its own name (letters, digits, ``._-`` kept), in a folder named
    by its content's hash. Streamlit's own upload limit (server.maxUploadSize, 200 MB by default) matches
    user_models.MODEL_FILE_MAX_MB."""
    data = uploaded.getvalue()
    digest = hashlib.sha256(data).hexdigest()[:16]
    name = "".join(c if c.isalnum() or c in "._-" else "_" for c in str(uploaded.name))[-120:] or "model.keras"
    folder = upload_dir() / digest
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    if not path.exists():
        path.write_bytes(data)
    return str(path)


def _model_file_upload(info: Any, prefix: str, disabled: bool) -> str | None:
    """The model-file uploader: the saved file's path when one is given (None: a family or preset), checked against
    the chosen data set at once (user_models.check_model_file: safe mode, shapes), its size and arithmetic or its refusal
    shown; a refused file is refused again by validation when Start is pressed, so nothing is stored."""
    uploaded = st.file_uploader(
        f"Or your own model: a .keras file (at most {user_models.MODEL_FILE_MAX_MB} MB)", type=["keras"],
        key=f"{prefix}_model_file", disabled=disabled,
        help="Saved with model.save('model.keras'): Sequential, functional (nested models, shared layers) or a "
             "keras.applications model built with weights=None. Read by Keras's safe mode (no Lambda or custom "
             "layers), within caps (a 16 MB config, 1 GB inflated, a model that fits the device's memory). It "
             "replaces the model above, trains with the settings below, and is compared and swept like a preset.")
    if uploaded is None:
        return None
    path = _save_model_upload(uploaded)
    if not info.n_train:
        return path
    try:
        with st.spinner("Reading the model file in Keras's safe mode..."):
            own = user_models.check_model_file(path, info.input_shape, info.num_classes, info.vocab_size,
                                          backend=RunConfig().backend)
        st.caption(escape(own.describe(), limit=600))
    except models.ModelError as exc:
        st.error(escape(exc, limit=800))
    return path


def apply_preset(name: str, prefix: str = "cfg") -> None:
    """Set the form's widgets to a seed preset (model, dataset, epochs, batch, optimizer) with a demo-sized limit."""
    st.session_state.update(form_values.preset_widgets(name, prefix))


def config_form(hardware: machine.Hardware, *, prefix: str = "cfg", with_device: bool = True,
                with_devices: bool = True, disabled: bool = False) -> RunConfig:
    """Render the settings; return the RunConfig they describe (call .validate() before running it).
    ``with_devices``: offer the data-parallel device count (a page that sweeps over it offers its own axis)."""
    defaults = RunConfig()
    cores = hardware.cores  # what validation checks CPU threads against (the cores this process may use)
    initial = {name: value for name, value in form_values.form_values().items() if name != "device"}
    # widgets take their values from session state only (presets and links write there)
    for key, value in {**form_values.widget_values(initial, prefix), f"{prefix}_threads": cores}.items():
        widget_state.seed(key, value)

    c1, c2 = st.columns(2)
    with c1:
        dataset = st.selectbox(
            "Dataset", list(datasets.DATASETS), key=f"{prefix}_dataset", disabled=disabled,
            format_func=lambda n: datasets.DATASETS[n].title,
        )
        info = datasets.DATASETS[dataset]
        st.caption(escape(info.description, limit=400))
        npz_path = None
        if dataset == "npz":
            uploaded = st.file_uploader("Your .npz (x_train, y_train, x_test, y_test)", type=["npz"],
                                        key=f"{prefix}_npz", disabled=disabled)
            if uploaded is not None:
                npz_path = _save_upload(uploaded)
                try:
                    info = datasets.get_info("npz", npz_path=npz_path)
                    st.caption(escape(info.description, limit=400))
                except datasets.DatasetError as exc:
                    Path(npz_path).unlink(missing_ok=True)  # a refused upload is not kept
                    npz_path = None
                    st.error(escape(exc, limit=800))
    with c2:
        model = st.selectbox("Model", MODEL_CHOICES, key=f"{prefix}_model", format_func=_model_label,
                             disabled=disabled)
        is_preset = model in models.PRESETS
        size = st.select_slider("Model size", options=list(models.SIZES),
                                key=f"{prefix}_size", disabled=disabled or is_preset,
                                help="Presets have a fixed size." if is_preset else None)
        model_file = _model_file_upload(info, prefix, disabled)
        if info.n_train and model_file is None:
            try:
                plan = models.plan(model, None if is_preset else size, info.input_shape, info.num_classes,
                                   info.vocab_size)
                st.caption(escape(plan.describe(), limit=400))
            except models.ModelError as exc:
                st.warning(escape(exc, limit=600))

    c3, c4, c5 = st.columns(3)
    with c3:
        epochs = int(st.number_input("Epochs", min_value=1, max_value=EPOCHS_MAX, step=1,
                                     key=f"{prefix}_epochs", disabled=disabled))
    with c4:
        batch_size = int(st.number_input("Batch size", min_value=1, max_value=BATCH_MAX,
                                         step=32, key=f"{prefix}_batch", disabled=disabled))
    with c5:
        limit = int(st.number_input("Training samples (0 = all)", min_value=0,
                                    step=5000, key=f"{prefix}_limit", disabled=disabled,
                                    help="Use the first N training samples to keep a demo short."))

    target = Target("cpu")
    if with_device:
        choices = machine.offered_devices(hardware)
        widget_state.resend(f"{prefix}_device", choices)  # a link's gpu:0 shown as picked, never the first device
        device = st.radio("Device", choices, horizontal=True, key=f"{prefix}_device", disabled=disabled,
                          format_func=lambda d: escape(Target.parse(d).label_on(hardware), limit=200))
        target = Target.parse(device)
        if choices == ["cpu"]:
            st.info(f"No GPU is offered: {escape(hardware.gpu_reason, limit=400)} The CPU path works fully. What a GPU "
                    f"run needs here, with the fix for each missing item: the checklist on the [System](/system) page "
                    f"(or `python -m bench doctor`).", icon=":material/info:")

    with st.expander("Advanced: threads, devices, precision, XLA, steps per execution, sampling"):
        a1, a2, a3 = st.columns(3)
        with a1:
            threads = st.slider("CPU threads", 1, cores, key=f"{prefix}_threads", disabled=disabled,
                                help="CPU runs only. Fewer threads pin the worker to that many cores.")
            seed = int(st.number_input("Seed", min_value=0, key=f"{prefix}_seed",
                                       disabled=disabled))
            count = 1
            if with_devices:
                most = machine.most_devices(hardware)
                count = int(st.number_input(
                    "Devices (data-parallel)", min_value=1, max_value=max(1, most), step=1, key=f"{prefix}_devices",
                    disabled=disabled or most < 2,
                    help="Train on the first N devices of the target at once, each on batch size / N samples a step "
                         "(TensorFlow's MirroredStrategy, or keras.distribution.DataParallel under JAX): cpu is split "
                         "into N logical CPU devices, 'gpus' uses the first N GPUs. 1 = one device (every GPU for "
                         "'gpus')."))
        with a2:
            precision = st.selectbox("Precision", PRECISIONS, key=f"{prefix}_precision", disabled=disabled)
            jit = st.toggle("XLA (jit_compile)", key=f"{prefix}_jit", disabled=disabled)
            steps_ok = defaults.backend in STEPS_PER_EXECUTION_BACKENDS
            steps = int(st.number_input(
                "Steps per execution", min_value=1, max_value=STEPS_PER_EXECUTION_MAX, step=1, key=f"{prefix}_steps",
                disabled=disabled or not steps_ok,
                help="Training steps per call of the compiled train function. More steps per call spread the "
                     "per-step host work (Python, callbacks, launching the step) over more batches: the test of a "
                     "host-bound run. Progress, ETA and Stop then move one call at a time. "
                     + ("" if steps_ok else f"Keras runs one step per call under {escape(defaults.backend)}.")))
        with a3:
            optimizer = st.selectbox("Optimizer", OPTIMIZERS, key=f"{prefix}_optimizer", disabled=disabled)
            lr = st.number_input("Learning rate (0 = optimizer default)", min_value=0.0, max_value=LEARNING_RATE_MAX,
                                 format="%.4f", key=f"{prefix}_lr", disabled=disabled)
            interval = st.slider("Sampling interval (s)", INTERVAL_MIN_S, INTERVAL_MAX_S, step=0.1,
                                 key=f"{prefix}_interval", disabled=disabled)

    mlflow_setting(disabled=disabled, prefix=prefix)
    if model_file is not None:  # the uploaded file replaces the family or preset: its name, no size
        model = user_models.file_model_name(model_file)
    try:
        return RunConfig(
            dataset=dataset, model=model, size=None if model in models.PRESETS or model_file else size, epochs=epochs,
            batch_size=batch_size, device=target.device,
            cpu_threads=int(threads) if target.is_cpu and int(threads) < cores else None,
            sample_interval_s=float(interval), limit_samples=limit or None, seed=seed, optimizer=optimizer,
            learning_rate=float(lr) or None, precision=precision, jit_compile=bool(jit), npz_path=npz_path,
            steps_per_execution=steps if steps_ok else 1, devices=count if count > 1 else None, model_file=model_file,
        )
    except ConfigError as exc:  # settings that break a rule between them (a batch that does not split over devices)
        st.error("These settings cannot make a run:\n\n" + "\n".join(f"- {escape(e, limit=400)}" for e in exc.errors))
        st.stop()



def _set_mlflow_uri(tracker: mlflow_log.DashboardLog, key: str) -> None:
    """The field's new URI for the whole server (empty: no logging), or the reason it is refused beside it."""
    text = str(st.session_state[key]).strip()
    try:
        tracker.uri = settings.parse_mlflow_uri(text) if text else None
        st.session_state[key + "_problem"] = None
    except ValueError as exc:
        st.session_state[key + "_problem"] = str(exc)


def mlflow_setting(*, disabled: bool, prefix: str = "cfg") -> None:
    """Where this server logs each finished run in MLflow (BENCH_MLFLOW_URI the default; one setting per server):
    logged in the background after the run ends (bench.output.mlflow_log), never delaying or failing it."""
    manager = common.get_manager()
    tracker = mlflow_log.dashboard_log(manager.finished_hooks, manager.group_hooks)
    key = f"{prefix}_mlflow_uri"
    st.session_state[key] = tracker.uri or ""  # the server's setting, as another session may have changed it
    with st.expander("MLflow tracking" + (": on" if tracker.uri else "")):
        st.text_input("Tracking URI (empty: off)", key=key, disabled=disabled, on_change=_set_mlflow_uri,
                      args=(tracker, key), placeholder="http://localhost:5000",
                      help="Each finished run is logged as an MLflow run: its settings as params, per-epoch metrics, "
                           "the utilization samples as MLflow system metrics, its record and HTML report as "
                           "artifacts. A server that is down is retried once; the run is never affected, and "
                           "`python -m bench export RUN --mlflow URI` sends it later. For every session of this "
                           "server.")
        problem = st.session_state.get(key + "_problem")
        if problem:
            st.error(escape(problem, limit=400))
        if not mlflow_log.available():
            st.caption(f"The MLflow client is not installed: `{mlflow_log.PIP_LINE}`.")
        if tracker.last:
            st.caption(escape(tracker.last, limit=600))
