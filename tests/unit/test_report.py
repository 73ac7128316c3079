"""Run-record exports (JSON, CSV, HTML) and validated imports into the store: bench/output/report.py."""

from __future__ import annotations

import copy
import csv
import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from bench.vocab import records
from bench.output import report
from bench.output.report import RecordError
from bench.store import Store

MALICIOUS = "<script>alert(1)</script>"


def make_record(*, run_id: int = 7, device: str = "cpu", times: tuple[float, ...] = (3.0, 2.0, 2.2),
                gpu: bool = True) -> dict[str, Any]:
    """A bench.run/1 record made by hand: len(times) epochs (the first with tracing), three samples."""
    epochs = [
        {"epoch": i + 1, "epoch_seconds": t, "samples_per_s": 1000 / t, "loss": 1.0 / (i + 1), "accuracy": 0.5 + i / 10,
         "val_loss": None, "val_accuracy": 0.4 + i / 10, "includes_tracing": i == 0,
         "t_start_s": sum(times[:i]), "t_end_s": sum(times[: i + 1])}
        for i, t in enumerate(times)
    ]
    gpu_reading = {"index": 0, "name": "NVIDIA Test", "util_percent": 55.0, "mem_util_percent": None,
                   "mem_used_mib": 1024.0, "mem_total_mib": 8192.0, "power_w": None, "temp_c": 61.0,
                   "sm_clock_mhz": None}
    samples = [
        {"t_s": 0.5, "cpu_percent": 80.0, "cpu_per_core": [70.0, 90.0], "process_cpu_percent": 150.0,
         "process_rss_mib": 900.0, "ram_used_mib": 4000.0, "gpus": [gpu_reading] if gpu else []},
        {"t_s": 1.0, "cpu_percent": None, "cpu_per_core": [], "process_cpu_percent": None,
         "process_rss_mib": 950.0, "ram_used_mib": 4010.0, "gpus": []},
        {"t_s": 1.5, "cpu_percent": 60.0, "cpu_per_core": [50.0, 70.0], "process_cpu_percent": 120.0,
         "process_rss_mib": 960.0, "ram_used_mib": 4020.0, "gpus": []},
    ]
    return {
        "schema": "bench.run/1",
        "id": run_id,
        "status": "finished",
        "config": {"dataset": "synthetic-mnist", "model": "mlp", "size": "s", "epochs": len(times), "batch_size": 128,
                   "device": device, "cpu_threads": None, "sample_interval_s": 0.5, "limit_samples": 2000,
                   "seed": 42, "optimizer": "adam", "learning_rate": None, "precision": "float32",
                   "jit_compile": False, "npz_path": None, "backend": "tensorflow"},
        "hardware": {"cpu": {"model": "Test CPU", "physical_cores": 2, "logical_cores": 2, "ram_total_mib": 8000.0},
                     "gpus": [], "gpu_reason": "no GPU", "framework": "tensorflow", "hostname": "box"},
        "info": {"placement": f"/device:{device.upper()}:0", "framework": "tensorflow 2.21.0"},
        "created_at": 1700000000.0,
        "started_at": 1700000001.0,
        "ended_at": 1700000010.0,
        "error": None,
        "store_error": None,
        "epochs": epochs,
        "samples": samples,
        "summary": {},
    }


def typed(record: dict[str, Any]) -> records.RunRecord:
    """A hand-made record as the engine holds a run (exports and comparisons take a RunRecord, not its JSON)."""
    return records.RunRecord.model_validate(record)


# -- round trip ---------------------------------------------------------------------------------------------------------
def test_json_round_trip_through_the_store(tmp_path: Path) -> None:
    record = make_record()
    loaded = report.load_record_file(report.to_json(typed(record)).encode())
    store = Store(tmp_path / "runs.sqlite3")
    [new_id] = report.import_into_store(store, loaded)
    back = store.get_run(new_id).to_dict()  # the stored run's own bench.run/1 record

    assert back["schema"] == "bench.run/1"
    assert back["id"] == new_id
    assert back["epochs"] == record["epochs"]
    assert back["samples"] == record["samples"]
    assert back["config"] == record["config"]
    assert back["status"] == "finished"
    assert back["hardware"] == record["hardware"]
    assert back["info"]["imported"] is True
    assert back["info"]["source_hardware"] == "Test CPU (2 cores), no GPU"
    assert back["info"]["source_id"] == 7
    assert back["info"]["placement"] == "/device:CPU:0"
    assert back["label"].startswith("imported: ")
    assert back["summary"]["steady_epoch_seconds"] == pytest.approx(2.1)
    assert back["summary"]["first_epoch_seconds"] == 3.0
    assert back["summary"]["mean_gpu_util_percent"] == 55.0
    report.validate_record(back)  # an exported import is importable again
    [again] = report.import_into_store(store, back)
    assert store.get_run(again).label.count("imported: ") == 1


