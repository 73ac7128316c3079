"""RunConfig validation: every bad value gets a message that says what is allowed."""

from __future__ import annotations

import numpy as np
import pytest

from bench.hardware import devices
from bench.vocab.record_types import CpuSpec, GpuSpec
from bench.vocab.config import ConfigError, RunConfig
from bench.vocab.errors import RecordError
from bench.vocab.target import Target

NO_GPU = devices.Hardware(
    cpu=CpuSpec(model="test cpu", physical_cores=2, logical_cores=2, ram_total_mib=1024.0),
    gpus=[], gpu_reason="No NVIDIA driver found (test).", framework="tensorflow", framework_version="0",
    framework_cuda=False, hostname="test", platform="linux",
)
TWO_GPUS = devices.Hardware(
    cpu=NO_GPU.cpu,
    gpus=[GpuSpec(index=i, name="Fake GPU", mem_total_mib=16384.0, driver="1", cuda_driver_version="12.4",
                          uuid=f"GPU-{i}") for i in range(2)],
    gpu_reason=None, framework="tensorflow", framework_version="0", framework_cuda=True, hostname="t",
    platform="linux",
)


def errors_of(config: RunConfig, hardware=NO_GPU) -> str:
    with pytest.raises(ConfigError) as info:
        config.validate(hardware)
    return str(info.value)


def test_default_config_is_valid_and_a_demo():
    config = RunConfig().validate(NO_GPU)
    assert config.dataset == "synthetic-mnist"
    assert config.device == "cpu"
    assert config.jit_compile is False and config.precision == "float32"


@pytest.mark.parametrize(
    ("changes", "pattern"),
    [
        ({"epochs": 0}, r"epochs must be a whole number from 1 to 1,000, got 0"),
        ({"epochs": 10**9}, r"epochs must be a whole number from 1 to 1,000"),
        ({"epochs": 2.5}, r"epochs must be a whole number"),
        ({"epochs": True}, r"epochs must be a whole number"),
        ({"epochs": "x"}, r"epochs must be a whole number from 1 to 1,000, got 'x'"),
        ({"batch_size": 0}, r"batch_size must be a whole number from 1 to 65,536"),
        ({"batch_size": 2**63 - 1}, r"batch_size must be a whole number from 1 to 65,536"),
        ({"sample_interval_s": 0}, r"sample_interval_s must be a number of seconds from 0.1 to 10, got 0"),
        ({"sample_interval_s": 11}, r"sample_interval_s must be a number of seconds from 0.1 to 10"),
        ({"learning_rate": -1.0}, r"learning_rate must be a number above 0 and at most 10"),
        ({"jit_compile": "yes"}, r"jit_compile must be true or false"),
        ({"cpu_threads": 0}, r"cpu_threads must be a whole number from 1"),
        ({"limit_samples": 0}, r"limit_samples must be a whole number from 1 to 1,000,000,000"),
        ({"seed": -1}, r"seed must be a whole number from 0"),
        ({"device": "gpu:0", "cpu_threads": 1}, r"CPU threads apply to CPU runs only"),
        ({"devices": 3}, r"batch size 128 does not split evenly over 3 devices"),
        ({"workers": "a:1,b:1"}, r"needs both --workers"),
        ({"epoch": 3}, r"RunConfig holds unknown setting\(s\) 'epoch'"),
    ],
)
def test_bad_settings_are_refused_where_the_config_is_made(changes, pattern):
    """Types, bounds and the rules between settings are pydantic's: a config that breaks one is never built."""
    with pytest.raises(ConfigError, match=pattern):
        RunConfig(**changes)


@pytest.mark.parametrize(
    ("changes", "pattern"),
    [
        ({"batch_size": 30000, "limit_samples": 1000}, r"batch size 30000 is larger than the 1000 training samples"),
        ({"dataset": "nope"}, r"dataset 'nope' is unknown; pick one of synthetic-mnist"),
        ({"model": "resnet"}, r"resnet"),
        ({"size": "huge"}, r"huge"),
        ({"optimizer": "lbfgs"}, r"optimizer 'lbfgs' is unknown; pick one of adam"),
        ({"precision": "int8"}, r"precision 'int8' is unknown; pick one of float32, mixed_float16"),
        ({"cpu_threads": 10**4}, r"CPU threads must be from 1 to 2 on this machine"),
        ({"backend": "mxnet"}, r"Keras backend 'mxnet' is unknown; set KERAS_BACKEND to one of tensorflow, jax, torch"),
        ({"backend": "torch", "steps_per_execution": 4}, r"steps per execution 4 needs the TensorFlow or JAX"),
        ({"model": "text"}, r"(?i)text"),
        ({"dataset": "npz"}, r"dataset 'npz' needs a file"),
        ({"device": "tpu"}, r"'tpu'"),
    ],
)
def test_what_only_this_machine_knows_is_refused_by_validate(changes, pattern):
    config = RunConfig(**changes)
    assert pytest.raises(ConfigError, config.validate, NO_GPU).match(pattern)


def test_gpu_on_a_machine_without_one_says_why_and_offers_cpu():
    message = errors_of(RunConfig(device="gpu:0"))
    assert "No NVIDIA driver found (test)." in message
    assert "Pick 'cpu'" in message


