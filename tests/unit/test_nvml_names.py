"""Every NVML function and constant the engine asks for exists in pynvml and in the scripted NVML of the tests.

nvml.query turns a missing function into "not available" (None), as it must for an old pynvml; so a misspelt name
would read as a GPU that never reports that figure, in production and in every test alike. This test reads the names
from the engine's source and looks each one up."""

from __future__ import annotations

import ast
from pathlib import Path

import pynvml
import pytest

from tests.unit import fake_nvml

ROOT = Path(__file__).resolve().parents[2]
MONITOR = ROOT / "bench" / "hardware"


def _names_asked_for() -> dict[str, str]:
    """NVML names the engine uses, each with the first place that uses it: ``query("nvmlX", ...)`` calls,
    ``module.nvmlX`` attributes and ``getattr(module, "NVML_X" / "nvmlX" / "c_nvmlX", ...)`` lookups."""
    found: dict[str, str] = {}
    for path in sorted(MONITOR.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            name = None
            if isinstance(node, ast.Call) and node.args:
                func = node.func
                called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if called == "query" and isinstance(node.args[0], ast.Constant):
                    name = node.args[0].value
                elif (called == "getattr" and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
                      and isinstance(node.args[0], ast.Name) and node.args[0].id in ("module", "pynvml")):
                    name = node.args[1].value  # a name looked up on the NVML module (not a field of its structs)
            elif isinstance(node, ast.Attribute) and node.attr.startswith("nvml"):
                name = node.attr
            if isinstance(name, str) and name.lower().lstrip("c_").startswith("nvml"):
                found.setdefault(name, f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_the_walk_finds_the_calls() -> None:
    names = _names_asked_for()
    assert {"nvmlDeviceGetUtilizationRates", "nvmlDeviceGetTotalEnergyConsumption", "nvmlGpmMetricsGet",
            "NVML_TEMPERATURE_GPU"} <= set(names)


def test_every_nvml_name_the_engine_uses_exists_in_pynvml() -> None:
    missing = {name: where for name, where in _names_asked_for().items() if not hasattr(pynvml, name)}
    assert not missing, f"not in pynvml {getattr(pynvml, '__version__', '')}: {missing}"


@pytest.mark.parametrize("scenario", [fake_nvml.hopper_with_gpm, fake_nvml.two_gpus])
def test_every_nvml_function_the_engine_calls_exists_in_the_test_fake(scenario) -> None:
    fake = scenario()
    functions = {n: w for n, w in _names_asked_for().items() if n.startswith("nvml") and n[4:5].isupper()}
    missing = {name: where for name, where in functions.items() if not hasattr(fake, name)}
    assert not missing, f"the scripted NVML lacks {missing}: tests would read those figures as not available"
