"""GroupRegistry (bench.runs.groups): a comparison or sweep submitted as one (validated first, probes before runs, in
one turn), the newest group of a kind, and each group's peaks landing as its probes end or are re-probed.

The run queue and the peak queue are stood in for: runs get ids from a counter, probes are futures the test settles.
"""

from __future__ import annotations

import concurrent.futures
import threading
from typing import Any

import pytest

from bench.vocab.config import ConfigError, RunConfig
from bench.hardware.peak_cache import PeakEntry
from bench.runs.groups import GroupRegistry
from bench.runs.run_state import GroupPeak

TINY = RunConfig(dataset="synthetic-mnist", model="mlp", size="xs", epochs=1, batch_size=64, limit_samples=512)


class Queues:
    """Stands in for the run queue and the peak queue, writing what is queued, in order, to one list."""

    def __init__(self) -> None:
        self.order_lock = threading.RLock()
        self.queued: list[tuple[Any, ...]] = []
        self.probes: dict[str, concurrent.futures.Future] = {}  # by device/threads, as the registry asked
        self.locked_while_queued: list[bool] = []

    def submit(self, config: RunConfig) -> int:
        self.locked_while_queued.append(self._held())
        self.queued.append(("run", config.cpu_threads))
        return 100 + len(self.queued)

    def queue(self, device: str, *, cpu_threads: int | None = None, refresh: bool = False) -> concurrent.futures.Future:
        self.locked_while_queued.append(self._held())
        self.queued.append(("probe", device, cpu_threads, refresh))
        future: concurrent.futures.Future = concurrent.futures.Future()
        self.probes[f"{device}/{cpu_threads}"] = future
        return future

    def _held(self) -> bool:
        """Whether the order lock is held (by the submitting thread): another thread cannot take it."""
        got: list[bool] = []
        other = threading.Thread(target=lambda: got.append(self.order_lock.acquire(timeout=0)))
        other.start()
        other.join()
        if got[0]:
            self.order_lock.release()
        return not got[0]

    def registry(self) -> GroupRegistry:
        return GroupRegistry(submit=self.submit, peaks=self, order_lock=self.order_lock)  # type: ignore[arg-type]


@pytest.fixture
def queues() -> Queues:
    return Queues()


def test_a_sweep_queues_its_probes_then_its_runs_in_one_turn(queues):
    groups = queues.registry()
    configs = [TINY, TINY.replace(cpu_threads=1)]
    gid = groups.submit("sweep", configs, targets=["cpu", "cpu/1"], prices={"cpu": 0.5},
                        peaks={"cpu": configs[0], "cpu/1": configs[1]})
    assert queues.queued == [("probe", "cpu", None, False), ("probe", "cpu", 1, False), ("run", None), ("run", 1)]
    assert all(queues.locked_while_queued), "no other session's run can come between the group's"
    group = groups.latest("sweep")
    assert group is not None and group.id == gid == 1
    assert group.kind == "sweep" and group.targets == ("cpu", "cpu/1") and group.run_ids == (103, 104)
    assert group.prices == {"cpu": 0.5}
    assert group.peaks == {"cpu": GroupPeak(), "cpu/1": GroupPeak()}, "each probed target waits for its figure"


def test_one_invalid_config_queues_nothing(queues):
    groups = queues.registry()
    with pytest.raises(ConfigError):
        groups.submit("compare", [TINY, TINY.replace(epochs=0)], targets=["cpu"], peaks={"cpu": TINY})
    assert queues.queued == [] and groups.latest("compare") is None


def test_latest_is_the_newest_group_of_its_kind(queues):
    groups = queues.registry()
    first = groups.submit("compare", [TINY], targets=["cpu"])
    sweep = groups.submit("sweep", [TINY], targets=["cpu"])
    second = groups.submit("compare", [TINY], targets=["cpu"])
    assert (first, sweep, second) == (1, 2, 3)
    assert groups.latest("compare").id == second and groups.latest("sweep").id == sweep
    assert groups.latest("lesson-utilization") is None
    assert groups.latest("compare").prices is None and groups.latest("compare").peaks == {}


def test_a_groups_peaks_land_as_its_probes_end(queues):
    groups = queues.registry()
    configs = [TINY, TINY.replace(cpu_threads=1), TINY.replace(cpu_threads=2)]
    groups.submit("sweep", configs, targets=["cpu", "cpu/1", "cpu/2"],
                  peaks={"cpu": configs[0], "cpu/1": configs[1], "cpu/2": configs[2]})
    before = groups.latest("sweep")
    entry = PeakEntry(peak_gflops=99.0, sizes=(1024,))
    queues.probes["cpu/None"].set_result(entry)
    queues.probes["cpu/1"].set_exception(RuntimeError("no timer on this core"))
    queues.probes["cpu/2"].cancel()
    group = groups.latest("sweep")
    assert group.peaks["cpu"] == GroupPeak(gflops=99.0, entry=entry)
    assert group.peaks["cpu/1"] == GroupPeak(error="no timer on this core")
    assert group.peaks["cpu/2"] == GroupPeak(), "a cancelled probe lands nothing"
    assert before.peaks["cpu"] == GroupPeak(), "the group handed out before is unchanged"


def test_a_probe_that_ended_before_its_group_was_whole_still_lands(queues):
    submit = queues.submit

    def submit_after_the_probe(config: RunConfig) -> int:
        queues.probes["cpu/None"].set_result(PeakEntry(peak_gflops=12.0))
        return submit(config)

    queues.submit = submit_after_the_probe  # type: ignore[method-assign]
    groups = queues.registry()
    groups.submit("sweep", [TINY], targets=["cpu"], peaks={"cpu": TINY})
    group = groups.latest("sweep")
    assert group.peak("cpu").gflops == 12.0 and group.run_ids == (102,)


def test_a_reprobed_peak_shows_stale_in_the_group_holding_the_run_until_the_probe_lands(queues):
    groups = queues.registry()
    groups.submit("sweep", [TINY], targets=["cpu"], peaks={"cpu": TINY})
    queues.probes["cpu/None"].set_result(PeakEntry(peak_gflops=52.0))
    run_id = groups.latest("sweep").run_ids[0]
    other = groups.submit("compare", [TINY], targets=["cpu"])
    reprobe: concurrent.futures.Future = concurrent.futures.Future()
    groups.reprobing(run_id, "cpu", reprobe)
    peak = groups.latest("sweep").peak("cpu")
    assert peak.stale and peak.gflops == 52.0, "the old figure stays, flagged"
    assert groups.latest("compare").id == other and groups.latest("compare").peaks == {}, "other groups unchanged"
    reprobe.set_result(PeakEntry(peak_gflops=204.0))
    peak = groups.latest("sweep").peak("cpu")
    assert peak.gflops == 204.0 and not peak.stale


def test_a_reprobe_for_a_run_in_no_group_changes_no_group(queues):
    groups = queues.registry()
    groups.submit("sweep", [TINY], targets=["cpu"])
    before = groups.latest("sweep")
    reprobe: concurrent.futures.Future = concurrent.futures.Future()
    groups.reprobing(999, "cpu", reprobe)
    reprobe.set_result(PeakEntry(peak_gflops=204.0))
    assert groups.latest("sweep") == before
