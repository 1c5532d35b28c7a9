"""Truncation to a length budget, shared by the composer, the engine and the legacy API."""

from __future__ import annotations

from .config import LengthCounter

__all__ = ["ELLIPSIS", "truncate"]

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
