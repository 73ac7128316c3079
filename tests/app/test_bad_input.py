"""Bad input is refused clearly, and never crashes a page or the CLI.

Wrong types in a run config, unknown names on the command line, broken .npz uploads on the Train page, JSON imports
with the wrong schema on History and Compare (and through `python -m bench import`), and a dataset download with no
network. Each refusal must say what is wrong and what to do; pages show it without an exception, the CLI without a
traceback. (Range checks already in tests/unit/test_config.py, test_datasets.py and test_cli.py are not repeated.)
"""

from __future__ import annotations

import json
import os
import pickle
import re
import subprocess
import sys
import textwrap
import time
import zipfile
from io import BytesIO
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from bench.cli import main as cli
from bench.plans import datasets
from bench.plans.datasets.registry import DOWNLOAD_SOCKET_TIMEOUT_S
from bench.output import report
from bench.hardware import devices
from bench.vocab.config import ConfigError, RunConfig
from bench.vocab.errors import RecordError

ROOT = Path(__file__).resolve().parents[2]


def app(path: str) -> AppTest:
    return AppTest.from_file(str(ROOT / path), default_timeout=30)


def texts(elements) -> str:
    return "\n".join(str(e.value) for e in elements)


# -- RunConfig: wrong types, as a JSON file or another program would send them ---------------------------------------
WRONG_TYPES = [
    ({"epochs": "5"}, r"epochs must be a whole number from 1 to 1,000, got '5'"),
    ({"epochs": None}, r"epochs must be a whole number"),
    ({"epochs": float("nan")}, r"epochs must be a whole number"),
    ({"batch_size": None}, r"batch_size must be a whole number from 1 to 65,536, got None"),
    ({"batch_size": "64"}, r"batch_size must be a whole number"),
    ({"batch_size": 1.5}, r"batch_size must be a whole number"),
    ({"seed": 1.5}, r"seed must be a whole number from 0 to 2,147,483,647, got 1\.5"),
    ({"seed": "1"}, r"seed must be a whole number"),
    ({"seed": None}, r"seed must be a whole number"),
    ({"seed": 2**31}, r"seed must be a whole number from 0 to 2,147,483,647"),
    ({"sample_interval_s": "0.5"}, r"sample_interval_s must be a number of seconds from 0\.1 to 10, got '0\.5'"),
    ({"sample_interval_s": float("nan")}, r"sample_interval_s must be a number of seconds from 0\.1"),
    ({"sample_interval_s": True}, r"sample_interval_s must be a number of seconds from 0\.1"),
    ({"learning_rate": "0.01"}, r"learning_rate must be a number above 0 and at most 10"),
    ({"learning_rate": float("nan")}, r"learning_rate must be a number above 0 and at most 10"),
    ({"learning_rate": float("inf")}, r"learning_rate must be a number above 0 and at most 10"),
    ({"cpu_threads": "1"}, r"cpu_threads must be a whole number from 1"),
    ({"cpu_threads": 1.0}, r"cpu_threads must be a whole number from 1"),
    ({"jit_compile": 1}, r"jit_compile must be true or false, got 1"),
    ({"jit_compile": "false"}, r"jit_compile must be true or false"),
    ({"limit_samples": 1.5}, r"limit_samples must be a whole number from 1 to 1,000,000,000"),
    ({"limit_samples": "100"}, r"limit_samples must be a whole number from 1 to 1,000,000,000 \(empty: the whole "
                               r"set\), got '100'"),
    ({"device": 0}, r"device must be text like 'cpu', 'gpu:0' or 'gpus', got 0"),
    ({"device": None}, r"device must be text like 'cpu'"),
    ({"device": "gpu:x"}, r"gpu:x"),
    ({"dataset": ["mnist"]}, r"dataset must be a data set's name, e\.g\. 'synthetic-mnist', got \['mnist'\]"),
    ({"dataset": None}, r"dataset must be a data set's name"),
    ({"model": None}, r"model must be a model's name"),
    ({"model": ["mlp"]}, r"model must be a model's name"),
    ({"size": 3}, r"size must be one of xs, s, m, l, xl"),
    ({"optimizer": None}, r"optimizer must be one of adam"),
    ({"precision": None}, r"precision must be one of float32"),
    ({"backend": None}, r"backend must be one of tensorflow, jax, torch \(set KERAS_BACKEND\)"),
    ({"dataset": "npz", "npz_path": ["x.npz"]}, r"npz_path must be text"),
    ({"dataset": "npz", "npz_path": 5}, r"npz_path must be text"),
]


