"""Install packages into the project's virtual environment with uv where it can, with pip where it cannot.

    python scripts/installer.py .venv/bin/python -r requirements-dev.txt [more pip install arguments]

uv installs the CPU stack in half pip's time (a fresh venv of requirements-dev.txt on the 2-core test machine, no
cache, bytecode compiled: 80 s, uv's own install included, against 168 s; README.md). Where the arguments are more than
requirement files (the CUDA stacks of scripts/install_stack.py, checked on GPU machines with pip), or
BENCH_INSTALLER=pip, pip does the install as before. uv is installed into the venv by pip first; if that or uv's
install fails, pip installs everything, so a machine without uv only waits longer.

uv does not read pip's configuration, so the settings pip would use here (pip.conf and PIP_* variables, as
`pip config list` reports them: find-links, index-url, extra-index-url, constraint, no-index, cert) are passed on to it,
and uv chooses among several indexes as pip does (the best version in any of them). Standard library only.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

PIP_SETTINGS = {  # pip's option name -> uv's, for the settings that decide which files get installed
    "find-links": "--find-links", "index-url": "--index-url", "extra-index-url": "--extra-index-url",
    "constraint": "--constraint",
}


def pip_settings(listing: str) -> dict[str, str]:
    """The values of `pip config list`'s lines (``global.find-links='/opt/wheels'``, ``:env:.constraint='...'``)
    by option name; an environment variable wins over a file, as in pip."""
    files: dict[str, str] = {}
    env: dict[str, str] = {}
    for line in listing.splitlines():
        key, sep, value = line.partition("=")
        if not sep or "." not in key:
            continue
        scope, _, name = key.rpartition(".")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        (env if scope == ":env:" else files)[name] = value
    return files | env


def uv_arguments(settings: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """uv's arguments and environment for pip's settings."""
    # bytecode compiled at install, as pip does: else the first imports compile TensorFlow's modules, in every
    # process that starts before one has written them (a suite's first tests: 19 s became 33 s)
    args: list[str] = ["--compile-bytecode", "--index-strategy", "unsafe-best-match"]
    for name, option in PIP_SETTINGS.items():
        for value in shlex.split(settings.get(name, "")):
            args += [option, value]
    if settings.get("no-index", "").lower() in ("1", "true", "yes", "on"):
        args.append("--no-index")
    env = {"SSL_CERT_FILE": settings["cert"]} if settings.get("cert") else {}
    return args, env


def use_uv(args: list[str], env: dict[str, str]) -> bool:
    """uv for requirement files alone (the CPU stack); pip for anything more (a CUDA stack's packages and index, as
    checked on GPU machines) or where BENCH_INSTALLER=pip."""
    if env.get("BENCH_INSTALLER", "").strip().lower() == "pip":
        return False
    return len(args) % 2 == 0 and all(flag == "-r" for flag in args[::2])


def _run(command: list[str], env: dict[str, str] | None = None) -> int:
    print("+ " + " ".join(shlex.quote(c) for c in command), flush=True)
    try:
        return subprocess.run(command, env=env, check=False).returncode
    except OSError as exc:  # a uv that cannot run here
        print(f"installer: {exc}", file=sys.stderr)
        return 127


def _uv_install(python: str, args: list[str], pip: list[str]) -> bool:
    """Install ``args`` with the venv's uv (pip puts uv there first where it is missing); False where uv could not
    be installed or its install failed, saying which."""
    uv = Path(python).with_name("uv")
    if not uv.exists() and (_run([*pip, "install", "--quiet", "uv"]) != 0 or not uv.exists()):
        print("installer: uv could not be installed; pip installs instead (slower)", file=sys.stderr)
        return False
    listing = subprocess.run([*pip, "config", "list"], capture_output=True, text=True, check=False).stdout
    extra, extra_env = uv_arguments(pip_settings(listing))
    if _run([str(uv), "pip", "install", "--python", python, *extra, *args], {**os.environ, **extra_env}) == 0:
        return True
    print("installer: uv's install failed (above); pip installs instead", file=sys.stderr)
    return False


def install(python: str, args: list[str]) -> int:
    pip = [python, "-m", "pip", "--disable-pip-version-check"]
    if use_uv(args, dict(os.environ)) and _uv_install(python, args, pip):
        return 0
    return _run([*pip, "install", *args])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 2:
        print("usage: python scripts/installer.py VENV_PYTHON PIP_INSTALL_ARGUMENTS...", file=sys.stderr)
        return 2
    return install(argv[0], argv[1:])


if __name__ == "__main__":
    sys.exit(main())
