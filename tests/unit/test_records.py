"""bench.vocab.records: the one home of the record shapes. Statuses written once, one builder per record, one validator,
and every shipped result still loads and round-trips unchanged."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bench.vocab import records
from bench.analysis import compare, run_summary, sweeps
from bench.vocab.config import RunConfig
from bench.vocab.record_types import RecordedHardware
from bench.analysis.sweeps import SweepRow
from bench.vocab.records import Comparison, RecordError, RunRecord, Status, Sweep
from bench.vocab.run_info import RunInfo

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results"


def minimal_run(**changes) -> dict:
    record = records.run_record(
        id=7, status=Status.FINISHED, config=RunConfig.model_validate({"dataset": "synthetic-mnist", "epochs": 2}),
        hardware=RecordedHardware.model_validate({"cpu": {}}),
        info=RunInfo(placement="/device:CPU:0"), created_at=1.0, started_at=2.0, ended_at=3.0, error=None,
        store_error=None, samples=[{"t_s": 0.5, "cpu_percent": 50.0, "gpus": [{"index": 0, "util_percent": None}]}],
        epochs=[{"epoch": 1, "epoch_seconds": 2.0, "includes_tracing": True},
                {"epoch": 2, "epoch_seconds": 1.0, "includes_tracing": False, "energy_j": {"cpu": None},
                 "a_later_reading": {"x": 1}}])
    record.update(changes)
    return record


def test_status_is_its_plain_value_everywhere():
    assert Status.FINISHED == "finished" and str(Status.INTERRUPTED) == "interrupted"
    assert json.dumps({"s": Status.RUNNING}) == '{"s": "running"}'
    assert set(records.ACTIVE) | set(records.TERMINAL) == set(records.STATUSES)
    assert Status.QUEUED.active and not Status.STOPPED.active


def test_the_statuses_are_written_out_once():
    """No module but records.py spells the status list (the old copies were in five modules)."""
    spelled = re.compile(r"""["']finished["']\s*,\s*["']stopped["']""")
    offenders = [str(p.relative_to(ROOT)) for folder in ("bench", "ui", "pages") for p in (ROOT / folder).rglob("*.py")
                 if p.name != "records.py" and spelled.search(p.read_text())]
    assert offenders == []


def test_run_record_round_trips_and_keeps_unknown_keys():
    record = minimal_run()
    typed = RunRecord.model_validate(record)
    assert typed.status is Status.FINISHED and typed.epochs[1].extra == {"a_later_reading": {"x": 1}}
    assert typed.epochs[1].energy_j == {"cpu": None}
    assert typed.samples[0].gpus[0].index == 0
    assert json.loads(json.dumps(typed.to_dict())) == json.loads(json.dumps(record))
    assert record["summary"] is None, "a record holds what it is given: the analysis computes a summary"
    assert run_summary.summary_of(typed).steady_epoch_seconds == 1.0


@pytest.mark.parametrize(("change", "message"), [
    ({"status": "done"}, "status must be one of queued, starting, running"),
    ({"epochs": [{"epoch": 1, "epoch_seconds": -1, "includes_tracing": True}]}, "epochs[0].epoch_seconds must be a "
                                                                                 "positive number"),
    ({"epochs": [{"epoch": 1, "epoch_seconds": 1, "includes_tracing": True}] * 2}, "appears twice"),
    ({"samples": [{"t_s": 1, "gpus": [{"index": 0, "util_percent": "busy"}]}]}, "samples[0].gpus[0].util_percent"),
    ({"config": {"epochs": "two"}}, "config.epochs must be a whole number"),
])
def test_one_validator_names_the_field_and_what_to_do(change, message):
    with pytest.raises(RecordError, match=re.escape(message)) as err:
        records.load(minimal_run(**change))
    assert "python -m bench export" in str(err.value)


def test_comparison_builder_adds_headlines_and_loads_back():
    a = minimal_run(id=1, config={"device": "cpu", "cpu_threads": 1, "epochs": 2})
    b = minimal_run(id=2, config={"device": "cpu", "epochs": 2})
    comparison = compare.comparison_record([RunRecord.model_validate(a), RunRecord.model_validate(b)])
    assert isinstance(comparison, Comparison) and [r.id for r in comparison.runs] == [1, 2]
    doc = comparison.to_dict()
    assert doc["schema"] == records.COMPARISON_SCHEMA and doc["comparison"]["pairs"][0]["headline"]
    assert isinstance(records.load(doc), Comparison)
    with pytest.raises(RecordError, match="at least one run record"):
        compare.comparison_record([])


@pytest.mark.parametrize("path", sorted([*RESULTS.glob("*.json"), *RESULTS.glob("verify/*.json")]),
                         ids=lambda p: str(p.relative_to(RESULTS)))
