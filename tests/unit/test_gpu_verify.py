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


@pytest.mark.slow  # the kit loads the framework to find there is no GPU
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


def _compare(counter_w: float, power_w: float = 200.0) -> dict:
    """A comparison record whose GPU run drew ``power_w`` by its sampled power and ``counter_w`` by its energy counter,
    sampled every 0.5 s over 10 s, with a steady epoch of 5 s (10 samples inside)."""
    samples = [{"t_s": t / 2, "gpus": [_gpu(power_w=power_w, energy_j=1000.0 + counter_w * t / 2, sm_active_percent=40.0,
                                            sm_clock_mhz=1980.0, throttle_reasons=[])]} for t in range(0, 21)]
    return {"runs": [{"samples": samples, "epochs": [
        {"epoch": 1, "includes_tracing": True, "t_start_s": 0.0, "t_end_s": 5.0},
        {"epoch": 2, "includes_tracing": False, "t_start_s": 5.0, "t_end_s": 10.0}]}]}


def _rows(folder: Path, **records: object) -> dict[str, str]:
    for name, doc in records.items():
        (folder / f"{name}.json").write_text(json.dumps(doc), encoding="utf-8")
    return {claim: measured for claim, _e, measured, _r in gpu_verify.claim_rows(folder)}


def test_claims_hold_or_fail_as_their_records_say(tmp_path: Path) -> None:
    sweep = {"rows": [{"target": "gpu:0", "size": "xs", "achieved_gflops": 10.0, "peak_gflops": 50.0},
                      {"target": "gpu:0", "size": "xl", "achieved_gflops": 60.0, "peak_gflops": 50.0}]}
    rows = _rows(tmp_path, sweep=sweep, issue2=_compare(counter_w=210.0))
    assert rows["GPM figures while training on a Hopper GPU"].startswith("holds")
    assert rows["Power, SM clock and throttle reasons sampled"].startswith("holds")
    assert rows["Energy per epoch from NVML's counter"] == (
        "holds: whole GPU run(s): largest gap 4.8%; 1 steady epoch(s) with 3+ samples, largest gap 4.8%")
    assert rows["Achieved GFLOP/s never above the measured peak"].startswith("DOES NOT HOLD: 1 of 2")
    assert rows["The torch backend trains on the GPU"] == gpu_verify.NOT_CHECKED


def test_a_counter_far_from_the_sampled_power_or_a_reading_missing_does_not_hold(tmp_path: Path) -> None:
    doc = _compare(counter_w=300.0)
    del doc["runs"][0]["samples"][3]["gpus"][0]["sm_clock_mhz"]
    rows = _rows(tmp_path, issue2=doc)
    assert rows["Energy per epoch from NVML's counter"].startswith("DOES NOT HOLD: whole GPU run(s): largest gap 33.3%")
    assert rows["Power, SM clock and throttle reasons sampled"] == (
        "DOES NOT HOLD: power_w in 21/21, sm_clock_mhz in 20/21, throttle_reasons in 21/21")


def test_the_table_is_written_from_records_on_a_machine_without_a_gpu(tmp_path: Path) -> None:
    """`--table-only` reads the records a GPU machine wrote and names the GPU they came from."""
    doc = _compare(counter_w=200.0)
    doc["runs"][0].update(hardware={"gpus": [{"name": "NVIDIA H100 80GB HBM3"}]}, created_at=1795600000.0)
    (tmp_path / "issue2.json").write_text(json.dumps(doc), encoding="utf-8")
    page = tmp_path / "GPU.md"
    page.write_text("# GPU\n", encoding="utf-8")
    assert gpu_verify.main(["--table-only", "--out", str(tmp_path), "--doc", str(page)]) == 0
    text = page.read_text(encoding="utf-8")
    assert "(NVIDIA H100 80GB HBM3, records of 2026-11-25; table written " in text
    assert "| Energy per epoch from NVML's counter | within 10 % of power integrated over the same samples | holds: " in text


