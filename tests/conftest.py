"""Shared fixtures: every test gets its own store file and upload folder, never the user's; the guard on unmarked
slow tests (tests/duration_guard.py), the check that no test leaves a process alive (tests/leftovers.py) and the
benchmarks' smoke runs collected first, longest first (tests/smoke.py). The shared run config and machine are in
tests/fixtures.py, the one wait loop in tests/polling.py."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

# The property tests draw the same examples on every run of the suite (a fixed seed per test), so that CI passes or
# fails on the code, not on the draw; BENCH_FUZZ_EXPLORE=1 draws new ones each run, for a search (docs/TESTING.md).
settings.register_profile("suite", derandomize=os.environ.get("BENCH_FUZZ_EXPLORE") != "1")
settings.load_profile("suite")

# The browser tests (and the benchmarks' smoke runs they start) drive Debian's headless shell where it is installed
# (chromium-headless-shell: the same Blink, the build Playwright itself drives headless): a fifth less CPU a browser test
# than the full browser in headless mode (docs/TESTING.md). BENCH_CHROMIUM set by hand wins; the benchmarks' own passes
# keep the full browser a viewer has (benchmarks/dashboard.py).
HEADLESS_SHELL = "/usr/bin/chromium-headless-shell"
if Path(HEADLESS_SHELL).exists():
    os.environ.setdefault("BENCH_CHROMIUM", HEADLESS_SHELL)

from tests import duration_guard, leftovers, smoke  # noqa: E402 - after BENCH_CHROMIUM, which benchmarks.dashboard reads

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Keras on JAX compiles every kernel it runs, each weight's initializer included, and the suite's processes (workers,
# model-reading children, `bench` commands) build the same models again: they share one JAX compilation cache, made
# empty for each run of the suite (the first process makes it, the test processes inherit it) and removed at its end.
# MobileNetV2 read a second time: 22 -> 3 CPU-s to build, its training step 29 -> 7 to compile (docs/TESTING.md). The
# product keeps no such cache: a run's first epoch shows what a first compile costs there.
_JAX_CACHE_MADE = "JAX_COMPILATION_CACHE_DIR" not in os.environ
if _JAX_CACHE_MADE:
    os.environ["JAX_COMPILATION_CACHE_DIR"] = tempfile.mkdtemp(prefix="bench-tests-jax-cache-")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")  # an initializer's compile is kept too
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")
# In-process managers (AppTest pages) start every run cold: a pre-started worker would load TensorFlow in the
# background of later tests. The real-browser servers run the product default (tests/e2e/conftest.py).
os.environ.setdefault("BENCH_PRESTART", "0")


def pytest_configure(config: pytest.Config) -> None:
    duration_guard.register(config)
    leftovers.register(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    if _JAX_CACHE_MADE:  # the process that made the cache; the test processes it started have ended
        shutil.rmtree(os.environ["JAX_COMPILATION_CACHE_DIR"], ignore_errors=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    smoke.longest_first(items)


@pytest.fixture(autouse=True)
def isolated_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "store" / "runs.sqlite3"
    monkeypatch.setenv("BENCH_STORE", str(path))
    monkeypatch.setenv("BENCH_UPLOAD_DIR", str(tmp_path / "uploads"))
    monkeypatch.delenv("BENCH_PRESENTER_KEY", raising=False)
    return path
