"""ui.live_messages: every message the stream sends parses as its type, the pages' header and line data are the
types the stream declares, and docs/schemas/live-*.schema.json are the types' schemas as written now."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from tests.unit.test_live_grow import publisher, run
from tests.unit.test_live_header import snap
from ui import live, live_messages


def test_the_schemas_in_docs_are_the_types_as_they_are():
    for name, schema in live_messages.schemas().items():
        path = live_messages.SCHEMAS / name
        assert path.exists(), f"{path} is missing: python -m ui.live_messages writes it"
        assert json.loads(path.read_text(encoding="utf-8")) == schema, f"{name} is stale: python -m ui.live_messages"


def test_the_pages_header_and_line_are_the_declared_types():
    s = snap()
    for kind, data in ((live_messages.RunHeader, live.header_data(s)),
                       (live_messages.GroupHeader, {"runs": [live.status_data(s)], "lines": []}),
                       (live_messages.SidebarLine, live.sidebar_line(s)),
                       (live_messages.SidebarLine, live.sidebar_line(None, "ready"))):
        sent = json.loads(json.dumps(data))  # as the stream sends it
        assert kind.model_validate(data).model_dump(mode="json") == sent, f"{kind.__name__} keeps every value sent"


def test_every_event_of_a_run_parses_as_its_type():
    box: list = [run(0, gpu=True)]
    pub = publisher(box)
    kinds = set()
    for n in range(1, 30, 2):
        box[0] = run(n, gpu=True)
        pub.refresh(force=True)
    for _, data in pub.since(0, "plain") or []:
        msg = live_messages.Tick.model_validate_json(data[6:-2])
        kinds |= {type(c).__name__ for c in msg.charts.values()}
    live_messages.LiveSnapshot.model_validate_json(pub.snapshot("plain")[1][6:-2])
    assert kinds == {"ChartFull", "ChartExtend"}, kinds


def test_a_message_that_is_not_its_type_is_refused():
    with pytest.raises(ValidationError):
        live_messages.Tick.model_validate({"kind": "tick", "seq": 1, "at": 0.0, "header": {"run": 1}})
    with pytest.raises(ValidationError):
        live_messages.Tick.model_validate({"kind": "tick", "seq": 1, "at": 0.0,
                                           "charts": {"util": {"op": "redraw"}}})
