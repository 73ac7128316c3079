"""The `live` step of `make gpu-verify` (scripts/gpu_live_panel.py): the Train page in AppTest, Start pressed and the
page redrawn while a real run trains. Here on the CPU, the same way the kit runs it on a GPU: the record it writes is
the one the kit's claim reads, and a device this machine does not offer is refused with exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.hardware import devices

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import gpu_verify  # noqa: E402  (a script of the checkout)


def _live(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "BENCH_STORE": str(tmp_path / "runs.sqlite3"), "BENCH_PRESTART": "0"}
    return subprocess.run([sys.executable, "scripts/gpu_live_panel.py", str(tmp_path / "live.json"), *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=240)


@pytest.mark.slow
def test_a_real_cpu_run_watched_on_the_train_page_gives_the_record_the_kit_reads(tmp_path: Path) -> None:
    done = _live(tmp_path, "--device", "cpu", "--epochs", "2", "--limit", "4096")
    assert done.returncode == 0, done.stderr[-2000:]
    record = json.loads((tmp_path / "live.json").read_text(encoding="utf-8"))
    assert record["status"] == "finished" and record["epochs_done"] == 2
    assert record["exceptions"] == []
    assert record["redraws_live"] >= 1 and record["charts_max"] >= 1
    assert any(isinstance(v, str) and v.endswith("%") for v in record["tiles_live"]["CPU"]), record["tiles_live"]
    assert "CPU" in record["placement"].upper()
    holds, measured = gpu_verify._live(record)
    assert not holds and "CPU" in measured.upper(), "a CPU run is no proof of the GPU panel"


def test_a_device_this_machine_does_not_offer_is_refused_with_exit_2(tmp_path: Path) -> None:
    missing = next(d for d in ("gpu:0", "gpu:7") if d not in devices.offered_devices(devices.discover()))
    done = _live(tmp_path, "--device", missing)
    assert done.returncode == 2
    assert f"{missing} is not offered on this machine" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "live.json").exists()
