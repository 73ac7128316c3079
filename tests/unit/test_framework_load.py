"""Loading the framework without the packages a run never uses (bench.training.framework.NOT_LOADED_WITH): held back
while Keras and its backend load, importable as usual afterwards."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.training import framework

ROOT = Path(__file__).resolve().parents[2]


def test_a_held_back_package_is_not_found_inside_the_block_and_imports_after(tmp_path, monkeypatch):
    (tmp_path / "held_pkg_for_test.py").write_text("LOADED = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(framework.NOT_LOADED_WITH, "tensorflow", ("held_pkg_for_test",))
    with framework.unused_packages_held_back("tensorflow"):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module("held_pkg_for_test")
    assert importlib.import_module("held_pkg_for_test").LOADED
    del sys.modules["held_pkg_for_test"]


def test_a_package_already_loaded_is_left_alone(monkeypatch):
    monkeypatch.setitem(framework.NOT_LOADED_WITH, "jax", ("json",))
    with framework.unused_packages_held_back("jax"):
        assert importlib.import_module("json") is json
    assert sys.modules["json"] is json


@pytest.mark.slow
def test_keras_on_tensorflow_loads_without_them_and_they_import_after():
    """The real packages: Keras on TensorFlow loaded as a worker loads it, in a process of its own."""
    pytest.importorskip("tensorflow")
    script = """
import json, os, sys
os.environ["KERAS_BACKEND"] = "tensorflow"
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
from bench.training import framework
framework.setup_once("tensorflow", 1, 1, None)
held = framework.NOT_LOADED_WITH["tensorflow"]
during = {name: name in sys.modules for name in held}
import keras
layer = keras.layers.Dense(2)
import sklearn.datasets
print(json.dumps({"during": during, "keras": keras.config.backend(), "sklearn_after": "sklearn" in sys.modules}))
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["keras"] == "tensorflow"
    assert out["during"] == {name: False for name in framework.NOT_LOADED_WITH["tensorflow"]}, out
    assert out["sklearn_after"] is True
