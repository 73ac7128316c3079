"""Tests for bench.vocab.target.Target: the one parser of cpu, cpu/N, gpu:N, gpus and what a target says about itself."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from bench.hardware import devices
from bench.vocab.config import ConfigError, RunConfig
from bench.vocab.record_types import CpuSpec, GpuSpec
from bench.vocab.target import Target

HARDWARE = devices.Hardware(
    cpu=CpuSpec(model="test cpu", physical_cores=8, logical_cores=16, ram_total_mib=1024.0),
    gpus=[GpuSpec(index=i, name=f"Fake GPU {i}", mem_total_mib=16384.0, driver="1", cuda_driver_version="12.4",
                          uuid=f"GPU-{i}") for i in range(2)],
    gpu_reason=None, framework="tensorflow", framework_version="2.0", framework_cuda=True,
)


@pytest.mark.parametrize(("text", "kind", "index", "threads", "device"), [
    ("cpu", "cpu", None, None, "cpu"),
    ("cpu/1", "cpu", None, 1, "cpu"),
    ("cpu/16", "cpu", None, 16, "cpu"),
    ("gpu:0", "gpu", 0, None, "gpu:0"),
    ("gpu:12", "gpu", 12, None, "gpu:12"),
    ("gpus", "gpus", None, None, "gpus"),
])
def test_parse_every_form(text, kind, index, threads, device):
    target = Target.parse(text)
    assert (target.kind, target.index, target.threads) == (kind, index, threads)
    assert target.device == device and target.cpu_threads == threads
    assert target.fields() == {"device": device, "cpu_threads": threads}
    assert str(target) == text, "the canonical text round-trips"
    assert Target.parse(str(target)) == target


@pytest.mark.parametrize(("text", "canonical"), [(" cpu ", "cpu"), ("CPU/2", "cpu/2"), ("cpu/02", "cpu/2"),
                                                 ("GPU:1", "gpu:1"), ("gpu:00", "gpu:0"), ("Gpus", "gpus")])
def test_parse_gives_the_canonical_form(text, canonical):
    assert str(Target.parse(text)) == canonical


@pytest.mark.parametrize(("text", "message"), [
    ("cpu/0", "target 'cpu/0': after 'cpu/' give a thread count >= 1, e.g. cpu/1"),
    ("cpu/x", "after 'cpu/' give a thread count >= 1"),
    ("cpu/", "after 'cpu/' give a thread count >= 1"),
    ("cpu/-1", "after 'cpu/' give a thread count >= 1"),
    ("gpu", "target 'gpu' is not one of the forms cpu, cpu/N, gpu:N, gpus"),
    ("gpu:", "is not one of the forms cpu, cpu/N, gpu:N, gpus"),
    ("gpu:-1", "is not one of the forms cpu, cpu/N, gpu:N, gpus"),
    ("gpu:0,gpu:1", "is not one of the forms cpu, cpu/N, gpu:N, gpus"),
    ("tpu:0", "target 'tpu:0' is not one of the forms"),
    ("cpu:0", "is not one of the forms"),
    ("", "target '' is not one of the forms"),
    (None, "target None is not one of the forms"),
])
def test_parse_refuses_other_forms_saying_which_are_allowed(text, message):
    with pytest.raises(ConfigError) as caught:
        Target.parse(text)
    assert message in str(caught.value)
    assert len(caught.value.errors) == 1


def test_kinds_and_labels():
    cpu, pinned, one, two, every = (Target.parse(t) for t in ("cpu", "cpu/2", "cpu/1", "gpu:1", "gpus"))
    assert cpu.is_cpu and pinned.is_cpu and not cpu.is_gpu
    assert two.is_gpu and every.is_gpu and not two.is_cpu and not every.is_cpu
    assert [t.label for t in (cpu, pinned, one, two, every)] == [
        "CPU (all cores)", "CPU (2 threads)", "CPU (1 thread)", "GPU 1", "All GPUs"]
    assert [t.keras_device for t in (cpu, pinned, two, every)] == ["cpu:0", "cpu:0", "gpu:0", "gpu:0"]


def test_labels_on_hardware_name_what_is_there():
    assert Target.parse("cpu").label_on(HARDWARE) == "CPU (16 cores)"
    assert Target.parse("cpu/4").label_on(HARDWARE) == "CPU (4 threads)"
    assert Target.parse("gpu:1").label_on(HARDWARE) == "GPU 1: Fake GPU 1"
    assert Target.parse("gpu:7").label_on(HARDWARE) == "gpu:7", "a GPU that is not there keeps its device name"
    assert Target.parse("gpus").label_on(HARDWARE) == "All 2 GPUs"


def test_from_device_reads_config_fields():
    assert Target.from_device("cpu", 3) == Target.parse("cpu/3")
    assert Target.from_device("cpu", None) == Target.from_device("cpu", 0) == Target.parse("cpu")
    assert Target.from_device("gpu:0", 3) == Target.parse("gpu:0"), "threads off the CPU are not part of the target"
    assert Target.from_device("gpus") == Target.parse("gpus")
    with pytest.raises(ValueError, match="CPU threads must be a whole number >= 1"):
        Target.from_device("cpu", -1)
    with pytest.raises(ValueError, match="use 'cpu' or 'gpu:N'"):
        Target.from_device("cpu/2")  # a config's device never carries the thread count


def test_of_a_config_a_record_and_a_config_dict():
    config = RunConfig(cpu_threads=2)
    assert Target.of(config) == config.target() == Target.parse("cpu/2")
    assert Target.of(RunConfig(device="gpu:1")) == Target.parse("gpu:1")
    record = SimpleNamespace(id=4, config=RunConfig(device="gpus"))
    assert Target.of(record) == Target.parse("gpus"), "a record's target is its config's"
    assert Target.of(RunConfig()) == Target.parse("cpu"), "the config's default device"
    with pytest.raises(ValueError):
        Target.of(SimpleNamespace(config=SimpleNamespace(device="tpu", cpu_threads=None)))


def test_equality_and_hash_are_by_value():
    assert Target.parse("cpu/2") == Target("cpu", threads=2) == Target.parse(" CPU/2 ")
    assert Target.parse("cpu/2") != Target.parse("cpu") != Target.parse("gpu:0") != Target.parse("gpus")
    assert Target.parse("gpu:0") != "gpu:0", "a target is not its text"
    assert len({Target.parse(t) for t in ("cpu", "CPU", "cpu/1", "cpu/01", "gpu:0", "gpu:00", "gpus")}) == 4
    assert {Target.parse("gpu:1"): "x"}[Target("gpu", index=1)] == "x"
    assert repr(Target.parse("cpu/2")) == "Target('cpu/2')"
    with pytest.raises(AttributeError):
        Target.parse("cpu").kind = "gpu"  # type: ignore[misc]


@pytest.mark.parametrize(("kind", "index", "threads"), [
    ("tpu", None, None), ("gpu", None, None), ("gpu", -1, None), ("cpu", 0, None), ("gpus", 0, None),
    ("cpu", None, 0), ("gpu", 0, 2), ("cpu", None, True),
])
def test_a_target_cannot_be_built_inconsistent(kind, index, threads):
    with pytest.raises(ValueError):
        Target(kind, index=index, threads=threads)
