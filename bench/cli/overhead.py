"""`python -m bench overhead`: the overhead harness of benchmarks/, run from the checkout this engine sits in."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from bench.cli.args import UsageError


def cmd_overhead(args: argparse.Namespace) -> int:
    """Hand over to the overhead harness (benchmarks/overhead.py), which runs from a checkout, not an install: a
    child Python started in the checkout runs it as ``python -m benchmarks.overhead``, with this exit code."""
    root = Path(__file__).resolve().parents[2]
    if not (root / "benchmarks" / "overhead.py").is_file():
        raise UsageError(f"`overhead` measures the dashboard with the harness in benchmarks/, which is not beside this "
                         f"engine ({root}): run `python -m bench overhead` from a checkout of the project.")
    return subprocess.call([sys.executable, "-m", "benchmarks.overhead", *args.harness_args], cwd=root)
