"""A run is typed from the store to the pages: what the store reads back (trusted, ``RunRecord.of``) is the record the
checked reader (``RunRecord.from_dict``) builds from the same JSON, a live run's snapshot gives one too, and the
store's own bookkeeping (the owner's columns) stays out of it."""

from __future__ import annotations

import os

from bench.analysis import sweeps
from bench.vocab.record_types import CpuSpec, Fingerprint, SweepRow
from bench.vocab import records
from bench.analysis import compare, run_summary
from bench.vocab.config import RunConfig
from bench.vocab.records import RunRecord
from bench.vocab.run_info import RunInfo
from bench.runs.run_state import RunSnapshot
from bench.store import Owner, Store

CONFIG = RunConfig(model="mlp", size="xs", dataset="synthetic-mnist", epochs=3, batch_size=64).to_dict()


def _epoch(n: int, seconds: float) -> dict:
    return {"epoch": n, "epoch_seconds": seconds, "includes_tracing": n == 1, "samples_per_s": 1000.0 / seconds,
            "loss": 1.0 / n, "accuracy": 0.5, "t_start_s": float(n), "t_end_s": n + seconds}


def _stored_run(store: Store, *, finished: bool) -> int:
    run_id = store.create_run(CONFIG, label="typed")
    store.update_run(run_id, status="running", started_at=100.0, info=RunInfo(placement="/device:CPU:0", params=1234),
                     hardware={"cpu": {"model": "test CPU", "logical_cores": 2}})
    for n, seconds in ((1, 2.0), (2, 1.0), (3, 1.1)):
        store.add_epoch(run_id, _epoch(n, seconds))
    store.add_samples(run_id, [{"t_s": 0.5 * i, "cpu_percent": 50.0 + i, "process_cpu_percent": 90.0, "gpus": []}
                               for i in range(12)])
    if finished:
        run = store.get_run(run_id)
        assert run is not None
        store.update_run(run_id, status="finished", ended_at=105.0,
                         summary=run_summary.summarize(run.epochs, run.samples, info=run.info, config=run.config))
    return run_id


def test_a_stored_run_reads_back_as_the_checked_reader_reads_its_json(tmp_path):
    store = Store(tmp_path / "s.sqlite3")
    run_id = _stored_run(store, finished=True)
    run = store.get_run(run_id)
    assert isinstance(run, RunRecord) and run.summary is not None
    checked = RunRecord.model_validate(run.to_dict())
    assert checked == run, "the trusted reading of a stored row is what the checked one gives"
    assert [e.epoch for e in run.epochs] == [1, 2, 3] and len(run.samples) == 12
    assert run_summary.summary_of(run).steady_epoch_seconds == 1.05 and run_summary.summary_of(run) is run.summary
    listed = store.list_runs()
    assert [r.id for r in listed] == [run_id] and listed[0].samples == () and listed[0].epochs == run.epochs


def test_a_running_runs_summary_is_computed_from_what_it_has(tmp_path):
    store = Store(tmp_path / "s.sqlite3")
    run = store.get_run(_stored_run(store, finished=False))
    assert run is not None and run.summary is None, "no summary is stored before the run ends"
    assert run_summary.summary_of(run).steady_epoch_seconds == 1.05 and run_summary.summary_of(run).epochs_done == 3
    assert run.to_dict()["summary"] is None, "a record holds what it is given"
    assert run_summary.with_summary(run).to_dict()["summary"]["steady_epoch_seconds"] == 1.05


def test_the_owners_columns_stay_in_the_store(tmp_path):
    store = Store(tmp_path / "s.sqlite3")
    run_id = _stored_run(store, finished=False)
    run = store.get_run(run_id)
    assert run is not None
    assert not {"owner_pid", "owner_host", "owner_started", "heartbeat_at"} & set(run.to_dict()), run.extra
    owner = store.owners.owner_of(run_id)
    assert isinstance(owner, Owner) and owner.pid == os.getpid() and owner.host == Owner.current().host
    assert store.owners.owner_of(run_id + 1) is None


def test_a_snapshots_record_is_typed_and_reads_as_the_stored_one(tmp_path):
    store = Store(tmp_path / "s.sqlite3")
    stored = store.get_run(_stored_run(store, finished=True))
    assert stored is not None
    record = RunSnapshot.from_stored(stored).record()
    assert isinstance(record, RunRecord)
    assert (record.id, record.status, record.epochs, record.samples) == (stored.id, stored.status, stored.epochs,
                                                                          stored.samples)
    assert run_summary.summary_of(record).steady_epoch_seconds == run_summary.summary_of(stored).steady_epoch_seconds
    assert compare.target(record) == compare.target(stored) == "cpu"


def test_a_comparison_of_typed_runs_writes_the_json_an_import_reads(tmp_path):
    store = Store(tmp_path / "s.sqlite3")
    runs = [store.get_run(_stored_run(store, finished=True)) for _ in range(2)]
    comparison = compare.comparison_record([r for r in runs if r is not None])
    again = records.load(comparison.to_dict())
    assert isinstance(again, records.Comparison) and again.runs == comparison.runs
    [pair] = compare.pairs(again.runs)
    assert pair.speedup_median == 1.0 and comparison.comparison is not None and pair.headline == comparison.comparison.pairs[0].headline


def test_a_sweep_or_bundle_keeps_the_figures_its_runs_samples_gave_though_it_drops_the_samples(tmp_path):
    store = Store(tmp_path / "s.sqlite3")
    run = store.get_run(_stored_run(store, finished=False))  # no stored summary: computed from what it has
    assert run is not None and run.summary is None and run_summary.summary_of(run).mean_cpu_percent is not None
    sweep = sweeps.sweep_record([SweepRow(size="s", batch_size=128, target="cpu", run_id=run.id)], {}, [run])
    bundle = records.bundle_record(machine=Fingerprint(cpu=CpuSpec()), suite_version="1", suite_variant="quick",
                                   runs=[run_summary.with_summary(run).model_copy(update={"samples": ()})])
    for doc in (sweep, bundle):
        [kept] = doc["runs"]
        assert kept["samples"] == []
        assert kept["summary"]["mean_cpu_percent"] == run_summary.summary_of(run).mean_cpu_percent


def test_a_row_with_a_status_this_version_does_not_know_reads_as_interrupted_and_says_why(tmp_path):
    """A newer version sharing the store may write a status this one lacks: the row is read, not refused, and it
    keeps what it said."""
    import sqlite3

    store = Store(tmp_path / "s.sqlite3")
    odd = _stored_run(store, finished=True)
    good = _stored_run(store, finished=True)
    with sqlite3.connect(tmp_path / "s.sqlite3") as con:
        con.execute("UPDATE runs SET status = 'paused' WHERE id = ?", (odd,))
    assert [(r.id, str(r.status)) for r in store.list_runs()] == [(odd, "interrupted"), (good, "finished")]
    run = store.get_run(odd)
    assert run is not None and run.info.stored_status == "paused" and run.info.placement == "/device:CPU:0"
    assert run.error is not None and "'paused'" in run.error.message and run.error.hint
    assert len(run.epochs) == 3, "its epochs are kept"
    assert RunRecord.model_validate(run.to_dict()) == run
