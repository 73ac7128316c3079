"""A class in the lab: N students submit at once to a real dashboard server (``streamlit run app.py``, the lab's
JSON API), each phone then following the board as the student page does (``GET /lab/api/board?after=N``, a long
poll), while the fair queue trains their runs one at a time (real training by default: synthetic MNIST-shaped data,
MLP xs, one epoch, a few hundred samples).

What it measures (docs/LAB.md): the order the runs started in against the round-robin ideal (round k holds every
student's k-th run, in the order the runs were queued), the submissions' answer times, each run's wait from
queued to started (the longest), the server's CPU (its own process, the training workers apart) and memory, the
board requests answered, and that nothing was lost (every run answered with a ticket ended finished, and the store
holds it marked with the lab and the student).

On a Ray cluster (``--cluster``: a two-node cluster started here, as the cluster tests start one; ``--cluster
ADDRESS``: one already running) the server sends its runs there (BENCH_RAY_ADDRESS) and the lab hands one run a free
device at once: the figures add the order the runs were handed in (their run ids) against the ideal, and the runs
each node trained.

    python -m benchmarks.lab_class --students 30 --second 6 --out docs/measurements/lab-class.json
    python -m benchmarks.lab_class --students 30 --second 6 --cluster --out docs/measurements/lab-class-cluster.json
    python -m benchmarks.lab_class --smoke --out /tmp/lab.json     # 4 students, 2 eager, a replayed worker (tests)
    python -m benchmarks.lab_class --smoke --cluster --out /tmp/lab.json   # the same on a two-node cluster
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from benchmarks.common import wait_for
from benchmarks.dashboard import DashboardServer

BRISK = "benchmarks.standins:BRISK_WORKER"
HERE = "here"  # --cluster without an address: a two-node cluster started on this machine


def call(url: str, body: Any | None = None, timeout_s: float = 60.0) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def ideal_order(tickets: list[tuple[int, str]]) -> list[int]:
    """Round robin as the lab promises it, from the tickets in the order they were queued (ticket, student): round k
    is every student's k-th ticket, each round in queue order. Written apart from bench.lab.fair_queue on purpose."""
    seen: dict[str, int] = {}
    ranked = []
    for ticket, student in sorted(tickets):
        seen[student] = seen.get(student, 0) + 1
        ranked.append((seen[student], ticket))
    return [t for _, t in sorted(ranked)]


def displacement(started: list[int], ideal: list[int]) -> int:
    """How far the furthest run started from its place in the ideal order (0: the ideal order exactly)."""
    place = {t: i for i, t in enumerate(ideal)}
    return max((abs(i - place[t]) for i, t in enumerate(started)), default=0)


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


class Phones:
    """Each student's page following the board: one long poll after another, until stopped."""

    def __init__(self, url: str, n: int) -> None:
        self.url, self.stop, self.answers, self.errors = url, threading.Event(), 0, 0
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self._follow, name=f"phone-{i}", daemon=True) for i in range(n)]
        for t in self.threads:
            t.start()

    def _follow(self) -> None:
        version = -1
        while not self.stop.is_set():
            try:
                status, board = call(f"{self.url}/lab/api/board?after={version}", timeout_s=40)
                version = board.get("version", version) if status == 200 else version
                with self.lock:
                    self.answers += 1
            except (OSError, ValueError):
                with self.lock:
                    self.errors += 1
                self.stop.wait(1.0)

    def close(self) -> None:
        self.stop.set()


