"""Published CPU vs GPU timings that users hold our numbers up against, one entry per seed article.

Figures are as the articles state them (whole `model.fit` calls, model creation included, tracing epoch included),
so they compare with our *total* time, not with steady-state epoch times; the UI says so beside them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Reference:
    preset: str  # bench.plans.models.PRESETS key this article's model matches
    article: str
    task: str
    cpu: str
    gpu: str
    epochs: int | None
    cpu_seconds: float | None
    gpu_seconds: float | None
    note: str

    @property
    def ratio(self) -> float | None:
        if self.cpu_seconds and self.gpu_seconds:
            return self.cpu_seconds / self.gpu_seconds
        return None


REFERENCES: tuple[Reference, ...] = (
    Reference(
        preset="seed-cifar10-mlp",
        article="Exploring CPU vs GPU Speed in AI Training: A Demonstration with TensorFlow (Microsoft Community Hub, 2023)",
        task="CIFAR-10, Flatten → Dense 3000 → Dense 1000 → Dense 10 sigmoid, SGD, 10 epochs, batch 32",
        cpu="Azure NC4as T4 v3 (4 vCPUs)", gpu="NVIDIA Tesla T4", epochs=10,
        cpu_seconds=8 * 60 + 5, gpu_seconds=40.0,
        note="%%timeit of model creation + fit, one loop",
    ),
    Reference(
        preset="seed-mnist-dense",
        article="ML - How much faster is a GPU?",
        task="MNIST, simple Keras Dense network",
        cpu="a laptop CPU", gpu="NVIDIA Tesla P100 (Azure VM)", epochs=None,
        cpu_seconds=60 + 52, gpu_seconds=8.43,
        note="GPU utilization peaked at 26 %; CPU at 100 %",
    ),
    Reference(
        preset="seed-text",
        article="How GPU can Powerfully Speed Up Training in Deep Learning",
        task="text classification (TensorFlow tutorial model)",
        cpu="Google Colab CPU", gpu="Google Colab GPU (K80/T4/P4/P100)", epochs=None,
        cpu_seconds=198.2, gpu_seconds=14.4,
        note="13.76x reported",
    ),
    Reference(
        preset="seed-text",
        article="GPU vs. CPU Showdown: Unleashing the Power of Spheron GPU for AI Mastery (2023)",
        task="TensorFlow text_classification notebook, 10 epochs",
        cpu="a CPU instance", gpu="NVIDIA RTX A4000", epochs=10,
        cpu_seconds=None, gpu_seconds=None,
        note="no times published: 'halving the training time' (about 2x), GPU about 5 % utilized",
    ),
)


def for_preset(preset: str) -> list[Reference]:
    return [r for r in REFERENCES if r.preset == preset]
