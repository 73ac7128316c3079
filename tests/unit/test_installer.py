"""scripts/installer.py: uv installs the requirement files (the CPU stack) with the settings pip would use on this
machine; pip installs anything more (a CUDA stack) and takes over when uv cannot. `make test` itself installs through
it, so a broken installer fails CI before any test; these tests pin the choices with fakes for uv and pip."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import installer  # noqa: E402  (a script of the checkout, not a package)

LISTING = """global.cert='/etc/ssl/certs/ca-certificates.crt'
global.constraint='/etc/xdg/pip/constraints.txt'
global.extra-index-url='file:///opt/pypi/simple file:///opt/pypi-more/simple'
global.find-links='/opt/wheels'
:env:.find-links='/srv/wheels'
:env:.default-timeout='180'
"""


def test_pips_settings_reach_uv_and_an_environment_variable_wins_over_a_file() -> None:
    settings = installer.pip_settings(LISTING)
    assert settings["find-links"] == "/srv/wheels" and settings["constraint"] == "/etc/xdg/pip/constraints.txt"
    args, env = installer.uv_arguments(settings)
    assert args == ["--compile-bytecode", "--index-strategy", "unsafe-best-match", "--find-links", "/srv/wheels",
                    "--extra-index-url", "file:///opt/pypi/simple", "--extra-index-url", "file:///opt/pypi-more/simple",
                    "--constraint", "/etc/xdg/pip/constraints.txt"]
    assert env == {"SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt"}
    assert installer.uv_arguments(installer.pip_settings("global.no-index='true'\n"))[0][-1] == "--no-index"


@pytest.mark.parametrize(("args", "env", "uv"), [
    (["-r", "requirements.txt"], {}, True),
    (["-r", "requirements-dev.txt"], {"BENCH_INSTALLER": " PIP "}, False),
    (["-r", "requirements.txt", "tensorflow[and-cuda]"], {}, False),  # a CUDA stack: pip, as tried on GPU machines
    (["-r", "requirements-dev.txt", "torch", "--extra-index-url", "https://download.pytorch.org/whl/cu130"], {}, False),
])
def test_uv_installs_requirement_files_alone(args: list[str], env: dict[str, str], uv: bool) -> None:
    assert installer.use_uv(args, env) is uv


def _fake_venv(tmp_path: Path, *, uv_exit: int | None) -> tuple[Path, Path]:
    """A venv whose python and uv record their arguments (uv absent when uv_exit is None)."""
    log = tmp_path / "calls.log"
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    python = bin_dir / "python"
    python.write_text(f'#!/bin/sh\necho "python $*" >> {log}\n'
                      f'case "$*" in *"config list"*) echo "global.find-links=\'/opt/wheels\'";; esac\n')
    python.chmod(0o755)
    if uv_exit is not None:
        (bin_dir / "uv").write_text(f'#!/bin/sh\necho "uv $*" >> {log}\nexit {uv_exit}\n')
        (bin_dir / "uv").chmod(0o755)
    return python, log


def test_uv_installs_with_pips_find_links(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BENCH_INSTALLER", raising=False)
    python, log = _fake_venv(tmp_path, uv_exit=0)
    assert installer.main([str(python), "-r", "requirements.txt"]) == 0
    calls = log.read_text().splitlines()
    assert calls[-1].startswith(f"uv pip install --python {python} --compile-bytecode --index-strategy "
                                "unsafe-best-match --find-links /opt/wheels -r requirements.txt"), calls
    assert not any("pip --disable-pip-version-check install" in c for c in calls), calls


def test_pip_takes_over_when_uv_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("BENCH_INSTALLER", raising=False)
    python, log = _fake_venv(tmp_path, uv_exit=1)
    assert installer.main([str(python), "-r", "requirements.txt"]) == 0  # the fake pip succeeds
    calls = log.read_text().splitlines()
    assert calls[-2].startswith("uv pip install") and calls[-1] == (
        "python -m pip --disable-pip-version-check install -r requirements.txt")
    assert "pip installs instead" in capsys.readouterr().err


def test_without_uv_pip_installs_it_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BENCH_INSTALLER", raising=False)
    python, log = _fake_venv(tmp_path, uv_exit=None)  # the fake pip "installs" uv without making it: uv's run fails
    installer.main([str(python), "-r", "requirements.txt"])
    calls = log.read_text().splitlines()
    assert calls[0] == "python -m pip --disable-pip-version-check install --quiet uv", calls
    assert calls[-1] == "python -m pip --disable-pip-version-check install -r requirements.txt", calls


def test_a_call_without_arguments_says_how_to_call_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert installer.main([]) == 2 and "usage:" in capsys.readouterr().err
