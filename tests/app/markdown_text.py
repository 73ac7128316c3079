"""Reading markdown as Streamlit draws it, for the tests that hold outside text to being shown as text."""

from __future__ import annotations

import re


def outside_code(markdown: str) -> str:
    """The parts of ``markdown`` outside its code spans (any fence length), where markup would act."""
    out, i = [], 0
    while i < len(markdown):
        if markdown[i] == "`":
            fence = re.match(r"`+", markdown[i:]).group(0)
            end = markdown.find(fence, i + len(fence))
            if end < 0:
                out.append(markdown[i:])
                break
            i = end + len(fence)
        else:
            out.append(markdown[i])
            i += 1
    return "".join(out)
