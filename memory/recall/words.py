"""Text as the read path compares it: casefolded words without accents or punctuation.

One function, ``normalize``, which the planner, context assembly and the slot reading
(``memory.recall.asked``) share; ``context.normalize`` is the same function.
"""

from __future__ import annotations

import re
import unicodedata

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def normalize(text: str) -> str:
    """Casefolded, accent-free words separated by single spaces (punctuation and emoji dropped).

    >>> normalize("  I'm   a Graphic-Designer!! ")
    'i m a graphic designer'
    """
    if text.isascii():  # the same result: NFKD and the accent pass change no ASCII character
        return " ".join(_WORD.findall(text.lower()))
    folded = unicodedata.normalize("NFKD", text.casefold())
    folded = "".join(ch for ch in folded if not unicodedata.combining(ch))
    return " ".join(_WORD.findall(folded))
