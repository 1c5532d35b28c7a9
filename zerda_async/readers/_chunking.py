"""Cutting a document's text into chunks that are slices of it.

The rules follow ``zerda index``'s chunker (paragraphs packed greedily up to
``max_chars``; a paragraph longer than that cut at sentence ends, then at
spaces), with two differences that keep a chunk traceable to its origin:

* a chunk is ``text[start:end]`` exactly — the whitespace between the
  paragraphs and sentences it packs is the document's own, never rewritten;
  only the whitespace around a chunk is left out;
* a page break and a heading always end a chunk, so each chunk lies on one
  page and in one section, which its citation names.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import pairwise

import msgspec

from ._document import Document

__all__ = [
    "LONG_DOCUMENT",
    "PARAGRAPH_BREAK",
    "SENTENCE_END",
    "DocumentChunk",
    "chunk_document",
    "chunk_size_for",
    "chunk_spans",
]

PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
"""A blank line (spaces or tabs allowed on it): where one paragraph ends and the next begins."""

_LATIN_INITIAL = r"\b[A-ZÀ-ÖØ-ÞА-ЯЁ]\."
"""A capital letter alone before a full stop: "John C. Messenger", "E. coli", "U.S.",
"É. Zola" (Latin, Latin-1 and Cyrillic capitals)."""

_ABBREVIATIONS = (
    *("Mr", "Mrs", "Ms", "Dr", "Prof", "St", "Mt", "Jr", "Sr", "Gen", "Col", "Lt", "Sgt"),
    *("Capt", "Gov", "Sen", "Rev", "Hon", "Fig", "vs", "cf", "e.g", "i.e", "et al"),
)
"""Titles and common abbreviations whose full stop does not end a sentence."""

_ARABIC_LETTER = r"(?<![\u0600-\u06FF\w])[\u0621-\u063A\u0641-\u0644\u0646\u0648-\u064A]"
_ARABIC_INITIALS = (rf"{_ARABIC_LETTER}\.", rf"{_ARABIC_LETTER}[\u064B-\u0652]\.")
"""An Arabic letter standing alone before a full stop ("و. هايدون بيرنز"), perhaps with
its vowel mark: no letter or mark may come before it (a word boundary would not do:
vowel marks are not word characters, so the last letter of "سابقًا" would look alone).
Meem and heh are left out: "651 م." and "1400 ه." are the era after a year, and end
sentences."""

SENTENCE_END = re.compile(
    r"(?<=[.!?؟。])(?=\s)"  # cheap test first: most marks are not followed by a space
    + rf"(?<!{_LATIN_INITIAL})"
    + "".join(rf"(?<!\b{re.escape(word)}\.)" for word in _ABBREVIATIONS)
    + "".join(rf"(?<!{initial})" for initial in _ARABIC_INITIALS)
    + r"\s+"
)
"""The white space after a sentence's final mark (Latin, Arabic ``؟`` or CJK ``。``),
unless the mark is the full stop of an initial, a title or a common abbreviation.

