"""The machine suite (bench.runs.suite) and its commands, without training: the workload table, the targets, Ctrl-C
keeping what finished, the bundle it writes, bad options refused with exit 2, a bundle imported and ranked by
`bench machines --json` beside the shipped H100 bundle. (The suite itself ran for real: docs/MACHINES.md.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.analysis.run_summary import RunSummary
from bench.cli import main as cli
from bench.vocab import records
from bench.vocab.config import ConfigError, RunConfig
from bench.hardware import devices
from bench.vocab.record_types import CpuSpec, GpuSpec
from bench.runs import suite
from bench.plans import models

ROOT = Path(__file__).resolve().parents[2]


def test_the_workloads_cover_the_presets_an_mlp_sweep_at_two_batches_a_cnn_and_a_text_size() -> None:
    for variant in suite.VARIANTS:
        table = suite.workloads(variant)
        keys = [w.key for w in table]
        assert len(keys) == len(set(keys))
        assert set(models.PRESETS) <= set(keys)
        assert {w.batch_size for w in table if w.kind == "mlp sweep"} == set(suite.SWEEP_BATCH_SIZES)
        assert [w.kind for w in table].count("cnn") == 1 and [w.kind for w in table].count("text") == 1
        assert all(w.dataset.startswith("synthetic-") for w in table)  # offline on any machine
        assert all(w.epochs >= 3 for w in table)  # a steady epoch or more after the first, traced one
    quick = {w.size for w in suite.workloads("quick") if w.kind == "mlp sweep"}
    assert quick < {w.size for w in suite.workloads("full") if w.kind == "mlp sweep"}
    with pytest.raises(ConfigError, match="variant"):
        suite.workloads("medium")


def test_every_cpu_configuration_and_each_gpu_is_a_target() -> None:
    cpu = CpuSpec(model="Test", physical_cores=8, logical_cores=8, ram_total_mib=1024)
    gpus = [GpuSpec(index=i, name="T4", mem_total_mib=15360, driver="550", cuda_driver_version="12.4",
                            uuid=None) for i in range(2)]
    with_gpus = devices.Hardware(cpu=cpu, gpus=gpus, gpu_reason=None)
    names = [str(t) for t in suite.suite_targets(with_gpus)]
    assert names[-2:] == ["gpu:0", "gpu:1"] and names[0] == "cpu"
    assert [str(t) for t in suite.suite_targets(devices.Hardware(cpu=cpu, gpus=gpus, gpu_reason="no driver"))] \
        == names[:-2]


def test_the_configs_are_validated_workload_major() -> None:
    hardware = devices.discover()
    targets = suite.suite_targets(hardware)
    configs = suite.suite_configs("quick", targets, hardware)
    assert len(configs) == len(suite.workloads("quick")) * len(targets)
    assert [str(c.target()) for c in configs[:len(targets)]] == [str(t) for t in targets]


def _record(config: RunConfig, status: str = "finished") -> records.RunRecord:
    return records.RunRecord.model_validate(records.run_record(id=1, status=status, config=config, hardware=None, info=None, created_at=None,
                              started_at=None, ended_at=None, error=None, store_error=None, epochs=[], samples=[],
                              summary=RunSummary(steady_samples_per_s=1000.0, steady_epoch_seconds=1.0)))


def test_ctrl_c_keeps_what_finished_and_says_what_is_left() -> None:
    hardware = devices.discover()
    configs = suite.suite_configs("quick", suite.suite_targets(hardware), hardware)[:4]
    said: list[str] = []
    calls = iter([lambda c: (_record(c), True), lambda c: (_record(c, "failed"), True),
                  lambda c: (_record(c, "stopped"), True)])

    result = suite.run_suite(configs, lambda c: next(calls)(c), said.append)
    assert result.interrupted and len(result.runs) == 2
    assert "suite 1/4" in said[0] and "3 left" in said[0]
    doc = suite.bundle(result, machine=suite.fingerprint(devices.discover()), variant="quick", label="laptop",
                       prices={"cpu": 0.1}, peaks_gflops={"cpu": 100.0})
    bundle = records.load_bundle(json.loads(records.json_text(doc)))
    assert len(bundle.runs) == 1  # the failed run says nothing about the machine
    assert bundle.label == "laptop" and bundle.suite_version == suite.SUITE_VERSION and "Ctrl-C" in (bundle.notes or "")
    for key in ("cpu", "gpus", "os", "python", "framework", "framework_version", "backend", "backend_version"):
        assert key in bundle.machine.to_dict()

    def interrupt(config: RunConfig) -> tuple[records.RunRecord, bool]:
        raise KeyboardInterrupt

    assert suite.run_suite(configs, interrupt, said.append).interrupted
    # Ctrl-C in a terminal reaches the worker too: the run it cut short may end failed; the suite still ends there
    pressed = iter([False, True])
    cut = suite.run_suite(configs, lambda c: (_record(c), True), said.append,
                          lambda: next(pressed))
    assert cut.interrupted and len(cut.runs) == 1


@pytest.mark.parametrize("argv", [
    ["suite", "--quick", "--price", "cpu=abc"],
    ["suite", "--quick", "--price", "gpu:7=1"],
    ["suite", "--quick", "--bogus"],
    ["machines", "--price", "9:cpu=1"],
    ["machines", "--batch-size", "x"],
    ["machines", "--baseline", "1:gpu:9"],
    ["import", "/no/such/bundle.json"],
])
def test_bad_options_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        raise SystemExit(cli.main(argv))
    assert exited.value.code == 2
    assert "error:" in capsys.readouterr().err


def test_an_imported_bundle_ranks_beside_the_shipped_h100(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = json.loads((ROOT / "docs/results/bundle-cpu-2core.json").read_text()) | {"label": "my laptop"}
    path = tmp_path / "bundle.json"
    path.write_text(json.dumps(doc))
    assert cli.main(["import", str(path)]) == 0
    assert "imported machine bundle" in capsys.readouterr().out
    assert cli.main(["import", str(path)]) == 0
    assert "already in the store" in capsys.readouterr().out
    assert cli.main(["machines", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["machines"]
    h100 = next(m["number"] for m in listed if "H100" in m["name"])
    assert cli.main(["machines", "--price", f"{h100}:cpu/1=1"]) == 2  # the H100 machine has no cpu/1 figure
    capsys.readouterr()
    assert cli.main(["machines", "--json", "--size", "s", "--batch-size", "128", "--price", f"{h100}:gpu:0=2.5"]) == 0
    out = json.loads(capsys.readouterr().out)
    names = [m["name"] for m in out["machines"]]
    assert any("H100" in n for n in names) and "my laptop" in names
    ranked = out["ranking"]["by_time"]
    assert {r["machine_name"] for r in ranked} >= {"my laptop"} and all(r["how"] == "measured" for r in ranked)
    assert [r["target"] for r in out["ranking"]["by_cost"]] == ["gpu:0"]