@pytest.mark.parametrize(("changes", "message"), WRONG_TYPES, ids=[
    "-".join(f"{k}={v!r}" for k, v in c.items()) for c, _ in WRONG_TYPES])
def test_wrong_types_built_in_code_are_refused_with_what_is_allowed(changes, message):
    """Built in code (a form, the CLI, another program), a setting of the wrong type is refused by pydantic where the
    config is made: a ConfigError naming the setting, never a TypeError from deep inside, never a config that holds
    it."""
    with pytest.raises(ConfigError, match=message):
        RunConfig(**{**RunConfig().to_dict(), **changes}).validate(devices.discover())


# read from JSON, a value of the wrong type is refused as it is read (a null where a default stands reads as the
# default; a value of the right type outside what this machine allows is validate()'s, above)
WRONG_JSON_TYPES = [({"epochs": "5"}, "epochs"), ({"epochs": 2.5}, "epochs"), ({"batch_size": True}, "batch_size"),
                    ({"seed": 1.5}, "seed"), ({"sample_interval_s": "0.5"}, "sample_interval_s"),
                    ({"sample_interval_s": True}, "sample_interval_s"), ({"learning_rate": "0.01"}, "learning_rate"),
                    ({"cpu_threads": "1"}, "cpu_threads"), ({"cpu_threads": 1.0}, "cpu_threads"),
                    ({"jit_compile": 1}, "jit_compile"), ({"jit_compile": "false"}, "jit_compile"),
                    ({"limit_samples": "100"}, "limit_samples"), ({"device": 0}, "device"),
                    ({"dataset": ["mnist"]}, "dataset"), ({"model": ["mlp"]}, "model"), ({"size": 3}, "size"),
                    ({"npz_path": ["x.npz"]}, "npz_path"), ({"workers": 7}, "workers"),
                    ({"steps_per_execution": "8"}, "steps_per_execution")]


@pytest.mark.parametrize(("changes", "key"), WRONG_JSON_TYPES, ids=[
    "-".join(f"{k}={v!r}" for k, v in c.items()) for c, _ in WRONG_JSON_TYPES])
def test_wrong_types_read_from_json_are_refused_naming_the_setting(changes, key):
    """Read from a file or a record, a setting of the wrong type is refused when read, naming it: the config is
    parsed once, not carried as whatever it held."""
    with pytest.raises(RecordError, match=rf"config\.{key} must be "):
        RunConfig.model_validate({**RunConfig().to_dict(), **changes})


def test_every_wrong_type_is_listed_at_once():
    with pytest.raises(ConfigError) as caught:
        RunConfig(**{**RunConfig().to_dict(), "epochs": "5", "batch_size": None, "seed": 1.5, "jit_compile": "no"})
    assert len(caught.value.errors) == 4, caught.value.errors


@pytest.mark.parametrize("data", [None, [], ["epochs", 5], "epochs=5", 5])
def test_a_config_that_is_not_an_object_is_refused(data):
    with pytest.raises(RecordError, match=r"config must be a JSON object, got"):
        RunConfig.model_validate(data)


# -- the CLI: unknown names and malformed options, exit 2 with a message, no traceback ------------------------------
def run_cli(argv: list[str], capsys) -> tuple[int, str]:
    try:
        code = cli.main(argv)
    except SystemExit as exc:  # argparse's own refusals
        code = exc.code
    err = capsys.readouterr().err
    return code, err