def test_import_path_and_file_object(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    path.write_text(report.to_json(typed(make_record())))
    assert report.load_record_file(path).id == 7
    assert report.load_record_file(str(path)).id == 7
    assert report.load_record_file(io.BytesIO(path.read_bytes())).id == 7


def test_active_run_is_imported_as_interrupted(tmp_path: Path) -> None:
    record = make_record()
    record["status"] = "running"
    store = Store(tmp_path / "runs.sqlite3")
    [new_id] = report.import_into_store(store, record)
    run = store.get_run(new_id)
    assert run.status == "interrupted"
    assert run.info.imported_status == "running"
    assert store.owners.mark_orphans_interrupted() == []  # nothing imported looks like a live run


def test_comparison_import_gives_one_row_per_run(tmp_path: Path) -> None:
    doc = report.comparison_record([typed(make_record(run_id=1)), typed(make_record(run_id=2, device="gpu:0"))])
    store = Store(tmp_path / "runs.sqlite3")
    ids = report.import_into_store(store, report.load_record_file(report.to_json(doc).encode()))
    assert len(ids) == 2
    assert [store.get_run(i).config.device for i in ids] == ["cpu", "gpu:0"]


def test_failed_import_leaves_nothing_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bench.store import imports

    store = Store(tmp_path / "runs.sqlite3")
    doc = report.comparison_record([typed(make_record(run_id=1)), typed(make_record(run_id=2))])
    calls = {"n": 0}
    real = imports.ImportLog._insert

    def flaky(con: Any, source: Any, index: int, run: Any) -> int:
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("disk full")
        return real(con, source, index, run)

    monkeypatch.setattr(imports.ImportLog, "_insert", staticmethod(flaky))
    with pytest.raises(RuntimeError, match="disk full"):
        report.import_into_store(store, doc)
    assert calls["n"] == 2 and store.list_runs() == []  # the first run, written, went with the second's failure


# -- comparison arithmetic ----------------------------------------------------------------------------------------------
def test_comparison_record_arithmetic() -> None:
    cpu = make_record(run_id=1, times=(30.0, 20.0, 22.0, 24.0))
    gpu = make_record(run_id=2, device="gpu:0", times=(5.0, 2.0, 2.0, 2.5))
    comparison = report.comparison_record([typed(cpu), typed(gpu)])
    assert isinstance(comparison, records.Comparison)
    doc = comparison.to_dict()
    comp = doc["comparison"]
    assert doc["schema"] == "bench.comparison/1"
    assert doc["runs"][0]["id"] == 1
    assert comp["speedup_median"] == pytest.approx(11.0)  # 22 / 2
    assert comp["speedup_min"] == pytest.approx(20 / 2.5)
    assert comp["speedup_max"] == pytest.approx(24 / 2)
    assert comp["total_time_ratio"] == pytest.approx(96 / 11.5)
    [pair] = comp["pairs"]
    assert pair["baseline_id"] == 1 and pair["target_id"] == 2
    assert pair["headline"].startswith("gpu:0 trains 11.0x faster than cpu")


def test_comparison_of_three_has_no_flat_keys() -> None:
    doc = report.comparison_record([typed(make_record(run_id=i)) for i in (1, 2, 3)])
    assert doc.comparison is not None and len(doc.comparison.pairs) == 2
    assert "speedup_median" not in doc.comparison.extra
    assert "speedup_median" not in doc.to_dict()["comparison"]


def test_comparison_record_refuses_nothing() -> None:
    with pytest.raises(RecordError, match="at least one run record"):
        report.comparison_record([])


# -- CSV ----------------------------------------------------------------------------------------------------------------
def test_csv_columns_and_rows() -> None:
    import pandas as pd

    files = report.to_csv(typed(make_record()))
    assert set(files) == {"run.csv", "epochs.csv", "samples.csv"}
    [run] = list(csv.DictReader(io.StringIO(files["run.csv"])))
    assert (run["id"], run["measured"], run["imported_from"]) == ("7", "here", "")
    epochs = pd.read_csv(io.StringIO(files["epochs.csv"]))
    assert list(epochs.columns[:4]) == ["epoch", "epoch_seconds", "includes_tracing", "samples_per_s"]
    assert epochs["epoch"].tolist() == [1, 2, 3]
    assert epochs["includes_tracing"].tolist() == [True, False, False]
    samples = pd.read_csv(io.StringIO(files["samples.csv"]))
    expected = ["t_s", "cpu_percent", "process_cpu_percent", "process_rss_mib", "ram_used_mib", "cpu_core_0",
                "cpu_core_1", *(f"gpu0_{f}" for f in report.GPU_FIELDS)]
    assert list(samples.columns) == expected
    assert len(samples) == 3
    assert samples["gpu0_util_percent"].iloc[0] == 55.0
    assert samples["gpu0_mem_util_percent"].isna().all()  # a None reading is an empty cell, not 0
    assert samples["gpu0_util_percent"].isna().tolist() == [False, True, True]
    assert samples["cpu_percent"].isna().tolist() == [False, True, False]


def test_csv_epochs_spread_energy_over_columns_and_join_reasons() -> None:
    import pandas as pd

    record = make_record()
    for epoch in record["epochs"]:
        epoch["energy_j"] = {"cpu": None, "gpu:0": 12.5}
        epoch["throttle_reasons"] = ["power cap", "thermal slowdown"]
    epochs = pd.read_csv(io.StringIO(report.to_csv(typed(record))["epochs.csv"]))
    assert "energy_j" not in epochs.columns
    assert epochs["energy_j_gpu:0"].tolist() == [12.5, 12.5, 12.5]
    assert epochs["energy_j_cpu"].isna().all()  # not measured is an empty cell, not 0
    assert epochs["throttle_reasons"].tolist() == ["power cap; thermal slowdown"] * 3


def test_csv_zip_holds_csvs_and_json() -> None:
    with zipfile.ZipFile(io.BytesIO(report.to_csv_zip(typed(make_record())))) as archive:
        assert sorted(archive.namelist()) == ["epochs.csv", "record.json", "run.csv", "samples.csv"]
        assert json.loads(archive.read("record.json"))["id"] == 7


# -- HTML ---------------------------------------------------------------------------------------------------------------
def test_html_comparison_headline_plotly_once_and_escaped() -> None:
    cpu = make_record(run_id=1, times=(30.0, 20.0, 22.0, 24.0))
    gpu = make_record(run_id=2, device="gpu:0", times=(5.0, 2.0, 2.0, 2.5))
    for record in (cpu, gpu):
        record["config"]["dataset"] = MALICIOUS
        record["info"]["placement"] = MALICIOUS
    cpu["label"] = MALICIOUS
    page = report.to_html(report.comparison_record([typed(cpu), typed(gpu)]))
    assert "gpu:0 trains 11.0x faster than cpu (median steady epoch; spread 8.0x" in page
    assert page.count("plotly.js v") == 1  # inlined once: opens offline
    assert "<script src" not in page  # nothing fetched from a CDN
    assert MALICIOUS not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "First epoch, which includes graph tracing" in page
    assert "cpu 30.0 s; gpu:0 5.00 s" in page


def test_html_single_run() -> None:
    record = make_record()
    record["config"]["dataset"] = MALICIOUS
    page = report.to_html(typed(record))
    assert page.startswith("<!doctype html>")
    assert "Steady epoch 2.10 s on /device:CPU:0 (median of 2 epochs after the first)" in page
    assert MALICIOUS not in page
    assert page.count("plotly.js v") == 1
    assert "Test CPU (2 cores), no GPU" in page


def test_html_of_a_run_without_epochs() -> None:
    record = make_record()
    record["epochs"], record["samples"] = [], []
    page = report.to_html(typed(record))
    assert "No steady-state epoch yet" in page


# -- validation ---------------------------------------------------------------------------------------------------------
def _broken(change: Any) -> dict[str, Any]:
    record = copy.deepcopy(make_record())
    change(record)
    return record


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (["not", "a", "dict"], r"must be a JSON object, got list"),
        (_broken(lambda r: r.update(schema="bench.run/9")), r"schema 'bench.run/9' is not supported"),
        (_broken(lambda r: r.pop("schema")), r"schema is missing"),
        (_broken(lambda r: r.pop("epochs")), r"^epochs is missing"),
        (_broken(lambda r: r["epochs"][2].update(epoch_seconds="abc")),
         r"epochs\[2\]\.epoch_seconds must be a positive number, got 'abc'"),
        (_broken(lambda r: r["epochs"][1].update(epoch_seconds=-1.5)),
         r"epochs\[1\]\.epoch_seconds must be a positive number, got -1\.5"),
        (_broken(lambda r: r["epochs"][0].pop("includes_tracing")), r"epochs\[0\]\.includes_tracing is missing"),
        (_broken(lambda r: r["epochs"][1].update(epoch=True)), r"epochs\[1\]\.epoch must be an epoch number from 1"),
        (_broken(lambda r: r["epochs"][2].update(epoch=2)), r"epochs\[2\]\.epoch 2 appears twice"),
        (_broken(lambda r: r.update(samples={"t_s": 1})), r"samples must be a list of samples"),
        (_broken(lambda r: r["samples"][1].update(t_s="later")), r"samples\[1\]\.t_s must be a number"),
        (_broken(lambda r: r["samples"][0]["gpus"][0].update(util_percent="high")),
         r"samples\[0\]\.gpus\[0\]\.util_percent must be a number or null"),
        (_broken(lambda r: r["config"].update(colour="red")), r"config holds unknown setting\(s\) 'colour'"),
        (_broken(lambda r: r["config"].update(epochs="five")), r"config\.epochs must be a whole number from 1 to 1,000, got 'five'"),
        (_broken(lambda r: r.update(status=3)), r"status must be one of queued, .*, got 3"),
        (_broken(lambda r: r.update(hardware="a laptop")), r"hardware must be a JSON object"),
        ({"schema": "bench.comparison/1", "runs": []}, r"runs must be a non-empty list"),
        ({"schema": "bench.comparison/1", "runs": [_broken(lambda r: r["epochs"][0].update(epoch=0))]},
         r"runs\[0\]\.epochs\[0\]\.epoch must be an epoch number from 1 to 1,000,000, got 0"),
    ],
    ids=["not-dict", "schema", "no-schema", "no-epochs", "seconds-abc", "seconds-negative", "no-tracing-flag",
         "epoch-bool", "epoch-twice", "samples-not-list", "t_s-text", "gpu-text", "config-unknown",
         "config-type", "status", "hardware", "comparison-empty", "comparison-nested"],
)
def test_validate_record_rejects(data: Any, message: str) -> None:
    with pytest.raises(RecordError, match=message) as caught:
        report.validate_record(data)
    assert "python -m bench export" in str(caught.value)  # every message says what to do


