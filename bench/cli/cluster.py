"""The commands' Ray cluster side (``--cluster ADDRESS``, docs/CLUSTER.md): the launcher a command's queue hands its
runs to, a comparison's or sweep's runs side by side, ``devices --cluster`` and ``suite --cluster``. bench.cli.main calls
these; what they need of it (its queue, its foreground run, its file checks) is handed in, so neither imports the
other's module at load.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from typing import Any, Callable

from bench.vocab import records as records_module
from bench.vocab import safe_text
from bench.cli.args import UsageError
from bench.vocab.config import RunConfig
from bench.vocab.records import RunRecord


def launcher(args: argparse.Namespace) -> Any:
    """The launcher onto the Ray cluster of --cluster (else BENCH_RAY_ADDRESS), None to run on this machine. A
    cluster that cannot be used is bad input (exit 2), said with what to do."""
    from bench.cluster import nodes

    address = nodes.address_of(getattr(args, "cluster", None))
    if address is None:
        if getattr(args, "cluster_on", None):
            raise UsageError(f"--on names nodes of a cluster: give --cluster ADDRESS too (or set {nodes.ADDRESS_ENV})")
        return None
    from bench.cluster.launch import ClusterLauncher

    try:
        return ClusterLauncher(address, where=getattr(args, "cluster_on", None))
    except nodes.ClusterError as exc:
        raise UsageError(str(exc)) from None


def run_side_by_side(configs: list[RunConfig], manager: Any) -> tuple[list[RunRecord], list[bool]]:
    """A cluster's runs, all queued at once: each is placed as a matching device frees up; a line whenever a run's
    state, node or epoch count changes. Ctrl-C stops them all."""
    ids = [manager.submit(config) for config in configs]
    said: dict[int, str] = {}
    try:
        while True:
            snaps = [manager.snapshot(i) for i in ids]
            for n, snap in enumerate(snaps, 1):
                where = snap.info.ray
                node = f" on node {(where.node_id or '')[:8]}" if where is not None else ""
                line = f"{snap.status}{node}: {snap.phase}, {len(snap.epochs)}/{snap.config.epochs} epochs"
                if said.get(snap.id) != line:
                    said[snap.id] = line
                    print(f"== {n}/{len(ids)} run #{snap.id} {safe_text.terminal(snap.config.label())}: {line}",
                          file=sys.stderr)
            if not any(snap.active for snap in snaps):
                break
            time.sleep(0.5)
    except KeyboardInterrupt:
        print("\nstopping…", file=sys.stderr)
        for run_id in ids:
            manager.stop(run_id)
        for run_id in ids:
            manager.wait(run_id, timeout_s=30)
    snaps = [manager.snapshot(i) for i in ids]
    return [snap.record() for snap in snaps], [snap.saved for snap in snaps]


def devices(args: argparse.Namespace) -> int:
    """``devices --cluster ADDRESS``: the cluster's nodes, their resources and the hardware discovered on each."""
    from bench.cluster import nodes

    address = nodes.address_of(args.cluster) or "auto"
    try:
        found = nodes.inventory(address)
    except nodes.ClusterError as exc:
        raise UsageError(str(exc)) from None
    if args.json:
        print(records_module.json_text({"cluster": address, "nodes": found}))
        return 0
    print(f"Ray cluster at {address}: {len(found)} node(s)")
    for entry in found:
        print(f"{safe_text.terminal(entry['label'])}\n      {safe_text.terminal(entry['hardware'] or entry['why'])}")
    return 0


def suite(args: argparse.Namespace, cluster: Any, variant: str, *, manager_of: Callable[[Any], Any],
          run: Callable[..., tuple[RunRecord, bool]], out: Callable[[str, str], None],
          write: Callable[[str, Any], None], store: Callable[[], Any]) -> int:
    """``suite --cluster``: the suite once on one node of each kind the cluster holds, the kinds side by side, each
    kind's runs one after the other on its node; one bundle per kind, stored and written beside --out.
    ``manager_of``, ``run``, ``out``, ``write`` and ``store`` are the command's own queue, foreground run, output
    check, JSON writer and store."""
    from bench.analysis import pricing
    from bench.cluster import launch
    from bench.runs import suite as suite_module
    from bench.vocab.target import Target

    stem = (args.out or f"bench-bundle-{time.strftime('%Y%m%d-%H%M%S')}.json").removesuffix(".json")
    plans = []
    for node, machine in launch.node_kinds(cluster):
        targets = [Target.parse(t) for t in launch.suite_targets(node, machine)]
        configs = suite_module.suite_configs(variant, targets, machine)
        path = f"{stem}-{node.kind.replace(' ', '-')}.json"
        out(path, "--out")
        plans.append((node, machine, targets, configs, path))
        print(f"suite {suite_module.SUITE_VERSION} ({variant}) on {node.label()}: {len(configs)} runs -> {path}",
              file=sys.stderr)
    results: dict[str, Any] = {}

    def one_kind(node: Any, configs: list[RunConfig]) -> None:
        manager = manager_of(launch.ClusterLauncher(cluster.address, where=node.id))
        results[node.id] = suite_module.run_suite(
            configs, lambda c: run(c, manager=manager),
            lambda text: print(f"[{node.kind}] {text}", file=sys.stderr, flush=True))
        manager.shutdown()

    threads = [threading.Thread(target=one_kind, args=(node, configs), daemon=True)
               for node, _, _, configs, _ in plans]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stored, complete = store(), True
    for node, machine, targets, configs, path in plans:
        doc = suite_module.bundle(results[node.id], machine=suite_module.fingerprint(machine.hardware),
                                  variant=variant, label=args.label or f"{node.kind} ({node.hostname or node.ip})",
                                  prices=pricing.parse_prices(args.price, targets), peaks_gflops={},
                                  notes=f"measured on Ray node {node.id} of the cluster at {cluster.address}")
        if not doc["runs"]:
            print(f"error: no run finished on {node.label()}: no bundle for it", file=sys.stderr)
            complete = False
            continue
        write(path, doc)
        if stored is not None:
            stored.add_bundle(doc)
        complete = complete and len(doc["runs"]) == len(configs)
        print(f"wrote {path}: {len(doc['runs'])} of {len(configs)} runs ({doc['notes']})")
    return 0 if complete else 1
