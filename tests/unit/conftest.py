"""Fixtures the unit tests of the command line share."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from bench.cli import main as cli


@pytest.fixture
def main(capsys: pytest.CaptureFixture[str]):
    """``bench.cli.main.main(ARGS)`` in this process, with what it printed: (returncode, stdout, stderr), as ``bench``
    returns them (argparse's refusals exit through SystemExit, as they do from the entry point)."""
    def call(*args: str) -> SimpleNamespace:
        capsys.readouterr()
        try:
            code = cli.main(list(args))
        except SystemExit as exc:
            code = exc.code
        out = capsys.readouterr()
        return SimpleNamespace(returncode=code, stdout=out.out, stderr=out.err)

    return call
