"""Records and command lines from a hostile or unlucky user: out-of-range numbers refused at the one validator with
exit 2, exports safe to open in a spreadsheet and written as strict JSON, whatever the locale, a run's own partial
copy completed by its file, a killed CLI's run never read as running. Each case failed before its fix."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from bench.cli import main as cli
from bench.vocab import records
from bench.analysis import compare
from bench.output import report
from bench.vocab.config import RunConfig
from bench.store import Store

ROOT = Path(__file__).resolve().parents[2]


def a_record(**changes: Any) -> dict[str, Any]:
    record = {"schema": "bench.run/1", "id": 1, "status": "finished", "config": RunConfig().to_dict(),
              "hardware": {"cpu": {"model": "x", "logical_cores": 2}, "gpus": []}, "info": {},
              "created_at": 1_764_000_000.0, "started_at": 1_764_000_001.0, "ended_at": 1_764_000_010.0,
              "epochs": [{"epoch": 1, "epoch_seconds": 1.0, "includes_tracing": True, "loss": 1.0},
                         {"epoch": 2, "epoch_seconds": 0.5, "includes_tracing": False, "loss": 0.5}],
              "samples": [{"t_s": 0.0, "cpu_percent": 50.0, "gpus": []}]}
    record.update(changes)
    return record


def typed(record: dict[str, Any]) -> records.RunRecord:
    """A hand-made record as the engine holds a run (exports and comparisons take a RunRecord, not its JSON)."""
    return records.RunRecord.model_validate(record)


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = cli.main(argv)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def write(tmp_path: Path, text: str, name: str = "r.json") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(("change", "field"), [
    ({"created_at": float("inf")}, "created_at"),
    ({"created_at": 1e308}, "created_at"),
    ({"started_at": float("nan")}, "started_at"),
    ({"ended_at": -1e18}, "ended_at"),
    ({"epochs": [{"epoch": 10**30, "epoch_seconds": 1.0, "includes_tracing": True}]}, "epochs[0].epoch"),
    ({"epochs": [{"epoch": 1, "epoch_seconds": 1e300, "includes_tracing": True}]}, "epochs[0].epoch_seconds"),
    ({"samples": [{"t_s": float("inf"), "cpu_percent": 1.0}]}, "samples[0].t_s"),
    ({"samples": [{"t_s": 1.0, "cpu_percent": 1e9}]}, "samples[0].cpu_percent"),
    ({"samples": [{"t_s": 1.0, "gpus": [{"index": 0, "power_w": -5.0}]}]}, "samples[0].gpus[0].power_w"),
    ({"id": 10**30}, "id"),
    ({"config": {**RunConfig().to_dict(), "learning_rate": float("inf")}}, "config.learning_rate"),
    # the summary's figures are bounded like the readings they are made of (run_summary.RunSummary.from_dict)
    ({"summary": {"mean_cpu_percent": 1e9}}, "summary.mean_cpu_percent"),
    ({"summary": {"steady_epoch_seconds": "0.5 s"}}, "summary.steady_epoch_seconds"),
    ({"summary": {"energy_j_per_epoch": {"cpu": -5.0}}}, "summary.energy_j_per_epoch.cpu"),
    ({"summary": {"energy_j_per_1000_samples": 5.0}}, "summary.energy_j_per_1000_samples"),
    ({"summary": {"epochs_done": -1}}, "summary.epochs_done"),
    ({"summary": {"throttle_reasons": "power cap"}}, "summary.throttle_reasons"),
    ({"summary": {"diagnosis": {"kind": "fast", "verdict": "fast: trust me"}}}, "summary.diagnosis.kind"),
    ({"summary": {"diagnosis": {"kind": "host-bound", "verdict": "v", "evidence": {"step_ms": float("inf")}}}},
     "summary.diagnosis.evidence.step_ms"),
])
def test_an_out_of_range_number_is_refused_on_import_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                  change: dict[str, Any], field: str) -> None:
    path = write(tmp_path, json.dumps(a_record(**change)))  # Python's json writes inf/nan as JSON extensions
    code, out = run_cli(["import", str(path)], capsys)
    assert code == 2, out
    assert field in out and "Traceback" not in out, out
    assert Store().list_runs() == [], "nothing is imported"


def test_a_huge_run_id_is_refused_with_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["export", str(10**30)])
    assert exited.value.code == 2
    assert "is not a run id" in capsys.readouterr().err


def test_csv_cells_that_a_spreadsheet_would_run_are_neutralised() -> None:
    record = a_record(epochs=[{"epoch": 1, "epoch_seconds": 1.0, "includes_tracing": True, "note": "=1+1",
                               "=HYPERLINK(\"x\")": "@SUM(A1)", "loss": -0.5}],
                      samples=[{"t_s": 0.0, "cpu_percent": 5.0, "label": "+cmd|' /C calc'!A0", "tab": "\t=1"}])
    files = report.to_csv(typed(record))
    for name, text in files.items():
        for row in csv.reader(io.StringIO(text)):
            for cell in row:
                assert not cell.startswith(("=", "+", "@", "\t", "\r")), (name, cell)
    epochs = list(csv.DictReader(io.StringIO(files["epochs.csv"])))
    assert epochs[0]["note"] == "'=1+1"
    assert float(epochs[0]["loss"]) == -0.5, "numbers stay numbers, negative ones too"


def test_json_exports_are_strict_json_with_null_for_a_diverged_loss(tmp_path: Path) -> None:
    record = a_record()
    record["epochs"][1]["loss"] = float("nan")
    text = report.to_json(typed(record))

    def refuse(token: str) -> None:
        raise ValueError(f"not strict JSON: {token}")

    data = json.loads(text, parse_constant=refuse)
    assert data["epochs"][1]["loss"] is None
    assert records.load(data).epochs[1].loss is None


def test_runs_json_is_strict(capsys: pytest.CaptureFixture[str]) -> None:
    store = Store()
    run_id = store.create_run(RunConfig().to_dict(), status="finished")
    store.add_epoch(run_id, {"epoch": 1, "epoch_seconds": 1.0, "includes_tracing": True})
    store.add_epoch(run_id, {"epoch": 2, "epoch_seconds": 1.0, "loss": float("nan"), "includes_tracing": False})
    code, out = run_cli(["runs", "--json"], capsys)
    assert code == 0
    json.loads(out, parse_constant=lambda token: pytest.fail(f"not strict JSON: {token}"))


def test_compare_refuses_the_same_target_twice(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run_cli(["compare", "--targets", "cpu,cpu", "--epochs", "2"], capsys)
    assert code == 2 and "named more than once" in out, out
    assert Store().list_runs() == [], "nothing ran"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders; the missing-folder case below "
                                              "covers the early check")
def test_an_unwritable_json_path_is_refused_before_training(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    code, out = run_cli(["run", "--epochs", "2", "--json", str(folder / "r.json")], capsys)
    assert code == 2 and "cannot be written" in out
    assert Store().list_runs() == []


def test_a_json_path_that_is_a_folder_or_under_a_file_is_refused_before_training(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    for path in (tmp_path, blocker / "r.json"):
        code, out = run_cli(["run", "--epochs", "2", "--json", str(path)], capsys)
        assert code == 2 and "cannot be written" in out, out
    assert Store().list_runs() == [], "no run was started"


def test_a_file_carrying_a_stored_runs_identity_is_imported_beside_it(tmp_path: Path) -> None:
    """The store failed mid-run; the CLI kept the whole record in a file; importing it adds an imported run beside
    the stored copy, which stays as it was measured (an import never writes into a run it did not make)."""
    store = Store()
    config = RunConfig().to_dict()
    run_id = store.create_run(config, status="running", created_at=1_764_000_000.0)
    store.add_epoch(run_id, {"epoch": 1, "epoch_seconds": 1.0, "includes_tracing": True})
    full = a_record(id=run_id, config=config)
    [new_id] = report.import_into_store(store, report.load_record_file(report.to_json(typed(full)).encode()))
    assert new_id != run_id
    stored, imported = store.get_run(run_id), store.get_run(new_id)
    assert [e.epoch for e in stored.epochs] == [1] and not stored.info.imported
    assert imported.status == "finished" and [e.epoch for e in imported.epochs] == [1, 2]
    assert imported.info.imported and imported.info.source_id == run_id and len(imported.samples) == 1


def test_a_killed_clis_run_is_not_read_as_running(tmp_path: Path) -> None:
    """Reading one run (an export, History's selection) settles a dead owner first, as listing does."""
    store = Store()
    run_id = store.create_run(RunConfig().to_dict(), status="running")
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = int(child.stdout)
    with store._op() as con:  # the run's owner is a process that has exited (a CLI killed with SIGKILL)
        con.execute("UPDATE runs SET owner_pid = ?, owner_started = 1.0 WHERE id = ?", (dead, run_id))
    assert store.get_run(run_id).status == "interrupted"


@pytest.mark.parametrize("command", [["runs"], ["devices"], ["export", "RUN", "--format", "html"]])
def test_the_cli_works_under_a_non_utf8_locale(tmp_path: Path, command: list[str]) -> None:
    store = Store()
    run_id = store.create_run(RunConfig().to_dict(), status="finished")
    for n in (1, 2):
        store.add_epoch(run_id, {"epoch": n, "epoch_seconds": 1.0, "includes_tracing": n == 1})
    store.update_run(run_id, label="naïve — run ²")
    out = tmp_path / "r.html"
    argv = [str(run_id) if a == "RUN" else a for a in command] + (["--out", str(out)] if "export" in command else [])
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONIOENCODING", "PYTHONUTF8", "LANG")}
    env.update(LC_ALL="C", LANG="C", PYTHONUTF8="0", PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "bench", *argv], env=env, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert b"Traceback" not in done.stderr
    if "export" in command:
        text = out.read_text(encoding="utf-8")
        assert "<html" in text.lower() and len(text) > 1000


def test_a_failed_export_leaves_no_empty_file(tmp_path: Path) -> None:
    target = tmp_path / "out.html"

    class Unprintable:
        def __str__(self) -> str:
            raise RuntimeError("cannot render")

    with pytest.raises(RuntimeError):
        report.write_file(target, "".join(str(x) for x in [Unprintable()]))
    assert not target.exists()
    report.write_file(target, "ok ²")
    assert target.read_text(encoding="utf-8") == "ok ²"
    assert not list(tmp_path.glob(".*.tmp")), "no temporary file is left behind"


def test_strict_helper_turns_every_non_finite_number_into_null() -> None:
    data = {"a": [1.0, math.inf, {"b": -math.inf, "c": math.nan}], "d": (2, math.nan)}
    assert records.strict(data) == {"a": [1.0, None, {"b": None, "c": None}], "d": [2, None]}


def test_zip_export_holds_strict_json(tmp_path: Path) -> None:
    record = a_record()
    record["epochs"][0]["loss"] = float("inf")
    with zipfile.ZipFile(io.BytesIO(report.to_csv_zip(typed(record)))) as archive:
        json.loads(archive.read("record.json"), parse_constant=lambda t: pytest.fail(f"not strict JSON: {t}"))


@pytest.mark.parametrize(("pair_change", "field"), [
    ({"speedup_median": "fast"}, "comparison.pairs[0].speedup_median"),
    ({"cost_ratio": float("inf")}, "comparison.pairs[0].cost_ratio"),
    ({"target": None}, "comparison.pairs[0].target"),
    ({"energy_missing": {"cpu": 3}}, "comparison.pairs[0].energy_missing"),
])
def test_a_comparison_pair_of_the_wrong_kind_is_refused_on_import(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                   pair_change: dict[str, Any], field: str) -> None:
    """A comparison file's pairs are read into compare.Pair, whose headline and caution do arithmetic on them: a
    pair with text for a number, or an infinite ratio, is refused with its path before any page or export meets it."""
    doc = compare.comparison_record([typed(a_record(id=1)),
                                     typed(a_record(id=2, config=RunConfig(device="cpu", cpu_threads=1).to_dict()))
                                     ]).to_dict()
    assert doc["comparison"]["pairs"], "the file holds a pair to spoil"
    doc["comparison"]["pairs"][0].update(pair_change)
    code, out = run_cli(["import", str(write(tmp_path, json.dumps(doc)))], capsys)
    assert code == 2, out
    assert field in out and "Traceback" not in out, out
    assert Store().list_runs() == [], "nothing is imported"


# -- one parser at every way in: what the hand-written reader let through ------------------------------------------
def _bundle(**changes: Any) -> dict[str, Any]:
    doc = json.loads((ROOT / "docs/results/bundle-cpu-2core.json").read_text(encoding="utf-8"))
    doc.update(changes)
    return doc


def test_a_lone_surrogate_in_a_runs_placement_is_refused_on_import_and_nothing_is_stored(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, json.dumps(a_record(info={"placement": "/GPU:0\ud800"})))  # written as "\ud800"
    code, out = run_cli(["import", str(path)], capsys)
    assert code == 2, out
    assert "info.placement" in out and "surrogate" in out and "Traceback" not in out, out
    assert Store().list_runs() == [] and Store().listing().unreadable == [], "nothing is imported"


def test_a_lone_surrogate_in_a_bundles_cpu_model_is_refused_on_import_and_nothing_is_stored(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = _bundle()
    doc["machine"]["cpu"]["model"] = "EPYC \ud800"
    code, out = run_cli(["import", str(write(tmp_path, json.dumps(doc), "bundle.json"))], capsys)
    assert code == 2, out
    assert "machine.cpu.model" in out and "Traceback" not in out, out
    assert Store().bundles.list() == [], "a bundle import that errors stores nothing"


def test_a_lone_surrogate_is_named_where_it_sits_by_pydantics_own_json_parser() -> None:
    text = json.dumps(a_record(info={"placement": "\udfff"}))
    with pytest.raises(records.RecordError, match=r"info\.placement must be valid Unicode text"):
        records.load_json(text)


def test_the_largest_id_sqlite_holds_imports_and_lists_as_readable(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    largest = 2**63 - 1
    record = a_record(id=largest, info={"source_id": largest})
    code, out = run_cli(["import", str(write(tmp_path, json.dumps(record)))], capsys)
    assert code == 0, out
    listing = Store().listing()
    assert listing.unreadable == [], [u.reason for u in listing.unreadable]
    assert len(listing.runs) == 1
    assert records.RunRecord.model_validate(record).info.source_id == largest
    for too_big in (2**63, 2**64 - 1):
        with pytest.raises(records.RecordError, match=r"^id must be a whole number from"):
            records.RunRecord.model_validate(a_record(id=too_big))
        with pytest.raises(records.RecordError, match=r"^info\.source_id must be a whole number from"):
            records.RunRecord.model_validate(a_record(info={"source_id": too_big}))


def test_a_list_nested_700_deep_in_an_extra_key_is_refused_on_import_so_no_export_recurses(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = json.dumps(a_record()).replace('"info": {}', '"info": {"deep": ' + "[" * 700 + "]" * 700 + "}")
    code, out = run_cli(["import", str(write(tmp_path, text))], capsys)
    assert code == 2, out
    assert "info.deep" in out and "nested too deeply" in out and "Traceback" not in out, out
    assert Store().list_runs() == []
    with pytest.raises(records.RecordError, match=r"info\.deep.* is nested too deeply"):
        records.load_json(text)
    shallow = json.dumps(a_record()).replace('"info": {}', '"info": {"deep": ' + "[" * 150 + "]" * 150 + "}")
    run = records.load_json(shallow)
    json.loads(report.to_json(run))  # what is accepted exports
    report.to_csv(run)


@pytest.mark.parametrize("price", [5e-324, -1.0, 0.0, float("inf"), 2e6])
def test_a_price_outside_normal_hourly_prices_is_refused_in_a_loaded_comparison_and_a_bundle(price: float) -> None:
    doc = json.loads((ROOT / "docs/results/h100-mlp-s.json").read_text(encoding="utf-8"))
    doc["comparison"]["prices"] = {"cpu": price}
    with pytest.raises(records.RecordError, match=r"^comparison\.prices\.cpu must be an hourly price from 1e-06"):
        records.load(doc)
    doc = json.loads((ROOT / "docs/results/h100-mlp-s.json").read_text(encoding="utf-8"))
    doc["comparison"]["pairs"][0]["price_per_hour_a"] = price
    with pytest.raises(records.RecordError, match=r"^comparison\.pairs\[0\]\.price_per_hour_a must be an hourly price"):
        records.load(doc)
    with pytest.raises(records.RecordError, match=r"^prices\.cpu must be an hourly price"):
        records.load_bundle(_bundle(prices={"cpu": price}))
    assert records.load_bundle(_bundle(prices={"cpu": 1e-6})).prices == {"cpu": 1e-6}
