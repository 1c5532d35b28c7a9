"""The chunker of texts without a known structure: JSON Lines records and the quality bench.

Paragraphs (blank-line separated; a Markdown heading always starts a new
chunk) are packed greedily up to ``max_chars``, and a paragraph longer than
the limit is cut at sentence ends, then at spaces.  The pieces are stripped
and joined again (a space between sentences, a blank line between
paragraphs), so a chunk's text may differ from its source in whitespace:
files read by :mod:`zerda_async.readers` are cut by its span chunker instead,
whose chunks are slices of the document's text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from zerda_async.readers import PARAGRAPH_BREAK, SENTENCE_END

__all__ = ["split_text"]

_HEADING = re.compile(r"^#{1,6}\s")


def _hard_split(text: str, max_chars: int) -> Iterator[str]:
    """Cut ``text`` at the last space before ``max_chars`` (mid-word only when there is none)."""
    while len(text) > max_chars:
        cut = text.rfind(" ", 0, max_chars + 1)
        if cut <= 0:
            cut = max_chars
        yield text[:cut].strip()
        text = text[cut:].strip()
    if text:
        yield text


def _pieces(paragraph: str, max_chars: int, sentence_end: re.Pattern[str]) -> Iterator[str]:
    """A paragraph as pieces of at most ``max_chars``: whole sentences, cut at spaces if needed."""
    if len(paragraph) <= max_chars:
        yield paragraph
        return
    current = ""
    for sentence in sentence_end.split(paragraph):
        for piece in _hard_split(sentence.strip(), max_chars):
            if current and len(current) + 1 + len(piece) <= max_chars:
                current = f"{current} {piece}"
            else:
                if current:
                    yield current
                current = piece
    if current:
        yield current


def split_text(
    text: str, max_chars: int = 800, *, sentence_end: re.Pattern[str] = SENTENCE_END
) -> list[str]:
    """Split ``text`` into chunks of at most ``max_chars`` characters (see module notes).

    ``sentence_end`` matches the white space between two sentences of a long
    paragraph; the default (:data:`zerda_async.readers.SENTENCE_END`) does not
    cut after an initial or a common abbreviation ("John C. Messenger").
    """
    if max_chars < 1:
        raise ValueError(f"max_chars must be positive, got {max_chars}")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    chunks: list[str] = []
    current = ""
    for raw in PARAGRAPH_BREAK.split(text):
        paragraph = raw.strip()
        if not paragraph:
            continue
        if _HEADING.match(paragraph) and current:
            chunks.append(current)
            current = ""
        for piece in _pieces(paragraph, max_chars, sentence_end):
            if not current:
                current = piece
            elif len(current) + 2 + len(piece) <= max_chars:
                current = f"{current}\n\n{piece}"
            else:
                chunks.append(current)
                current = piece
    if current:
        chunks.append(current)
    return chunks
