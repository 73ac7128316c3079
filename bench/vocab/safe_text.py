"""Text from outside (a run's label, a note, a device or file name, an error) made safe where it is shown: a terminal
runs no escape sequence of it, a spreadsheet runs no formula of it, a chart draws no markup of it and no page lets it
reorder the words around it. The one home of these rules; the CLI's streams (:class:`TerminalStream`), every CSV the
project writes (``bench.output.report.spreadsheet_safe``), every chart's names (``bench.output.charts``) and every
page's outside text (``ui.safe_text``, the live header's words: :func:`isolated`) apply them.
"""

from __future__ import annotations

import html
import unicodedata
from typing import Any

# Characters that reorder what follows them on screen (the "Trojan Source" bidi overrides and isolates, and the
# marks) or break a line where none is shown: shown escaped, as control characters are.
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_LINE_BREAKS = frozenset("\u2028\u2029")
# what a name a machine gave (a cluster node's id or kind) may not hold: it is drawn as it is (bench.vocab.limits)
REORDERING = _BIDI | _LINE_BREAKS
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}

# Unicode's isolates (UAX #9): what lies between FSI and its PDI takes its own direction and moves nothing around it
ISOLATE_START, ISOLATE_END = "\u2068", "\u2069"
_ISOLATE_OPENERS = frozenset("\u2066\u2067\u2068")
# the bidi classes of text that can move other text on a line: right-to-left letters, Arabic digits, and the
# explicit embeddings, overrides and isolates; text of any other class (Latin, Cyrillic, CJK, digits, marks of
# punctuation) lays out left to right in place and moves nothing
_MOVING = frozenset({"R", "AL", "AN", "LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI"})

# what makes a spreadsheet cell a formula (OWASP "CSV injection"), found after any leading blank or invisible text
FORMULA_STARTS = ("=", "+", "-", "@")
FORMULA_LEADS = ("\t", "\r")  # a cell starting with one of these is a formula to some spreadsheets, whatever follows


def chart(text: Any) -> str:
    """``text`` as a Plotly chart may draw it (a trace's name, an axis's category, a note on the plot): Plotly reads
    ``<a href>``, ``<b>``, ``<br>`` and the like in such text as markup, so ``<``, ``>`` and ``&`` are written as
    entities and the text shows as it is, a live link never; and it is :func:`isolated`, so a bidi control in a name
    reorders nothing after it."""
    return html.escape(isolated(text), quote=False)


def isolated(text: Any) -> str:
    """``text`` as a page shows it beside other words (a data set's, a model's or a GPU's name, a run's label, an
    owner, a file name): it cannot reorder the rest of the line. Text that can move other text (right-to-left letters,
    Arabic digits, a bidi control) is wrapped in Unicode's first-strong isolate (FSI ... PDI); a bidi control inside
    it is shown as its escape (U+202E as the visible text ``\\u202e``), except an isolate opened and closed within
    it, which is inert. Any other text is returned unchanged: it moves nothing. Wrapping twice wraps once.

    Args:
        text: anything; not a string: its ``str()``.
    """
    text = text if isinstance(text, str) else str(text)
    if not any(unicodedata.bidirectional(c) in _MOVING for c in text):
        return text
    if text.startswith(ISOLATE_START) and _balanced(text) == text and _closes_at_end(text):
        return text
    return ISOLATE_START + _balanced(text) + ISOLATE_END


def _balanced(text: str) -> str:
    """``text`` with every bidi control shown as its escape but the isolates it opens and closes itself (those end
    where they start, so nothing they hold reaches past them)."""
    kept: set[int] = set()
    opened: list[int] = []
    for i, char in enumerate(text):
        if char in _ISOLATE_OPENERS:
            opened.append(i)
        elif char == ISOLATE_END and opened:
            kept.update((opened.pop(), i))
    return "".join(_escaped(c) if c in _BIDI and i not in kept else c for i, c in enumerate(text))


