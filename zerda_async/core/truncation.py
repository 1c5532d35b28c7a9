"""Truncation to a length budget, shared by the composer, the engine and the legacy API."""

from __future__ import annotations

import re
from collections.abc import Callable

from .config import LengthCounter

__all__ = ["ELLIPSIS", "longest_fitting_prefix", "sentence_prefix", "truncate"]

ELLIPSIS = "..."


def truncate(text: str, max_len: int, counter: LengthCounter, backoff: float | None) -> str:
    """Cut ``text`` so that it plus ``"..."`` fits in ``max_len`` units.

    Binary-searches the longest prefix whose length is at most ``max_len - 3``
    (so a ``max_len`` below 3 yields just ``"..."``).  With ``backoff`` set, the
    cut moves back to the last ASCII space when that space lies beyond
    ``backoff`` times the cut length (0.7 in the composer, 0.8 in the legacy
    compressor); the engine's own clamp passes ``None`` and never backs off.
    Text that already fits is returned unchanged.
    """
    if counter(text) <= max_len:
        return text
    lo, hi = 0, len(text)
    while lo < hi - 1:
        mid = (lo + hi) // 2
        if counter(text[:mid]) <= max_len - 3:
            lo = mid
        else:
            hi = mid
    cut = text[:lo]
    if backoff is not None:
        space = cut.rfind(" ")
        if space > lo * backoff:
            cut = cut[:space]
    return cut + ELLIPSIS


# Sentence ends in both scripts: Latin . ! ? and the ellipsis character, the Arabic
# question mark (U+061F) and the Arabic full stop (U+06D4).  A closing quote or
# bracket may follow the mark; the sentence ends at the next whitespace.
_SENTENCE_END = re.compile(r"[.!?…؟۔][\"'»”’)\]]*(?=\s)|\n\s*\n")


def longest_fitting_prefix(text: str, fits: Callable[[str], bool]) -> int:
    """The largest ``k`` with ``fits(text[:k])`` (0 when even the empty prefix fails).

    ``fits`` must be monotone (a prefix of a fitting text fits), as lengths are.
    """
    if fits(text):
        return len(text)
    lo, hi = 0, len(text)
    if not fits(""):
        return 0
    while lo < hi - 1:
        mid = (lo + hi) // 2
        if fits(text[:mid]):
            lo = mid
        else:
            hi = mid
    return lo


def sentence_prefix(text: str, limit: int) -> str:
    """The longest run of whole sentences of ``text`` within its first ``limit`` code points.

    Sentences end at ``. ! ? … ؟ ۔`` followed by whitespace, or at a blank line; the
    end of ``text`` counts as a sentence end when the whole text fits.  Returns ``""``
    when not even the first sentence fits, so callers can skip the chunk instead of
    printing a fragment.
    """
    if limit >= len(text):
        return text
    end = 0
    for match in _SENTENCE_END.finditer(text, 0, limit + 1):
        if match.end() <= limit:
            end = match.end()
    return text[:end].rstrip()
