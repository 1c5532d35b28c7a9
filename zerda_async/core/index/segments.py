"""When to merge the segments an incrementally updated index accumulates.

Every ``add`` appends one small segment.  Merging the last two segments
whenever the older one is at most twice the size of the newer keeps the
number of segments logarithmic in the corpus size while each document is
copied only a logarithmic number of times (the scheme of a binary counter).
A hard cap bounds the count whatever the sizes.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["MAX_SEGMENTS", "trailing_merge_count"]

MAX_SEGMENTS = 12
"""Never keep more segments than this."""

_SIZE_RATIO = 2


def trailing_merge_count(sizes: Sequence[int]) -> int:
    """How many trailing segments (of ``sizes``, oldest first) to merge into one (0 or >= 2)."""
    count = 1
    total = sizes[-1] if sizes else 0
    while count < len(sizes) and sizes[-count - 1] <= _SIZE_RATIO * total:
        total += sizes[-count - 1]
        count += 1
    if len(sizes) - count + 1 > MAX_SEGMENTS:
        count = len(sizes) - MAX_SEGMENTS + 1
    return count if count >= 2 else 0
