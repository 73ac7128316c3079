"""A student's name: text from outside, checked by the project's text rules (one line, no control, bidi or
invisible character: bench.vocab.safe_text.unsafe), bounded, and known in a lab by its normalised key, so that
"Zoë" typed on two keyboards (composed or not), "ZOË" and "zoë " are one student, and a lookalike in full-width
letters too (NFKC)."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from bench.vocab.safe_text import unsafe

NAME_MAX = 40  # characters, as shown
_SPACES = re.compile(r"\s+")
_ALLOWED_FORMAT = frozenset("\u200d")  # the zero-width joiner: inside an emoji sequence, as people type them


class NameRefused(ValueError):
    """A name the lab cannot take, and why (said to the student as it is)."""


@dataclass(frozen=True)
class Student:
    """A name as shown (trimmed, composed: NFC) and the key a lab knows it by (NFKC, case-folded, spaces as one)."""

    name: str
    key: str


def student(text: object) -> Student:
    """``text`` as a student's name.

    Raises:
        NameRefused: not text, blank, longer than NAME_MAX, or holding a character that is not plain text.
    """
    if not isinstance(text, str):
        raise NameRefused("the name must be text")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise NameRefused("the name must be valid Unicode text") from None
    composed = unicodedata.normalize("NFC", text)
    for char in composed:  # before spaces are folded: a newline or a tab is refused, never made a space
        if unsafe(char) or (unicodedata.category(char) in ("Cf", "Co", "Cn", "Cs") and char not in _ALLOWED_FORMAT):
            raise NameRefused(f"the name holds the character U+{ord(char):04X}, which is not shown as text: "
                              f"type letters, digits and spaces")
    shown = _SPACES.sub(" ", composed).strip()
    if not shown:
        raise NameRefused("the name is empty: type the name the class knows you by")
    if len(shown) > NAME_MAX:
        raise NameRefused(f"the name is {len(shown)} characters long: at most {NAME_MAX}")
    return Student(name=shown, key=key_of(shown))


def key_of(name: str) -> str:
    """The key two spellings of one name share: NFKC, case-folded (then NFKC again: folding can undo it), one
    space between words."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())
    return _SPACES.sub(" ", folded).strip()
