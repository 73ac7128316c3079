"""A user's .keras file as a run's model: each bad file refused with its reason by RunConfig.validate (and by the CLI,
exit 2, nothing stored), a good one counted as the plans count theirs, trained, and compared and swept like a preset.
The files are made here with Keras itself (tiny models); loading one runs Keras in a child process: slow."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from bench.cli import main as cli
from bench.analysis import compare, sweeps
from bench.vocab.config import ConfigError, RunConfig
from bench.store import Store
from bench.plans import models
from bench.plans import model_file
from tests.fixtures import NO_GPU

pytestmark = pytest.mark.slow  # Keras makes the files here and loads them in a child process

MNIST = dict(dataset="synthetic-mnist", limit_samples=256, batch_size=64, epochs=2)


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    """Tiny models saved by Keras: a good one (the mlp-xs plan's layers), one with a Lambda layer, one with a custom
    layer, one whose input and one whose output do not fit MNIST, and a file that is no archive."""
    keras = pytest.importorskip("keras")
    folder = tmp_path_factory.mktemp("model-files")

    def mlp(*middle, inputs=(28, 28, 1), classes=10, name="mine"):
        return keras.Sequential([keras.Input(inputs), keras.layers.Flatten(), *middle,
                                 keras.layers.Dense(32, activation="relu"), keras.layers.Dense(classes)], name=name)

    @keras.saving.register_keras_serializable(package="Mine")
    class Twice(keras.layers.Layer):
        def call(self, x):
            return x * 2

    made = {
        "good": mlp(),
        "lambda": mlp(keras.layers.Lambda(lambda t: t * 2)),
        "custom": mlp(Twice()),
        "wrong_input": mlp(inputs=(32, 32, 3)),
        "wrong_output": mlp(classes=7),
    }
    paths = {}
    for name, model in made.items():
        paths[name] = folder / f"{name}.keras"
        model.save(paths[name])
    paths["not_archive"] = folder / "notes.keras"
    paths["not_archive"].write_text("model = Sequential(...)  # a script, not a saved model\n")
    paths["too_big"] = folder / "huge.keras"
    with open(paths["too_big"], "wb") as f:  # sparse: over the limit without writing 200 MB
        f.truncate((model_file.MODEL_FILE_MAX_MB + 1) * 1024 * 1024)
    return paths


def file_config(path: Path, **changes) -> RunConfig:
    return RunConfig(**{**MNIST, "model": model_file.file_model_name(str(path)), "size": None,
                        "model_file": str(path), **changes})


def refused(path: Path) -> str:
    with pytest.raises(ConfigError) as caught:
        file_config(path).validate(NO_GPU)
    return " ".join(caught.value.errors)


def test_a_file_that_is_no_keras_archive_is_refused(files):
    assert "is not a Keras archive" in refused(files["not_archive"])


def test_a_lambda_layer_is_refused(files):
    assert "holds a Lambda layer" in refused(files["lambda"])


def test_a_custom_layer_is_refused(files):
    text = refused(files["custom"])
    assert "custom object 'Twice'" in text and "Keras does not ship" in text


def test_a_file_over_the_size_limit_is_refused(files):
    assert f"at most {model_file.MODEL_FILE_MAX_MB} MB" in refused(files["too_big"])


def test_a_model_whose_input_does_not_fit_the_data_is_refused(files):
    text = refused(files["wrong_input"])
    assert "takes inputs of shape (32, 32, 3)" in text and "have shape (28, 28, 1)" in text


def test_a_model_whose_output_does_not_fit_the_classes_is_refused(files):
    text = refused(files["wrong_output"])
    assert "output has 7 unit(s)" in text and "10 classes" in text and "Dense(10)" in text


@pytest.mark.parametrize("name", ["not_archive", "lambda", "custom", "too_big", "wrong_input", "wrong_output"])
def test_the_cli_refuses_a_bad_file_with_exit_2_and_stores_nothing(files, name, isolated_store):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = cli.main(["run", "--dataset", "synthetic-mnist", "--model-file", str(files[name]), "--epochs", "1",
                         "--limit-samples", "256"])
    assert code == 2, err.getvalue()
    assert files[name].name in err.getvalue() or "model" in err.getvalue()
    assert not isolated_store.exists() or Store(isolated_store).list_runs() == []


def test_a_good_file_is_counted_as_the_plans_count_theirs(files):
    own = model_file.check_model_file(str(files["good"]), (28, 28, 1), 10)
    plan = models.plan("mlp", "xs", (28, 28, 1), 10)  # the same layers
    assert (own.params, own.flops_per_sample) == (plan.params, plan.flops_per_sample)
    assert own.loss == "sparse_categorical_crossentropy" and own.from_logits
    assert "Dense 32 relu" in own.describe() and f"{plan.params:,} params" in own.describe()


def test_a_good_file_is_compared_across_targets_and_swept_over_batch_size_like_a_preset(files):
    base = file_config(files["good"]).validate(NO_GPU)
    pair = compare.target_configs(base, ["cpu", "cpu/1"], NO_GPU)
    assert [c.model_file for c in pair] == [str(files["good"])] * 2
    points = sweeps.sweep_configs(base, ["xs", "s"], ["cpu"], [32, 64], NO_GPU)
    assert [(c.batch_size, c.model_file) for c in points] == [(32, str(files["good"])), (64, str(files["good"]))], \
        "a file has one size, its own: the sweep varies the batch size"


def test_a_good_file_trains_as_a_run(files, isolated_store):
    from bench.runs.jobs import JobManager

    manager = JobManager(Store(isolated_store), hardware=NO_GPU)
    try:
        run_id = manager.submit(file_config(files["good"]))
        snap = manager.wait(run_id, timeout_s=240)
    finally:
        manager.shutdown()
    assert snap.status == "finished", snap.error
    assert len(snap.epochs) == 2 and snap.epochs[0].includes_tracing
    plan = models.plan("mlp", "xs", (28, 28, 1), 10)
    assert snap.info.params == plan.params and snap.info.flops_per_sample == plan.flops_per_sample
    assert snap.info.model_description.startswith("good.keras: Flatten -> Dense 32 relu")
    stored = Store(isolated_store).get_run(run_id)
    assert stored.config.model_file == str(files["good"]) and stored.config.model == "good.keras"
