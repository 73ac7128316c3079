"""Weighs the project's reading types (bench.vocab.readings: pydantic Records on bench.vocab.limits' types; hand-written
validators when this was first run) against msgspec and plain pydantic v2 declaring the same constraints on the type:
import time, time to check a run's samples, the message for a bad value, the lines each takes.

    python -m benchmarks.record_libs [--samples 5000] [--report docs/RECORDS.md]

msgspec is not a project dependency: run this from a Python that has it (pip install msgspec) with the checkout on
PYTHONPATH. Without it mypy sees msgspec as Any, so the Structs' class keywords carry a type: ignore.
"""

# No `from __future__ import annotations`: msgspec and pydantic read these local types when the classes are made.

import argparse
import json
import math
import platform
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated, Any

ROOT = Path(__file__).resolve().parents[1]

# The same bounds as bench.vocab.limits.BOUNDS declares for these keys: percentages 0..100, MiB, watts, joules, seconds.
PCT = (0.0, 100.0)
T_MAX = 4_102_444_800.0  # 2100-01-01, as limits' time bound
BIG = 1e15


def _msgspec_types() -> tuple[Any, Any]:
    """(the type msgspec.convert checks a list of samples against, the msgspec module)."""
    import msgspec

    Pct = Annotated[float, msgspec.Meta(ge=PCT[0], le=PCT[1])]
    NonNeg = Annotated[float, msgspec.Meta(ge=0.0, le=BIG)]

    class GpuReadingM(msgspec.Struct, frozen=True, forbid_unknown_fields=False):  # type: ignore[call-arg]
        index: Annotated[int, msgspec.Meta(ge=0, le=1023)]
        name: str | None = None
        util_percent: Pct | None = None
        mem_util_percent: Pct | None = None
        mem_used_mib: NonNeg | None = None
        mem_total_mib: NonNeg | None = None
        power_w: NonNeg | None = None
        temp_c: Annotated[float, msgspec.Meta(ge=-273.0, le=1000.0)] | None = None
        sm_clock_mhz: NonNeg | None = None
        power_limit_w: NonNeg | None = None
        energy_j: NonNeg | None = None
        sm_active_percent: Pct | None = None
        sm_occupancy_percent: Pct | None = None
        tensor_active_percent: Pct | None = None
        fp32_active_percent: Pct | None = None
        fp16_active_percent: Pct | None = None
        dram_active_percent: Pct | None = None
        throttle_reasons: tuple[str, ...] | None = None

    class SampleM(msgspec.Struct, frozen=True):  # type: ignore[call-arg]
        t_s: Annotated[float, msgspec.Meta(ge=0.0, le=T_MAX)]
        cpu_percent: Pct | None = None
        process_cpu_percent: NonNeg | None = None
        process_rss_mib: NonNeg | None = None
        ram_used_mib: NonNeg | None = None
        cpu_energy_j: NonNeg | None = None
        cpu_per_core: tuple[Pct | None, ...] | None = None
        gpus: tuple[GpuReadingM, ...] | None = None

    return list[SampleM], msgspec


def _pydantic_types() -> tuple[Any, Any]:
    import pydantic
    from pydantic import BaseModel, ConfigDict, Field

    Pct = Annotated[float, Field(ge=PCT[0], le=PCT[1], allow_inf_nan=False)]
    NonNeg = Annotated[float, Field(ge=0.0, le=BIG, allow_inf_nan=False)]

    class GpuReadingP(BaseModel):
        model_config = ConfigDict(frozen=True, extra="allow")
        index: Annotated[int, Field(ge=0, le=1023)]
        name: str | None = None
        util_percent: Pct | None = None
        mem_util_percent: Pct | None = None
        mem_used_mib: NonNeg | None = None
        mem_total_mib: NonNeg | None = None
        power_w: NonNeg | None = None
        temp_c: Annotated[float, Field(ge=-273.0, le=1000.0, allow_inf_nan=False)] | None = None
        sm_clock_mhz: NonNeg | None = None
        power_limit_w: NonNeg | None = None
        energy_j: NonNeg | None = None
        sm_active_percent: Pct | None = None
        sm_occupancy_percent: Pct | None = None
        tensor_active_percent: Pct | None = None
        fp32_active_percent: Pct | None = None
        fp16_active_percent: Pct | None = None
        dram_active_percent: Pct | None = None
        throttle_reasons: tuple[str, ...] | None = None

    class SampleP(BaseModel):
        model_config = ConfigDict(frozen=True, extra="allow")
        t_s: Annotated[float, Field(ge=0.0, le=T_MAX, allow_inf_nan=False)]
        cpu_percent: Pct | None = None
        process_cpu_percent: NonNeg | None = None
        process_rss_mib: NonNeg | None = None
        ram_used_mib: NonNeg | None = None
        cpu_energy_j: NonNeg | None = None
        cpu_per_core: tuple[Pct | None, ...] | None = None
        gpus: tuple[GpuReadingP, ...] | None = None

    return pydantic.TypeAdapter(list[SampleP]), pydantic