def class_pass(args: argparse.Namespace, folder: Path, cluster: str | None = None) -> dict[str, Any]:
    env = {"BENCH_WORKER_TARGET": BRISK} if args.smoke else {}
    if cluster is not None:
        env["BENCH_RAY_ADDRESS"] = cluster
    # the pre-started worker is this machine's: a cluster's runs start theirs on their node
    server = DashboardServer(folder, prestart=not args.smoke and cluster is None, env=env)
    try:
        server.wait_healthy(120)
        assignment = {"title": "Lab class benchmark", "families": ["mlp"], "sizes": ["xs"], "epochs_min": 1,
                      "epochs_max": 1, "batch_min": 32, "batch_max": 256, "targets": ["cpu"], "cap": 2,
                      "limit_samples": args.limit_samples}
        status, opened = call(f"{server.url}/lab/api/open", assignment, timeout_s=120)
        assert status == 200, opened
        names = [f"Student {i + 1:02d}" for i in range(args.students)]
        # the eager students queue two runs each, back to back, first; the rest then submit at once: a FIFO would
        # start every eager student's second run before the others' first, the round robin none
        eager = names[: args.second]
        rest = names[args.second:]
        eager_set = set(eager)
        gates: dict[str, threading.Barrier] = {}
        for group in (eager, rest):
            gate = threading.Barrier(max(1, len(group)))  # one gate a group: its students submit at once
            gates.update({n: gate for n in group})
        answers: dict[str, list[tuple[float, int, Any]]] = {n: [] for n in names}

        def student(name: str) -> None:
            gates[name].wait()
            token = None
            for _ in range(2 if name in eager_set else 1):
                body = {"student": name, "family": "mlp", "size": "xs", "batch_size": 64 if len(answers) % 2 else 128,
                        "epochs": 1, "target": "cpu", "token": token}
                t0 = time.perf_counter()
                code, answer = call(f"{server.url}/lab/api/submit", body)
                answers[name].append((time.perf_counter() - t0, code, answer))
                token = answer.get("token", token)

        phones = Phones(server.url, args.students)
        cpu0, t0 = server.cpu_s(), time.monotonic()
        for group in (eager, rest):
            threads = [threading.Thread(target=student, args=(n,)) for n in group]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        submitted_s = time.monotonic() - t0
        cpu_submit = server.cpu_s() - cpu0
        tickets = [(a["ticket"], n) for n in names for _, code, a in answers[n] if code == 200]
        refused = [(n, code, a) for n in names for _, code, a in answers[n] if code != 200]

        def ended() -> Any:
            _, board = call(f"{server.url}/lab/api/board")
            mine = [r for r in board["rows"] if r["ticket"] is not None]
            return board if len(mine) >= len(tickets) and all(r["status"] not in ("queued", "starting", "running")
                                                              for r in mine) else None

        board = wait_for(ended, args.timeout, "every run to end", poll_s=1.0)
        class_s = time.monotonic() - t0
        cpu_class = server.cpu_s() - cpu0
        rss_mb = server.rss_mb()
        phones.close()
        rows = [r for r in board["rows"] if r["ticket"] is not None]
        started = [r["ticket"] for r in sorted(rows, key=lambda r: r["started_at"] or 0)]
        handed = [r["ticket"] for r in sorted(rows, key=lambda r: r["run_id"] or 0)]  # run ids rise as handed
        per_node = collections.Counter(str(r["node"]) for r in rows if r["run_id"] is not None)
        lanes = len(per_node) if cluster is not None else 1  # a CPU run a node at once; one here
        ideal = ideal_order(tickets)
        fifo = sorted(t for t, _ in tickets)
        waits = [r["started_at"] - r["queued_at"] for r in rows if r["started_at"]]
        runs_s = [r["ended_at"] - r["started_at"] for r in rows if r["started_at"] and r["ended_at"]]
        from bench.store import Store

        stored = [r for r in Store(server.store_path).list_runs()
                  if r.info.lab is not None and r.info.lab.lab == opened["lab"]]
        latencies = [s for n in names for s, _, _ in answers[n]]
        return {
            "students": args.students, "second_runs": len(eager), "runs_answered": len(tickets),
            "refused": [f"{n}: {code} {a}" for n, code, a in refused],
            "submit_answer_s": {"p50": statistics.median(latencies), "max": max(latencies)},
            "all_submitted_s": submitted_s,
            "started_in_ideal_order": started == ideal, "displacement": displacement(started, ideal),
            "started_order": started, "ideal_order": ideal, "fifo_displacement": displacement(fifo, ideal),
            "handed_order": handed, "handed_displacement": displacement(handed, ideal), "lanes": lanes,
            "order_ok": displacement(handed, ideal) <= lanes - 1 and displacement(started, ideal) <= lanes - 1,
            "cluster": cluster, "runs_per_node": dict(sorted(per_node.items())),
            "run_s": {"median": statistics.median(runs_s), "max": max(runs_s)} if runs_s else None,
            "longest_wait_s": max(waits) if waits else None, "median_wait_s": statistics.median(waits) if waits else None,
            "class_s": class_s, "runs_finished": sum(r["status"] == "finished" for r in rows),
            "runs_stored_marked": len(stored), "lost": len(tickets) - sum(r["status"] == "finished" for r in rows),
            "server_cpu_s_submitting": cpu_submit, "server_cpu_s_class": cpu_class,
            "server_cores_class": cpu_class / class_s, "server_rss_mb": rss_mb,
            "board_answers": phones.answers, "board_errors": phones.errors,
            "machine": {"cpu": cpu_name(), "cores": os.cpu_count(),
                        "load_average": os.getloadavg(), "python": platform.python_version()},
            "worker": ("replayed (benchmarks.standins:BRISK_WORKER)" if args.smoke else "real training (TensorFlow)")
            + (" on a two-node Ray cluster started here" if args.cluster == HERE else
               f" on the Ray cluster at {cluster}" if cluster else ""),
        }
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--second", type=int, default=6, help="students who queue a second run at once")
    parser.add_argument("--limit-samples", type=int, default=256)
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds for every run to end")
    parser.add_argument("--smoke", action="store_true", help="4 students (2 with a second run), a replayed worker")
    parser.add_argument("--cluster", nargs="?", const=HERE, default=None, metavar="ADDRESS",
                        help="the runs on a Ray cluster: ADDRESS, else a two-node cluster started here")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.smoke:
        args.students, args.second, args.timeout = 4, 2, 240.0
    started = None
    if args.cluster == HERE:
        from benchmarks.cluster_cost import two_node_cluster

        started = two_node_cluster()
    try:
        with tempfile.TemporaryDirectory(prefix="bench-lab-") as folder:
            result = class_pass(args, Path(folder), started.address if started is not None else args.cluster)
    finally:
        if started is not None:
            started.shutdown()
    text = json.dumps(result, indent=2)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0 if result["lost"] == 0 and result["order_ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