def test_gpu_devices_are_checked_against_the_gpus_present():
    RunConfig(device="gpu:1").validate(TWO_GPUS)
    RunConfig(device="gpus").validate(TWO_GPUS)
    assert "pick one of cpu, gpu:0, gpu:1" in errors_of(RunConfig(device="gpu:7"), TWO_GPUS)


def test_every_problem_is_listed_at_once():
    with pytest.raises(ConfigError) as info:
        RunConfig(epochs=0, batch_size=0, seed=-1)
    assert len(info.value.errors) == 3
    with pytest.raises(ConfigError) as info:
        RunConfig(optimizer="x", precision="y").validate(NO_GPU)
    assert len(info.value.errors) == 2


def test_npz_dataset_is_checked_through_its_file(tmp_path):
    path = tmp_path / "mine.npz"
    rng = np.random.default_rng(0)
    np.savez(path, x_train=rng.random((50, 6, 6), dtype=np.float32), y_train=rng.integers(0, 3, 50),
             x_test=rng.random((10, 6, 6), dtype=np.float32), y_test=rng.integers(0, 3, 10))
    RunConfig(dataset="npz", npz_path=str(path), batch_size=16, limit_samples=None).validate(NO_GPU)
    assert "larger than the 50 training samples" in errors_of(
        RunConfig(dataset="npz", npz_path=str(path), batch_size=64, limit_samples=None))


def test_round_trip_and_unknown_fields():
    config = RunConfig(epochs=3, cpu_threads=1)
    assert RunConfig.model_validate(config.to_dict()) == config
    with pytest.raises(RecordError, match=r"config holds unknown setting\(s\) 'epoch'"):
        RunConfig.model_validate({**config.to_dict(), "epoch": 3})
    with pytest.raises(RecordError, match=r"config\.epochs must be a whole number from 1 to 1,000, got '3'"):
        RunConfig.model_validate({**config.to_dict(), "epochs": "3"})


def test_a_config_read_from_a_record_keeps_its_keys_and_gains_no_default():
    """A record written before a setting existed reads with today's default in memory, says it did not record it,
    and is written back without it: an old record never gains this machine's backend."""
    old = {k: v for k, v in RunConfig(epochs=3).to_dict().items() if k not in ("backend", "steps_per_execution")}
    config = RunConfig.model_validate(old)
    assert config.epochs == 3 and config.steps_per_execution == 1
    assert not config.recorded("backend") and config.recorded("epochs")
    assert "backend" not in config.to_dict() and config.to_dict() == old
    rerun = config.replace(epochs=4)  # a new run from it is a config of its own, written whole
    assert rerun.recorded("backend") and rerun.to_dict()["backend"] == rerun.backend


def test_with_target_sets_device_and_threads_only():
    base = RunConfig(epochs=3, cpu_threads=2)
    assert base.with_target("gpu:1") == base.replace(device="gpu:1", cpu_threads=None)
    assert base.with_target(Target.parse("cpu/1")) == base.replace(cpu_threads=1)
    assert base.with_target("cpu") == base.replace(cpu_threads=None)
    with pytest.raises(ConfigError, match="cpu, cpu/N, gpu:N, gpus"):
        base.with_target("tpu")


def test_target_and_label():
    assert RunConfig(cpu_threads=1).target() == Target.parse("cpu/1")
    assert str(RunConfig(device="gpus").target()) == "gpus"
    assert "· cpu/1 ·" in RunConfig(cpu_threads=1).label()
    assert "mlp s" in RunConfig().label()


@pytest.mark.parametrize(("argv", "optimizer", "learning_rate"), [
    ([], "sgd", 0.01),  # the CIFAR-10 article's SGD at 0.01, as the pages' preset button sets it
    (["--learning-rate", "0.05"], "sgd", 0.05),
    (["--optimizer", "adam"], "adam", None),  # named: the user's optimizer at its own default rate
])
def test_a_seed_preset_trains_with_its_articles_optimizer_unless_told_otherwise(argv, optimizer, learning_rate):
    """One rule for the CLI, the machine suite and the preset buttons (bench.vocab.config.preset_training): the CLI and the
    suite used Adam for the presets while the pages used the article's SGD, so the same preset trained two ways."""
    from bench.cli import main as cli, args as cli_args
    from bench.runs import suite
    from bench.plans import models

    args = cli.build_parser().parse_args(["run", "--model", "seed-cifar10-mlp", *argv])
    config = cli_args.config_from_args(args)
    assert (config.optimizer, config.learning_rate) == (optimizer, learning_rate)
    family = cli_args.config_from_args(cli.build_parser().parse_args(["run", "--model", "mlp"]))
    assert (family.optimizer, family.learning_rate) == (RunConfig().optimizer, None)
    for workload in suite.workloads("quick"):
        preset = models.PRESETS.get(workload.model)
        expected = (preset.optimizer, preset.learning_rate) if preset else (RunConfig().optimizer, None)
        assert (workload.config().optimizer, workload.config().learning_rate) == expected, workload.key
