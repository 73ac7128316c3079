"""Real browser: the dashboard started on a two-node Ray cluster (BENCH_RAY_ADDRESS) runs a sweep's points side by
side, one on each node, and the Sweep page shows every point live with the node it runs on; the store keeps where
each ran. Runs are replayed (benchmarks.standins.PacedWorker) and held before their last epoch while the page is
read."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import Server
from tests.e2e.steps import screenshot, set_number, store_of
from tests.e2e.test_sweep_scaling import pick
from tests.polling import wait_for
from tests.unit.test_cluster import cluster  # noqa: F401 - the two-node cluster fixture (skips without Ray)

pytestmark = pytest.mark.e2e
LIVE_ON = re.compile(r"Run #(\d+) running .* on node \w{8} \(CPU (node_[ab])\)")


@pytest.fixture(scope="module")
def cluster_server(cluster: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:  # noqa: F811
    srv = Server(tmp_path_factory.mktemp("cluster-server"), env={"BENCH_RAY_ADDRESS": cluster.address})
    yield srv
    srv.stop()


def _live_points(page: Any) -> dict[int, str]:
    """The points the page shows running now: run id -> the node kind it names."""
    found = {}
    for text in page.get_by_text(LIVE_ON).all_inner_texts():
        for match in LIVE_ON.finditer(text):
            found[int(match.group(1))] = match.group(2)
    return found


def _finished(server: Server) -> int:
    return sum(r.status == "finished" for r in store_of(server).list_runs())


def test_a_sweep_on_two_nodes_shows_each_point_live_with_its_node(page: Any, cluster_server: Server) -> None:
    seen: dict[int, str] = {}
    both_at_once = False

    def all_six_finished() -> bool:  # each look reads the page while the points run, until all six have finished
        nonlocal both_at_once
        now = _live_points(page)
        seen.update(now)
        if set(now.values()) == {"node_a", "node_b"} and not both_at_once:
            both_at_once = True
            screenshot(page, "cluster-sweep-live")
        return _finished(cluster_server) >= 6

    page.goto(cluster_server.url + "/sweep")
    page.get_by_role("heading", name="Sweep", exact=True).wait_for()
    pick(page, "Batch sizes", "64", "128")  # x the default sizes xs, s, m: six points on two nodes
    set_number(page, "Epochs", 8)  # half a second each: every point stays live for seconds, long enough to be read
    page.get_by_role("button", name="Start sweep").click()
    wait_for(all_six_finished, 240, "the six points to finish", poll_s=0.15)
    expect(page.get_by_text("6 of 6 points done").first, "all six points").to_be_visible(timeout=120_000)
    assert both_at_once, f"never two points live at once, one on each node; seen {seen}"
    assert len(seen) == 6 and set(seen.values()) == {"node_a", "node_b"}, seen  # every point seen live, with its node
    runs = store_of(cluster_server).list_runs()
    assert len(runs) == 6 and all(r.status == "finished" for r in runs)
    assert {r.id: r.info.ray.kind.split()[-1] for r in runs} == seen  # stored where it was seen
