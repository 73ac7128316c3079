"""A stored row this version cannot read is listed apart, never raised out of a listing: each kind of damage below
leaves ``Store.list_runs`` working with the good runs, ``Store.unreadable_runs`` naming the run and the field,
``get_run`` raising RunUnreadable with what to do, the raw rows exportable and the run deletable; so does the CLI
(``runs``, ``export N``, ``export N --raw``). The History page's side is tests/app/test_history_unreadable.py."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.vocab import records
from bench.vocab.config import RunConfig
from bench.vocab.errors import RunUnreadable, StoreError
from bench.vocab.records import RunRecord
from bench.store import Store
from bench.store.rows import RAW_SCHEMA, RunRow, UnreadableRun, read_run

CONFIG = RunConfig(model="mlp", size="xs", dataset="synthetic-mnist", epochs=2, batch_size=64).to_dict()


def _good_run(store: Store, label: str = "good") -> int:
    run_id = store.create_run(CONFIG, label=label)
    store.update_run(run_id, status="running", started_at=100.0, info={"placement": "/device:CPU:0"},
                     hardware={"cpu": {"model": "test CPU"}})
    for n in (1, 2):
        store.add_epoch(run_id, {"epoch": n, "epoch_seconds": 1.0, "includes_tracing": n == 1, "loss": 0.5})
    store.add_samples(run_id, [{"t_s": 0.5 * i, "cpu_percent": 50.0, "gpus": []} for i in range(4)])
    store.update_run(run_id, status="finished", ended_at=110.0)
    return run_id


def _sql(path: Path, statement: str, *params: object) -> None:
    with sqlite3.connect(path) as con:
        con.execute(statement, params)


def _column(column: str, text: str):
    return lambda path, run_id: _sql(path, f"UPDATE runs SET {column} = ? WHERE id = ?", text, run_id)


def _epoch(text: str):
    return lambda path, run_id: _sql(path, "UPDATE epochs SET data = ? WHERE run_id = ? AND epoch = 1", text, run_id)


# (what is done to the odd run's rows, what the reason names, what it quotes of the row)
DAMAGE = {
    "config not JSON": (_column("config", "not json"), "config is not JSON", "'not json'"),
    "config a list": (_column("config", "[1,2]"), "config must be a JSON object", "[1, 2]"),
    "config unknown setting": (_column("config", '{"colour": "red"}'), "config holds unknown setting(s)", "colour"),
    "hardware a number": (_column("hardware", "5"), "hardware must be a JSON object", "5"),
    "info a string": (_column("info", '"text"'), "info", "'text'"),
    "info.cluster a string": (_column("info", '{"cluster": "x"}'), "info.cluster", "'x'"),
    "error a list": (_column("error", "[]"), "error", "[]"),
    "summary Infinity": (_column("summary", '{"steady_epoch_seconds": Infinity}'), "summary.steady_epoch_seconds",
                         "inf"),
    "summary NaN": (_column("summary", '{"mean_cpu_percent": NaN}'), "summary.mean_cpu_percent", "nan"),
    "summary wrong type": (_column("summary", '{"epochs_done": "two"}'), "summary.epochs_done", "'two'"),
    "summary a string": (_column("summary", '"fast"'), "summary", "'fast'"),
    "epoch row an empty object": (_epoch("{}"), "epochs[0].epoch is missing", ""),
    "epoch row not JSON": (_epoch("{oops"), "epochs[0] is not JSON", "'{oops'"),
    "epoch row nested too deeply": (_epoch("[" * 100_000 + "]" * 100_000), "epochs[0] is not JSON", "[[["),
    "unknown status with an odd info": (
        lambda path, run_id: _sql(path, "UPDATE runs SET status = 'paused', info = '[1]' WHERE id = ?", run_id),
        "info", "[1]"),
    "created_at text": (_column("created_at", "yesterday"), "created_at must be", "'yesterday'"),
    "label a blob": (lambda path, run_id: _sql(path, "UPDATE runs SET label = x'ff' WHERE id = ?", run_id), "label",
                     "b'\\xff'"),
    # TEXT that is not UTF-8 (written by another tool): sqlite3 would fail the whole listing on decoding it
    "label text not UTF-8": (lambda path, run_id: _sql(path, "UPDATE runs SET label = CAST(x'66ff6f' AS TEXT) "
                                                             "WHERE id = ?", run_id), "label", "b'f\\xffo'"),
    "config text not UTF-8": (lambda path, run_id: _sql(path, "UPDATE runs SET config = CAST(x'7bff7d' AS TEXT) "
                                                              "WHERE id = ?", run_id), "config is not JSON", "\\xff"),
    "epoch row text not UTF-8": (lambda path, run_id: _sql(path, "UPDATE epochs SET data = CAST(x'7bff7d' AS TEXT) "
                                                                 "WHERE run_id = ? AND epoch = 1", run_id),
                                 "epochs[0] is not JSON", "\\xff"),
}


@pytest.fixture
def damaged(request: pytest.FixtureRequest, tmp_path: Path):
    """A store of three runs, the middle one damaged as DAMAGE[request.param] says after it was listed once (a
    listing keeps what it read of an unchanged row: a changed one must be read again)."""
    path = tmp_path / "s.sqlite3"
    store = Store(path)
    first, odd, last = _good_run(store, "first"), _good_run(store, "odd"), _good_run(store, "last")
    assert [r.id for r in store.list_runs()] == [first, odd, last]
    damage, names, quotes = DAMAGE[request.param]
    damage(path, odd)
    return store, (first, odd, last), names, quotes


@pytest.mark.parametrize("damaged", list(DAMAGE), indirect=True)
def test_a_damaged_row_is_listed_apart_named_with_its_field(damaged):
    store, (first, odd, last), names, quotes = damaged
    listing = store.listing()
    assert [r.id for r in listing.runs] == [first, last], "the good runs are listed"
    assert [r.id for r in store.list_runs()] == [first, last]
    [unreadable] = store.listing().unreadable
    assert isinstance(unreadable, UnreadableRun) and unreadable.id == odd
    assert names in unreadable.reason and quotes in unreadable.reason, unreadable.reason
    assert "fix the file" not in unreadable.reason, "a row is no file: the hint of a file's refusal is left out"
    assert unreadable.message == f"run #{odd} cannot be read here: {unreadable.reason}"
    assert len(unreadable.reason) < 400


@pytest.mark.parametrize("damaged", list(DAMAGE), indirect=True)
def test_a_damaged_run_asked_for_says_what_to_do_and_can_be_exported_raw_and_deleted(damaged):
    store, (first, odd, last), names, _ = damaged
    with pytest.raises(RunUnreadable) as caught:
        store.get_run(odd)
    message = str(caught.value)
    assert isinstance(caught.value, StoreError), "callers that handle a failing store handle it"
    assert message.startswith(f"run #{odd} cannot be read here: ") and names in message
    assert message.endswith(f"export it raw with `python -m bench export {odd} --raw` or delete it")
    raw = store.raw_run(odd)
    assert raw is not None and raw.id == odd
    doc = raw.to_dict()
    assert doc["schema"] == RAW_SCHEMA and json.loads(json.dumps(doc)) == doc
    assert len(doc["epochs"]) == 2 and len(doc["samples"]) == 4
    assert isinstance(doc["columns"]["config"], str) and "owner_pid" in doc["columns"], "every column, as text"
    assert store.get_run(first) is not None and store.get_run(last) is not None
    assert store.delete_run(odd)
    assert store.listing().unreadable == [] and store.raw_run(odd) is None and store.get_run(odd) is None
    assert [r.id for r in store.list_runs()] == [first, last]


def test_a_damaged_sample_row_refuses_the_run_when_it_is_read_with_its_samples(tmp_path):
    """A listing reads no samples, so the run is listed; reading it whole names the sample."""
    path = tmp_path / "s.sqlite3"
    store = Store(path)
    run_id = _good_run(store)
    _sql(path, "UPDATE samples SET data = 'garbage' WHERE run_id = ? AND t_s = 1.0", run_id)
    assert [r.id for r in store.list_runs()] == [run_id]
    run = store.get_run(run_id, with_samples=False)
    assert run is not None and len(run.epochs) == 2
    with pytest.raises(RunUnreadable, match=r"samples\[2\] is not JSON: 'garbage'"):
        store.get_run(run_id)
    _sql(path, "UPDATE samples SET data = '{\"t_s\": 1, \"cpu_percent\": 900}' WHERE run_id = ? AND t_s = 1.0", run_id)
    with pytest.raises(RunUnreadable, match=r"samples\[2\]\.cpu_percent must be a finite number from 0 to 100"):
        store.get_run(run_id)


def test_a_status_this_version_does_not_know_still_reads_as_interrupted(tmp_path):
    path = tmp_path / "s.sqlite3"
    store = Store(path)
    run_id = _good_run(store)
    _sql(path, "UPDATE runs SET status = 'paused' WHERE id = ?", run_id)
    [run] = store.list_runs()
    assert str(run.status) == "interrupted" and store.listing().unreadable == []
    assert run.error is not None and "'paused'" in run.error.to_dict()["message"]


def test_a_time_out_of_its_bounds_reads_as_unknown(tmp_path):
    """A row written before imports were range-checked: the run stays readable, its time unknown."""
    store = Store(tmp_path / "s.sqlite3")
    run_id = store.create_run(CONFIG, status="finished", created_at=1e308)
    [run] = store.list_runs()
    assert run.id == run_id and run.created_at is None and store.listing().unreadable == []


def test_an_orphan_whose_rows_cannot_be_read_is_still_marked_interrupted(tmp_path):
    """A dead owner's run is marked whatever its rows hold; its summary cannot be computed, so it keeps none."""
    path = tmp_path / "s.sqlite3"
    store = Store(path)
    run_id = store.create_run(CONFIG, status="running")
    store.add_epoch(run_id, {"epoch": 1, "epoch_seconds": 1.0, "includes_tracing": True})
    _sql(path, "UPDATE runs SET owner_pid = 'x', heartbeat_at = 1.0, hardware = '5' WHERE id = ?", run_id)
    assert store.list_runs() == []
    [unreadable] = store.listing().unreadable
    assert unreadable.id == run_id and "hardware" in unreadable.reason
    with sqlite3.connect(path) as con:
        assert con.execute("SELECT status, summary FROM runs").fetchone() == ("interrupted", None)


