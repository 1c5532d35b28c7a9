"""Tokeniser shared by the BM25 index and its queries.

The token pattern is the one the query analyzer uses for keyword extraction:
runs of at least two word characters or Arabic-block letters, taken from the
lower-cased text.  There is no stop-word removal and no normalisation, so a
hamza form and its bare letter are different tokens.
"""

from __future__ import annotations

import re

__all__ = ["TOKEN_PATTERN", "tokenize"]

TOKEN_PATTERN: re.Pattern[str] = re.compile(r"[\w\u0600-\u06FF]{2,}")
"""Compiled token regex (Unicode-aware ``\\w`` plus the Arabic block U+0600–U+06FF)."""


def tokenize(text: str) -> list[str]:
    """Return the tokens of ``text.lower()`` in order of appearance (duplicates kept).

    Anything without a ``lower`` method (``None`` included) raises
    :class:`AttributeError`, the same failure the documented package shows.
    """
    return TOKEN_PATTERN.findall(text.lower())