Cutting there would put half a name in one chunk and half in the next, where neither
matches a question on it.  A sentence that really ends on one ("hepatitis B.",
"World War I.") stays joined to the next, which costs only a longer piece."""

_NON_SPACE = re.compile(r"\S")


class DocumentChunk(msgspec.Struct, frozen=True):
    """A chunk of a document: ``text == document.text[start:end]``, its page and section."""

    text: str
    start: int
    end: int
    page: int | None = None
    section: tuple[str, ...] = ()


def _trimmed(text: str, start: int, end: int) -> tuple[int, int] | None:
    """``(start, end)`` without the whitespace at either side, or None when all blank."""
    found = _NON_SPACE.search(text, start, end)
    if found is None:
        return None
    start = found.start()
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _split_at(
    text: str, start: int, end: int, pattern: re.Pattern[str]
) -> Iterator[tuple[int, int]]:
    """The trimmed, non-blank spans of ``text[start:end]`` between matches of ``pattern``."""
    at = start
    for match in pattern.finditer(text, start, end):
        span = _trimmed(text, at, match.start())
        if span:
            yield span
        at = match.end()
    span = _trimmed(text, at, end)
    if span:
        yield span


def _hard_cuts(text: str, start: int, end: int, max_chars: int) -> Iterator[tuple[int, int]]:
    """``[start, end)`` in spans of at most ``max_chars``, cut at the last space that fits."""
    while end - start > max_chars:
        limit = start + max_chars
        cut = max(text.rfind(" ", start + 1, limit + 1), text.rfind("\n", start + 1, limit + 1))
        if cut <= start:
            cut = limit
        span = _trimmed(text, start, cut)
        if span:
            yield span
        rest = _trimmed(text, cut, end)
        if rest is None:
            return
        start = rest[0]
    yield start, end


def _pieces(text: str, start: int, end: int, max_chars: int) -> Iterator[tuple[int, int]]:
    """A paragraph as spans of at most ``max_chars``: whole sentences packed, cut at spaces
    if needed.  A long paragraph is packed on its own first (its first piece starts at
    its first sentence), as the ``split_text`` chunker does: chunks then start at
    paragraph starts as often as it, which retrieval measured better than packing
    sentences straight into the previous chunk (``bench/bench_headings.py``).
    """
    if end - start <= max_chars:
        yield start, end
        return
    current: tuple[int, int] | None = None
    for s_start, s_end in _split_at(text, start, end, SENTENCE_END):
        for piece in _hard_cuts(text, s_start, s_end, max_chars):
            if current is not None and piece[1] - current[0] <= max_chars:
                current = (current[0], piece[1])
            else:
                if current is not None:
                    yield current
                current = piece
    if current is not None:
        yield current


def chunk_spans(
    text: str, max_chars: int = 800, breaks: tuple[int, ...] | list[int] = ()
) -> list[tuple[int, int]]:
    """Spans ``(start, end)`` of the chunks of ``text``; none crosses an offset in ``breaks``."""
    if max_chars < 1:
        raise ValueError(f"max_chars must be positive, got {max_chars}")
    bounds = sorted({0, len(text), *(b for b in breaks if 0 < b < len(text))})
    spans: list[tuple[int, int]] = []
    for seg_start, seg_end in pairwise(bounds):
        current: tuple[int, int] | None = None
        for p_start, p_end in _split_at(text, seg_start, seg_end, PARAGRAPH_BREAK):
            for piece in _pieces(text, p_start, p_end, max_chars):
                if current is not None and piece[1] - current[0] <= max_chars:
                    current = (current[0], piece[1])
                else:
                    if current is not None:
                        spans.append(current)
                    current = piece
        if current is not None:
            spans.append(current)
    return spans


def chunk_document(document: Document, max_chars: int = 800) -> list[DocumentChunk]:
    """The chunks of ``document`` with their spans, pages and section paths."""
    breaks = [*document.pages, *(h.start for h in document.headings)]
    return [
        DocumentChunk(
            text=document.text[start:end],
            start=start,
            end=end,
            page=document.page_at(start),
            section=document.section_at(start),
        )
        for start, end in chunk_spans(document.text, max_chars, breaks)
    ]


LONG_DOCUMENT = 8000
"""Characters from which :func:`chunk_size_for` calls a document long.

Above every article of the Wikipedia-style public sets (ARCD, XQuAD: at most
5,547 characters whole) and below 83 of COVID-QA's 98 scientific articles
(``bench/bench_long_chunks.py``).
"""


def chunk_size_for(
    length: int, chunk_size: int, long_chunk_size: int, long_from: int = LONG_DOCUMENT
) -> int:
    """The chunk size of a document of ``length`` characters: ``long_chunk_size`` when it is long.

    A long document (at least ``long_from`` characters: a scientific article,
    a report) answers a question in a passage that a short chunk splits from
    the words the question shares with it; a short one (a few paragraphs)
    keeps ``chunk_size``.  ``long_chunk_size`` 0 keeps ``chunk_size`` for all.
    """
    if long_chunk_size > 0 and length >= long_from:
        return long_chunk_size
    return chunk_size