CLI_BAD = [
    (["run", "--model", "resnet"], r"Unknown model 'resnet'.*mlp, cnn, text"),
    (["run", "--size", "huge"], r"size 'huge'.*pick one of xs, s, m, l, xl"),
    (["run", "--dataset", "imagenet", "--model", "vit"], r"dataset 'imagenet' is unknown; pick one of"),
    (["run", "--optimizer", "lbfgs"], r"optimizer 'lbfgs' is unknown"),
    (["run", "--precision", "int8"], r"precision 'int8' is unknown"),
    (["run", "--dataset", "npz"], r"dataset 'npz' needs a file.*--npz PATH"),
    (["run", "--dataset", "npz", "--npz", "/nonexistent/mine.npz"], r"does not exist"),
    (["run", "--device", "gpu:x"], r"gpu:x"),
    (["run", "--learning-rate", "fast"], r"'fast' is not a number"),
    (["run", "--limit-samples", "-5"], r"limit_samples must be a whole number from 1 to 1,000,000,000"),
    (["run", "--sample-interval", "nan"], r"sample_interval_s must be a number of seconds from 0\.1"),
    (["run", "--cpu-threads", "0"], r"cpu_threads must be a whole number from 1"),
    (["compare", "--targets", "tpu,cpu"], r"target 'tpu' is not one of the forms cpu, cpu/N, gpu:N, gpus"),
    (["compare", "--targets", "cpu"], r"at least two targets"),
    (["sweep", "--sizes", "xs,huge", "--no-peak"], r"huge"),
    (["sweep", "--batch-sizes", "a,b", "--no-peak"], r"--batch-sizes 'a,b': give whole numbers"),
    (["export", "999"], r"there is no run 999"),
    (["frobnicate"], r"invalid choice"),
]


@pytest.mark.parametrize(("argv", "message"), CLI_BAD, ids=[" ".join(a) for a, _ in CLI_BAD])
def test_cli_refuses_bad_input_with_exit_2_and_a_message(argv, message, capsys):
    code, err = run_cli(argv, capsys)
    assert code == 2, err
    assert "error:" in err
    assert re.search(message, err), err
    assert "Traceback" not in err