def test_the_table_in_gpu_md_is_replaced_between_its_markers(tmp_path: Path) -> None:
    doc = tmp_path / "GPU.md"
    doc.write_text("# GPU\n\nbefore\n", encoding="utf-8")
    rows = gpu_verify.claim_rows(tmp_path)
    gpu_verify.write_table(doc, rows, "first")
    gpu_verify.write_table(doc, rows, "second")
    text = doc.read_text(encoding="utf-8")
    assert text.count(gpu_verify.BEGIN) == 1 and "second" in text and "first" not in text
    assert text.count(gpu_verify.NOT_CHECKED) == len(gpu_verify.CLAIMS)


def _live_record(**changes: object) -> dict:
    record = {"device": "gpu:0", "status": "finished", "placement": "cuda:0", "redraws_live": 6,
              "tiles_live": {"GPU": ["—", "87 %", "91 %"], "CPU": ["12 %", "13 %", "12 %"]}, "charts_max": 4,
              "exceptions": []}
    return {**record, **changes}


@pytest.mark.parametrize(("changes", "holds"), [
    ({}, True),
    ({"placement": "/job:localhost/replica:0/task:0/device:CPU:0"}, False),
    ({"tiles_live": {"GPU": ["n/a", "n/a"]}}, False),
    ({"exceptions": ["KeyError: 'gpus'"]}, False),
    ({"status": "failed"}, False),
    ({"charts_max": 0}, False),
])
def test_the_live_panel_claim_needs_a_gpu_tile_charts_and_no_exception(tmp_path: Path, changes: dict,
                                                                        holds: bool) -> None:
    (tmp_path / "live.json").write_text(json.dumps(_live_record(**changes)), encoding="utf-8")
    rows = {claim: measured for claim, _e, measured, _r in gpu_verify.claim_rows(tmp_path)}
    measured = rows["The Train page's live panel during a real GPU run (AppTest)"]
    assert measured.startswith("holds" if holds else "DOES NOT HOLD"), measured


