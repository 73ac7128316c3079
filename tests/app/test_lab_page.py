"""AppTest of the Lab page: it renders, opens a lab from its form (the room's board says so), refuses an
assignment outside the project naming the field, and is view-only behind the presenter key; on a cluster its
Devices are the cluster's."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from ui import lab_routes

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def own_room():
    lab_routes.install(None)
    yield
    room = lab_routes._room
    if room is not None:
        room.shutdown()
        room.manager.shutdown()
    lab_routes._room = None


def test_the_lab_page_opens_a_lab():
    at = AppTest.from_file(str(ROOT / "pages/lab_teacher.py"), default_timeout=30).run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Lab: every student trains"
    at.text_input[0].set_value("Week 3")
    at.button[0].click().run()
    assert not at.exception, at.exception
    assert any("is open" in s.value for s in at.success), [s.value for s in at.success]
    room = lab_routes.room()
    room.publish()
    board = room.board()
    assert board.state == "open" and board.assignment is not None and board.assignment.title == "Week 3"


def test_an_assignment_with_no_family_is_refused_naming_it():
    at = AppTest.from_file(str(ROOT / "pages/lab_teacher.py"), default_timeout=30).run()
    at.multiselect[0].set_value([])
    at.button[0].click().run()
    assert not at.exception
    assert any("families" in e.value for e in at.error), [e.value for e in at.error]


def test_behind_the_presenter_key_the_page_is_view_only(monkeypatch):
    monkeypatch.setenv("BENCH_PRESENTER_KEY", "sesame")
    at = AppTest.from_file(str(ROOT / "pages/lab_teacher.py"), default_timeout=30).run()
    assert not at.exception
    assert any("View only" in i.value for i in at.info)
    assert not at.button, "no control without the key"


def test_on_a_cluster_the_lab_offers_the_clusters_devices_not_this_machines(monkeypatch):
    from types import SimpleNamespace

    from bench.cluster.launch import ClusterMachine
    from bench.cluster.nodes import NodeMachine
    from tests.unit.test_cluster_parts import CPU_NODE, GPU_NODE
    from ui import common

    gpu_node = NodeMachine(node=GPU_NODE, hardware=SimpleNamespace(gpus=[object()], gpu_reason=None), node_cores=8)
    cpu_node = NodeMachine(node=CPU_NODE, hardware=SimpleNamespace(gpus=[], gpu_reason="no GPU"), node_cores=4)
    cluster = ClusterMachine("head:6379", [cpu_node, gpu_node])
    monkeypatch.setattr(common, "get_manager", lambda: SimpleNamespace(launcher=object(), machine=cluster))
    assert common.lab_targets() == ["cpu", "gpu:0"], "a GPU node's whole GPU, though the dashboard's machine has none"
    monkeypatch.setattr(common, "get_manager", lambda: SimpleNamespace(launcher=None))
    assert common.lab_targets() == common.target_options(common.get_hardware())
