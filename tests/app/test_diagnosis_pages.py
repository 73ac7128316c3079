"""The diagnosis and steps per execution in the dashboard: Train (Advanced, the finished run's verdict), Sweep (the
axis), System (the verdicts and their thresholds)."""

from __future__ import annotations

from tests.app.test_pages import app


def test_train_advanced_has_steps_per_execution_and_it_reaches_the_config():
    at = app("pages/train.py").run()
    steps = at.number_input(key="cfg_steps")
    assert steps.value == 1
    steps.set_value(8).run()
    assert not at.exception, at.exception
    assert at.number_input(key="cfg_steps").value == 8


def test_sweep_offers_steps_per_execution_as_an_axis():
    at = app("pages/sweep.py").run()
    axis = at.multiselect(key="swp_steps_axis")
    assert axis.value == []
    assert {"1", "8", "32"} <= {str(o) for o in axis.options}


def test_system_explains_each_verdict_with_its_thresholds():
    at = app("pages/system.py").run()
    assert not at.exception, at.exception
    text = " ".join(m.value for m in at.markdown)
    for verdict in ("host-bound", "compute-bound", "input-bound", "undetermined"):
        assert f"**{verdict}**" in text
    assert "30 %" in text and "H100" in text and "steps per execution" in text


def test_train_shows_why_a_finished_run_went_at_its_speed(isolated_store):
    import streamlit as st

    from bench.store import Store

    store = Store(isolated_store)
    config = {"dataset": "synthetic-mnist", "model": "mlp", "size": "xs", "epochs": 4, "batch_size": 32,
              "device": "cpu", "steps_per_execution": 8}
    run_id = store.create_run(config, status="running", label="mlp xs")
    for n in range(1, 5):
        store.add_epoch(run_id, {"epoch": n, "epoch_seconds": 0.4 if n > 1 else 2.0, "includes_tracing": n == 1,
                                 "samples_per_s": 20000.0, "loss": 1.0, "t_start_s": n * 0.4, "t_end_s": n * 0.4 + 0.4})
    store.add_samples(run_id, [{"t_s": 0.4 + i * 0.1, "cpu_percent": 60.0, "process_cpu_percent": 100.0,
                                "gpus": []} for i in range(20)])
    store.update_run(run_id, status="finished", ended_at=1.0,
                     info={"n_train": 8000, "threads": 2, "flops_per_sample": 1e5, "placement": "cpu"})
    st.cache_resource.clear()
    try:
        at = app("pages/train.py").run()
        assert not at.exception, at.exception
        why = [i.value for i in at.info if "Why this speed" in i.value]
        assert why and "host-bound" in why[0] and "more than 8 steps per execution" in why[0], why
        assert any("8 steps per execution" in s.value for s in at.success)
    finally:
        st.cache_resource.clear()
