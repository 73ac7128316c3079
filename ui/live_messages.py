"""The live stream's messages, typed (ui.live_feed makes them, ui/static/ draws them; their JSON Schema is in
docs/schemas/live-*.schema.json, written by ``python -m ui.live_messages``).

Two kinds go on the stream (``GET /bench/live``, one ``data:`` line each): a ``LiveSnapshot`` for a viewer that joins
(everything drawn now), then a ``Tick`` per change, with only what changed. In a tick a field left out did not
change, a field present with ``null`` went away (``header: null``: no run is live; a chart ``null``: that chart is
gone). A chart's change is its figure whole (``ChartFull``) or its new points and marks (``ChartExtend``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMAS = Path(__file__).resolve().parent.parent / "docs" / "schemas"

# A run's live view: one header, its charts in this order (the note under the utilization chart, the loss chart the
# row's width), on Train, on the watch page and wherever a run is shown live. The browser takes it in the element's
# data (ui/static/live.js); a group's views (Compare, Sweep, the lesson) pass their own.
RUN_LAYOUT: dict[str, Any] = {"headers": "one", "charts": ["epochs", "util", "loss"], "note": "util",
                              "wide": ["loss"]}
# What "GPU %" means where NVML answers (the note under the utilization chart)
NVML_NOTE = ("GPU % is NVML's utilization: the share of time in which at least one kernel ran on the GPU, "
             "not how much of the chip was busy. A GPU can show 100 % while most of its cores idle.")


class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LiveState(_Message):
    """Which run is current and its status, as the stream says it (ui.live_feed.PageState.message): a page's
    Streamlit elements are redrawn when ``key`` changes."""

    key: str = Field(description="the state as a page's elements depend on it ('none', '<run>@<created>:live', ...)")
    run: int | None = None
    status: str | None = None
    active: bool = False


class StatusLine(_Message):
    icon: str = Field(description="a Material Symbols name ('directions_run'), or ''")
    parts: list[tuple[str, bool]] = Field(description="the line's text as runs, each (text, bold)")


class ProgressBar(_Message):
    fraction: float = Field(ge=0, le=1)
    text: str


class Tile(_Message):
    label: str
    value: str
    note: str | None = None
    help: str | None = None


class TextLine(_Message):
    kind: Literal["caption", "warning"]
    text: str = Field(description="markdown's **bold** and `code` only")


class RunHeader(_Message):
    """A live run's header: status line, progress bar, the tiles, the lines under them."""

    run: int
    status: StatusLine
    progress: ProgressBar
    tiles: list[Tile] = []
    lines: list[TextLine] = []
    primary: str | None = Field(None, description="the theme's primary colour, the bar's fill")


class GroupHeader(_Message):
    """A live group's header (Compare, Sweep, the lesson): each run's status line and bar, and the group's lines."""

    runs: list[RunHeader]
    lines: list[TextLine] = []


class SidebarLine(_Message):
    icon: str = ""
    text: str
    note: str | None = None


class ExtendGroup(_Message):
    """New points of some traces, as Plotly.extendTraces takes them: ``update[path][j]`` extends trace
    ``traces[j]``'s attribute ``path`` ('x', 'y', 'marker.pattern.shape', ...)."""

    traces: list[int]
    update: dict[str, list[list[Any]]]


class ChartFull(_Message):
    op: Literal["full"] = "full"
    sig: str = Field(description="what the traces are, without their points: the same sig may be redrawn in place")
    figure: dict[str, Any] = Field(description="a Plotly figure: {data, layout}")


class ChartExtend(_Message):
    op: Literal["extend"] = "extend"
    groups: list[ExtendGroup] = []
    layout: dict[str, Any] | None = Field(None, description="layout keys replaced whole")
    append: dict[str, list[Any]] | None = Field(None, description="layout lists grown: their new items")


ChartChange = ChartFull | ChartExtend


class Tick(_Message):
    """What changed: only the fields present changed."""

    kind: Literal["tick"] = "tick"
    seq: int = Field(description="this event's number; a viewer applies each once, in order")
    at: float = Field(description="when it was made, seconds since the epoch (the server's clock)")
    state: LiveState | None = None
    header: RunHeader | GroupHeader | None = None
    line: SidebarLine | None = None
    viewers: int | None = None
    charts: dict[str, ChartChange | None] = {}


class LiveSnapshot(_Message):
    """Everything a joining viewer draws now, then the ticks after ``seq``."""

    kind: Literal["snapshot"] = "snapshot"
    seq: int
    at: float
    viewers: int
    state: LiveState
    header: RunHeader | GroupHeader | None = None
    line: SidebarLine | None = None
    charts: dict[str, ChartFull] = {}
    config: dict[str, Any] = Field(description="Plotly's config for every chart")


def encode(message: Tick | LiveSnapshot) -> bytes:
    """One server-sent event: ``data: <json>`` and a blank line; a tick's fields not set are left out (unchanged)."""
    body = message.model_dump_json(exclude_unset=message.kind == "tick", exclude_none=False)
    return b"data: " + body.encode() + b"\n\n"


def schemas() -> dict[str, dict[str, Any]]:
    """The JSON Schema of each kind of message, by file name."""
    return {"live-tick.schema.json": Tick.model_json_schema(),
            "live-snapshot.schema.json": LiveSnapshot.model_json_schema()}


def write_schemas(folder: Path = SCHEMAS) -> list[Path]:
    written = []
    for name, schema in schemas().items():
        path = folder / name
        path.write_text(json.dumps(schema, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    for written_path in write_schemas():
        print(written_path)
