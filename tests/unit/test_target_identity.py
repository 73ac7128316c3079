"""Targets are what they train on: two that resolve to the same devices and threads on a machine are one target
there (bench.vocab.target.duplicates), refused by the CLI; prices and timeouts are bounded where the CLI reads them."""

from __future__ import annotations


import pytest

from bench.vocab import target
from bench.hardware import devices
from bench.vocab.record_types import CpuSpec, GpuSpec
from bench.hardware.devices import Hardware
from bench.vocab.target import Target


def machine(cores: int, gpus: int = 0, monkeypatch: pytest.MonkeyPatch | None = None) -> Hardware:
    if monkeypatch is not None:
        monkeypatch.setattr(devices, "all_cores", lambda: cores)
    return Hardware(cpu=CpuSpec(model="X", physical_cores=cores, logical_cores=cores, ram_total_mib=1024.0),
                    gpus=[GpuSpec(i, "A", None, None, None, None) for i in range(gpus)])


def parse(text: str) -> list[Target]:
    return [Target.parse(t) for t in text.split(",")]


def test_cpu_and_cpu_of_every_core_are_one_target(monkeypatch: pytest.MonkeyPatch) -> None:
    found = target.duplicates(parse("cpu,cpu/2"), machine(2, monkeypatch=monkeypatch))
    assert found == ["targets cpu and cpu/2 are one target on this machine: both train on the CPU with 2 threads; "
                     "name it once"]
    with pytest.raises(target.ConfigError, match="cpu and cpu/2 are one target"):
        target.refuse_duplicates(parse("cpu,cpu/2"), machine(2, monkeypatch=monkeypatch))


def test_one_gpu_and_all_gpus_are_one_target_on_a_one_gpu_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "gpu:0 and gpus" in target.duplicates(parse("gpu:0,gpus"), machine(2, gpus=1, monkeypatch=monkeypatch))[0]
    assert target.duplicates(parse("gpu:0,gpus"), machine(2, gpus=2, monkeypatch=monkeypatch)) == []


def test_distinct_targets_are_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    assert target.duplicates(parse("cpu,cpu/2"), machine(4, monkeypatch=monkeypatch)) == []
    assert target.duplicates(parse("cpu/1,cpu,gpu:0"), machine(2, gpus=1, monkeypatch=monkeypatch)) == []


def test_the_pages_offer_each_target_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from ui.common import target_options

    hw = machine(2, gpus=1, monkeypatch=monkeypatch)
    hw = Hardware(cpu=hw.cpu, gpus=hw.gpus, gpu_reason=None, framework_cuda=True)
    options = target_options(hw)
    assert target.duplicates([Target.parse(o) for o in options], hw) == []
    assert "cpu" in options and "cpu/2" not in options


def test_compare_refuses_cpu_against_itself(main) -> None:
    cores = devices.all_cores()
    out = main("compare", "--targets", f"cpu,cpu/{cores}", "--epochs", "1")
    assert out.returncode == 2
    assert f"targets cpu and cpu/{cores} are one target on this machine" in out.stderr
    assert f"the CPU with {cores} thread" in out.stderr


@pytest.mark.parametrize("price", ["cpu=1e308", "cpu=inf", "cpu=1e7"])
def test_compare_refuses_a_price_past_its_bound(main, price: str) -> None:
    out = main("compare", "--targets", "cpu/1,cpu", "--price", price)
    assert out.returncode == 2
    assert "from 0.000001 to 1,000,000" in out.stderr


@pytest.mark.parametrize("timeout", ["-1", "0", "nan", "1e9"])
def test_doctor_refuses_a_timeout_past_its_bound(main, timeout: str) -> None:
    out = main("doctor", "--timeout", timeout)
    assert out.returncode == 2
    assert "a timeout in seconds must be a finite number above 0 and at most 86400" in out.stderr
    assert "not installed" not in out.stdout + out.stderr