def test_cli_bad_model_in_a_real_process_has_no_traceback():
    out = subprocess.run([sys.executable, "-m", "bench", "run", "--model", "resnet"], cwd=ROOT, capture_output=True,
                         text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 2
    assert "Unknown model 'resnet'" in out.stderr
    assert "Traceback" not in out.stderr
    assert out.stdout == ""


# -- JSON import with the wrong schema --------------------------------------------------------------------------------
def a_record() -> dict:
    return {"schema": "bench.run/1", "id": 1, "status": "finished", "config": RunConfig().to_dict(),
            "hardware": {"cpu": {"model": "x", "logical_cores": 2}, "gpus": []}, "info": {},
            "epochs": [{"epoch": 1, "epoch_seconds": 1.0, "includes_tracing": True},
                       {"epoch": 2, "epoch_seconds": 0.5, "includes_tracing": False}],
            "samples": [{"t_s": 0.0, "cpu_percent": 50.0, "gpus": []}]}


BAD_JSON = [
    (json.dumps({"schema": "mlflow.run/2", "runs": []}).encode(), r"schema 'mlflow\.run/2' is not supported"),
    (json.dumps({"id": 1, "epochs": []}).encode(), r"schema is missing"),
    (json.dumps([a_record()]).encode(), r"must be a JSON object, got list"),
    (json.dumps({**a_record(), "epochs": "many"}).encode(), r"epochs must be a list of epochs"),
    (json.dumps({**a_record(), "config": {**RunConfig().to_dict(), "batch_size": "big"}}).encode(),
     r"config\.batch_size must be a whole number from 1 to 65,536, got 'big'"),
    (b"", r"not valid JSON"),
    (b"\x89PNG\r\n\x1a\n\x00\x00", r"not UTF-8 text"),
    (b"{'schema': 'bench.run/1'}", r"not valid JSON at line 1"),
]
BAD_JSON_IDS = ["other-schema", "no-schema", "list", "epochs-text", "config-type", "empty", "png", "python-dict"]


@pytest.mark.parametrize(("data", "message"), BAD_JSON, ids=BAD_JSON_IDS)
def test_history_import_refuses_a_bad_file_and_imports_nothing(data, message):
    at = app("pages/history.py").run()
    assert not at.exception, at.exception
    from ui.common import get_manager

    before = len(get_manager().store.list_runs())
    at.file_uploader(key="hist_import").set_value(("result.json", data, "application/json")).run()
    at.button(key="hist_import_go").click().run()
    assert not at.exception, at.exception
    errors = texts(at.error).replace("\\", "")  # the message is shown escaped (safe_text): read it as rendered
    assert "Not imported:" in errors
    assert re.search(message, errors), errors
    assert "python -m bench export" in errors, "the message says where a good file comes from"
    assert not at.success
    assert len(get_manager().store.list_runs()) == before


def test_history_import_of_a_good_file_still_works():
    at = app("pages/history.py").run()
    from ui.common import get_manager

    before = len(get_manager().store.list_runs())
    at.file_uploader(key="hist_import").set_value(("r.json", json.dumps(a_record()).encode(), "application/json"))
    at.run()
    at.button(key="hist_import_go").click().run()
    assert not at.exception and not at.error, texts(at.error)
    assert "Imported as #" in texts(at.success)
    assert len(get_manager().store.list_runs()) == before + 1


@pytest.mark.parametrize(("data", "message"), BAD_JSON[:3] + BAD_JSON[6:7], ids=BAD_JSON_IDS[:3] + BAD_JSON_IDS[6:7])
def test_compare_page_refuses_a_bad_result_file(data, message):
    at = app("pages/compare.py").run()
    assert not at.exception, at.exception
    at.file_uploader(key="cmp_import").set_value(("result.json", data, "application/json")).run()
    assert not at.exception, at.exception
    errors = texts(at.error)
    assert "This file cannot be shown" in errors
    assert re.search(message, errors), errors


def test_cli_import_of_a_bad_file_exits_2_with_the_field_and_no_traceback(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**a_record(), "epochs": [{"epoch": 1, "epoch_seconds": "abc",
                                                         "includes_tracing": True}]}))
    out = subprocess.run([sys.executable, "-m", "bench", "import", str(bad)], cwd=ROOT, capture_output=True,
                         text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 2
    assert "epochs[0].epoch_seconds must be a positive number, got 'abc'" in out.stderr
    assert "python -m bench export" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize(("name", "content", "message"), [
    ("missing.json", None, r"does not exist"),
    ("folder", "dir", r"is a folder"),
    ("other.json", b'{"schema": "bench.sweep/1", "rows": []}', r"schema 'bench\.sweep/1' is not supported"),
])
def test_cli_import_refusals(tmp_path, capsys, name, content, message):
    path = tmp_path / name
    if content == "dir":
        path.mkdir()
    elif content is not None:
        path.write_bytes(content)
    code, err = run_cli(["import", str(path)], capsys)
    assert code == 2
    assert re.search(message, err), err
    with pytest.raises(report.RecordError, match=message):  # the engine function the CLI uses
        report.load_record_file(path)


# -- the user's .npz on the Train page --------------------------------------------------------------------------------
def npz_bytes(**overrides) -> bytes:
    rng = np.random.default_rng(0)
    arrays = {"x_train": rng.random((40, 6, 5), dtype=np.float32), "y_train": np.arange(40) % 3,
              "x_test": rng.random((8, 6, 5), dtype=np.float32), "y_test": np.arange(8) % 3}
    arrays.update(overrides)
    buf = BytesIO()
    np.savez(buf, **{k: v for k, v in arrays.items() if v is not None})
    return buf.getvalue()


def pickled_objects() -> bytes:
    """An .npz whose x_train is a pickle (np.save of an object array): loading it could run code."""
    ragged = np.empty(40, dtype=object)
    for i in range(40):
        ragged[i] = [i] * (i % 3 + 1)
    return npz_bytes(x_train=ragged)


class Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def pickle_disguised_as_npz() -> bytes:
    return pickle.dumps({"x_train": Evil()})


def forged_header_npz() -> bytes:
    """A valid .npz but for x_train, whose .npy header claims shape (100000000000, 8, 8) float32 (23.3 TiB) over 256
    bytes of data: numpy would try to allocate the 23.3 TiB if the header were trusted."""
    header = BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False,
                                                  "shape": (100000000000, 8, 8)})
    with zipfile.ZipFile(BytesIO(npz_bytes())) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    members["x_train.npy"] = header.getvalue() + bytes(256)
    out = BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return out.getvalue()


