"""What a run on a Ray cluster costs beside the same run on this machine (docs/CLUSTER.md, "What the cluster path
costs").

Both sides run the same stand-in worker (a paced replay: no framework, so what is measured is the path, not the
training) through a real JobManager and Store: locally, and on a two-node Ray cluster started here
(ray.cluster_utils.Cluster, one CPU each) or the one ``--cluster ADDRESS`` names. Per run:

- start to first batch: from ``submit`` to the first progress the supervisor holds (the cluster's includes placing
  the agent on the node and its worker process);
- epoch to supervisor and to store: from the moment the worker ended an epoch (its own wall clock, written to a side
  file; both sides run on this host, one clock) to the moment the supervisor's state holds it, and the store's row;
- the supervising process's CPU per live run: its CPU seconds over the run's wall seconds (the local side's include
  its sampler thread; the cluster's its poll thread and Ray's driver threads; the node's sampler runs on the node).

    python -m benchmarks.cluster_cost [--runs 3] [--epochs 8] [--epoch-s 1.0] [--cluster ADDRESS] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

from bench.runs import events
from benchmarks.common import own_snapshot, scratch
from benchmarks.standins import PacedWorker

EPOCH_LOG_ENV = "BENCH_COST_EPOCH_LOG"


class LoggedWorker(PacedWorker):
    """The paced replay, writing each epoch's end (its wall time) to the file BENCH_COST_EPOCH_LOG names: the
    moment the worker said it, read against the moment the supervisor and the store have it."""

    def __call__(self, config: dict[str, Any], queue: Any, stop_event: Any, log_path: str | None = None) -> None:
        path = os.environ.get(EPOCH_LOG_ENV)

        class Tap:
            def put(self, event: events.WorkerEvent) -> None:
                queue.put(event)
                if path and isinstance(event, events.EpochEnded):
                    with open(path, "a", encoding="utf-8") as f:
                        f.write(f"{config.get('seed')} {event.epoch.epoch} {event.ended_wall!r}\n")

        super().__call__(config, Tap(), stop_event, log_path)


def two_node_cluster() -> Any:
    """A two-node Ray cluster on this machine, as the cluster tests start one (ray.cluster_utils.Cluster): a head
    (custom resource node_a) and a second node (node_b), one CPU each, small object stores, no dashboard; its
    workers find the project on PYTHONPATH. The caller shuts it down."""
    from ray.cluster_utils import Cluster

    root = str(Path(__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))
    started = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "resources": {"node_a": 1}, "object_store_memory": 80 * 1024 * 1024,
        "include_dashboard": False})
    started.add_node(num_cpus=1, resources={"node_b": 1}, object_store_memory=80 * 1024 * 1024)
    started.wait_for_nodes()
    return started


def _measure(manager: Any, config: Any, log: Path) -> dict[str, Any]:
    """One run: start to first batch, each epoch's delay to the supervisor and to the store, CPU per live run."""
    import psutil

    me = psutil.Process()
    cpu0, wall0 = me.cpu_times(), time.monotonic()
    submitted = time.time()
    run_id = manager.submit(config)
    first_batch: float | None = None
    seen: dict[int, float] = {}
    stored: dict[int, float] = {}
    store_stop = threading.Event()

    def watch_store() -> None:  # the store's rows as a second process would read them
        while not store_stop.is_set():
            run = manager.store.get_run(run_id, with_samples=False)
            now = time.time()
            for epoch in run.epochs if run is not None else ():
                stored.setdefault(epoch.epoch, now)
            store_stop.wait(0.01)

    watcher = threading.Thread(target=watch_store, daemon=True)
    watcher.start()
    while True:
        snap = manager.snapshot(run_id)
        now = time.time()
        if first_batch is None and snap.progress is not None:
            first_batch = now - submitted
        for epoch in snap.epochs:
            seen.setdefault(epoch.epoch, now)
        if not snap.active:
            break
        time.sleep(0.005)
    cpu1, wall1 = me.cpu_times(), time.monotonic()
    time.sleep(0.2)
    store_stop.set()
    watcher.join()
    ended: dict[int, float] = {}
    for line in log.read_text(encoding="utf-8").splitlines():
        seed, epoch, wall = line.split()
        if int(seed) == config.seed:
            ended[int(epoch)] = float(wall)
    return {
        "status": str(snap.status),
        "start_to_first_batch_s": first_batch,
        "epoch_to_supervisor_ms": [1000 * (seen[e] - ended[e]) for e in sorted(ended) if e in seen],
        "epoch_to_store_ms": [1000 * (stored[e] - ended[e]) for e in sorted(ended) if e in stored],
        "cpu_percent_of_a_core": 100 * ((cpu1.user + cpu1.system) - (cpu0.user + cpu0.system)) / (wall1 - wall0),
        "node": snap.info.ray.node_id if snap.info.ray is not None else None,
    }


