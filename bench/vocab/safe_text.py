"""Text from outside (a run's label, a note, a device or file name, an error) made safe where it is shown: a terminal
runs no escape sequence of it, a spreadsheet runs no formula of it and a chart draws no markup of it. The one home of
these rules; the CLI's streams (:class:`TerminalStream`), every CSV the project writes
(``bench.output.report.spreadsheet_safe``) and every chart's names (``bench.output.charts``) apply them.
"""

from __future__ import annotations

import html
import unicodedata
from typing import Any

# Characters that reorder what follows them on screen (the "Trojan Source" bidi overrides and isolates, and the
# marks) or break a line where none is shown: shown escaped, as control characters are.
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_LINE_BREAKS = frozenset("\u2028\u2029")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}

# what makes a spreadsheet cell a formula (OWASP "CSV injection"), found after any leading blank or invisible text
FORMULA_STARTS = ("=", "+", "-", "@")
FORMULA_LEADS = ("\t", "\r")  # a cell starting with one of these is a formula to some spreadsheets, whatever follows


def chart(text: Any) -> str:
    """``text`` as a Plotly chart may draw it (a trace's name, an axis's category, a note on the plot): Plotly reads
    ``<a href>``, ``<b>``, ``<br>`` and the like in such text as markup, so ``<``, ``>`` and ``&`` are written as
    entities and the text shows as it is, a live link never."""
    return html.escape(str(text), quote=False)


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