def test_a_step_past_its_limit_is_stopped_and_the_kit_goes_on(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    def too_long(command: list[str], **kwargs: object) -> None:
        raise subprocess.TimeoutExpired(command, kwargs["timeout"])  # type: ignore[arg-type]

    monkeypatch.setattr(gpu_verify.subprocess, "run", too_long)
    gpu_verify.run_step("sweeps", tmp_path, gpu_verify.doctor.Report(gpu_ready=True, checks=()), 5)
    assert "sweeps: stopped at its limit of 5 s" in capsys.readouterr().out


def test_steps_after_the_kits_30_minutes_are_left_for_a_later_call(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    ready = gpu_verify.doctor.Report(gpu_ready=True, checks=())
    monkeypatch.setattr(gpu_verify.doctor, "diagnose", lambda framework_timeout_s: ready)
    ran: list[tuple[str, float]] = []
    monkeypatch.setattr(gpu_verify, "run_step", lambda step, out, report, limit_s: ran.append((step, limit_s)))
    clock = iter([0.0, 0.0, 1000.0, 1790.0])  # the start, then before each step
    monkeypatch.setattr(gpu_verify.time, "monotonic", lambda: next(clock))
    assert gpu_verify.main(["--steps", "presets,sweeps,steps", "--out", str(tmp_path)]) == 0
    assert ran == [("presets", 600), ("sweeps", 600)]
    assert "steps: not run: the kit's 30 minutes are spent (run it with --steps steps)" in capsys.readouterr().out


def test_gpu_md_has_a_row_for_every_claim_and_none_is_a_guess() -> None:
    text = (ROOT / "docs" / "GPU.md").read_text(encoding="utf-8")
    table = text[text.index(gpu_verify.BEGIN):text.index(gpu_verify.END)]
    rows = [line.split(" | ") for line in table.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert [r[0].lstrip("| ") for r in rows] == [c.claim for c in gpu_verify.CLAIMS]
    for claim, _expected, measured, record in rows:
        checked = measured.startswith(("holds", "DOES NOT HOLD"))
        assert measured == gpu_verify.NOT_CHECKED or (checked and (ROOT / record.rstrip(" |")).is_file()), claim


def test_a_step_and_a_benchmark_child_keep_the_pythonpath_they_were_given(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keras and Streamlit carried as wheels (/tmp/site on PYTHONPATH) stay importable in every step and in the bare
    baseline's child, behind the checkout; replacing PYTHONPATH with the checkout alone hid them (the H100's engine-vs-
    bare run failed so, 2026-11-26)."""
    from benchmarks.common import checkout_python_path

    monkeypatch.setenv("PYTHONPATH", "/tmp/site")
    assert checkout_python_path().split(":") == [str(ROOT), "/tmp/site"]
    monkeypatch.delenv("PYTHONPATH")
    assert checkout_python_path() == str(ROOT)


def _batch_row(size: str, batch: int, **values: object) -> dict:
    return {"target": "gpu:0", "size": size, "batch_size": batch, "diagnosis_kind": "compute-bound",
            "peak_fraction": 0.57, **values}


@pytest.mark.parametrize(("sm", "tensor", "holds"), [(49.4, 25.4, False), (55.0, 10.0, True), (20.0, 31.0, True),
                                                     (None, None, False)])
def test_the_activity_claim_reads_the_compute_bound_points_sm_and_tensor_activity(tmp_path: Path, sm, tensor,
                                                                                   holds: bool) -> None:
    rows = [_batch_row("xs", 32, sm_active_percent=90.0), _batch_row("xl", 2048, sm_active_percent=sm,
                                                                       tensor_active_percent=tensor)]
    (tmp_path / "sweep_batch.json").write_text(json.dumps({"rows": rows}), encoding="utf-8")
    rows_by_claim = {claim: measured for claim, _e, measured, _r in gpu_verify.claim_rows(tmp_path)}
    measured = next(m for c, m in rows_by_claim.items() if c.startswith("SM and tensor activity"))
    assert measured.startswith("holds" if holds else "DOES NOT HOLD"), measured


@pytest.mark.parametrize(("engine", "spread", "holds"), [(0.303, 0.058, True), (0.330, 0.02, False),
                                                          (0.330, 0.12, True)])
def test_the_overhead_claim_allows_five_percent_or_the_bare_runs_spread(tmp_path: Path, engine: float,
                                                                        spread: float, holds: bool) -> None:
    record = {"engine_vs_bare_ratio": engine / 0.3, "paired_ratio": 1.0, "bare_steady_s": 0.3,
              "engine_steady_s": engine, "bare_spread": spread}
    (tmp_path / "evb_jax.json").write_text(json.dumps(record), encoding="utf-8")
    rows_by_claim = {claim: measured for claim, _e, measured, _r in gpu_verify.claim_rows(tmp_path)}
    measured = next(m for c, m in rows_by_claim.items() if c.startswith("The engine's overhead"))
    assert measured.startswith("holds" if holds else "DOES NOT HOLD"), measured


def test_a_python_without_the_projects_packages_gets_exit_2_and_what_to_do(tmp_path: Path) -> None:
    """``make gpu-verify`` without .venv runs the system's python3: a missing package is said, not a traceback."""
    fake = tmp_path / "psutil"
    fake.mkdir()
    (fake / "__init__.py").write_text('raise ModuleNotFoundError("No module named \'psutil\'", name="psutil")\n')
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu_verify.py"), "--table-only"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{tmp_path}:{ROOT}"})
    assert done.returncode == 2, done.stderr
    assert "psutil is not installed" in done.stderr and "make install-dev" in done.stderr
    assert "Traceback" not in done.stderr
