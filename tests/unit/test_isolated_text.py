"""Outside text is drawn isolated (bench.vocab.safe_text.isolated): a right-to-left override or any other bidi control
in a name reorders nothing after it, on the pages (ui.safe_text), in the charts and in the live header's words."""

from __future__ import annotations

import unicodedata
from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from bench.vocab import safe_text
from bench.vocab.config import RunConfig
from bench.vocab.run_info import RunInfo
from bench.vocab.safe_text import ISOLATE_END, ISOLATE_START, isolated
from ui import live
from ui import safe_text as ui_text

RLO = "\u202e"
BIDI = [chr(c) for c in (*range(0x202a, 0x202f), *range(0x2066, 0x206a), 0x200e, 0x200f, 0x061c)]
MOVING = ("R", "AL", "AN", "LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI")
EMBEDDINGS = frozenset("\u202a\u202b\u202c\u202d\u202e")
texts = st.lists(st.one_of(st.sampled_from([*BIDI, "cpu", " ", "\u05d0", "\u0627", "\u0661", "\\"]),
                           st.text(max_size=3)), max_size=8).map("".join)


def isolate_holds(shown: str) -> bool:
    """Whether ``shown`` is one isolate, FSI to its PDI, with no embedding or override inside and every isolate
    inside closed before it: nothing in it reaches the text after it."""
    if not (shown.startswith(ISOLATE_START) and shown.endswith(ISOLATE_END)):
        return False
    depth = 0
    for i, char in enumerate(shown):
        depth += char in "\u2066\u2067\u2068"
        depth -= char == ISOLATE_END
        if depth == 0 and i != len(shown) - 1:
            return False
    return depth == 0 and not EMBEDDINGS & set(shown)


def test_text_that_moves_nothing_is_unchanged() -> None:
    for text in ("cpu", "mlp s · synthetic-mnist · gpu:0 · batch 128", "Москва", "数据集", "NVIDIA H100 80GB HBM3", ""):
        assert isolated(text) == text
    assert isolated(42) == "42"


def test_an_override_in_a_name_is_isolated_and_shown() -> None:
    assert isolated(f"data{RLO}set") == f"{ISOLATE_START}data\\u202eset{ISOLATE_END}"


def test_right_to_left_words_are_isolated_as_they_are() -> None:
    assert isolated("\u05e0\u05ea\u05d5\u05e0\u05d9\u05dd 2") == f"{ISOLATE_START}\u05e0\u05ea\u05d5\u05e0\u05d9\u05dd 2{ISOLATE_END}"


def test_a_stray_isolate_end_cannot_close_the_isolate_early() -> None:
    shown = isolated(f"\u2069{RLO}cpu")
    assert shown == f"{ISOLATE_START}\\u2069\\u202ecpu{ISOLATE_END}" and isolate_holds(shown)
    assert isolated("a\u2067\u05d0\u2069b") == f"{ISOLATE_START}a\u2067\u05d0\u2069b{ISOLATE_END}", "a closed isolate stays"
    assert isolated("\u2068x") == f"{ISOLATE_START}\\u2068x{ISOLATE_END}", "an isolate never closed is shown"


def test_isolating_twice_isolates_once() -> None:
    once = isolated(f"x{RLO}")
    assert isolated(once) == once


@settings(derandomize=True, max_examples=300, deadline=None)
@given(texts)
def test_no_generated_text_reaches_past_its_isolate(text: str) -> None:
    shown = isolated(text)
    moving = any(unicodedata.bidirectional(c) in MOVING for c in text)
    assert isolate_holds(shown) if moving else shown == text
    assert isolated(shown) == shown


def test_the_pages_markdown_and_the_charts_draw_outside_text_isolated() -> None:
    name = f"evil{RLO}"
    assert ui_text.escape(name) == f"{ISOLATE_START}evil\\\\u202e{ISOLATE_END}"
    assert ui_text.code(name) == f"` {ISOLATE_START}evil\\u202e{ISOLATE_END} `"
    assert ui_text.escape("x" * 100 + RLO, limit=10).endswith("…"), "cut first, so the isolate's end is kept"
    assert safe_text.chart(f"<b>{name}") == f"{ISOLATE_START}&lt;b&gt;evil\\u202e{ISOLATE_END}"
    assert ui_text.escape("cpu · mlp") == "cpu · mlp" and safe_text.chart("cpu") == "cpu"


def test_the_live_headers_status_parts_isolate_each_outside_word() -> None:
    snap = SimpleNamespace(id=3, status="running", config=RunConfig(dataset=f"mnist{RLO}"),
                           info=RunInfo(placement=f"/device:CPU:0{RLO}"), owner=f"eve{RLO}", cluster=None)
    parts = [text for text, _ in live.status_parts(snap)]  # type: ignore[arg-type]
    assert "· cpu ·" in parts[2], "the label's own names are one line without bidi controls"
    assert not [text for text in parts if RLO in text], "no override reaches the header as it is"
    owner = next(text for text in parts if "run by" in text)
    assert owner == f" · run by {ISOLATE_START}eve\\u202e{ISOLATE_END} (shown from the store)"
