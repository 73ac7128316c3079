"""The live run's header as one element: status line, progress and ETA, the four tiles and the lines under them
(achieved GFLOP/s, the GPU throttle note, energy), drawn by one components-v2 element that the browser mounts once
and then updates in place, text by text.

Drawn as ordinary Streamlit elements (a markdown line, a progress bar, four metrics with captions, captions) this part
of the panel was about fifteen elements that Streamlit's front end re-rendered at every refresh, the largest share of
what a watching page cost (docs/PERFORMANCE.md). Here a refresh sends one element whose data holds the numbers; the
browser changes only the text that differs. The words are the same as the Streamlit elements' (ui.live builds both
from the same functions), and the element carries Streamlit's test ids (stMetric, stProgress, ...), so the projector
view's sizes and the tests find it as they found the elements.
"""

from __future__ import annotations

from typing import Any

from ui import static_files, v2_component

COMPONENT_NAME = "bench_live_header"


def _component() -> Any:
    return v2_component.component(COMPONENT_NAME, "live_header")


def draw(data: dict[str, Any], *, key: str) -> None:
    """The header for ``data`` (ui.live.header_data): mounted once per page under ``key``, updated in place after."""
    _component()(key=key, data={**data, "script": static_files.static_url("live.js")})