def test_validate_accepts_a_gpu_run_on_a_cpu_only_machine() -> None:
    record = make_record(device="gpu:3")
    typed = report.validate_record(record)
    assert isinstance(typed, records.RunRecord) and typed.config.device == "gpu:3"


def test_nan_loss_is_importable(tmp_path: Path) -> None:
    record = make_record()
    record["epochs"][1]["loss"] = float("nan")
    loaded = report.load_record_file(report.to_json(typed(record)).encode())
    [new_id] = report.import_into_store(Store(tmp_path / "runs.sqlite3"), loaded)
    assert new_id >= 1


# -- files --------------------------------------------------------------------------------------------------------------
def test_load_rejects_invalid_json() -> None:
    with pytest.raises(RecordError, match=r"not valid JSON at line 2 column \d+: .*python -m bench export ID"):
        report.load_record_file(b'{"schema": "bench.run/1",\n "id": }')


def test_load_rejects_oversized_payload(tmp_path: Path) -> None:
    big = b" " * (report.MAX_RECORD_BYTES + 1)
    with pytest.raises(RecordError, match=r"larger than the 50 MiB an import accepts"):
        report.load_record_file(big)
    path = tmp_path / "big.json"
    path.write_bytes(b"{}" + b" " * 2000)
    with pytest.raises(RecordError, match=r"larger than the"):
        report.load_record_file(path, max_bytes=1000)
    with pytest.raises(RecordError, match=r"larger than the"):
        report.load_record_file(io.BytesIO(b" " * 2000), max_bytes=1000)