def samples(count: int, cores: int = 16, gpus: int = 1) -> list[dict[str, Any]]:
    """``count`` samples in their JSON form, shaped as a GPU run writes them."""
    rng = random.Random(0)
    out = []
    for i in range(count):
        out.append({
            "t_s": i * 0.25, "cpu_percent": rng.uniform(0, 100), "process_cpu_percent": rng.uniform(0, 400),
            "process_rss_mib": rng.uniform(500, 4000), "ram_used_mib": rng.uniform(4000, 60000), "cpu_energy_j": None,
            "cpu_per_core": [round(rng.uniform(0, 100), 1) for _ in range(cores)],
            "gpus": [{"index": k, "name": "NVIDIA H100 80GB HBM3", "util_percent": float(rng.randint(0, 100)),
                      "mem_util_percent": float(rng.randint(0, 100)), "mem_used_mib": rng.uniform(1e3, 8e4),
                      "mem_total_mib": 81559.0, "power_w": rng.uniform(60, 700), "temp_c": 50.0,
                      "sm_clock_mhz": 1980.0, "power_limit_w": 700.0, "energy_j": 1e6 + i,
                      "sm_active_percent": 40.0, "sm_occupancy_percent": 20.0, "tensor_active_percent": 1.0,
                      "fp32_active_percent": 30.0, "fp16_active_percent": 0.0, "dram_active_percent": 10.0,
                      "throttle_reasons": []} for k in range(gpus)],
        })
    return out


def import_seconds(module: str, repeats: int = 5) -> float:
    """The median time a fresh Python takes to import ``module`` (the interpreter's own start excluded)."""
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    env_path = str(ROOT)
    runs = []
    for _ in range(repeats):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                             env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"})
        runs.append(float(out.stdout))
    return statistics.median(runs)


def timed(check: Any, data: list[dict[str, Any]], repeats: int = 5) -> tuple[float, float, float]:
    """(median, min, max) seconds of ``check(data)`` over ``repeats`` passes."""
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        check(data)
        runs.append(time.perf_counter() - start)
    return statistics.median(runs), min(runs), max(runs)


def first_error(check: Any, data: list[dict[str, Any]]) -> str:
    try:
        check(data)
    except Exception as exc:  # noqa: BLE001 - every library's own error is what is compared
        return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return "(accepted)"


def lines_of(source: str, start: str, end: str) -> int:
    """Non-blank lines of ``source`` from the line holding ``start`` up to the one holding ``end``."""
    lines = source.splitlines()
    a = next(i for i, line in enumerate(lines) if start in line)
    b = next(i for i, line in enumerate(lines[a + 1:], a + 1) if end in line)
    return sum(1 for line in lines[a:b] if line.strip())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=5000)
    parser.add_argument("--report", type=Path)
    args = parser.parse_args(argv)

    from bench.vocab.readings import Sample

    samples_m, msgspec = _msgspec_types()
    adapter, pydantic = _pydantic_types()
    data = samples(args.samples)
    checks = {
        "the project's (bench.vocab.readings)": lambda d: [Sample.model_validate(s, f"samples[{i}]")
                                                           for i, s in enumerate(d)],
        f"msgspec {msgspec.__version__}": lambda d: msgspec.convert(d, samples_m),
        f"pydantic {pydantic.VERSION}": adapter.validate_python,
    }
    bad = json.loads(json.dumps(data[:3]))
    bad[2]["gpus"][0]["power_w"] = math.inf
    rows = []
    for (name, check), module in zip(checks.items(), ("bench.vocab.readings", "msgspec", "pydantic")):
        median, low, high = timed(check, data)
        rows.append({"validator": name, "import_ms": import_seconds(module) * 1000,
                     "check_ms": median * 1000, "spread_ms": (low * 1000, high * 1000),
                     "per_sample_us": median / len(data) * 1e6, "bad_value": first_error(check, bad)})
    source = (ROOT / "bench" / "vocab" / "readings.py").read_text(encoding="utf-8")
    project_lines = lines_of(source, "class GpuReading(Record):", "    @classmethod") + lines_of(
        source, "class Sample(Record):", "    def gpu(")
    mine = Path(__file__).read_text(encoding="utf-8")
    declared = lines_of(mine, "class GpuReadingM", "return list[SampleM], msgspec")
    text = report(rows, args.samples, project_lines, declared)
    print(text)
    if args.report:
        args.report.write_text(text, encoding="utf-8")
    return 0


def report(rows: list[dict[str, Any]], count: int, project_lines: int, declared: int) -> str:
    head = (f"Measured by `python -m benchmarks.record_libs --samples {count}` on {platform.node() or 'this machine'} "
            f"({platform.processor() or platform.machine()}, Python {platform.python_version()}), "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: {count:,} samples of a 16-core, 1-GPU run "
            "(GPM fields included), median of 5 passes (min-max beside it); import time in a fresh Python, median of 5.")
    table = ["| validator | import | check all samples | per sample | a GPU's power_w = Infinity in samples[2] |",
             "|---|---|---|---|---|"]
    for r in rows:
        table.append(f"| {r['validator']} | {r['import_ms']:.0f} ms | {r['check_ms']:.0f} ms "
                     f"({r['spread_ms'][0]:.0f}-{r['spread_ms'][1]:.0f}) | {r['per_sample_us']:.1f} µs | "
                     f"`{r['bad_value'][:110]}` |")
    lines = (f"Code: the project's Sample and GpuReading take {project_lines} non-blank lines "
             f"(bench/vocab/readings.py, their bounds declared once in bench/vocab/limits.py); the same types with "
             f"their bounds declared as msgspec Structs take {declared}.")
    return "\n".join([head, "", *table, "", lines, ""])


if __name__ == "__main__":
    raise SystemExit(main())
