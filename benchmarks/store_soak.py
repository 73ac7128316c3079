"""Store soak: several processes write runs to one SQLite store at once, each also listing (and so judging) the
others' runs, for a fixed time; then every epoch and sample each process measured must be in the store.

    python -m benchmarks.store_soak [--processes 3] [--seconds 300] [--json PATH] [--report docs/STORE-SOAK.md]
                                    [--note "where it ran and what else ran beside it"]

Each process is a real JobManager with real spawned worker processes (a stand-in worker that reports an epoch every
EPOCH_S, so the store sees many more writes a second than real training makes) and the real psutil sampler. Exit
status 0 when nothing was lost and no store error reached a run, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import own_snapshot

ROOT = Path(__file__).resolve().parents[1]
EPOCH_S = 0.05  # a stand-in epoch: 20 epoch writes a second per process
EPOCHS_PER_RUN = 60
SAMPLE_INTERVAL_S = 0.1  # the smallest interval a run config accepts: the most sample writes
LIST_EVERY_S = 0.5


def soak_worker(config: dict[str, Any], queue: Any, stop_event: Any, log_path: str | None = None) -> None:
    """Reports config['epochs'] epochs of EPOCH_S each (no framework), honouring Stop."""
    from bench.runs import events

    def emit(kind: str, **data: Any) -> None:
        events.emit(queue, kind, **data)

    emit("started", pid=os.getpid(), framework="soak 0", devices_seen=["cpu"], placement="/device:CPU:0")
    for epoch in range(1, config["epochs"] + 1):
        if stop_event.is_set():
            emit("finished", status="stopped")
            return
        t0 = time.time()
        time.sleep(EPOCH_S)
        emit("progress", epoch=epoch, batch=1, batches=1)
        emit("epoch", epoch=epoch, epoch_seconds=time.time() - t0, samples_per_s=1000.0, loss=1.0 / epoch,
             accuracy=0.5, val_loss=None, val_accuracy=None, includes_tracing=epoch == 1, started_wall=t0,
             ended_wall=time.time())
    emit("finished", status="finished")


def _timed_store(path: Path, latencies: list[float]) -> Any:
    """The real Store, with the wall time of every write recorded."""
    from bench.store import Store

    store = Store(path)
    for owner, name in [(store, "create_run"), (store, "update_run"), (store, "add_epoch"), (store, "add_epochs"),
                        (store, "add_samples"), (store.owners, "heartbeat")]:
        real = getattr(owner, name)

        def timed(*args: Any, _real: Any = real, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return _real(*args, **kwargs)
            finally:
                latencies.append(time.perf_counter() - t0)

        setattr(owner, name, timed)
    return store


def child(index: int, store_path: Path, seconds: float, out: Path) -> None:
    """One writing process: runs back to back until ``seconds`` pass, listing the store all the while."""
    from bench.vocab.config import RunConfig
    from bench.hardware import devices
    from bench.vocab.record_types import CpuSpec
    from bench.runs.jobs import JobManager
    from bench.store import Store, StoreError
    # by its importable name: under `python -m` this module is __main__, which a spawned worker cannot import
    from benchmarks.store_soak import soak_worker

    latencies: list[float] = []
    manager = JobManager(_timed_store(store_path, latencies), hardware=devices.Hardware(
        cpu=CpuSpec(model="soak", physical_cores=None, logical_cores=os.cpu_count() or 1, ram_total_mib=0.0),
        gpu_reason="soak"),
                         worker_target=soak_worker)
    reader = Store(store_path)
    config = RunConfig(epochs=EPOCHS_PER_RUN, limit_samples=512, sample_interval_s=SAMPLE_INTERVAL_S)
    deadline = time.monotonic() + seconds
    run_ids: list[int] = []
    list_errors: list[str] = []
    seen_interrupted: set[int] = set()
    listings = 0
    while time.monotonic() < deadline:
        run_id = manager.submit(config.replace(seed=index * 100_000 + len(run_ids) + 1))
        run_ids.append(run_id)
        while (snap := manager.snapshot(run_id)) is not None and snap.active:
            try:
                for run in reader.list_runs():  # also marks runs whose owner is gone: none may be
                    if run.status == "interrupted":
                        assert run.id is not None, "a run listed from the store has its row's id"
                        seen_interrupted.add(run.id)
                listings += 1
            except StoreError as exc:
                list_errors.append(str(exc))
            time.sleep(LIST_EVERY_S)
    manager.shutdown()
    runs = []
    for run_id in run_ids:
        snap = own_snapshot(manager, run_id)
        runs.append({"id": run_id, "status": snap.status, "epochs": len(snap.epochs), "samples": len(snap.samples),
                     "store_error": snap.store_error, "saved": snap.saved,
                     "error": snap.error.to_dict() if snap.error is not None else None})
    report = {"index": index, "runs": runs, "list_errors": list_errors, "listings": listings,
              "seen_interrupted": sorted(seen_interrupted), "write_latencies_s": latencies}
    out.write_text(json.dumps(report), encoding="utf-8")


def soak(processes: int, seconds: float, folder: Path) -> dict[str, Any]:
    """Start the writers, wait, and check the store against what each one measured."""
    from bench.store import Store

    store_path = folder / "soak.sqlite3"
    busy_timeout_s = Store(store_path).busy_timeout_s
    load_before = _load_1m()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = []
    t0 = time.monotonic()
    for i in range(processes):
        out = folder / f"child-{i}.json"
        log = open(folder / f"child-{i}.log", "w", encoding="utf-8")  # noqa: SIM115 - closed below
        procs.append((subprocess.Popen([sys.executable, "-m", "benchmarks.store_soak", "--child", str(i),
                                        "--store", str(store_path), "--seconds", str(seconds), "--out", str(out)],
                                       cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT), out, log))
    codes = []
    for proc, _, log in procs:
        codes.append(proc.wait(timeout=seconds + 300))
        log.close()
    wall_s = time.monotonic() - t0
    reports = [json.loads(out.read_text(encoding="utf-8")) for _, out, _ in procs if out.exists()]
    store = Store(store_path)
    lost_epochs = lost_samples = duplicated_samples = 0
    problems: list[str] = []
    latencies: list[float] = []
    total_epochs = total_samples = 0
    for rep in reports:
        latencies += rep["write_latencies_s"]
        if rep["list_errors"]:
            problems.append(f"process {rep['index']}: {len(rep['list_errors'])} listing errors, "
                            f"first: {rep['list_errors'][0]}")
        if rep["seen_interrupted"]:
            problems.append(f"process {rep['index']} saw live runs as interrupted: {rep['seen_interrupted']}")
        for run in rep["runs"]:
            stored = store.get_run(run["id"])
            total_epochs += run["epochs"]
            total_samples += run["samples"]
            if stored is None:
                problems.append(f"run {run['id']} is missing from the store")
                lost_epochs += run["epochs"]
                continue
            lost_epochs += max(0, run["epochs"] - len(stored.epochs))
            # a sample is one instant of its run: rows beyond the distinct instants are duplicates, and instants
            # the run measured but the store lacks are lost (a duplicate never hides a loss)
            distinct = len({s.t_s for s in stored.samples})
            duplicated_samples += len(stored.samples) - distinct
            lost_samples += max(0, run["samples"] - distinct)
            if stored.status != run["status"]:
                problems.append(f"run {run['id']}: {run['status']} in memory, {stored.status} in the store")
            if run["status"] != "finished":
                error = run.get("error") or {}
                problems.append(f"run {run['id']} ended {run['status']}"
                                + (f" ({error.get('error_type')}: {error.get('message')})" if error else ""))
            if run["store_error"]:
                problems.append(f"run {run['id']}: {run['store_error']}")
    logs = "".join((folder / f"child-{i}.log").read_text(encoding="utf-8", errors="replace") for i in range(processes))
    if duplicated_samples:
        problems.append(f"{duplicated_samples} samples were stored more than once")
    locked = logs.count("database is locked")
    if locked:
        problems.append(f"'database is locked' appeared {locked} times in the processes' output")
    if any(codes):
        problems.append(f"exit codes {codes}")
    latencies.sort()

    def pct(p: float) -> float | None:
        return round(latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000, 2) if latencies else None

    runs = sum(len(r["runs"]) for r in reports)
    return {
        "processes": processes, "seconds": seconds, "wall_s": round(wall_s, 1), "runs": runs,
        "epochs": total_epochs, "samples": total_samples, "writes": len(latencies),
        "writes_per_s": round(len(latencies) / wall_s, 1) if wall_s else None,
        "listings": sum(r["listings"] for r in reports),
        "write_ms_p50": pct(0.50), "write_ms_p99": pct(0.99), "write_ms_max": pct(1.0),
        "lost_epochs": lost_epochs, "lost_samples": lost_samples, "duplicated_samples": duplicated_samples,
        "database_locked": locked, "problems": problems,
        "busy_timeout_s": busy_timeout_s,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "sqlite": _sqlite_version(),
                    "platform": platform.platform(), "load_1m_before": load_before, "load_1m_after": _load_1m()},
        "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def _load_1m() -> float | None:
    """The machine's 1-minute load average (other work beside the soak shows here); None where there is none."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def _sqlite_version() -> str:
    import sqlite3

    return sqlite3.sqlite_version