def _closes_at_end(text: str) -> bool:
    """Whether the isolate ``text`` opens with is the one its last character closes."""
    depth = 0
    for i, char in enumerate(text):
        depth += char in _ISOLATE_OPENERS
        depth -= char == ISOLATE_END
        if depth == 0:
            return i == len(text) - 1
    return False


def unsafe(char: str) -> bool:
    """Whether ``char`` does something on a terminal instead of showing: a C0 or C1 control character (ESC, CR,
    BEL, ...), DEL, a bidi override, isolate or mark, or a Unicode line or paragraph separator."""
    return unicodedata.category(char) == "Cc" or char in _BIDI or char in _LINE_BREAKS


def _escaped(char: str) -> str:
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal(text: Any, *, keep: str = "") -> str:
    """``text`` as a terminal may print it: every control character, bidi control and line separator shown as its
    escape (ESC as the visible text ``\\x1b``, CR as ``\\r``, U+202E as ``\\u202e``); other text unchanged.

    Args:
        text: anything; not a string: its ``str()``.
        keep: characters printed as they are (``"\\n"`` for whole lines of output; none for one field of a table).
    """
    text = text if isinstance(text, str) else str(text)
    if not any(unsafe(c) for c in text):
        return text
    return "".join(_escaped(c) if unsafe(c) and c not in keep else c for c in text)


def one_line(raw: Any, limit: int) -> str | None:
    """A name or label from outside (a GPU's name a driver gave, a data set or model a script named, a run's label)
    as one line of valid Unicode that a record holds and reads back: bytes decoded (bad bytes replaced), a lone
    surrogate replaced, every character :func:`unsafe` flags (control, bidi, line break) made a space, blanks
    collapsed, at most ``limit`` characters; None where nothing is left (or it was no text). The one cleaning rule of
    such text; what it returns is a ``bench.vocab.limits.Line`` (a ``Name`` at ``limit`` NAME_MAX)."""
    if raw is None or isinstance(raw, bool):
        return None
    if isinstance(raw, (bytes, bytearray)):
        raw = bytes(raw).decode("utf-8", "replace")
    words = str(raw).encode("utf-8", "replace").decode("utf-8")
    cleaned = " ".join("".join(" " if unsafe(c) else c for c in words).split())
    return cleaned[:limit].rstrip() or None


def _invisible_or_blank(char: str) -> bool:
    return char.isspace() or unsafe(char) or unicodedata.category(char) in ("Cf", "Zs")


def is_formula(text: str) -> bool:
    """Whether a spreadsheet could run ``text`` as a formula: it starts with = + - @, after any leading blanks or
    invisible characters (" =1+1", "\\n@SUM(...)", "\\u202e=cmd"), or it starts with a tab or CR."""
    if text.startswith(FORMULA_LEADS):
        return True
    lead = next((c for c in text if not _invisible_or_blank(c)), "")
    return lead in FORMULA_STARTS


def spreadsheet_cell(value: Any) -> Any:
    """A cell no spreadsheet runs as a formula: text that :func:`is_formula` flags gets a leading quote (shown as
    text); anything else, numbers included, unchanged."""
    if isinstance(value, str) and is_formula(value):
        return "'" + value
    return value


class TerminalStream:
    """A text stream (stdout, stderr) that shows every character :func:`unsafe` flags escaped, except newlines:
    the CLI prints through it, so no listing can forget. Its own control sequences (a progress line's CR) go out
    with :meth:`control`."""

    def __init__(self, inner: Any):
        self.inner = inner

    def write(self, text: str) -> int:
        self.inner.write(terminal(text, keep="\n"))
        return len(text)

    def control(self, sequence: str) -> None:
        """Write the program's own terminal control ``sequence`` (never outside text) as it is."""
        self.inner.write(sequence)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, encoding, fileno, ...: the stream's own
        return getattr(self.inner, name)
