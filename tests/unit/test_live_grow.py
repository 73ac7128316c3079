"""ui.live_chart's grown charts: the Train page's charts as viewers hold them after every increment built from the
new readings alone are the charts built whole from the whole run, point for point and mark for mark, in both
variants; an increment's size and the work to build it do not grow with the run."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from bench.vocab.readings import epochs_of, samples_of
from bench.vocab.run_info import Phase
from ui import live, live_chart, live_feed

SAMPLE_S = 0.5
EPOCH_S = 2.0


def sample(i: int, gpu: bool) -> dict[str, Any]:
    row: dict[str, Any] = {"t_s": i * SAMPLE_S, "cpu_percent": float(i % 97), "process_cpu_percent": 50.0 + i * 2.0,
           "ram_used_mib": 4000.0 + i, "process_rss_mib": 900.0 + i % 11}
    if gpu:
        row["gpus"] = [{"index": 0, "util_percent": float(i % 100),
                        "sm_active_percent": float(i % 50) if i >= 6 else None}]
    else:
        row["gpus"] = []
    return row


def epoch(e: int) -> dict:
    return {"epoch": e, "epoch_seconds": EPOCH_S - (0.5 if e > 1 else 0), "includes_tracing": e == 1,
            "t_start_s": 1.0 + (e - 1) * EPOCH_S, "t_end_s": 1.0 + e * EPOCH_S, "samples_per_s": 100.0 + e,
            "loss": 1.0 / e, "val_loss": 1.1 / e, "accuracy": 1 - 1 / (e + 1), "val_accuracy": 1 - 1.2 / (e + 2)}


def run(n_samples: int, gpu: bool, status: str = "running") -> SimpleNamespace:
    """A live run after ``n_samples`` samples: its epochs are those that ended by then."""
    t = n_samples * SAMPLE_S
    n_epochs = max(0, int((t - 1.0) // EPOCH_S))
    phases = (Phase(phase="importing torch", t_s=0.0), Phase(phase="loading data", t_s=0.4),
              Phase(phase="training", t_s=1.0))
    return SimpleNamespace(id=7, created_at=50.0, status=status, active=status == "running",
                           epochs=epochs_of([epoch(e) for e in range(1, n_epochs + 1)]),
                           samples=samples_of([sample(i, gpu) for i in range(n_samples)]),
                           info=SimpleNamespace(phases=phases))


def publisher(box: list) -> live_feed.Publisher:
    return live_feed.Publisher(lambda: box[0], header=lambda r: None, line=lambda r: None,
                               charts=live._chart_keys, figures=live._figures, grow=live.GROW)


def decode(data: bytes) -> dict:
    return json.loads(data[6:-2])


def follow(pub: live_feed.Publisher, box: list, steps: Any, variant: str) -> tuple[dict[str, dict], dict]:
    """The charts as a viewer holds them after every event of ``steps`` (each puts the next state in ``box``), and
    each chart's operations in order."""
    pub.want(variant)
    held: dict[str, dict] = {}
    kinds: dict[str, list[str]] = {}
    seq = 0
    for _ in steps:
        pub.refresh(force=True)
        for _, data in pub.since(seq, variant) or []:
            msg = decode(data)
            seq = msg["seq"]
            for name, change in msg["charts"].items():
                kinds.setdefault(name, []).append(change["op"] if change else "gone")
                if change and change["op"] == "extend" and change.get("layout"):
                    kinds.setdefault("axis", []).append(name)  # the right axis' new top, sent as a layout change
                if change is None:
                    held.pop(name, None)
                elif change["op"] == "full":
                    held[name] = change["figure"]
                else:
                    live_chart.apply(held[name], change)
    return held, kinds


def same_as_built(held: dict[str, dict], whole: dict[str, Any]) -> None:
    """Each chart as grown is the chart built whole, point for point and mark for mark."""
    whole = {name: json.loads(fig.to_json()) for name, fig in whole.items()}
    assert set(whole) == set(held)
    for name, fig in whole.items():
        assert [t.get("name") for t in held[name]["data"]] == [t.get("name") for t in fig["data"]], name
        for mine, built in zip(held[name]["data"], fig["data"]):
            for key in ("x", "y", "customdata"):
                assert mine.get(key) == built.get(key), (name, mine.get("name"), key)
            assert mine.get("marker", {}).get("pattern") == built.get("marker", {}).get("pattern"), name
        for key in ("shapes", "annotations", "yaxis2", "yaxis3", "height", "title"):
            assert held[name]["layout"].get(key) == fig["layout"].get(key), (name, key)


