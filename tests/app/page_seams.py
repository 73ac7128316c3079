"""The two seams every in-process page run here takes (tests/app/conftest.py applies them to each AppTest test, and
tests/app/test_pages.py's import check applies them in its own process):

- Streamlit's AppTest scans every installed distribution's metadata for components-v2 manifests on each new AppTest
  (~0.25 CPU-s here, 1,250 distributions, none with a manifest); the installed packages do not change while the tests
  run, so the first scan's answer serves every later AppTest of the process, as one scan serves a real server.
- The System page's checklist asks the framework for its devices in a child process (an import of TensorFlow, ~6 CPU-s,
  as the doctor does); pages get its answer for this CPU-only machine at once. tests/unit/test_doctor.py runs the real
  one.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from bench.hardware import devices


def cpu_only(backend: str | None = None, timeout_s: float = 60) -> devices.FrameworkProbe:
    """bench.hardware.devices.probe_framework's answer on this CPU-only machine, without the child process."""
    return devices.FrameworkProbe(backend=backend or "tensorflow", version="test", devices=["CPU:0"])


def component_scan_once() -> tuple[Any, str, Callable[..., Any]]:
    """(the module, the attribute, a scan that runs once per process) for a monkeypatch.setattr."""
    from streamlit.components.v2 import manifest_scanner

    scan = manifest_scanner.scan_component_manifests
    once = scan if hasattr(scan, "cache_info") else functools.cache(scan)
    return manifest_scanner, "scan_component_manifests", once


def apply() -> None:
    """Both seams for the rest of this process (a child process that runs pages and nothing else)."""
    setattr(*component_scan_once())
    devices.probe_framework = cpu_only
