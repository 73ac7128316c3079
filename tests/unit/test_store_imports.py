"""An import is a run of its own (bench.store.imports, report.import_record): a file that carries a stored run's id,
creation time and config, or a live run's own export, never writes into that run; the same record twice stores
nothing and says which runs it already is; every imported run reads as imported in `bench runs`, every export and
the pages, from the store's own columns, whatever its info says."""

from __future__ import annotations

import copy
import csv
import io
import json
import sqlite3
import zipfile
from pathlib import Path
from typing import Any

import pytest

from bench.cli import main as cli
from bench.output import report
from bench.store import RunReplaced, Store
from tests.unit.test_report import make_record, typed

H100 = {"cpu": {"model": "Xeon", "physical_cores": 32, "logical_cores": 64, "ram_total_mib": 512000.0},
        "gpus": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "memory_total_mib": 81559.0}],
        "framework": "tensorflow", "hostname": "elsewhere"}


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli.main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def stored_run(store: Store, *, status: str = "finished") -> int:
    """A run measured here: three CPU epochs of 2 s and a sample."""
    doc = make_record(times=(3.0, 2.0, 2.0), gpu=False)
    run_id = store.create_run(doc["config"], status="running", label="here")
    store.update_run(run_id, hardware=doc["hardware"], info=doc["info"], started_at=doc["started_at"])
    for epoch in doc["epochs"]:
        store.add_epoch(run_id, epoch)
    store.add_samples(run_id, doc["samples"][:1], seqs=[0])
    if status != "running":
        store.update_run(run_id, status=status, ended_at=doc["ended_at"])
    store.listing()  # the store's own bookkeeping done (a finished run's summary), so that nothing else changes it
    return run_id


def rows_of(path: Path, run_id: int) -> tuple[Any, ...]:
    """Everything the store holds of a run: its row, epochs and samples, as SQLite gives them."""
    with sqlite3.connect(path) as con:
        return (con.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchall(),
                con.execute("SELECT * FROM epochs WHERE run_id = ? ORDER BY epoch", (run_id,)).fetchall(),
                con.execute("SELECT * FROM samples WHERE run_id = ? ORDER BY t_s", (run_id,)).fetchall())


def forged_copy(store: Store, run_id: int) -> dict[str, Any]:
    """The stored run's own export, its epochs made 1000x faster and an H100 added: a forgery of it."""
    run = store.get_run(run_id)
    assert run is not None
    doc = json.loads(report.to_json(run))
    for epoch in doc["epochs"]:
        epoch["epoch_seconds"] /= 1000
    doc["hardware"] = H100
    doc["info"]["placement"] = "/device:GPU:0"
    return doc