def _quiet_cpu(manager: Any, config: Any) -> float:
    """The supervising process's CPU per live run with nobody watching closely (the run waited for once a second),
    in % of a core: what the dashboard pays for a run beside its viewers' pages."""
    import psutil

    me = psutil.Process()
    run_id = manager.submit(config)
    while (snap := own_snapshot(manager, run_id)).progress is None and snap.active:
        time.sleep(0.2)  # from the first batch: the start-up is measured above
    cpu0, wall0 = me.cpu_times(), time.monotonic()
    manager.wait(run_id)
    cpu1, wall1 = me.cpu_times(), time.monotonic()
    return 100 * ((cpu1.user + cpu1.system) - (cpu0.user + cpu0.system)) / (wall1 - wall0)


def _side(name: str, manager: Any, runs: int, epochs: int, log: Path) -> dict[str, Any]:
    from bench.vocab.config import RunConfig

    results = []
    for i in range(runs):
        config = RunConfig(epochs=epochs, limit_samples=2000, batch_size=100, seed=1000 + i, sample_interval_s=0.5)
        results.append(_measure(manager, config, log))
        print(f"{name} run {i + 1}: {json.dumps(results[-1], default=str)}", file=sys.stderr, flush=True)
    quiet = [_quiet_cpu(manager, RunConfig(epochs=epochs, limit_samples=2000, batch_size=100, seed=2000 + i,
                                           sample_interval_s=0.5)) for i in range(runs)]
    print(f"{name} CPU, nobody watching: {quiet}", file=sys.stderr, flush=True)
    figures = _figures(results)
    figures["cpu_percent_of_a_core_watched_every_5ms"] = figures.pop("cpu_percent_of_a_core")
    figures["cpu_percent_of_a_core"] = _figures([{"start_to_first_batch_s": None, "epoch_to_supervisor_ms": [],
                                                  "epoch_to_store_ms": [], "cpu_percent_of_a_core": q}
                                                 for q in quiet])["cpu_percent_of_a_core"]
    return {"runs": results, "quiet_cpu_percent": quiet, **figures}


def _figures(results: list[dict[str, Any]]) -> dict[str, Any]:
    first = [r["start_to_first_batch_s"] for r in results if r["start_to_first_batch_s"] is not None]
    sup = [d for r in results for d in r["epoch_to_supervisor_ms"]]
    store = [d for r in results for d in r["epoch_to_store_ms"]]
    cpu = [r["cpu_percent_of_a_core"] for r in results]

    def spread(values: list[float]) -> dict[str, float] | None:
        if not values:
            return None
        return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}

    return {"start_to_first_batch_s": spread(first), "epoch_to_supervisor_ms": spread(sup),
            "epoch_to_store_ms": spread(store), "cpu_percent_of_a_core": spread(cpu)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--epoch-s", type=float, default=1.0)
    parser.add_argument("--cluster", default=None, help="an existing cluster's address (default: start one here)")
    parser.add_argument("--json", dest="json_path", default=None)
    args = parser.parse_args(argv)

    os.environ.setdefault("RAY_ENABLE_AUTO_CONNECT", "0")
    from bench.cluster import nodes
    from bench.cluster.launch import ClusterLauncher
    from bench.runs.jobs import JobManager
    from bench.store import Store

    work = scratch("bench-cluster-cost-")
    log = work / "epochs.log"
    log.touch()
    os.environ[EPOCH_LOG_ENV] = str(log)
    from benchmarks.cluster_cost import LoggedWorker as Importable  # by its module's name, for a spawned child

    worker = Importable(min_epoch_s=args.epoch_s, max_epoch_s=args.epoch_s)
    started = two_node_cluster() if args.cluster is None else None
    address = args.cluster or started.address  # type: ignore[union-attr]
    try:
        local = JobManager(Store(work / "local.sqlite3"), worker_target=worker)
        out = {"local": _side("local", local, args.runs, args.epochs, log)}
        local.shutdown()
        launcher = ClusterLauncher(address)
        cluster = JobManager(Store(work / "cluster.sqlite3"), hardware=launcher.machine, launcher=launcher,
                             worker_target=worker)
        out["cluster"] = _side("cluster", cluster, args.runs, args.epochs, log)
        cluster.shutdown()
    finally:
        nodes.disconnect()
        if started is not None:
            started.shutdown()
    out["settings"] = {"runs": args.runs, "epochs": args.epochs, "epoch_s": args.epoch_s,
                       "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                       "load_average": os.getloadavg(), "cores": os.cpu_count()}
    text = json.dumps({k: v for k, v in out.items()}, indent=2, default=str)
    if args.json_path:
        Path(args.json_path).write_text(text, encoding="utf-8")
    for side in ("local", "cluster"):
        figures = out[side]
        print(f"{side:8} " + "  ".join(f"{k} {json.dumps(figures[k])}" for k in
                                       ("start_to_first_batch_s", "epoch_to_supervisor_ms", "epoch_to_store_ms",
                                        "cpu_percent_of_a_core")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
