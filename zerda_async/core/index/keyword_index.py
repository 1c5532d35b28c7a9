"""BM25 over per-term postings that stay correct while documents come and go.

A :class:`KeywordIndex` is an immutable snapshot: a vocabulary (term -> id),
posting segments in CSR form, the token count of every position, and a live
mask (removed documents keep their position until compaction).  Because the
corpus statistics (``N``, document frequencies, average length) change with
every update, BM25 weights are computed at query time for the postings a query
touches, with the same float expression, evaluated in the same order, as the
straightforward per-document formula of spec section B.2, so scores are
bit-identical to those of a fresh index over the live documents.

Weights depend only on the snapshot, so each snapshot caches the weights of
the terms it has scored (up to :data:`WEIGHT_CACHE_POSTINGS` postings): a
static index pays the weight arithmetic once per term, like a precomputed one.

The vocabulary only ever grows and is shared by successive snapshots (an older
snapshot simply has no postings for newer ids), so appending never copies it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .analysis import DOCUMENTED, Analyzer, analyzer_for
from .dense_sums import DENSE_SUMS_MAX, dense_coverage, dense_sums
from .postings import PostingSegment, merge_segments, segment_from_batches
from .segments import trailing_merge_count
from .tokens import encode_texts

__all__ = [
    "BM25_B",
    "BM25_K1",
    "WEIGHT_CACHE_POSTINGS",
    "KeywordIndex",
    "bm25_idf",
    "bm25_weights",
    "query_coverage",
]

BM25_K1 = 1.5
"""BM25 term-frequency saturation constant."""

BM25_B = 0.75
"""BM25 document-length normalisation strength."""

WEIGHT_CACHE_POSTINGS = 1 << 22
"""Postings whose BM25 weights one snapshot keeps (about 50 MB); then it starts over."""

_EMPTY_HITS = np.empty(0, dtype=np.intp)

TermWeights = tuple[NDArray[np.signedinteger[Any]], NDArray[np.float64]]


class _WeightCache:
    """Per-snapshot term id -> (live docs, weights).  Plain dict operations only, so
    concurrent readers in worker threads at worst compute a weight twice."""

    __slots__ = ("entries", "postings")

    def __init__(self) -> None:
        self.entries: dict[int, TermWeights] = {}
        self.postings = 0

    def put(self, term_id: int, value: TermWeights) -> None:
        size = int(value[0].shape[0])
        if self.postings + size > WEIGHT_CACHE_POSTINGS:
            self.entries = {}
            self.postings = 0
        if size <= WEIGHT_CACHE_POSTINGS:
            self.entries[term_id] = value
            self.postings += size


_EMPTY_SCORES = np.empty(0, dtype=np.float64)


@dataclass(frozen=True, slots=True)
class KeywordIndex:
    """One immutable BM25 index generation (see the module docstring)."""

    vocabulary: dict[str, int]
    segments: tuple[PostingSegment, ...]
    lengths: NDArray[np.signedinteger[Any]]
    live: NDArray[np.bool_] | None
    n_live: int
    live_length: int
    analyzer_name: str = DOCUMENTED
    _cache: _WeightCache = field(default_factory=_WeightCache, init=False, repr=False)

    # -- construction -------------------------------------------------------------

    @classmethod
    def build(
        cls,
        texts: Sequence[Any],
        *,
        progress: Callable[[int], None] | None = None,
        analyzer: str = DOCUMENTED,
    ) -> KeywordIndex:
        """A fresh index over ``texts`` (positions ``0 .. len(texts) - 1``).

        Tokenising is the only per-text work; ``progress(done)`` reports it.
        ``analyzer`` names the text analyser (:mod:`.analysis`) of the index:
        appended texts and queries are tokenised by it too.
        """
        vocabulary: dict[str, int] = {}
        batches = encode_texts(texts, vocabulary, progress=progress, tokenizer=_tokenizer(analyzer))
        segment = segment_from_batches(batches, 0, len(vocabulary))
        lengths = _lengths(batches)
        return cls(
            vocabulary=vocabulary,
            segments=(segment,),
            lengths=lengths,
            live=None,
            n_live=int(lengths.shape[0]),
            live_length=int(lengths.sum(dtype=np.int64)),
            analyzer_name=analyzer,
        )

    @classmethod
    def from_arrays(
        cls,
        vocabulary: dict[str, int],
        segment: PostingSegment,
        lengths: NDArray[np.signedinteger[Any]],
        analyzer: str = DOCUMENTED,
    ) -> KeywordIndex:
        """An index over stored arrays (every position live), e.g. memory-mapped ones."""
        analyzer_for(analyzer)  # an unknown name fails here, not at the first query
        return cls(
            analyzer_name=analyzer,
            vocabulary=vocabulary,
            segments=(segment,),
            lengths=lengths,
            live=None,
            n_live=int(lengths.shape[0]),
            live_length=int(np.asarray(lengths).sum(dtype=np.int64)),
        )

    @property
    def analyzer(self) -> Analyzer:
        """The text analyser that tokenised this index (use it for queries too)."""
        return analyzer_for(self.analyzer_name)

    @property
    def n_positions(self) -> int:
        """Positions in the index, removed ones included."""
        return int(self.lengths.shape[0])

    def appended(self, texts: Sequence[Any]) -> KeywordIndex:
        """A new snapshot with ``texts`` appended at the next positions (all live)."""
        if not texts:
            return self
        start = self.n_positions
        batches = encode_texts(texts, self.vocabulary, tokenizer=_tokenizer(self.analyzer_name))
        n_terms = len(self.vocabulary)
        segments = (*self.segments, segment_from_batches(batches, start, n_terms))
        added = _lengths(batches)
        count = trailing_merge_count([s.n_postings for s in segments])
        if count:
            merged = merge_segments(segments[-count:], n_terms, start + added.shape[0])
            segments = (*segments[:-count], merged)
        live = None if self.live is None else np.concatenate((self.live, np.ones(len(texts), bool)))
        return replace(
            self,
            segments=segments,
            lengths=np.concatenate((self.lengths, added.astype(self.lengths.dtype))),
            live=live,
            n_live=self.n_live + len(texts),
            live_length=self.live_length + int(added.sum(dtype=np.int64)),
        )

    def merged(self) -> KeywordIndex:
        """The same index with its postings in one segment (positions unchanged)."""
        if len(self.segments) <= 1:
            return self
        segment = merge_segments(self.segments, len(self.vocabulary), self.n_positions)
        return replace(self, segments=(segment,))

    def with_live(self, live: NDArray[np.bool_]) -> KeywordIndex:
        """The same postings with a new live mask (one flag per position)."""
        return replace(
            self,
            live=live,
            n_live=int(np.count_nonzero(live)),
            live_length=int(self.lengths[live].sum(dtype=np.int64)),
        )

    def compacted(self, renumber: NDArray[np.int64], n_new: int) -> KeywordIndex:
        """Drop removed positions: ``renumber`` maps old positions to new ones or ``-1``."""
        keep = renumber >= 0
        segment = merge_segments(self.segments, len(self.vocabulary), n_new, renumber)
        lengths = self.lengths[keep]
        return replace(
            self,
            segments=(segment,),
            lengths=lengths,
            live=None,
            n_live=n_new,
            live_length=int(lengths.sum(dtype=np.int64)),
        )

    # -- queries ---------------------------------------------------------------------

    def postings(
        self, term: str
    ) -> tuple[NDArray[np.signedinteger[Any]], NDArray[np.signedinteger[Any]]] | None:
        """Live documents holding ``term`` (ascending) and its frequencies, or None."""
        term_id = self.vocabulary.get(term)
        return None if term_id is None else self._postings(term_id)

    def _postings(
        self, term_id: int
    ) -> tuple[NDArray[np.signedinteger[Any]], NDArray[np.signedinteger[Any]]]:
        parts = [segment.postings(term_id) for segment in self.segments]
        if len(parts) == 1:
            docs, tfs = parts[0]
        else:
            docs = np.concatenate([p[0] for p in parts])
            tfs = np.concatenate([p[1] for p in parts])
        if self.live is not None and docs.shape[0]:
            alive = self.live[docs]
            docs, tfs = docs[alive], tfs[alive]
        return docs, tfs

    def term_weights(self, term: str) -> TermWeights | None:
        """Live documents holding ``term`` and their BM25 weights for it, or None."""
        term_id = self.vocabulary.get(term)
        if term_id is None:
            return None
        cached = self._cache.entries.get(term_id)
        if cached is not None:
            return cached
        docs, tfs = self._postings(term_id)
        df = int(docs.shape[0])
        if df == 0:
            return None
        n_docs = self.n_live
        weights = bm25_weights(
            tfs, self.lengths[docs], bm25_idf(n_docs, df), self.live_length / n_docs
        )
        self._cache.put(term_id, (docs, weights))
        return docs, weights

    def idf(self, term: str) -> float:
        """BM25 idf of ``term`` over the live documents (``df = 0`` for an unknown term).

        An unknown term gets the largest idf, ``ln(1 + (N + 0.5) / 0.5)``: a query
        word the corpus never uses is the most specific word of that query.
        """
        held = self.term_weights(term)
        return bm25_idf(self.n_live, 0 if held is None else int(held[0].shape[0]))

    def query_weights(self, query: str) -> list[tuple[str, float]]:
        """``query``'s distinct analysed terms, in order, each with its :meth:`idf`."""
        return [(term, self.idf(term)) for term in dict.fromkeys(self.analyzer.tokenize(query))]

    def coverage(
        self, terms: Sequence[str], positions: NDArray[np.signedinteger[Any]]
    ) -> NDArray[np.float64]:
        """Per position, the idf-weighted share of the distinct ``terms`` it contains.

        ``sum(idf(t) for t in terms if t in doc) / sum(idf(t) for t in terms)``: an
        absolute measure in [0, 1] (unlike a BM25 score, it does not grow with the
        corpus or the query's length), 0 for every position when ``terms`` is empty.
        """
        unique = list(dict.fromkeys(terms))
        if not unique or self.n_live == 0:
            return np.zeros(positions.shape[0], dtype=np.float64)
        held: list[tuple[float, NDArray[np.signedinteger[Any]] | None]] = []
        for term in unique:
            found = self.term_weights(term)
            docs = None if found is None else found[0]
            held.append((bm25_idf(self.n_live, 0 if docs is None else int(docs.shape[0])), docs))
        if self.n_positions <= DENSE_SUMS_MAX:
            return dense_coverage(held, positions, self.n_positions)
        return query_coverage(held, positions)

    def scores(self, terms: Sequence[str]) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
        """Positions with a positive BM25 score for the distinct ``terms`` (ascending), scores.

        ``score(d) = sum over terms of idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / avgdl))``
        with ``idf = ln(1 + (N - df + 0.5) / (df + 0.5))`` over live documents,
        accumulated term by term in the given order.
        """
        if not terms or self.n_live == 0:
            return _EMPTY_HITS, _EMPTY_SCORES
        n_positions = self.n_positions
        if n_positions <= DENSE_SUMS_MAX:
            held = [found for found in map(self.term_weights, terms) if found is not None]
            scores = dense_sums(held, n_positions)
        else:
            scores = np.zeros(n_positions, dtype=np.float64)
            for term in terms:
                found = self.term_weights(term)
                if found is not None:
                    # Doc ids are unique within one term's postings, so the buffered
                    # fancy-index add touches each document at most once per term.
                    scores[found[0]] += found[1]
        hits = np.flatnonzero(scores > 0)
        return hits, scores[hits]


