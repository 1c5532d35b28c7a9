"""Sentences of a chunk, for the sentence-level rerank measured by ``bench_rerank.py``.

A chunk of at most 400 characters holds two to four sentences; the answer to a
question usually sits in one of them, and a chunk's single e5 vector averages
it with the others.  The split is deliberately plain (end punctuation of both
scripts followed by space, or a line break), and a piece shorter than
``MIN_CHARS`` joins the one before it, so an abbreviation or a list marker does
not become a "sentence" of its own.
"""

from __future__ import annotations

import re

__all__ = ["MIN_CHARS", "sentences"]

MIN_CHARS = 25
_END = re.compile(r"(?<=[.!?\u061f\u06d4])\s+|\n+")


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` in order (the whole text when it has one)."""
    pieces: list[str] = []
    for raw in _END.split(text):
        piece = raw.strip()
        if not piece:
            continue
        if pieces and (len(piece) < MIN_CHARS or len(pieces[-1]) < MIN_CHARS):
            pieces[-1] = f"{pieces[-1]} {piece}"
        else:
            pieces.append(piece)
    return pieces or [text.strip()]
