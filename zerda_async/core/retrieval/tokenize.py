"""Tokeniser shared by the BM25 index and its queries (defined in :mod:`..index.tokens`).

The token pattern is the one the query analyzer uses for keyword extraction:
runs of at least two word characters or Arabic-block letters, taken from the
lower-cased text.  There is no stop-word removal and no normalisation, so a
hamza form and its bare letter are different tokens.
"""

from __future__ import annotations

from ..index.tokens import TOKEN_PATTERN, tokenize

__all__ = ["TOKEN_PATTERN", "tokenize"]
