"""Packing formatted chunks into a budget, and locating each chunk's text in the result.

Two packers share one record, :class:`Piece` (a chunk rendered by a template, split
into the marker printed before its text, the text, and what follows it):

* :func:`pack_documented` reproduces the documented composer exactly: the first
  chunk always goes in (cut to what is left), packing stops at the first chunk
  that does not fit, and a final clamp may cut into the footer;
* :func:`pack_fit` skips a chunk that does not fit and tries the next, fills what
  is left with whole sentences of the best skipped chunk, and never cuts the
  template's header or footer.

Both return the context with one :class:`~zerda_async.core.models.Citation` per
chunk whose text appears in it, so citations come from the same arithmetic that
built the string instead of a search in it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import msgspec

from .config import LengthCounter
from .models import Citation
from .templates import ContextTemplate
from .truncation import ELLIPSIS, longest_fitting_prefix, sentence_prefix
from .validation import PACKING_MODES

__all__ = ["PACKING_MODES", "Origin", "Piece", "origin_of", "pack_documented", "pack_fit"]

"""Values of ``composer.packing``."""

Truncator = Callable[[str, int], str]
Origin = tuple[int | None, str | None, int | None] | None
"""A chunk's page, section and start offset in its document (see :func:`origin_of`)."""


def origin_of(metadata: Any) -> Origin:
    """``(page, section, doc_start)`` from a chunk's metadata, or None when it has none.

    Read from the keys ``zerda index`` writes (``page``, ``section``,
    ``doc_start``); values of another type are ignored rather than guessed.
    """
    if type(metadata) is not dict and not isinstance(metadata, Mapping):
        return None
    get = metadata.get
    page, section, start = get("page"), get("section"), get("doc_start")
    if page is None and section is None and start is None:
        return None
    origin = (
        page if isinstance(page, int) and not isinstance(page, bool) else None,
        section if isinstance(section, str) and section else None,
        start if isinstance(start, int) and not isinstance(start, bool) else None,
    )
    return None if origin == (None, None, None) else origin


def _cite(piece: Piece, start: int, end: int, truncated: bool, doc_offset: int = 0) -> Citation:
    """The citation of ``piece`` kept at ``context[start:end]``.

    ``doc_offset`` is where the kept text starts inside the piece's text (a
    clamp keeps a prefix, so it is 0 there).
    """
    page, section, doc_start = piece.origin or (None, None, None)
    span = (
        (None, None)
        if doc_start is None
        else (doc_start + doc_offset, doc_start + doc_offset + end - start)
    )
    return Citation(
        doc_id=piece.doc_id,
        source=piece.source,
        label=piece.label,
        start=start,
        end=end,
        truncated=truncated,
        page=page,
        section=section,
        doc_start=span[0],
        doc_end=span[1],
    )


class Piece(msgspec.Struct, frozen=True):
    """One chunk as a template renders it: ``prefix + text + suffix``.

    ``prefix`` holds the citation marker (``"[Source: x]\\n"``), ``text`` the
    stripped chunk text, ``suffix`` the optional metadata line.
    """

    doc_id: str
    source: str
    prefix: str
    text: str
    suffix: str
    origin: Origin = None

    @property
    def formatted(self) -> str:
        """The rendered chunk."""
        return self.prefix + self.text + self.suffix

    @property
    def label(self) -> str:
        """The citation marker the template printed (``""`` when it prints none)."""
        return self.prefix.strip()


class _Part(msgspec.Struct, frozen=True):
    """A piece of the joined context: the string, and for a chunk its piece and text kept."""

    string: str
    piece: Piece | None = None
    text_len: int = 0


def _frame(tmpl: ContextTemplate, sep: str, count: LengthCounter) -> tuple[str, str, int]:
    """The header and footer as placed, and what they are charged (the documented rule).

    The footer is charged with its leading newline plus one separator; the header
    without the separator that follows it.
    """
    header = tmpl.header.rstrip() if tmpl.header else ""
    footer = tmpl.footer.lstrip() if tmpl.footer else ""
    cost = (count(header) if header else 0) + (count(tmpl.footer) + count(sep) if footer else 0)
    return header, footer, cost


def _join(parts: Sequence[_Part], sep: str) -> tuple[str, list[Citation]]:
    """Join ``parts`` with ``sep`` and record where each chunk's kept text landed."""
    citations: list[Citation] = []
    pos = 0
    for part in parts:
        piece = part.piece
        if piece is not None:
            start = pos + len(piece.prefix)
            end = start + max(0, part.text_len)
            if end > start:
                citations.append(_cite(piece, start, end, part.text_len < len(piece.text)))
        pos += len(part.string) + len(sep)
    return sep.join(p.string for p in parts), citations


