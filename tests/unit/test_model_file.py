"""A user's .keras file as a run's model: each bad file refused with its reason by RunConfig.validate (and by the CLI,
exit 2, nothing stored), a good one counted as the plans count theirs, trained, and compared and swept like a preset.
The files are made here with Keras itself (tiny models); loading one runs Keras in a child process: slow."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from bench.cli import main as cli
from bench.analysis import compare, sweeps
from bench.vocab.config import ConfigError, RunConfig
from bench.store import Store
from bench.plans import models
from bench.plans import model_file
from benchmarks import hostile_files
from tests.fixtures import NO_GPU

pytestmark = pytest.mark.slow  # Keras makes the files here and loads them in a child process

MNIST = dict(dataset="synthetic-mnist", limit_samples=256, batch_size=64, epochs=2)


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    """Tiny models saved by Keras: a good one (the mlp-xs plan's layers), one with a Lambda layer, one with a custom
    layer, one whose input and output fit neither MNIST nor CIFAR-10's classes (32x32x3 in, 7 out: one file, so one
    reading child, for both refusals), and a file that is no archive."""
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
        "wrong_fit": mlp(inputs=(32, 32, 3), classes=7),
    }
    paths = {}
    for name, model in made.items():
        paths[name] = folder / f"{name}.keras"
        model.save(paths[name])
    paths["wrong_input"] = paths["wrong_output"] = paths.pop("wrong_fit")  # on MNIST its input; on CIFAR-10 its output
    paths["not_archive"] = folder / "notes.keras"
    paths["not_archive"].write_text("model = Sequential(...)  # a script, not a saved model\n")
    paths["too_big"] = folder / "huge.keras"
    with open(paths["too_big"], "wb") as f:  # sparse: over the limit without writing 200 MB
        f.truncate((model_file.MODEL_FILE_MAX_MB + 1) * 1024 * 1024)
    return paths


def file_config(path: Path, **changes) -> RunConfig:
    return RunConfig(**{**MNIST, "model": model_file.file_model_name(str(path)), "size": None,
                        "model_file": str(path), **changes})


def refused(path: Path, **changes) -> str:
    with pytest.raises(ConfigError) as caught:
        file_config(path, **changes).validate(NO_GPU)
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
    text = refused(files["wrong_output"], dataset="synthetic-cifar10")  # its input fits CIFAR-10's; its output not
    assert "output has 7 unit(s)" in text and "10 classes" in text and "Dense(10)" in text
    assert "inputs of shape" not in text


@pytest.mark.parametrize("name", ["not_archive", "lambda", "custom", "too_big", "wrong_input", "wrong_output"])
def test_the_cli_refuses_a_bad_file_with_exit_2_and_stores_nothing(files, name, isolated_store):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        dataset = "synthetic-cifar10" if name == "wrong_output" else "synthetic-mnist"  # the file's input fits it
        code = cli.main(["run", "--dataset", dataset, "--model-file", str(files[name]), "--epochs", "1",
                         "--limit-samples", "256"])
    assert code == 2, err.getvalue()
    assert files[name].name in err.getvalue() or "model" in err.getvalue()
    assert not isolated_store.exists() or Store(isolated_store).list_runs() == []


def test_a_good_file_of_the_presets_layers_is_counted_as_the_plans_count_theirs(files):
    own = model_file.check_model_file(str(files["good"]), (28, 28, 1), 10)
    plan = models.plan("mlp", "xs", (28, 28, 1), 10)  # the same layers: the same figures, by the same formulas
    assert (own.params, own.flops_per_sample) == (plan.params, plan.flops_per_sample)
    assert own.flops_source == model_file.FLOP_SOURCE_FORMULAS
    assert own.loss == "sparse_categorical_crossentropy" and own.from_logits
    assert "Dense 32 relu" in own.describe() and f"{plan.params:,} params" in own.describe()
    assert model_file.FLOP_SOURCE_FORMULAS in own.describe()


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
    checked = model_file.check_model_file(str(files["good"]), (28, 28, 1), 10)
    assert snap.info.params == plan.params and snap.info.flops_per_sample == checked.flops_per_sample
    assert snap.info.model_description.startswith("good.keras: Flatten -> Dense 32 relu")
    stored = Store(isolated_store).get_run(run_id)
    assert stored.config.model_file == str(files["good"]) and stored.config.model == "good.keras"


# -- what people really bring, and what an attacker brings (issue: any Keras model a person brings) ------------------
def _zip(path: Path, members: dict[str, bytes], level: int = 1) -> Path:
    import zipfile

    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=level) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> dict[str, Path]:
    """A zip bomb (config.json inflating to 1 GiB, 4.7 MB on disk), a config with a 60 MB model name (60 KB on
    disk), one with a 5,000-character layer name, a Dense of 10^8 units on MNIST (79.5 billion parameters, its config
    written from an abstract build: no weight ever existed), a Lambda inside a nested model and a subclassed model."""
    keras = pytest.importorskip("keras")
    folder = tmp_path_factory.mktemp("hostile")
    paths = {"bomb": hostile_files.zip_bomb(folder / "bomb.keras")}
    meta = b'{"keras_version": "3.15.1"}'
    paths["long_name"] = _zip(folder / "long_name.keras", {
        "metadata.json": meta, "config.json": b'{"class_name": "Sequential", "config": {"name": "' + b"n" * (60 << 20)
        + b'"}}'})
    good = keras.Sequential([keras.Input((28, 28, 1)), keras.layers.Flatten(), keras.layers.Dense(8),
                             keras.layers.Dense(10)], name="fine")
    config = json.dumps(keras.saving.serialize_keras_object(good)).replace('"fine"', '"' + "x" * 5000 + '"')
    paths["long_layer_name"] = _zip(folder / "long_layer_name.keras", {"metadata.json": meta,
                                                                       "config.json": config.encode()})
    with keras.StatelessScope(initialize_variables=False):  # built on abstract shapes: nothing allocated
        huge = keras.Sequential([keras.Input((28, 28, 1)), keras.layers.Flatten(), keras.layers.Dense(10**8),
                                 keras.layers.Dense(10)], name="huge")
        huge_config = json.dumps(keras.saving.serialize_keras_object(huge))
    paths["huge_dense"] = _zip(folder / "huge_dense.keras", {"metadata.json": meta,
                                                             "config.json": huge_config.encode()})
    inner = keras.Sequential([keras.Input((28, 28, 1)), keras.layers.Flatten(),
                              keras.layers.Lambda(lambda t: t * 2, output_shape=(784,))], name="inner")
    inputs = keras.Input((28, 28, 1))
    paths["nested_lambda"] = folder / "nested_lambda.keras"
    keras.Model(inputs, keras.layers.Dense(10)(inner(inputs))).save(paths["nested_lambda"])

    @keras.saving.register_keras_serializable(package="Mine")
    class MyNet(keras.Model):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.flat, self.out = keras.layers.Flatten(), keras.layers.Dense(10)

        def call(self, x):
            return self.out(self.flat(x))

    subclassed = MyNet()
    subclassed(keras.ops.zeros((1, 28, 28, 1)))
    paths["subclassed"] = folder / "subclassed.keras"
    subclassed.save(paths["subclassed"])
    return paths


def _refused_in_a_process(path: Path) -> dict:
    """The check a dashboard or the CLI runs, in a fresh process: what it said, how long it took, its peak memory."""
    if not Path("/proc/self/status").exists():
        pytest.skip("the peak memory is read from /proc/self/status (VmHWM), which this platform lacks")
    return hostile_files.refused_in_a_process(path)


def test_a_zip_bomb_is_refused_from_the_zip_directory_in_a_few_seconds_and_megabytes(hostile):
    answer = _refused_in_a_process(hostile["bomb"])
    assert answer["said"] and "config.json of 1,024.0 MB" in answer["said"], answer  # as the zip directory says
    assert answer["seconds"] < 5, answer
    # the process that refused it (a dashboard's, the CLI's) never inflated it: Python, pydantic and psutil alone
    assert answer["peak_mib"] < 150, answer


@pytest.mark.parametrize("name, words", [("long_name", "config.json of 60.0 MB"),
                                         ("long_layer_name", "a name or setting of 5,000 characters")])
def test_a_config_with_an_overlong_name_is_refused_before_keras_reads_it(hostile, name, words):
    answer = _refused_in_a_process(hostile[name])
    assert answer["said"] and words in answer["said"], answer
    assert answer["seconds"] < 5 and answer["peak_mib"] < 150, answer


def test_a_model_too_large_for_the_device_is_refused_before_a_weight_is_allocated(hostile):
    answer = _refused_in_a_process(hostile["huge_dense"])
    assert answer["said"] and "79,500,000,010 parameters" in answer["said"], answer
    assert "GiB" in answer["said"] and "at most" in answer["said"], "the figures and the bound in the message"
    assert answer["seconds"] < 60, answer  # a framework's start in the child, then its config: no allocation to wait on
    limit = model_file.max_params(1024)  # a 1 GiB device: 512 MiB for 4 float32 copies
    assert limit == 512 * 1024 * 1024 // 16


def test_a_lambda_inside_a_nested_model_is_refused_by_safe_mode(hostile):
    with pytest.raises(model_file.ModelFileError, match="holds a Lambda layer"):
        model_file.check_model_file(str(hostile["nested_lambda"]), (28, 28, 1), 10)


def test_a_subclassed_model_is_told_how_to_save_it_so_it_loads(hostile):
    with pytest.raises(model_file.ModelFileError) as caught:
        model_file.check_model_file(str(hostile["subclassed"]), (28, 28, 1), 10)
    assert "subclassed model (class 'MyNet')" in str(caught.value) and "functional API" in str(caught.value)


def test_the_reading_child_runs_under_an_address_space_limit():
    """The limit the child sets on itself before Keras is imported: an allocation past it fails there."""
    import subprocess
    import sys

    code = ("from bench.plans import model_file; model_file.limit_memory(512)\n"
            "try:\n    b = bytearray(1024 * 1024 * 1024)\n    print('allocated')\nexcept MemoryError:\n"
            "    print('refused')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.stdout.strip() == "refused", done.stdout + done.stderr[-500:]
    assert model_file.child_memory_limit_mib(0) == model_file.CHILD_MEMORY_BASE_MIB


def test_a_tfsm_layer_is_refused_by_safe_mode(tmp_path):
    """A TFSMLayer (a TensorFlow SavedModel reloaded as a layer) is code from outside the file's config: safe mode
    refuses it before it opens anything."""
    keras = pytest.importorskip("keras")
    model = keras.Sequential([keras.Input((28, 28, 1)), keras.layers.Flatten(), keras.layers.Dense(10)], name="m")
    config = keras.saving.serialize_keras_object(model)
    config["config"]["layers"].insert(2, {"module": "keras.layers", "class_name": "TFSMLayer", "registered_name": None,
                                          "config": {"name": "saved", "filepath": str(tmp_path / "saved_model"),
                                                     "call_endpoint": "serve", "trainable": False}})
    path = _zip(tmp_path / "tfsm.keras", {"metadata.json": b'{"keras_version": "3.15.1"}',
                                          "config.json": json.dumps(config).encode()})
    with pytest.raises(model_file.ModelFileError, match="holds a TFSMLayer"):
        model_file.check_model_file(str(path), (28, 28, 1), 10)


def test_the_parameter_bound_follows_the_device_a_run_trains_on():
    from bench.vocab.config import device_memory_mib
    from bench.vocab.record_types import GpuSpec

    gpus = [GpuSpec(0, "big", 81_559.0, "550", "12.4", "GPU-a"),
            GpuSpec(1, "small", 16_384.0, "550", "12.4", "GPU-b")]
    machine = NO_GPU.updated(gpus=gpus, gpu_reason=None)
    assert device_memory_mib("gpu:1", machine) == 16_384.0
    assert device_memory_mib("gpus", machine) == 16_384.0, "all GPUs: the smallest holds a replica"
    assert device_memory_mib("cpu", machine) is None and device_memory_mib("gpu:7", machine) is None
    assert model_file.max_params(16_384.0) == 16_384 * 1024 * 1024 // 2 // 16  # half, four float32 copies


def test_a_file_is_read_once_and_the_bound_applied_to_its_answer(files, tmp_path, monkeypatch):
    """A Compare or a Sweep validates each config: the file is read by one child, its answer (a model or a refusal)
    kept; the bound, which follows the RAM free at that moment, is applied to the answer each time. A file refused as
    too large is read again under a larger bound."""
    import shutil
    import subprocess

    children = []
    real_run = subprocess.run

    def counted(args, *rest, **kwargs):
        if "bench.training.keras_build" in args:
            children.append(args)
        return real_run(args, *rest, **kwargs)

    monkeypatch.setattr(subprocess, "run", counted)
    good = shutil.copy(files["good"], tmp_path / "good.keras")
    params = models.plan("mlp", "xs", (28, 28, 1), 10).params
    tiny = params * model_file.TRAINING_COPIES * 4 / 2**20 / model_file.MODEL_MEMORY_SHARE / 2  # half what it needs
    with pytest.raises(model_file.ModelFileError, match=f"{params:,} parameters"):
        model_file.check_model_file(str(good), (28, 28, 1), 10, device_memory_mib=tiny)
    assert len(children) == 1
    for memory in (None, 1024, 80_000, None):
        assert model_file.check_model_file(str(good), (28, 28, 1), 10, device_memory_mib=memory).params == params
    assert len(children) == 2, "read again once under a larger bound, then kept"
    with pytest.raises(model_file.ModelFileError, match=f"{params:,} parameters"):
        model_file.check_model_file(str(good), (28, 28, 1), 10, device_memory_mib=tiny)
    assert len(children) == 2, "the kept model refused under the smaller bound without a read"

    # a refusal is kept as well: the module's Lambda file, read by this check unless an earlier test read it already
    # (one reading child saved in the module); its second check reads nothing either way
    with pytest.raises(model_file.ModelFileError, match="Lambda"):
        model_file.check_model_file(str(files["lambda"]), (28, 28, 1), 10)
    assert len(children) in (2, 3)
    read = len(children)
    with pytest.raises(model_file.ModelFileError, match="Lambda"):
        model_file.check_model_file(str(files["lambda"]), (28, 28, 1), 10)
    assert len(children) == read, "a refusal is kept as well"