def test_load_rejects_missing_file_and_binary(tmp_path: Path) -> None:
    with pytest.raises(RecordError, match="does not exist"):
        report.load_record_file(tmp_path / "nope.json")
    with pytest.raises(RecordError, match="not UTF-8 text"):
        report.load_record_file(b"\xff\xfe\x00garbage")


@pytest.mark.parametrize("name", ["h100-seed-cifar10-mlp", "h100-seed-mnist-dense", "h100-seed-text", "h100-mlp-s"])
def test_the_shipped_gpu_results_import_and_their_headlines_follow_from_their_epochs(name, tmp_path):
    """docs/results holds comparisons measured on an H100 (docs/GPU.md): they must load, name the GPU, and carry
    figures that the epochs they hold reproduce, or docs/GPU.md would quote numbers the dashboard cannot show."""
    from pathlib import Path

    from bench.analysis import compare
    from bench.store import Store

    path = Path(__file__).resolve().parents[2] / "docs" / "results" / f"{name}.json"
    loaded = report.load_record_file(str(path))
    assert isinstance(loaded, records.Comparison)
    doc = loaded.to_dict()
    runs = doc["runs"]
    assert [r["config"]["device"] for r in runs] == ["cpu", "gpu:0"]
    assert "H100" in report.hardware_label(loaded.runs[1].hardware)
    assert "cuda" in runs[1]["info"]["placement"]
    again = compare.comparison(loaded.runs)
    assert again["speedup_median"] == pytest.approx(doc["comparison"]["speedup_median"])
    assert again["total_time_ratio"] == pytest.approx(doc["comparison"]["total_time_ratio"])
    ids = report.import_into_store(Store(tmp_path / "s.sqlite3"), doc)
    assert len(ids) == 2