def test_an_ended_run_whose_epochs_cannot_be_read_gets_no_summary_and_breaks_no_listing(tmp_path):
    path = tmp_path / "s.sqlite3"
    store = Store(path)
    good, odd = _good_run(store), _good_run(store)
    _sql(path, "UPDATE runs SET summary = NULL")  # an older version's rows: summaries computed on listing
    _sql(path, "UPDATE epochs SET data = 'x' WHERE run_id = ?", odd)
    assert [r.id for r in store.list_runs()] == [good] and [u.id for u in store.listing().unreadable] == [odd]
    with sqlite3.connect(path) as con:
        summaries = dict(con.execute("SELECT id, summary FROM runs").fetchall())
    assert summaries[good] is not None and summaries[odd] is None


def test_an_odd_info_elsewhere_does_not_break_reading_a_multi_worker_run(tmp_path):
    """A coordinating member's run looks its members up by the cluster id in their info: another row's info that
    is not JSON is passed over, not an error."""
    path = tmp_path / "s.sqlite3"
    store = Store(path)
    cluster = {"id": "c1", "size": 2, "workers": ["a:1", "b:1"]}
    lead, member, odd = _good_run(store), _good_run(store), _good_run(store)
    store.update_run(lead, info={"cluster": cluster | {"index": 0}})
    store.update_run(member, info={"cluster": cluster | {"index": 1}})
    _sql(path, "UPDATE runs SET info = 'not json' WHERE id = ?", odd)
    run = store.get_run(lead)
    assert run is not None and [m.id for m in run.members] == [member]
    assert [r.id for r in store.list_runs()] == [lead], "its member is read as part of it"