FORGED_MESSAGE = (r"x_train's header declares shape \(100000000000, 8, 8\) of float32, 23\.3 TiB of data, over the "
                  r"200\.0 MiB limit \(and the file holds 256 bytes of it, so it is forged or damaged\)")


NPZ_BAD = [
    (b"this is not a zip file at all", r"(?i)not a valid \.npz|cannot be read|zip"),
    (pickle_disguised_as_npz(), r"(?i)not a valid \.npz|cannot be read|zip"),
    (pickled_objects(), r"object arrays.*refused for safety"),
    (npz_bytes(y_train=np.arange(39) % 3), r"x_train has 40 samples but y_train has 39"),
    (npz_bytes(x_train=np.full((40, 6, 5), "a")), r"x_train has dtype <U1; it must be float or integer"),
    (npz_bytes(x_test=np.full((8, 6, 5), np.nan, np.float32)), r"x_test contains NaN or infinite values"),
    (npz_bytes(y_test=np.arange(8) % 3 - 1), r"y_test has negative labels"),
    (npz_bytes(y_test=None), r"missing: y_test"),
    (forged_header_npz(), FORGED_MESSAGE),
]
NPZ_IDS = ["not-zip", "pickle", "object-arrays", "lengths", "strings", "nan", "negative-labels", "missing-key",
           "forged-header"]


def open_npz_upload() -> AppTest:
    at = app("pages/train.py").run()
    at.selectbox(key="cfg_dataset").set_value("npz").run()
    assert not at.exception, at.exception
    assert at.file_uploader(key="cfg_npz").allowed_type == [".npz"]
    return at


@pytest.mark.parametrize(("data", "message"), NPZ_BAD, ids=NPZ_IDS)
def test_train_page_refuses_a_bad_npz_upload_and_starts_nothing(data, message):
    at = open_npz_upload()
    at.file_uploader(key="cfg_npz").set_value(("mine.npz", data, "application/octet-stream")).run()
    assert not at.exception, at.exception
    errors = texts(at.error).replace("\\", "")  # shown escaped (safe_text): read as rendered
    assert re.search(message, errors), errors
    assert not list(Path(os.environ["BENCH_UPLOAD_DIR"]).glob("*.npz")), "a refused upload is removed from disk"
    from ui.common import get_manager

    before = len(get_manager().snapshots())
    at.button(key="start_run").click().run()
    assert not at.exception, at.exception
    assert "This run cannot start" in texts(at.error)
    assert re.search(message, texts(at.error).replace("\\", ""))
    assert len(get_manager().snapshots()) == before, "nothing was queued"


def test_train_page_without_an_upload_says_a_file_is_needed():
    at = open_npz_upload()
    at.button(key="start_run").click().run()
    assert not at.exception
    assert "dataset 'npz' needs a file" in texts(at.error)


def test_train_page_accepts_a_good_npz_and_describes_it():
    at = open_npz_upload()
    at.file_uploader(key="cfg_npz").set_value(("mine.npz", npz_bytes(), "application/octet-stream")).run()
    assert not at.exception and not at.error, texts(at.error)
    assert any("40" in c.value and "3 classes" in c.value for c in at.caption), texts(at.caption)


@pytest.mark.parametrize("labels", [np.array([0] * 39 + [10**9]), np.array([0] * 39 + [2**62])],
                         ids=["label-1e9", "label-2^62"])
