"""ui.gpu_truth's sentences: the throttle note beside epoch times and the energy line."""

from __future__ import annotations

from bench.analysis.run_summary import RunSummary
from bench.vocab.readings import epochs_of
from ui import gpu_truth


def test_throttle_text_names_epochs_and_reasons() -> None:
    reasons = {1: [], 2: ["thermal slowdown"], 3: ["power cap", "thermal slowdown"], 4: None}
    epochs = epochs_of({"epoch": n, "epoch_seconds": 2.0, "includes_tracing": n == 1, "throttle_reasons": held}
                       for n, held in reasons.items())
    text = gpu_truth.throttle_text(epochs)
    assert text is not None and "epochs 2, 3 (power cap, thermal slowdown)" in text
    assert gpu_truth.throttle_text(epochs[:1] + epochs[3:]) is None
    assert "epoch 2 (" in (gpu_truth.throttle_text(epochs[1:2]) or "")


def test_energy_text_per_device_or_the_reason() -> None:
    summary = RunSummary(energy_j_per_epoch={"cpu": None, "gpu:0": 512.34},
                         energy_j_per_1000_samples={"gpu:0": 25.6},
                         energy_reasons={"cpu": "RAPL not readable here: /sys/class/powercap is absent."},
                         energy_estimated=("gpu:0",))
    text = gpu_truth.energy_text(summary) or ""
    assert "CPU: not measured: RAPL not readable here: /sys/class/powercap is absent." in text
    assert "GPU 0: 512.3 J per epoch, 25.6 J per 1,000 samples (estimated from power samples)" in text
    assert gpu_truth.energy_text(RunSummary.model_validate({"steady_epoch_seconds": 1.0})) is None, \
        "a summary from before energy was measured"
