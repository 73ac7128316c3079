"""Text from outside (a link's parameters, an imported record's labels, names and messages, an uploaded file's name)
shown inside the pages' markdown without being read as markdown or HTML: the one place that rule lives.

Streamlit renders st.markdown, st.info/warning/error/success, st.caption and labels as GitHub-flavoured markdown: a
link's ``[x](https://...)``, an image's ``![x](https://...)`` (which the browser then loads), a bare
``https://...`` (made a link), ``:red[...]`` and ``:material/...:`` directives, and ``$...$`` maths all act. ``code``
puts outside text in a code span, where none of them act; ``escape`` backslash-escapes it for running text. Both
draw it isolated (``bench.vocab.safe_text.isolated``), so a bidi control in it cannot reorder the rest of the line.
"""

from __future__ import annotations

import re
from typing import Any

from bench.vocab.safe_text import isolated

MAX_SHOWN = 80  # characters of an outside value shown; the rest is cut with an ellipsis
# the marks that can start markup in running text (CommonMark lets a backslash escape any of them): links and
# images, emphasis, code, HTML tags and entities, tables, strike-through, maths, Streamlit's :directives[...]
_ACTIVE = frozenset("\\`*_[]()<>!#|~$:{}&")
# GFM makes a bare "https://x", "www.x" and "a@b.c" a link, and Streamlit's renderer finds them in the text after
# the escapes are read ("https\://x" was still a link in a browser): a zero-width space after "://"'s colon, after a
# "www" before its dot and after an "@" leaves nothing it matches, and nothing a reader sees
_NO_LINK = "\u200b"
_BARE_ADDRESS = re.compile(r"(?i)(?<=:)(?=//)|(?<=www)(?=\.)|(?<=@)")


def _one_line(value: Any, limit: int) -> str:
    text = " ".join(str(value).split())  # newlines and tabs would start new markdown blocks
    return isolated(text if len(text) <= limit else text[:limit] + "…")


def code(value: Any, limit: int = MAX_SHOWN) -> str:
    """``value`` as an inline code span: its fence is longer than any run of backticks inside it, so the value
    cannot close the span early, and nothing in a code span is a link, an image, a directive or maths."""
    text = _one_line(value, limit)
    if not text:
        return "` `"
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    return f"{fence} {text} {fence}"  # one space each side, stripped by the renderer, lets the value touch a fence


def escape(value: Any, limit: int = MAX_SHOWN) -> str:
    """``value`` as plain running text: every mark that can start markup backslash-escaped (no link, image,
    emphasis, HTML tag, directive or maths can start), and a zero-width space in each bare address (``https://``,
    ``www.``, ``a@b``) so that none is made a link."""
    text = _BARE_ADDRESS.sub(_NO_LINK, _one_line(value, limit))
    return "".join(f"\\{ch}" if ch in _ACTIVE else ch for ch in text)