def test_every_shipped_result_loads_and_round_trips(path):
    data = json.loads(path.read_text())
    if "schema" not in data:
        pytest.skip(f"{path.name} is not a record (a device listing, or a note of `make gpu-verify`)")
    if data["schema"] == records.BUNDLE_SCHEMA:  # a machine bundle has its own loader
        bundle = records.load_bundle(data)
        assert bundle.runs and json.loads(json.dumps(bundle.to_dict())) == data
        return
    typed = records.load(data)
    assert isinstance(typed, (RunRecord, Comparison, Sweep))
    again = typed.to_dict()
    if isinstance(typed, Sweep):  # old rows gain the sampling interval from their run's config
        assert [r["run_id"] for r in again["rows"]] == [r["run_id"] for r in data["rows"]]
        assert all("sample_interval_s" in r for r in again["rows"])
    else:  # unchanged but for the old name of a GPU's power draw, which is read as power_w
        renamed = json.dumps(data).replace('"power_watts":', '"power_w":')
        assert json.loads(json.dumps(again)) == json.loads(renamed)


def test_sweep_builder_drops_samples_and_validates_rows():
    run = minimal_run()
    row = SweepRow(run_id=7, size="s", batch_size=128, target="cpu", steady_epoch_seconds=1.0)
    doc = sweeps.sweep_record([row], {"cpu": 200.0}, [RunRecord.model_validate(run)])
    assert run["samples"], "the run has samples to drop"
    assert doc["runs"][0]["samples"] == [], "a sweep's run is written with its samples key kept empty"
    assert doc["runs"][0]["epochs"] == run["epochs"], "only the samples are dropped"
    made = run_summary.summary_of(RunRecord.model_validate(run)).to_dict()
    assert doc["runs"][0]["summary"] == made, "the summary made with the samples is kept"
    sweep = records.load(doc)
    assert isinstance(sweep, Sweep) and sweep.hardware is not None and sweep.hardware.to_dict() == {"cpu": {}}
    assert sweep.runs[0].samples == ()
    assert sweep.rows == (row,), "a row written and read back is the same row"
    doc["rows"][0]["steady_epoch_seconds"] = "fast"
    with pytest.raises(RecordError, match=re.escape("rows[0].steady_epoch_seconds must be a number")):
        records.load(doc)


# -- the write paths under the read path's types ---------------------------------------------------------------------
def test_a_reading_out_of_bounds_cannot_be_built_and_a_sampler_can_make_it_not_measured() -> None:
    from bench.vocab.readings import GpuReading, Sample

    with pytest.raises(RecordError, match=r"^gpu\.mem_used_mib must be a finite number from 0 to 1e\+10, got "
                                          r"18446744073709551615"):
        GpuReading(index=0, mem_used_mib=2**64 - 1)  # AMD SMI's "not supported"
    with pytest.raises(RecordError, match=r"^sample\.cpu_percent must be a finite number from 0 to 100"):
        Sample(t_s=1.0, cpu_percent=float("inf"))
    with pytest.raises(RecordError, match=r"^gpu\.name must be one line of text"):
        GpuReading(index=0, name="driver\n550")
    reading, why = GpuReading.measured(index=0, util_percent=50.0, mem_used_mib=2**64 - 1, power_w=-5.0,
                                       name="GPU\x1b[2J", temp_c=float("nan"))
    assert (reading.util_percent, reading.mem_used_mib, reading.power_w, reading.name, reading.temp_c) == \
        (50.0, None, None, None, None), "what is out of bounds is not measured; the rest is kept"
    assert sorted(why) == ["mem_used_mib", "name", "power_w", "temp_c"]
    assert "not measured" in why["mem_used_mib"] and "18446744073709551615" in why["mem_used_mib"]
    assert "control character" in why["name"] and "not finite" in why["temp_c"]
    with pytest.raises(RecordError, match=r"gpu\.index"):
        GpuReading.measured(index=-1)


def test_a_worker_event_is_written_under_the_types_it_is_read_with() -> None:
    from bench.runs import events

    with pytest.raises(RecordError, match=r"^epoch\.epoch_seconds must be a positive number"):
        events.event(events.EPOCH, epoch=1, epoch_seconds=-1.0, includes_tracing=True, started_wall=1.0,
                     ended_wall=2.0)
    with pytest.raises(RecordError, match=r"^info\.placement must be valid Unicode text"):
        events.event(events.STARTED, placement="\ud800")
    made = events.event(events.EPOCH, epoch=1, epoch_seconds=1.0, started_wall=1.0, ended_wall=2.0)
    assert isinstance(made, events.EpochEnded) and made.epoch.includes_tracing is False