def test_npz_labels_far_beyond_the_sample_count_are_refused(tmp_path, labels):
    """Class indices must be 0..K-1; K is read as max label + 1, so one stray huge label must not build a model
    with a billion outputs (it would only fail later, as out of memory in the worker)."""
    path = tmp_path / "mine.npz"
    path.write_bytes(npz_bytes(y_train=labels))
    with pytest.raises((datasets.DatasetError, ConfigError), match=r"(?i)label|class"):
        RunConfig(dataset="npz", npz_path=str(path), batch_size=8, limit_samples=None,
                  size="xs").validate(devices.discover())


def test_cli_refuses_a_forged_npz_header_with_exit_2_before_allocating(tmp_path):
    path = tmp_path / "forged.npz"
    path.write_bytes(forged_header_npz())
    argv = ["run", "--dataset", "npz", "--npz", str(path), "--model", "mlp", "--size", "xs", "--epochs", "1",
            "--device", "cpu"]
    out = subprocess.run([sys.executable, "-m", "bench", *argv], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(ROOT), "BENCH_STORE": str(tmp_path / "runs.sqlite3")})
    assert out.returncode == 2, out.stderr[-3000:]
    assert re.search(r"^error: the \.npz file .*forged\.npz: " + FORGED_MESSAGE, out.stderr, re.M), out.stderr[-3000:]
    assert "Traceback" not in out.stderr and "MemoryError" not in out.stderr
    with pytest.raises(datasets.DatasetError, match=FORGED_MESSAGE):  # the engine function the CLI's check uses
        datasets.get_info("npz", npz_path=str(path))


# -- a download with no network ---------------------------------------------------------------------------------------
NO_NETWORK = textwrap.dedent('''
    """Test stand-in for a machine without network: every connection outside localhost fails at once."""
    import socket

    _real_create_connection = socket.create_connection
    _real_getaddrinfo = socket.getaddrinfo


    def _local(host):
        return host in ("localhost", "127.0.0.1", "::1", None, "")


    def create_connection(address, *args, **kwargs):
        if not _local(address[0]):
            raise OSError(101, "Network is unreachable (test: offline)")
        return _real_create_connection(address, *args, **kwargs)


    def getaddrinfo(host, *args, **kwargs):
        if not _local(host):
            raise socket.gaierror(-2, "Name or service not known (test: offline)")
        return _real_getaddrinfo(host, *args, **kwargs)


    socket.create_connection = create_connection
    socket.getaddrinfo = getaddrinfo
''')


@pytest.mark.slow
def test_download_with_no_network_fails_fast_naming_the_cache_file_and_the_synthetic_set(tmp_path):
    offline = tmp_path / "offline"
    offline.mkdir()
    (offline / "sitecustomize.py").write_text(NO_NETWORK)  # imported by the CLI and by its spawned worker
    keras_home = tmp_path / "keras-home"
    keras_home.mkdir()
    env = {**os.environ, "PYTHONPATH": f"{offline}{os.pathsep}{ROOT}", "KERAS_HOME": str(keras_home),
           "BENCH_STORE": str(tmp_path / "runs.sqlite3")}
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "bench", "run", "--dataset", "mnist", "--epochs", "1",
                          "--limit-samples", "1000"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=90)
    took = time.monotonic() - t0
    assert out.returncode == 1, out.stderr[-3000:]
    # under the 60 s a stalled download may wait (registry.DOWNLOAD_SOCKET_TIMEOUT_S): nothing waited for the network;
    # the rest is a framework start, which took 33 s once at the start of a loaded CI run
    assert took < DOWNLOAD_SOCKET_TIMEOUT_S - 10, f"the offline failure took {took:.0f} s"
    err = out.stderr
    assert str(keras_home / "datasets" / "mnist.npz") in err, err[-3000:]
    assert "'synthetic-mnist'" in err and "offline" in err
    assert "Traceback" not in err
    assert "status     failed" in out.stdout
    assert not any(keras_home.rglob("*.npz")), "nothing half-downloaded is left behind"