def test_a_file_carrying_a_stored_runs_identity_is_a_new_run_and_the_stored_one_is_unchanged(
        isolated_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = Store(isolated_store)
    run_id = stored_run(store)
    before = rows_of(isolated_store, run_id)
    forged = forged_copy(store, run_id)
    assert (forged["id"], forged["created_at"]) == (run_id, store.get_run(run_id).created_at)
    path = tmp_path / "forged.json"
    path.write_text(json.dumps(forged))

    code, out, err = run_cli(["import", str(path)], capsys)
    assert code == 0, err
    [new_id] = [r.id for r in store.list_runs() if r.id != run_id]
    assert out.strip() == f"imported 1 run(s) as #{new_id}"
    assert rows_of(isolated_store, run_id) == before, "the stored run is as it was measured"
    mine, imported = store.get_run(run_id), store.get_run(new_id)
    assert not mine.info.imported and mine.hardware.gpus == () and mine.epochs[1].epoch_seconds == 2.0
    assert imported.info.imported and imported.info.source_id == run_id
    assert imported.info.extra["imported_from"] == "file forged.json"
    assert imported.hardware.gpus[0].name == "NVIDIA H100 80GB HBM3", "kept as the file says, marked as imported"


def test_importing_a_live_runs_own_export_leaves_the_live_run_untouched(
        isolated_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = Store(isolated_store)
    live = stored_run(store, status="running")  # its owner is this process: alive
    assert store.owners.mark_orphans_interrupted() == [] and str(store.get_run(live).status) == "running"
    before = rows_of(isolated_store, live)
    path = tmp_path / "live.json"
    path.write_text(json.dumps(forged_copy(store, live)))

    code, out, err = run_cli(["import", str(path)], capsys)
    assert code == 0, err
    assert rows_of(isolated_store, live) == before, "the live run's row, epochs and samples are as they were"
    [new_id] = [r.id for r in store.list_runs() if r.id != live]
    imported = store.get_run(new_id)
    assert str(imported.status) == "interrupted" and imported.info.imported_status == "running"
    assert store.owners.owner_of(new_id) is None, "no process runs an imported run"
    # the live run goes on: its writes land in its own row, never in the import
    store.add_epoch(live, {"epoch": 4, "epoch_seconds": 2.0, "includes_tracing": False})
    assert [e.epoch for e in store.get_run(live).epochs] == [1, 2, 3, 4]
    assert [e.epoch for e in store.get_run(new_id).epochs] == [1, 2, 3]


def test_no_run_writer_writes_into_an_imported_run(isolated_store: Path) -> None:
    store = Store(isolated_store)
    [new_id] = report.import_into_store(store, make_record())
    before = rows_of(isolated_store, new_id)
    for write in (lambda: store.add_epoch(new_id, {"epoch": 9, "epoch_seconds": 0.001}),
                  lambda: store.add_epochs(new_id, [{"epoch": 9, "epoch_seconds": 0.001}]),
                  lambda: store.add_samples(new_id, [{"t_s": 9.0}]),
                  lambda: store.update_run(new_id, status="running")):
        with pytest.raises(RunReplaced, match="imported run"):
            write()
    store.owners.heartbeat([new_id])
    assert rows_of(isolated_store, new_id) == before


def test_the_same_file_twice_says_already_imported_and_changes_nothing(
        isolated_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "run.json"
    path.write_text(report.to_json(typed(make_record())))
    code, out, _ = run_cli(["import", str(path)], capsys)
    assert code == 0 and out.strip() == "imported 1 run(s) as #1"
    before = rows_of(isolated_store, 1)

    code, out, _ = run_cli(["import", str(path)], capsys)
    assert code == 0 and out.strip() == "already imported as #1: nothing changed"
    # the same record in another layout (keys reordered, no indentation) is the same record
    other = tmp_path / "again.json"
    other.write_text(json.dumps(dict(reversed(list(json.loads(path.read_text()).items())))))
    code, out, _ = run_cli(["import", str(other)], capsys)
    assert code == 0 and out.strip() == "already imported as #1: nothing changed"
    assert [r.id for r in Store(isolated_store).list_runs()] == [1]
    assert rows_of(isolated_store, 1) == before


def test_a_comparison_twice_names_every_run_it_already_is(isolated_store: Path) -> None:
    doc = report.comparison_record([typed(make_record(run_id=1)), typed(make_record(run_id=2, device="gpu:0"))])
    store = Store(isolated_store)
    first = report.import_record(store, doc)
    again = report.import_record(store, json.loads(report.to_json(doc)))
    assert first.new and not again.new and again.ids == first.ids == [1, 2]
    assert again.said() == "already imported as #1, #2: nothing changed"


def test_two_different_files_claiming_one_identity_are_two_runs(isolated_store: Path) -> None:
    store = Store(isolated_store)
    genuine = make_record(run_id=5)
    other = copy.deepcopy(genuine)
    other["epochs"][1]["epoch_seconds"] = 0.002
    [a] = report.import_into_store(store, genuine)
    before = rows_of(isolated_store, a)
    [b] = report.import_into_store(store, other)
    assert a != b and rows_of(isolated_store, a) == before
    assert store.get_run(a).epochs[1].epoch_seconds == 2.0 and store.get_run(b).epochs[1].epoch_seconds == 0.002
    assert store.get_run(a).info.source_id == store.get_run(b).info.source_id == 5


def test_an_import_claiming_to_be_local_still_reads_as_imported(isolated_store: Path) -> None:
    doc = make_record()
    doc["info"].update(imported=False, source_id=None)
    doc["label"] = "measured here, honest"
    store = Store(isolated_store)
    [new_id] = report.import_into_store(store, doc)
    with sqlite3.connect(isolated_store) as con:  # even its info rewritten by hand: the columns say what it is
        con.execute("UPDATE runs SET info = ?, label = ? WHERE id = ?", ('{"imported": false}', "local", new_id))
    run = store.get_run(new_id)
    assert run.info.imported and run.info.extra["imported_from"] == "a file"
    assert [r.info.imported for r in store.list_runs()] == [True]


def test_an_imported_member_never_joins_a_run_measured_here(isolated_store: Path) -> None:
    store = Store(isolated_store)
    cluster = {"id": "c1", "size": 2, "workers": ["a:1", "b:1"]}
    lead = stored_run(store)
    store.update_run(lead, info={"cluster": cluster | {"index": 0}})
    member = make_record(run_id=99)
    member["info"]["cluster"] = cluster | {"index": 1}
    [new_id] = report.import_into_store(store, member)
    assert store.get_run(lead).members == ()
    assert sorted(r.id for r in store.list_runs()) == [lead, new_id], "the import lists as a run of its own"


def test_an_id_too_large_for_a_source_id_imports_and_reads(isolated_store: Path) -> None:
    store = Store(isolated_store)
    [new_id] = report.import_into_store(store, make_record(run_id=2**63 - 1))
    listing = store.listing()
    assert listing.unreadable == [] and [r.id for r in listing.runs] == [new_id]
    assert listing.runs[0].info.imported and listing.runs[0].info.source_id is None


def test_bench_runs_marks_each_imported_run(isolated_store: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    store = Store(isolated_store)
    here = stored_run(store)
    path = tmp_path / "from-the-lab.json"
    path.write_text(report.to_json(typed(make_record(run_id=7))))
    run_cli(["import", str(path)], capsys)

    code, out, _ = run_cli(["runs"], capsys)
    assert code == 0
    lines = {int(line.split()[0]): line for line in out.splitlines()}
    assert "imported" not in lines[here]
    assert lines[here + 1].endswith("[imported from file from-the-lab.json, run #7 there]"), lines

    code, out, _ = run_cli(["runs", "--json"], capsys)
    listed = {r["id"]: r for r in json.loads(out)}
    assert listed[here]["imported"] is None
    assert listed[here + 1]["imported"]["from"] == "file from-the-lab.json"
    assert listed[here + 1]["imported"]["source_id"] == 7


def test_every_export_of_an_imported_run_says_so(isolated_store: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    store = Store(isolated_store)
    here = stored_run(store)
    [new_id] = report.import_into_store(store, make_record(run_id=7), source="file lab.json")
    outs = {}
    for fmt in ("json", "csv", "html"):
        for run_id in (here, new_id):
            out = tmp_path / f"{run_id}.{fmt}"
            assert run_cli(["export", str(run_id), "--format", fmt, "--out", str(out)], capsys)[0] == 0
            outs[fmt, run_id] = out

    info = json.loads(outs["json", new_id].read_text())["info"]
    assert info["imported"] is True and info["imported_from"] == "file lab.json" and info["source_id"] == 7
    assert not json.loads(outs["json", here].read_text())["info"].get("imported")

    def run_csv(path: Path) -> dict[str, str]:
        with zipfile.ZipFile(path) as archive:
            [row] = list(csv.DictReader(io.StringIO(archive.read("run.csv").decode())))
        return row
    assert run_csv(outs["csv", new_id])["measured"] == "imported"
    assert run_csv(outs["csv", new_id])["imported_from"] == "imported from file lab.json, run #7 there"
    assert run_csv(outs["csv", here])["measured"] == "here"

    page = outs["html", new_id].read_text()
    assert "(imported)</h2>" in page and "imported from file lab.json, run #7 there" in page
    assert "(imported)</h2>" not in outs["html", here].read_text()


def test_an_mlflow_import_is_a_new_run_that_names_its_source(isolated_store: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    from bench.cli import store as cli_store
    from bench.output import mlflow_log

    store = Store(isolated_store)
    here = stored_run(store)
    before = rows_of(isolated_store, here)
    forged = forged_copy(store, here)
    monkeypatch.setattr(cli_store, "mlflow_uri", lambda args: "http://mlflow.test:5000")
    monkeypatch.setattr(mlflow_log, "fetch_record", lambda uri, run_id: json.dumps(forged).encode())
    code, out, err = run_cli(["import", "abc123", "--mlflow", "http://mlflow.test:5000"], capsys)
    assert code == 0, err
    assert rows_of(isolated_store, here) == before
    imported = store.get_run(here + 1)
    assert imported.info.imported
    assert imported.info.extra["imported_from"] == "MLflow run abc123 at http://mlflow.test:5000"
    code, out, _ = run_cli(["import", "abc123", "--mlflow", "http://mlflow.test:5000"], capsys)
    assert code == 0 and out.strip() == f"already imported as #{here + 1}: nothing changed"


def test_a_bundle_import_that_fails_stores_nothing(isolated_store: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    shipped = Path(__file__).resolve().parents[2] / "docs" / "results" / "bundle-cpu-2core.json"
    doc = json.loads(shipped.read_text())
    doc["machine"]["cpu"]["model"] = "AMD \ud800 EPYC"
    path = tmp_path / "bundle.json"
    path.write_text(json.dumps(doc))  # the lone surrogate written as its \ud800 escape
    code, out, err = run_cli(["import", str(path)], capsys)
    assert code == 2 and "machine.cpu.model" in err and "valid Unicode" in err and "Traceback" not in err
    assert Store(isolated_store).bundles.list() == []


def test_where_an_import_came_from_is_kept_as_one_clean_line(isolated_store: Path) -> None:
    store = Store(isolated_store)
    name = "lab\udcff\x1b[31m\u202eevil\nrun.json"  # an undecodable byte, a terminal escape, a bidi mark, a newline
    [new_id] = report.import_into_store(store, make_record(), source=f"file {name}")
    where = store.get_run(new_id).info.extra["imported_from"]
    assert where == "file lab\\udcff?[31m?evil run.json"


def test_a_multi_worker_record_imported_whole_reads_as_one_run_with_its_members(isolated_store: Path) -> None:
    store = Store(isolated_store)
    cluster = {"id": "c1", "size": 2, "workers": ["a:1", "b:1"]}
    local = stored_run(store)  # a run measured here in a cluster of the same id
    store.update_run(local, info={"cluster": cluster | {"index": 0}})
    lead, member = make_record(run_id=10), make_record(run_id=11)
    lead["info"]["cluster"], member["info"]["cluster"] = cluster | {"index": 0}, cluster | {"index": 1}
    ids = report.import_into_store(store, lead | {"members": [member]})
    assert len(ids) == 2
    assert sorted(r.id for r in store.list_runs()) == [local, ids[0]]
    assert [m.id for m in store.get_run(ids[0]).members] == [ids[1]]
    assert store.get_run(local).members == ()


def test_the_bundle_store_keeps_no_bundle_it_cannot_keep_whole(isolated_store: Path) -> None:
    from bench.vocab.errors import RecordError

    shipped = Path(__file__).resolve().parents[2] / "docs" / "results" / "bundle-cpu-2core.json"
    doc = json.loads(shipped.read_text())
    doc["notes"] = "fine \ud800 text"
    store = Store(isolated_store)
    with pytest.raises(RecordError, match="not valid Unicode"):
        store.bundles.add(doc)
    assert store.bundles.list() == []
