"""Inverted-index postings in CSR form: per term, the documents holding it and how often.

A :class:`PostingSegment` covers a block of documents.  ``offsets[t]`` to
``offsets[t + 1]`` delimit term ``t``'s postings in ``docs`` (global document
positions, ascending) and ``tfs`` (term frequencies).  Segments are immutable;
they are built from tokenised batches, and merged (optionally dropping and
renumbering documents) with the same vectorised scatter, without a global sort.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "PostingSegment",
    "Triples",
    "assemble",
    "merge_segments",
    "segment_from_batches",
    "triples",
]

DocArray = NDArray[np.signedinteger[Any]]


@dataclass(frozen=True, slots=True)
class Triples:
    """Postings as parallel arrays sorted by (term, doc): one part of a segment to assemble."""

    terms: NDArray[np.int64]
    docs: NDArray[np.int64]
    tfs: NDArray[np.int32]


@dataclass(frozen=True, slots=True)
class PostingSegment:
    """CSR postings of a block of documents (see the module docstring)."""

    offsets: NDArray[np.int64]
    docs: DocArray
    tfs: NDArray[np.signedinteger[Any]]

    @property
    def n_terms(self) -> int:
        """Number of term ids this segment has offsets for."""
        return int(self.offsets.shape[0]) - 1

    @property
    def n_postings(self) -> int:
        """Number of (term, document) pairs."""
        return int(self.docs.shape[0])

    def postings(self, term_id: int) -> tuple[DocArray, NDArray[np.signedinteger[Any]]]:
        """Documents and term frequencies of ``term_id`` (empty views when absent)."""
        if term_id >= self.n_terms:
            return self.docs[:0], self.tfs[:0]
        start = int(self.offsets[term_id])
        stop = int(self.offsets[term_id + 1])
        return self.docs[start:stop], self.tfs[start:stop]


def _doc_dtype(limit: int) -> type[np.signedinteger[Any]]:
    return np.int32 if limit < 2**31 else np.int64


def triples(ids: NDArray[np.int64], lengths: NDArray[np.int64], start: int) -> Triples:
    """Postings of one tokenised batch whose first document has position ``start``."""
    n = int(lengths.shape[0])
    if ids.shape[0] == 0:
        empty = np.empty(0, dtype=np.int64)
        return Triples(terms=empty, docs=empty, tfs=np.empty(0, dtype=np.int32))
    local_doc = np.repeat(np.arange(n, dtype=np.int64), lengths)
    # One key per (term, doc) pair; sorting groups postings by term, then doc.
    keys, counts = np.unique(ids * n + local_doc, return_counts=True)
    return Triples(terms=keys // n, docs=keys % n + start, tfs=counts.astype(np.int32))


def assemble(parts: Sequence[Triples], n_terms: int, n_positions: int) -> PostingSegment:
    """One segment from ``parts`` given in document order, each sorted by (term, doc).

    Each posting is scattered straight to its final slot: ``offsets`` come from
    the summed document frequencies, and a running cursor per term places the
    parts one after the other, so documents stay ascending within each term.
    """
    df = np.zeros(n_terms, dtype=np.int64)
    for part in parts:
        df += np.bincount(part.terms, minlength=n_terms)
    offsets = np.zeros(n_terms + 1, dtype=np.int64)
    np.cumsum(df, out=offsets[1:])
    total = int(offsets[-1])
    docs = np.empty(total, dtype=_doc_dtype(n_positions))
    tfs = np.empty(total, dtype=np.int32)
    cursor = offsets[:-1].copy()
    for part in parts:
        if part.terms.shape[0] == 0:
            continue
        count = np.bincount(part.terms, minlength=n_terms)
        first = np.cumsum(count) - count
        rank = np.arange(part.terms.shape[0], dtype=np.int64) - first[part.terms]
        dest = cursor[part.terms] + rank
        docs[dest] = part.docs
        tfs[dest] = part.tfs
        cursor += count
    return PostingSegment(offsets=offsets, docs=docs, tfs=tfs)


def segment_from_batches(
    batches: Sequence[tuple[NDArray[np.int64], NDArray[np.int64]]],
    start: int,
    n_terms: int,
) -> PostingSegment:
    """A segment over tokenised ``batches`` (from ``encode_texts``) starting at ``start``."""
    parts = []
    position = start
    for ids, lengths in batches:
        parts.append(triples(ids, lengths, position))
        position += int(lengths.shape[0])
    return assemble(parts, n_terms, position)


def _segment_triples(segment: PostingSegment, renumber: NDArray[np.int64] | None) -> Triples:
    terms = np.repeat(np.arange(segment.n_terms, dtype=np.int64), np.diff(segment.offsets))
    docs = segment.docs.astype(np.int64)
    tfs = np.asarray(segment.tfs, dtype=np.int32)
    if renumber is not None:
        new_docs = renumber[docs]
        keep = new_docs >= 0
        return Triples(terms=terms[keep], docs=new_docs[keep], tfs=tfs[keep])
    return Triples(terms=terms, docs=docs, tfs=tfs)


def merge_segments(
    segments: Sequence[PostingSegment],
    n_terms: int,
    n_positions: int,
    renumber: NDArray[np.int64] | None = None,
) -> PostingSegment:
    """Merge ``segments`` (in document order) into one.

    ``renumber`` (optional) maps each old position to its new one, or to ``-1``
    to drop the document; it must preserve document order.
    """
    parts = [_segment_triples(segment, renumber) for segment in segments]
    return assemble(parts, n_terms, n_positions)