def _clamp(citations: list[Citation], kept: int) -> list[Citation]:
    """The citations of a context cut after ``kept`` code points."""
    out: list[Citation] = []
    for cit in citations:
        end = min(cit.end, kept)
        if end > cit.start:
            truncated = cit.truncated or end < cit.end
            doc_end = None if cit.doc_start is None else cit.doc_start + end - cit.start
            out.append(msgspec.structs.replace(cit, end=end, truncated=truncated, doc_end=doc_end))
    return out


def pack_documented(
    pieces: Sequence[Piece],
    tmpl: ContextTemplate,
    sep: str,
    budget: int,
    count: LengthCounter,
    hard_truncate: Truncator,
) -> tuple[str, list[Citation]]:
    """The documented packing (see the module docstring), with citations."""
    header, footer, frame_cost = _frame(tmpl, sep, count)
    parts: list[_Part] = [_Part(header)] if header else []
    available = budget - frame_cost
    included = 0
    for piece in pieces:
        chunk_text = piece.formatted
        chunk_len = count(chunk_text) + count(sep)
        if available - chunk_len < 0:
            if included == 0:
                # The first chunk always goes in, cut to what is left (ignoring its
                # separator); the final clamp fixes the rest.
                cut = hard_truncate(chunk_text, available)
                kept = len(cut) if cut == chunk_text else len(cut) - len(ELLIPSIS)
                parts.append(_Part(cut, piece, min(len(piece.text), kept - len(piece.prefix))))
                included += 1
            break
        parts.append(_Part(chunk_text, piece, len(piece.text)))
        available -= chunk_len
        included += 1
    if footer:
        parts.append(_Part(footer))
    context, citations = _join(parts, sep)
    if count(context) > budget:
        context = hard_truncate(context, budget)
        citations = _clamp(citations, len(context) - len(ELLIPSIS))
    return context, citations


def _sentences_that_fit(piece: Piece, available: int, sep: str, count: LengthCounter) -> str:
    """The longest run of whole leading sentences of ``piece`` that fits ``available``."""
    sep_cost = count(sep)

    def fits(text: str) -> bool:
        return count(piece.prefix + text + piece.suffix) + sep_cost <= available

    return sentence_prefix(piece.text, longest_fitting_prefix(piece.text, fits))


def _choose(
    pieces: Sequence[Piece], available: int, sep: str, count: LengthCounter
) -> list[tuple[int, str]]:
    """Indexes and kept texts of the pieces packed into ``available``, in input order."""
    chosen: list[tuple[int, str]] = []
    skipped: list[int] = []
    for idx, piece in enumerate(pieces):
        cost = count(piece.formatted) + count(sep)
        if cost <= available:
            chosen.append((idx, piece.text))
            available -= cost
        else:
            skipped.append(idx)
    # What is left goes to whole sentences of the best chunk that did not fit.
    for idx in skipped:
        kept = _sentences_that_fit(pieces[idx], available, sep, count)
        if kept:
            chosen.append((idx, kept))
            break
    return sorted(chosen)


def pack_fit(
    pieces: Sequence[Piece],
    tmpl: ContextTemplate,
    sep: str,
    budget: int,
    count: LengthCounter,
    word_truncate: Truncator,
) -> tuple[str, list[Citation]]:
    """Skip-and-continue packing with sentence cuts; the header and footer stay whole.

    When not one sentence of any chunk fits, the best chunk is cut at a word
    boundary with an ellipsis (``word_truncate``), so a tight budget still gets
    text.  When not even the frame fits, the context is the frame alone: the
    frame is never cut.
    """
    header, footer, frame_cost = _frame(tmpl, sep, count)
    chosen = _choose(pieces, budget - frame_cost, sep, count)
    fallback: _Part | None = None
    if not chosen and pieces:
        piece = pieces[0]
        room = budget - frame_cost - count(sep) - count(piece.prefix) - count(piece.suffix)
        if room > len(ELLIPSIS):
            cut = word_truncate(piece.text, room)
            kept = len(cut) if cut == piece.text else len(cut) - len(ELLIPSIS)
            fallback = _Part(piece.prefix + cut + piece.suffix, piece, kept)
    while True:
        body = [
            _Part(pieces[i].prefix + text + pieces[i].suffix, pieces[i], len(text))
            for i, text in chosen
        ]
        if fallback is not None:
            body = [fallback]
        parts = ([_Part(header)] if header else []) + body + ([_Part(footer)] if footer else [])
        context, citations = _join(parts, sep)
        # Token counters need not be additive: drop the last chunk until it fits.
        if count(context) <= budget or not (chosen or fallback):
            return context, citations
        if fallback is not None:
            fallback = None
        else:
            chosen.pop()
