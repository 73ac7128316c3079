"""`make gpu-verify`: without a GPU every GPU step says `skipped: no GPU` and the kit exits 0 (CI runs it so); each
claim is read from its record the same way on a GPU machine, here from records made up to hold and to fail."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.hardware.monitor import nvml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import gpu_verify  # noqa: E402  (a script of the checkout)


def test_without_a_gpu_every_step_is_skipped_and_the_kit_exits_0(tmp_path: Path) -> None:
    if nvml.available()[0]:
        pytest.skip("this machine has an NVIDIA driver: the kit would measure, not skip")
    doc = tmp_path / "GPU.md"
    doc.write_text("# GPU\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "scripts/gpu_verify.py", "--out", str(tmp_path / "out"), "--doc", str(doc)],
                          cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert [line.split(":")[0] for line in lines] == list(gpu_verify.STEPS)
    assert all("skipped: no GPU" in line for line in lines), lines
    assert doc.read_text(encoding="utf-8") == "# GPU\n", "nothing measured, nothing written"
    assert not (tmp_path / "out").exists()


def test_bad_steps_are_refused_with_exit_2() -> None:
    with pytest.raises(SystemExit) as exited:
        gpu_verify.main(["--steps", "presets,everything"])
    assert exited.value.code == 2


def _gpu(**readings: object) -> dict:
    return {"index": 0, "util_percent": 90.0, **readings}


def test_claims_hold_or_fail_as_their_records_say(tmp_path: Path) -> None:
    sweep = {"rows": [{"target": "gpu:0", "size": "xs", "achieved_gflops": 10.0, "peak_gflops": 50.0},
                      {"target": "gpu:0", "size": "xl", "achieved_gflops": 60.0, "peak_gflops": 50.0}],
             "runs": [{"samples": [{"t_s": 1.0, "gpus": [_gpu(sm_active_percent=40.0, power_w=300.0,
                                                               sm_clock_mhz=1980.0, throttle_reasons=[])]}]}]}
    power = 200.0
    samples = [{"t_s": t / 2, "gpus": [_gpu(power_w=power)]} for t in range(0, 21)]
    compare = {"runs": [{"samples": samples, "epochs": [
        {"epoch": 1, "includes_tracing": True, "t_start_s": 0.0, "t_end_s": 5.0, "energy_j": {"gpu:0": 1000.0}},
        {"epoch": 2, "includes_tracing": False, "t_start_s": 5.0, "t_end_s": 10.0, "energy_j": {"gpu:0": 1050.0}}]}]}
    (tmp_path / "sweep.json").write_text(json.dumps(sweep), encoding="utf-8")
    (tmp_path / "issue2.json").write_text(json.dumps(compare), encoding="utf-8")
    rows = {claim: measured for claim, _e, measured, _r in gpu_verify.claim_rows(tmp_path)}
    assert rows["GPM figures while training on a Hopper GPU"].startswith("holds")
    assert rows["Power, SM clock and throttle reasons sampled"].startswith("holds")
    assert rows["Energy per epoch from NVML's counter"].startswith("holds: largest gap 4.8%")
    assert rows["Achieved GFLOP/s never above the measured peak"].startswith("DOES NOT HOLD: 1 of 2")
    assert rows["The torch backend trains on the GPU"] == gpu_verify.NOT_CHECKED


def test_the_table_in_gpu_md_is_replaced_between_its_markers(tmp_path: Path) -> None:
    doc = tmp_path / "GPU.md"
    doc.write_text("# GPU\n\nbefore\n", encoding="utf-8")
    rows = gpu_verify.claim_rows(tmp_path)
    gpu_verify.write_table(doc, rows, "first")
    gpu_verify.write_table(doc, rows, "second")
    text = doc.read_text(encoding="utf-8")
    assert text.count(gpu_verify.BEGIN) == 1 and "second" in text and "first" not in text
    assert text.count(gpu_verify.NOT_CHECKED) == len(gpu_verify.CLAIMS)
