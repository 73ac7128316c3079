"""`python -m bench`: the exact command forms, the JSON record, and bad input without tracebacks.

Commands that train, and one of each kind of refusal, run as a user runs them (`python -m bench ...` in a child
Python: the entry point, exit codes and streams); the other refusals and the store commands call the same
``bench.cli.main.main`` in this process, which is what the entry point runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.store import Store
from benchmarks.standins import PACED_WORKER_TARGET
from tests.unit.test_store import dead_pid, set_owner

ROOT = Path(__file__).resolve().parents[2]


def bench(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    """``python -m bench ARGS`` in a child Python, as a user types it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "bench", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_devices_json():
    out = bench("devices", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["cpu"]["logical_cores"] >= 1
    assert isinstance(data["gpus"], list)
    if not data["gpus"]:
        assert data["gpu_reason"]


def test_devices_text(main):
    out = main("devices")
    assert out.returncode == 0, out.stderr
    assert "CPU" in out.stdout and "cpu" in out.stdout


@pytest.mark.slow
def test_run_writes_the_json_record_and_lists_it(tmp_path):
    path = tmp_path / "out" / "run.json"
    out = bench("run", "--dataset", "synthetic-mnist", "--model", "mlp", "--size", "xs", "--epochs", "2",
                "--batch-size", "128", "--device", "cpu", "--cpu-threads", "1", "--limit-samples", "1024",
                "--sample-interval", "0.2", "--json", str(path))
    assert out.returncode == 0, out.stderr
    record = json.loads(path.read_text())
    assert record["status"] == "finished"
    assert record["config"]["cpu_threads"] == 1 and record["config"]["limit_samples"] == 1024
    assert record["hardware"]["cpu"]["logical_cores"] >= 1
    assert [e["epoch"] for e in record["epochs"]] == [1, 2]
    for e in record["epochs"]:
        assert {"epoch", "epoch_seconds", "samples_per_s", "loss", "accuracy", "includes_tracing"} <= set(e)
    assert record["epochs"][0]["includes_tracing"] is True and record["epochs"][1]["includes_tracing"] is False
    assert record["samples"], "samples must be recorded"
    for s in record["samples"]:
        assert {"t_s", "cpu_percent", "cpu_per_core", "process_cpu_percent", "gpus", "cpu_energy_j"} <= set(s)
        for gpu in s["gpus"]:  # on a machine with a GPU: every reading has the GPU-truth keys (None where unknown)
            assert {"sm_active_percent", "sm_occupancy_percent", "tensor_active_percent", "dram_active_percent",
                    "power_w", "power_limit_w", "sm_clock_mhz", "throttle_reasons", "energy_j"} <= set(gpu)
    for e in record["epochs"]:  # a CPU run used the CPU only; its joules are a number or None with a reason
        assert set(e["energy_j"]) == {"cpu"} and e["achieved_gflops"] > 0
        assert e["throttle_reasons"] is None, "no GPU, no throttle reasons"
    summary = record["summary"]
    assert set(summary["energy_j_per_epoch"]) == {"cpu"}
    if summary["energy_j_per_epoch"]["cpu"] is None:
        assert summary["energy_reasons"]["cpu"].startswith("RAPL not readable here")
    assert summary["achieved_gflops"] == pytest.approx(record["epochs"][1]["achieved_gflops"])
    assert summary["steady_epoch_seconds"] == record["epochs"][1]["epoch_seconds"]
    assert summary["total_seconds"] > 0
    assert summary["mean_cpu_percent"] is not None
    assert "mean_gpu_util_percent" in summary
    assert "steady epoch time" in out.stdout

    listed = bench("runs", "--json")  # a second process reads what the first stored
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert rows[-1]["id"] == record["id"] and rows[-1]["status"] == "finished"
    assert rows[-1]["epochs_done"] == 2
    assert rows[-1]["steady_epoch_seconds"] == pytest.approx(summary["steady_epoch_seconds"])
    assert rows[-1]["config"]["model"] == "mlp"


@pytest.mark.parametrize(("args", "message"), [
    (["--epochs", "0"], "epochs must be a whole number from 1 to 1,000, got 0"),
    (["--epochs", "1000000000"], "epochs must be a whole number from 1 to 1,000"),
    (["--batch-size", "0"], "batch_size must be a whole number from 1 to 65,536"),
    (["--batch-size", "100000"], "batch_size must be a whole number from 1 to 65,536, got 100000"),
    (["--batch-size", "1000", "--limit-samples", "500"], "larger than the 500 training samples"),
    (["--dataset", "imagenet"], "dataset 'imagenet' is unknown"),
    (["--device", "gpu:0"], "asks for a GPU"),
    (["--sample-interval", "0"], "sample_interval_s must be a number of seconds from 0.1 to 10"),
    (["--epochs", "two"], "not a whole number"),
])
def test_bad_input_exits_nonzero_with_message_and_no_traceback(main, args, message):
    out = main("run", *args)
    assert out.returncode == 2
    assert message in out.stderr
    assert "Traceback" not in out.stderr


def test_bad_input_through_the_entry_point():
    """The child Python's exit status and stderr for a refused value (a ConfigError) and an unparsable one
    (argparse): what the in-process cases above check through bench.cli.main.main."""
    out = bench("run", "--epochs", "0", timeout=60)
    assert (out.returncode, out.stdout) == (2, ""), out.stdout + out.stderr
    assert out.stderr.startswith("error: ") and "epochs must be a whole number from 1 to 1,000" in out.stderr
    assert "Traceback" not in out.stderr
    out = bench("run", "--epochs", "two", timeout=60)
    assert out.returncode == 2 and "not a whole number" in out.stderr and "Traceback" not in out.stderr


def test_runs_on_an_empty_store(main):
    out = main("runs", "--json")
    assert out.returncode == 0
    assert json.loads(out.stdout) == []


TINY = ["--dataset", "synthetic-mnist", "--model", "mlp", "--epochs", "2", "--batch-size", "128",
        "--limit-samples", "1024", "--sample-interval", "0.2"]


@pytest.mark.slow  # two CLI processes and their workers, run to their end
def test_compare_writes_runs_and_the_comparison(main, tmp_path, monkeypatch):
    """The comparison, its prices, export and import, on replayed runs (BENCH_WORKER_TARGET): a real CLI run is
    test_run_writes_the_json_record_and_lists_it's, the sweep's real training test_sweep_rows's."""
    monkeypatch.setenv("BENCH_WORKER_TARGET", PACED_WORKER_TARGET)
    path = tmp_path / "cmp.json"
    out = bench("compare", "--targets", "cpu/1,cpu", "--size", "xs", *TINY, "--price", "cpu=0.40,cpu/1=0.10",
                "--json", str(path))
    assert out.returncode == 0, out.stderr
    data = json.loads(path.read_text())
    assert [r["config"]["cpu_threads"] for r in data["runs"]] == [1, None]
    assert all(r["status"] == "finished" for r in data["runs"])
    cmp = data["comparison"]
    a, b = (r["summary"]["steady_epoch_seconds"] for r in data["runs"])
    assert cmp["speedup_median"] == pytest.approx(a / b)
    assert cmp["speedup_min"] <= cmp["speedup_median"] <= cmp["speedup_max"]
    assert cmp["total_time_ratio"] > 0
    assert "faster than" in out.stdout or "about as fast" in out.stdout
    # cost per steady epoch at the prices given; the ratio is the baseline's over the other's
    assert cmp["cost_per_epoch_a"] == pytest.approx(a * 0.10 / 3600)
    assert cmp["cost_per_epoch_b"] == pytest.approx(b * 0.40 / 3600)
    assert cmp["cost_ratio"] == pytest.approx(cmp["cost_per_epoch_a"] / cmp["cost_per_epoch_b"])
    assert "cost of cpu at 0.4 per hour" in out.stdout
    assert "energy_ratio" in cmp
    if cmp["energy_ratio"] is None:
        assert "energy not measured on cpu" in out.stdout

    # the commands that follow read the store the child wrote, in this process
    exported = tmp_path / "run.html"
    run_id = data["runs"][0]["id"]
    assert main("export", str(run_id), "--format", "html", "--out", str(exported)).returncode == 0
    assert "<html" in exported.read_text().lower()
    zipped = tmp_path / "run.zip"
    assert main("export", str(run_id), "--format", "csv", "--out", str(zipped)).returncode == 0
    assert zipped.stat().st_size > 0

    imported = main("import", str(path))
    assert imported.returncode == 0, imported.stderr
    rows = json.loads(main("runs", "--json").stdout)
    # the file's runs carry this store's own runs' ids, times and configs: an import is runs of its own beside them
    ours = [r["id"] for r in data["runs"]]
    assert [r["id"] for r in rows if r["imported"] is None] == ours, "the measured runs are left as they were"
    copies = [r for r in rows if r["imported"] is not None]
    assert [r["imported"]["source_id"] for r in copies] == ours
    assert imported.stdout.strip() == "imported 2 run(s) as " + ", ".join(f"#{r['id']}" for r in copies)
    again = main("import", str(path))
    assert again.returncode == 0 and "already imported as" in again.stdout


@pytest.mark.parametrize(("price", "says"), [
    ("gpu0=2", "--price: 'gpu0=2' is not TARGET=PRICE; write e.g. cpu=0.40,gpu:0=2.50"),
    ("cpu", "--price: 'cpu' is not TARGET=PRICE"),
    ("cpu=cheap", "--price cpu: 'cheap' is not a number"),
    ("cpu=-1", "an hourly price must be a finite number from 0.000001 to 1,000,000"),
    ("gpu:0=2.5", "--price: gpu:0 is not among the targets (cpu, cpu/1)"),
    ("cpu=1,cpu=2", "cpu is priced twice"),
])
def test_bad_prices_are_refused_before_any_run(main, price, says):
    out = main("compare", "--targets", "cpu/1,cpu", *TINY, "--price", price)
    assert out.returncode == 2, out.stdout + out.stderr
    assert says in out.stderr and "Traceback" not in out.stderr
    assert "== 1/" not in out.stderr, "no run started"


def test_compare_needs_two_targets(main):
    out = main("compare", "--targets", "cpu", *TINY)
    assert out.returncode == 2 and "at least two targets" in out.stderr


@pytest.mark.slow  # several processes started and run to their end
def test_sweep_over_device_counts_gives_scaling_rows(main, tmp_path, monkeypatch):
    """The CLI's --devices grid and its scaling figures, on replayed runs (BENCH_WORKER_TARGET): real runs on two
    logical CPU devices are tests/unit/test_jobs.py's, the sweep's real training test_sweep_rows's below."""
    monkeypatch.setenv("BENCH_WORKER_TARGET", PACED_WORKER_TARGET)
    path = tmp_path / "sweep.json"
    out = main("sweep", "--sizes", "xs,s", "--targets", "cpu", "--devices", "1,2", *TINY, "--no-peak",
               "--json", str(path))
    assert out.returncode == 0, out.stderr
    rows = json.loads(path.read_text())["rows"]
    assert [(r["size"], r["devices"]) for r in rows] == [("xs", 1), ("xs", 2), ("s", 1), ("s", 2)]
    for one, two in (rows[0:2], rows[2:4]):  # two devices against one, at the same global batch
        assert one["scaling_efficiency"] == 1.0
        assert two["scaling_efficiency"] == pytest.approx(two["samples_per_s"] / (2 * one["samples_per_s"]))
        assert two["per_device_batch_size"] * 2 == two["batch_size"]


@pytest.mark.slow
def test_sweep_rows(tmp_path):
    path = tmp_path / "sweep.json"
    out = bench("sweep", "--sizes", "xs,s", "--targets", "cpu", *TINY, "--json", str(path), timeout=400)
    assert out.returncode == 0, out.stderr
    rows = json.loads(path.read_text())["rows"]
    assert [(r["size"], r["devices"]) for r in rows] == [("xs", 1), ("s", 1)]
    for row in rows:
        for key in ("params", "steady_epoch_seconds", "samples_per_s", "achieved_gflops", "peak_gflops",
                    "mean_gpu_util_percent", "mean_cpu_percent"):
            assert key in row
        assert row["achieved_gflops"] == pytest.approx(row["flops_per_sample"] * row["samples_per_s"] / 1e9)
        assert row["peak_gflops"] > 0
        # a share of the peak is never above 1: a run that beat the peak is flagged for a new probe instead
        assert (row["peak_fraction"] is None and row["peak_stale"]) or (0 < row["peak_fraction"] <= 1.0)
    assert rows[1]["params"] > rows[0]["params"]
    peak = json.loads(path.read_text())["peaks"]["cpu"]
    assert len(peak["sizes"]) >= 2 and peak["repeats"] >= 2 and peak["measured_at"] > 1.6e9
    assert set(peak["conditions"]) >= {"busy_before_percent", "others_cpu_percent", "load_avg_1m"}
    assert "peak of cpu:" in out.stdout and "best of" in out.stdout


@pytest.mark.parametrize(("devices", "says"), [
    ("0", "devices must be a whole number from 1"),
    ("1,64", "devices 64 is more than the"),
    ("1,3", "batch size 128 does not split evenly over 3 devices"),
    ("1,two", "give whole numbers of devices"),
    ("", "at least one device count"),
])
def test_bad_device_counts_are_refused_before_any_run(main, devices, says):
    out = main("sweep", "--sizes", "xs", "--targets", "cpu", "--devices", devices, "--no-peak", *TINY)
    assert out.returncode == 2, out.stdout + out.stderr
    assert says in out.stderr and "Traceback" not in out.stderr


def test_import_refuses_a_malformed_file(main, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "bench.run/1", "epochs": "no"}')
    out = main("import", str(bad))
    assert out.returncode == 2
    assert "Traceback" not in out.stderr and out.stderr.startswith("error:")


def test_export_of_a_missing_run(main):
    out = main("export", "999")
    assert out.returncode == 2 and "no run 999" in out.stderr


@pytest.mark.parametrize(("args", "says"), [
    (("sweep", "--sizes", ""), "at least one model size"),
    (("sweep", "--sizes", " , "), "at least one model size"),
    (("sweep", "--targets", ""), "at least one target"),
    (("sweep", "--batch-sizes", ""), "at least one batch size"),
    (("compare", "--targets", ""), "at least one target"),
])
def test_empty_lists_are_refused(main, args, says):
    out = main(*args, "--epochs", "1", "--no-peak" if args[0] == "sweep" else "--epochs=1")
    assert out.returncode == 2, out.stdout + out.stderr
    assert says in out.stderr and "Traceback" not in out.stderr


def test_unknown_command_names_the_right_help(main):
    out = bench("bogus", timeout=60)  # through the entry point: argparse exits the child Python with 2
    assert out.returncode == 2
    assert "Run `python -m bench --help`" in out.stderr, out.stderr
    out = main("run", "--bogus")
    assert out.returncode == 2 and "Run `python -m bench run --help`" in out.stderr, out.stderr


def test_runs_reports_a_dead_owners_run_as_interrupted(main, isolated_store):
    store = Store(isolated_store)
    run_id = store.create_run({"epochs": 3}, status="running")
    set_owner(store, run_id, owner_pid=dead_pid())
    out = main("runs", "--json")
    assert out.returncode == 0, out.stderr
    assert [r["status"] for r in json.loads(out.stdout)] == ["interrupted"]


@pytest.mark.parametrize("command", [
    ["run", "--epochs", "1", "--limit-samples", "64", "--batch-size", "32", "--sample-interval", "0.2"],
    ["devices"],
])
@pytest.mark.parametrize("address", ["", "   "])
def test_a_blank_cluster_address_is_refused_not_read_as_this_machine(main, command, address):
    """``--cluster ''`` (an unset variable in a script, say) once trained here and exited 0, as if the option were
    not there: it is bad input, refused with what to give."""
    out = main(*command, "--cluster", address)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "--cluster needs an address: HOST:PORT of the cluster's head, or auto" in out.stderr
    assert "Traceback" not in out.stderr
