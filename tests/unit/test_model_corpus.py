"""Models people really bring (STYLE habit 23), each saved by Keras, read as an upload is (parameters and the
compiler's FLOPs), and three trained for one epoch on one batch through the command line: MobileNetV2 (keras.applications, alpha 0.35, 32x32x3), a ResNet-style functional block with Add, an
LSTM text model, a model with MultiHeadAttention, and a functional model with a Sequential nested in it and a layer
shared twice. Each run's record carries Keras's own parameter count and the compiler's FLOPs per sample.

The LSTM trains on JAX with XLA (the compiler's count in the worker itself, its loop unrolled for the count).
MobileNetV2 trains on torch and the nested model on TensorFlow, where the worker takes the count from the reading
child, which reads on JAX: each run shows both that the model trains and that its backend takes the child's count.
MobileNetV2 on JAX with XLA cost 70 CPU-s here (its weights' initializers and the training step compiled on one
thread), on torch 30, the reading child's compile included. The
residual and the attention models are read only: MobileNetV2's inverted residuals train the same Add, BatchNormalization
and convolutions, and a training run of either adds nothing the others do not show, for 15 to 30 s of the suite.

A run is one batch of 32 (and 6 samples of validation): what a run costs here is the framework's start and XLA's
compilation of the step, not the steps; the properties read (parameters, FLOPs, an epoch's achieved GFLOP/s) are the
same at any number of steps."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
from pathlib import Path

import pytest

from bench.cli import main as cli
from benchmarks import model_corpus
from bench.plans import model_file

pytestmark = pytest.mark.slow  # real models made, read in a child and trained

if importlib.util.find_spec("jax") is None:  # looked up, not imported: collecting this file loads no framework
    pytest.skip("the compiler's FLOP count reads the step lowered by JAX: install jax", allow_module_level=True)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> dict[str, tuple[Path, int]]:
    keras = pytest.importorskip("keras")
    return model_corpus.saved(keras, tmp_path_factory.mktemp("corpus"))


DATASETS = model_corpus.DATASETS


def _train(path: Path, dataset: str, out: Path, *, jit_compile: bool) -> dict:
    """One epoch of one batch through ``bench run`` on one thread: the suite's other process (a browser test, a server) keeps its
    core while the model compiles and trains."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = cli.main(["run", "--dataset", dataset, "--model-file", str(path), "--epochs", "1", "--batch-size", "32",
                         "--limit-samples", "32", *(["--jit-compile"] if jit_compile else []), "--cpu-threads", "1",
                         "--json", str(out)])
    assert code == 0, err.getvalue()[-3000:]
    return json.loads(out.read_text())


@pytest.mark.parametrize("name", list(DATASETS))
def test_a_real_model_is_read_with_its_parameters_and_compiler_flops(corpus, name):
    path, params = corpus[name]
    dataset = model_file_data(DATASETS[name])
    own = model_file.check_model_file(str(path), *dataset, backend="jax")
    assert own.params == params, "Keras's own count"
    assert own.flops_per_sample and own.flops_per_sample > 2 * params, \
        f"a training step costs more than two FLOPs a weight: {own.flops_per_sample}"
    assert own.flops_source == model_file.FLOP_SOURCE_COMPILER, own.describe()


def model_file_data(dataset: str) -> tuple:
    """The input shape, classes and vocabulary of a synthetic data set, as a run's validation passes them."""
    from bench.plans import datasets

    info = datasets.get_info(dataset)
    return info.input_shape, info.num_classes, info.vocab_size


@pytest.mark.parametrize(("name", "backend"), [("mobilenet_v2", "torch"), ("lstm_text", "jax")])
def test_a_real_model_trains_through_the_cli_with_its_parameters_and_compiler_flops(corpus, name, backend,
                                                                                     isolated_store, tmp_path,
                                                                                     monkeypatch):
    pytest.importorskip(backend)
    monkeypatch.setenv("KERAS_BACKEND", backend)
    path, params = corpus[name]
    record = _train(path, DATASETS[name], tmp_path / "run.json", jit_compile=backend == "jax")
    assert record["status"] == "finished" and len(record["epochs"]) == 1
    info = record["info"]
    assert info["framework"].startswith(backend), info["framework"]
    assert info["params"] == params, "Keras's own count"
    assert info["flops_per_sample"] and info["flops_per_sample"] > 2 * params, \
        f"a training step costs more than two FLOPs a weight: {info['flops_per_sample']}"
    assert model_file.FLOP_SOURCE_COMPILER in info["model_description"], info["model_description"]
    assert record["epochs"][0]["achieved_gflops"] and record["epochs"][0]["achieved_gflops"] > 0


def test_on_tensorflow_the_worker_takes_the_reading_childs_count(corpus, isolated_store, tmp_path, monkeypatch):
    """The nested model (a Sequential inside, a layer shared twice) trained through the CLI on TensorFlow: its record
    carries Keras's count and the compiler's FLOPs, which the worker took from the reading child (on JAX)."""
    pytest.importorskip("tensorflow")
    monkeypatch.setenv("KERAS_BACKEND", "tensorflow")
    path, params = corpus["nested"]
    record = _train(path, DATASETS["nested"], tmp_path / "run.json", jit_compile=True)
    assert record["status"] == "finished" and len(record["epochs"]) == 1
    assert record["info"]["params"] == params and record["info"]["framework"].startswith("tensorflow")
    on_jax = model_file.check_model_file(str(path), *model_file_data(DATASETS["nested"]), backend="jax")
    assert record["info"]["flops_per_sample"] == on_jax.flops_per_sample
    assert on_jax.flops_per_sample and on_jax.flops_per_sample > 2 * params
    assert model_file.FLOP_SOURCE_COMPILER in record["info"]["model_description"]
    assert record["epochs"][0]["achieved_gflops"] and record["epochs"][0]["achieved_gflops"] > 0