def query_coverage(
    held: Iterable[tuple[float, NDArray[np.signedinteger[Any]] | None]],
    positions: NDArray[np.signedinteger[Any]],
) -> NDArray[np.float64]:
    """Per position, the idf-weighted share of the query terms it holds.

    ``held`` is each distinct query term's idf and the ascending positions
    holding it (``None`` or empty: none does), in query order; the sums run
    in that order, so every index that passes the same pairs (the in-memory
    :meth:`KeywordIndex.coverage`, the PostgreSQL store) gets the same
    floats.  0 for every position when the idfs sum to 0.
    """
    found = np.zeros(positions.shape[0], dtype=np.float64)
    total = 0.0
    for weight, docs in held:
        total += weight
        if docs is None or docs.shape[0] == 0 or positions.shape[0] == 0:
            continue
        # Postings are ascending, so a binary search tells whether each position is one.
        at = np.minimum(np.searchsorted(docs, positions), docs.shape[0] - 1)
        found[docs[at] == positions] += weight
    return found / total if total > 0 else found


def bm25_idf(n_docs: int, df: int) -> float:
    """The BM25 idf of a term held by ``df`` of ``n_docs`` documents."""
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def bm25_weights(
    tfs: NDArray[np.signedinteger[Any]],
    lengths: NDArray[np.signedinteger[Any]],
    idf: float,
    avgdl: float,
) -> NDArray[np.float64]:
    """BM25 weights of one term's postings (term frequencies, token counts of their chunks).

    The float expression and its evaluation order are those of the
    per-document formula of spec section B.2, so each weight is bit-identical
    to it; every index (in memory or in a store) computes its weights here.
    """
    tf = tfs.astype(np.float64)
    dl = lengths.astype(np.float64)
    length_ratio = BM25_B * dl / avgdl if avgdl != 0 else np.zeros_like(dl)
    weights: NDArray[np.float64] = (
        idf * tf * (BM25_K1 + 1) / (tf + BM25_K1 * ((1 - BM25_B) + length_ratio))
    )
    return weights


def _tokenizer(analyzer: str) -> Callable[[str], list[str]] | None:
    """None (the documented batch path) for the documented analyser, else its tokenize."""
    found = analyzer_for(analyzer)
    return None if analyzer == DOCUMENTED else found.tokenize


def _lengths(batches: Sequence[tuple[NDArray[np.int64], NDArray[np.int64]]]) -> NDArray[np.int32]:
    if not batches:
        return np.empty(0, dtype=np.int32)
    return np.concatenate([lengths for _, lengths in batches]).astype(np.int32)