def render(result: dict[str, Any]) -> str:
    ok = not result["problems"]
    lines = [
        "# Store soak: several processes, one SQLite store",
        "",
        "Generated by `python -m benchmarks.store_soak --report docs/STORE-SOAK.md` "
        f"({result['measured_at']}; {result['machine']['cpus']} CPUs, SQLite {result['machine']['sqlite']}, "
        f"Python {result['machine']['python']}).",
        "",
        f"{result['processes']} processes, each a JobManager with real spawned workers and the real sampler, wrote "
        f"runs to one store for {result['seconds']:.0f} s, each listing the store every {LIST_EVERY_S} s (which "
        f"marks runs whose owner is gone). A stand-in worker reports an epoch every {EPOCH_S * 1000:.0f} ms, far "
        f"more often than real training, and samples are taken every {SAMPLE_INTERVAL_S} s.",
        "",
        "| figure | value |",
        "|---|---|",
        f"| verdict | **{'nothing lost, nothing twice' if ok else 'FAILED'}** |",
        f"| runs written | {result['runs']:,} |",
        f"| epochs measured / lost | {result['epochs']:,} / {result['lost_epochs']} |",
        f"| samples measured / lost / stored twice | {result['samples']:,} / {result['lost_samples']} / "
        f"{result.get('duplicated_samples', 'not counted')} |",
        f"| store writes (all processes) | {result['writes']:,} ({result['writes_per_s']} per second) |",
        f"| listings by the writers | {result['listings']:,} |",
        f"| write latency p50 / p99 / max | {result['write_ms_p50']} / {result['write_ms_p99']} / "
        f"{result['write_ms_max']} ms |",
        f"| `database is locked` reaching a user | {result['database_locked']} |",
        "",
    ]
    if result["problems"]:
        lines += ["Problems:", ""] + [f"- {p}" for p in result["problems"]] + [""]
    machine = result["machine"]
    load = (f"1-minute load average {machine['load_1m_before']} before and {machine['load_1m_after']} after"
            if machine.get("load_1m_before") is not None else "load average not recorded")
    lines += [
        f"Where: {result.get('note') or 'not said'} ({load}).",
        "",
        "\"Stored twice\" counts the rows of a run beyond its distinct sample instants, and \"lost\" the instants a "
        "process measured that the store lacks; each sample carries its number in its run and the store keeps one "
        "row per number, so a write retried after it landed adds nothing.",
        "",
        f"How the store is shared: WAL journal (readers never block the writer), a busy timeout of "
        f"{result.get('busy_timeout_s', 30.0):g} s per write (a writer waits for another process's write instead of "
        f"failing; BENCH_STORE_BUSY_TIMEOUT_S), one short connection per operation. The p99 write latency above is "
        f"the wait that concurrency adds.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.store_soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=300.0)
    parser.add_argument("--json", dest="json_path", default=None)
    parser.add_argument("--report", default=None, help="write the markdown report here (e.g. docs/STORE-SOAK.md)")
    parser.add_argument("--note", default="", help="where it ran and what else ran beside it, for the report")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--store", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        child(args.child, Path(args.store), args.seconds, Path(args.out))
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-soak-") as tmp:
        result = soak(args.processes, args.seconds, Path(tmp))
    result["note"] = args.note
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(result, indent=2), encoding="utf-8")
    if args.report:
        Path(args.report).write_text(render(result), encoding="utf-8")
    print(render(result))
    return 0 if not result["problems"] else 1


if __name__ == "__main__":
    sys.exit(main())