@pytest.mark.parametrize("gpu", [False, True])
@pytest.mark.parametrize("variant", ["plain", "present"])
def test_the_grown_charts_are_the_charts_built_whole(gpu, variant):
    box: list = [run(0, gpu)]
    pub = publisher(box)

    def steps() -> Any:
        for n in list(range(1, 40)) + list(range(41, 160, 3)):
            box[0] = run(n, gpu)
            yield n

    held, kinds = follow(pub, box, steps(), variant)
    assert kinds["util"].count("extend") > 50 and kinds["epochs"].count("extend") > 30, kinds
    assert kinds.get("axis"), "the process' growing CPU moved the right axis' top by an increment"
    assert kinds["util"].count("full") < 12, "the chart went whole more than its start-up asks"
    same_as_built(held, live._figures(box[0], variant, set(held)))
    # the joiner's snapshot is the figures as grown
    snap = decode(pub.snapshot(variant)[1])
    assert snap["charts"]["util"]["figure"]["data"] == held["util"]["data"]


def test_an_increment_is_as_small_at_epoch_2000_as_at_epoch_5():
    sizes = {}
    for at in (5, 2000):
        n = int((1.0 + at * EPOCH_S) / SAMPLE_S) + 1
        box: list = [run(n, gpu=True)]
        pub = publisher(box)
        pub.refresh(force=True)
        seq = pub.seq
        box[0] = run(n + 4, gpu=True)  # two more seconds: four samples and one epoch's end
        pub.refresh(force=True)
        [(_, data)] = pub.since(seq, "plain")
        msg = decode(data)
        assert {c["op"] for c in msg["charts"].values()} == {"extend"}, at
        sizes[at] = len(data)
    assert sizes[2000] - sizes[5] < 200, sizes  # past epoch 1,000 every 500th is marked (named_epoch)


# -- a group's charts (Compare, Sweep, the lesson): its runs overlaid, one after the other ------------------------------
def member(run_id: int, n_samples: int, gpu: bool, status: str) -> SimpleNamespace:
    """A run of a group as the group's feed reads it (ui.results.snapshot_label: its target and cluster)."""
    one = run(n_samples, gpu, status)
    one.id = run_id
    one.config = SimpleNamespace(target=lambda: "cpu/1" if run_id == 1 else "cpu")
    one.info = SimpleNamespace(phases=one.info.phases, cluster=None)
    return one


def group_publisher(box: list) -> live_feed.Publisher:
    from ui import results

    return live_feed.Publisher(lambda: box[0], header=lambda g: None, line=lambda g: None,
                               charts=results._group_chart_keys, figures=results._group_figures,
                               grow=(results._group_start, results._group_grow))


@pytest.mark.parametrize("gpu", [False, True])
@pytest.mark.parametrize("variant", ["plain", "present"])
def test_a_groups_grown_charts_are_the_charts_built_whole(gpu, variant):
    from ui import results

    group = SimpleNamespace(id=3, created_at=70.0)
    box: list = [results.GroupSnapshot(group, (member(1, 0, gpu, "queued"), member(2, 0, gpu, "queued")))]
    pub = group_publisher(box)

    def steps() -> Any:
        for n in range(1, 60, 2):  # the first run, then the second, as a comparison queues them
            box[0] = results.GroupSnapshot(group, (member(1, n, gpu, "running"), member(2, 0, gpu, "queued")))
            yield n
        for n in range(1, 60, 2):
            box[0] = results.GroupSnapshot(group, (member(1, 60, gpu, "finished"), member(2, n, gpu, "running")))
            yield n

    held, kinds = follow(pub, box, steps(), variant)
    assert set(held) == {"cmp_epochs", "cmp_util"}
    assert kinds["cmp_util"].count("extend") > 40 and kinds["cmp_epochs"].count("extend") > 20, kinds
    # whole: the first draw, each run's first samples (its lines appear), a GPM line appearing, the hatching's title
    assert kinds["cmp_util"].count("full") <= 6 and kinds["cmp_epochs"].count("full") <= 3, kinds
    same_as_built(held, results._group_figures(box[0], variant, set(held)))
