"""Every key the engine writes into a record is declared by the record's type (bench.vocab.records): a reading, an epoch
field or a run field added in one place and not in its type would be carried along as ``extra``, unchecked, and an
import of such a record would not validate it. Records from a live run, from the store and from the sampler with a
Hopper GPU's full set of readings are read back and must leave nothing undeclared."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from bench.vocab import records
from bench.runs.jobs import JobManager
from bench.hardware.monitor import Sampler, nvml
from bench.store import Store
from tests.fixtures import NO_GPU, TINY
from tests.unit import fake_nvml, fake_workers


def undeclared(record: records.RunRecord | records.Sample) -> list[str]:
    """The keys of a read-back record that its types do not declare, as paths (``samples[0].gpus[0].x``)."""
    found: list[str] = []
    samples: tuple[records.Sample, ...]
    if isinstance(record, records.RunRecord):
        found += [f"run.{k}" for k in record.extra]
        if record.summary is not None:
            found += [f"summary.{k}" for k in record.summary.extra]
            if record.summary.diagnosis is not None:
                found += [f"summary.diagnosis.{k}" for k in record.summary.diagnosis.extra]
        for i, epoch in enumerate(record.epochs):
            found += [f"epochs[{i}].{k}" for k in epoch.extra]
        samples = record.samples
    else:
        samples = (record,)
    for i, sample in enumerate(samples):
        found += [f"samples[{i}].{k}" for k in sample.extra]
        for g, gpu in enumerate(sample.gpus or ()):
            found += [f"samples[{i}].gpus[{g}].{k}" for k in gpu.extra]
    return found


@pytest.fixture
def hopper() -> Iterator[None]:
    nvml.set_module(fake_nvml.hopper_with_gpm())
    yield
    nvml.set_module(None)


def test_the_check_sees_an_undeclared_key() -> None:
    """The check itself: a reading the type does not know is reported with its path."""
    data = {"t_s": 1.0, "cpu_percent": 5.0, "gpus": [{"index": 0, "util_percent": 3.0, "fan_percent": 40.0}]}
    assert undeclared(records.Sample.model_validate(data, "s")) == ["samples[0].gpus[0].fan_percent"]


def test_the_check_sees_an_undeclared_summary_figure() -> None:
    data = {"status": "finished", "config": {}, "hardware": {}, "epochs": [], "samples": [],
            "summary": {"steady_epoch_seconds": 1.0, "median_watts": 300.0,
                        "diagnosis": {"kind": "undetermined", "verdict": "v", "confidence": 0.5}}}
    assert undeclared(records.RunRecord.model_validate(data)) == ["summary.median_watts", "summary.diagnosis.confidence"]


def test_a_sample_with_every_gpu_reading_is_declared(hopper: None) -> None:
    sampler = Sampler(monitor_gpus=True)
    sampler.sample_once()
    sample = sampler.sample_once()  # the second sample closes a GPM interval: every reading is filled
    data = json.loads(json.dumps(sample.to_dict()))
    assert data["gpus"] and data["gpus"][0].get("sm_active_percent") is not None, "the fake GPU gave no GPM figures"
    assert undeclared(records.Sample.model_validate(data, "sample")) == []


def test_live_and_stored_run_records_are_declared(isolated_store: Any) -> None:
    store = Store(isolated_store)
    manager = JobManager(store, hardware=NO_GPU, worker_target=fake_workers.quick)
    try:
        run_id = manager.submit(TINY)
        snap = manager.wait(run_id, timeout_s=60)
        assert snap.status == "finished" and snap.epochs and snap.samples
        live = records.RunRecord.model_validate(json.loads(json.dumps(snap.record().to_dict())))
        read = store.get_run(run_id)  # the store's own RunRecord: its bookkeeping columns are not run fields
        assert read is not None
        stored = records.RunRecord.model_validate(json.loads(json.dumps(read.to_dict())))
    finally:
        manager.shutdown()
    assert live.summary is not None and live.summary.diagnosis is not None, "the check saw a whole summary"
    assert undeclared(live) == []
    assert undeclared(stored) == []
    assert undeclared(read) == []


def test_one_type_per_reading() -> None:
    """The monitor hands over the records' own reading types: there is no second Sample or GpuReading to drift."""
    from bench.hardware import monitor

    assert monitor.Sample is records.Sample
    assert monitor.GpuReading is records.GpuReading
    sample = monitor.Sampler(interval_s=0.1, on_sample=lambda s: None, monitor_gpus=False).sample_once()
    assert type(sample) is records.Sample and isinstance(sample.cpu_per_core, tuple)
    assert records.Sample.model_validate(sample.to_dict()) == sample, "a sample survives its JSON form unchanged"