@pytest.mark.parametrize(("table", "readable"), [
    # an older runs table: no hardware, info, error, summary or label columns; its runs read without them
    ("id INTEGER PRIMARY KEY AUTOINCREMENT, created_at REAL NOT NULL, started_at REAL, ended_at REAL, "
     "status TEXT NOT NULL, config TEXT NOT NULL", True),
    # a later one with a column this version does not know: left in the store (the raw export has it)
    ("id INTEGER PRIMARY KEY AUTOINCREMENT, created_at REAL NOT NULL, started_at REAL, ended_at REAL, "
     "status TEXT NOT NULL, config TEXT NOT NULL, hardware TEXT, info TEXT, error TEXT, summary TEXT, label TEXT, "
     "notes TEXT", True),
    # one without the config column: no run can be read from it
    ("id INTEGER PRIMARY KEY AUTOINCREMENT, created_at REAL NOT NULL, started_at REAL, ended_at REAL, "
     "status TEXT NOT NULL, settings TEXT", False),
])
def test_a_runs_table_of_another_version(tmp_path, table, readable):
    path = tmp_path / "s.sqlite3"
    with sqlite3.connect(path) as con:
        con.execute(f"CREATE TABLE runs ({table})")
        columns = [row[1] for row in con.execute("PRAGMA table_info(runs)")]
        values = {"created_at": 1000.0, "status": "finished", "config": json.dumps(CONFIG), "notes": "hi",
                  "settings": "{}"}
        con.execute(f"INSERT INTO runs ({', '.join(c for c in columns if c in values)}) VALUES "
                    f"({', '.join('?' for c in columns if c in values)})", [values[c] for c in columns if c in values])
    store = Store(path)
    listing = store.listing()
    if readable:
        [run] = listing.runs
        assert run.id == 1 and run.config.to_dict() == CONFIG and "notes" not in run.to_dict() and listing.unreadable == []
        raw = store.raw_run(1)
        assert raw is not None and raw.columns.get("notes", "hi") == "hi"
    else:
        assert listing.runs == []
        [odd] = listing.unreadable
        assert odd.id == 1 and odd.reason == "the runs table has no config column (a store written by another version)"
        assert odd.created_at == 1000.0


JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                                        max_size=3),
                           max_leaves=8)
ROW_TEXTS = st.one_of(st.text(max_size=20), JSON_VALUES.map(json.dumps),
                      st.dictionaries(st.sampled_from(["epoch", "epoch_seconds", "includes_tracing", "loss", "t_s",
                                                       "cpu_percent", "cluster", "id", "index", "steady_epoch_seconds",
                                                       "model", "epochs"]), JSON_VALUES, max_size=4).map(json.dumps))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(column=st.sampled_from(["config", "hardware", "info", "error", "summary", "status", "label", "created_at",
                               "epoch", "sample"]), text=ROW_TEXTS)
def test_whatever_a_row_holds_it_is_read_or_named_never_raised(column, text):
    """Any text in any column a record is read from: the row is a record or an UnreadableRun, never an error."""
    row = {"id": 7, "created_at": 1000.0, "started_at": None, "ended_at": None, "status": "finished",
           "config": json.dumps(CONFIG), "hardware": None, "info": None, "error": None, "summary": None, "label": None}
    epochs = [json.dumps({"epoch": 1, "epoch_seconds": 1.0, "includes_tracing": True})]
    samples = [json.dumps({"t_s": 0.0})]
    if column == "epoch":
        epochs.append(text)
    elif column == "sample":
        samples.append(text)
    else:
        row[column] = text
    read = read_run(RunRow.of(row), epochs, samples)
    assert isinstance(read, (RunRecord, UnreadableRun))
    if isinstance(read, UnreadableRun):
        assert read.id == 7 and read.reason
    else:
        assert json.loads(records.json_text(read.to_dict()))["id"] == 7, "a record read can be written"


# -- the command line -------------------------------------------------------------------------------------------------
def test_the_cli_lists_an_unreadable_run_and_exports_it_only_raw(main, isolated_store, tmp_path):
    store = Store(isolated_store)
    good, odd = _good_run(store), _good_run(store, "odd\x1b[31m")
    _sql(isolated_store, "UPDATE runs SET hardware = ? WHERE id = ?", "not json \x1b]8;;evil\x07", odd)
    out = main("runs")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 2 and lines[0].lstrip().startswith(str(good))
    assert lines[1].startswith(f"run #{odd} cannot be read here: hardware is not JSON: ")
    assert "\x1b" not in out.stdout and "\\x1b" in out.stdout, "the row's text is shown, not run by the terminal"
    out = main("runs", "--json")
    assert out.returncode == 0 and [r["id"] for r in json.loads(out.stdout)] == [good]
    assert f"run #{odd} cannot be read here" in out.stderr
    out = main("export", str(odd))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.startswith(f"error: run #{odd} cannot be read here: hardware is not JSON")
    assert f"`python -m bench export {odd} --raw`" in out.stderr
    target = tmp_path / "odd.json"
    out = main("export", str(odd), "--raw", "--out", str(target))
    assert out.returncode == 0, out.stderr
    doc = json.loads(target.read_text())
    assert doc["id"] == odd and doc["columns"]["hardware"] == "not json \x1b]8;;evil\x07"
    assert doc["columns"]["label"] == "odd\x1b[31m" and len(doc["epochs"]) == 2
    assert main("export", str(odd), "--raw", "--format", "csv").returncode == 2
    assert main("export", "999", "--raw").returncode == 2
    assert store.delete_run(odd)
    out = main("runs")
    assert out.returncode == 0 and "cannot be read" not in out.stdout


def test_an_odd_shape_the_checked_reader_did_not_foresee_is_named_not_raised(monkeypatch):
    """What the checked reader raises besides RecordError on a shape nobody foresaw (a TypeError deep inside, say)
    makes the row unreadable too."""
    def surprised(data, path=""):
        raise TypeError("unhashable type: 'dict'")

    monkeypatch.setattr(RunRecord, "model_validate", surprised)
    row = {"id": 3, "created_at": 1000.0, "status": "finished", "config": json.dumps(CONFIG), "label": "x"}
    read = read_run(RunRow.of(row), [])
    assert read == UnreadableRun(id=3, reason="TypeError: \"unhashable type: 'dict'\"", created_at=1000.0, label="x")
