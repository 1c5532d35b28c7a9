"""BM25 keyword retrieval over an in-memory inverted index.

The index is built once per :meth:`KeywordRetriever.index_chunks` call: a
vocabulary (term -> id) and, per term, a contiguous slice of postings holding
document ids and the document's precomputed BM25 contribution for that term.
A query then costs one vectorised accumulation per distinct query term; no
Python code runs per chunk.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..config import ContextEngineConfig, RetrieverConfig
from ..models import RetrievalMethod, ScoredChunk
from ._common import chunk_text, stable_top
from .tokenize import tokenize

__all__ = ["BM25_B", "BM25_K1", "KeywordRetriever"]

BM25_K1 = 1.5
"""BM25 term-frequency saturation constant."""

BM25_B = 0.75
"""BM25 document-length normalisation strength."""


@dataclass(frozen=True, slots=True)
class _Index:
    """One immutable index generation; swapped in whole so readers never see a mix."""

    chunks: tuple[Any, ...]
    vocabulary: dict[str, int]
    offsets: NDArray[np.int64]
    doc_ids: NDArray[np.signedinteger[Any]]
    weights: NDArray[np.float64]


def _build_index(chunks: list[Any]) -> _Index:
    token_lists = [tokenize(chunk_text(chunk)) for chunk in chunks]
    n_docs = len(token_lists)
    lengths = np.fromiter(map(len, token_lists), dtype=np.int64, count=n_docs)
    flat = list(chain.from_iterable(token_lists))
    vocabulary = {term: i for i, term in enumerate(dict.fromkeys(flat))}
    n_terms = len(vocabulary)
    doc_dtype = np.int32 if n_docs < 2**31 else np.int64
    if not flat:
        return _Index(
            chunks=tuple(chunks),
            vocabulary=vocabulary,
            offsets=np.zeros(1, dtype=np.int64),
            doc_ids=np.empty(0, dtype=doc_dtype),
            weights=np.empty(0, dtype=np.float64),
        )

    term_of_token = np.fromiter(map(vocabulary.__getitem__, flat), dtype=np.int64, count=len(flat))
    doc_of_token = np.repeat(np.arange(n_docs, dtype=np.int64), lengths)
    # One key per (term, doc) pair; sorting groups postings by term, then doc.
    keys, tf_counts = np.unique(term_of_token * n_docs + doc_of_token, return_counts=True)
    post_term = keys // n_docs
    post_doc = keys % n_docs
    df = np.bincount(post_term, minlength=n_terms)
    offsets = np.zeros(n_terms + 1, dtype=np.int64)
    np.cumsum(df, out=offsets[1:])

    # The arithmetic below mirrors the per-document formula term by term
    # (Python float semantics, left to right) so every weight is bit-identical
    # to the straightforward implementation.
    avgdl = int(lengths.sum()) / n_docs
    idf_arg = 1.0 + (n_docs - df + 0.5) / (df + 0.5)
    idf = np.array([math.log(x) for x in idf_arg.tolist()], dtype=np.float64)
    tf = tf_counts.astype(np.float64)
    dl = lengths[post_doc].astype(np.float64)
    length_ratio = BM25_B * dl / avgdl if avgdl != 0 else np.zeros_like(dl)
    weights = idf[post_term] * tf * (BM25_K1 + 1) / (tf + BM25_K1 * ((1 - BM25_B) + length_ratio))
    return _Index(
        chunks=tuple(chunks),
        vocabulary=vocabulary,
        offsets=offsets,
        doc_ids=post_doc.astype(doc_dtype),
        weights=weights,
    )


class KeywordRetriever:
    """BM25 retrieval (``k1 = 1.5``, ``b = 0.75``) with scores normalised to the best hit.

    ``chunks`` (if truthy) are indexed immediately.  Chunk text is read with the
    :class:`ScoredChunk` duck-typing rules and tokenised with
    :func:`~zerda_async.core.retrieval.tokenize.tokenize`.
    """

    def __init__(self, config: ContextEngineConfig, chunks: Iterable[Any] | None = None) -> None:
        self.cfg: RetrieverConfig = config.retriever
        self._index: _Index = _build_index([])
        if chunks:
            self.index_chunks(chunks)

    @property
    def chunks(self) -> list[Any]:
        """The indexed chunks, in index order."""
        return list(self._index.chunks)

    def index_chunks(self, chunks: Iterable[Any]) -> None:
        """Build a fresh index over ``chunks``, replacing any previous one.

        A text that cannot be lower-cased (``None`` once ``page_content`` is
        consulted) raises :class:`AttributeError` and leaves the old index in place.
        """
        self._index = _build_index(list(chunks))

    def retrieve(self, query: str, top_k: int) -> list[ScoredChunk]:
        """Best BM25 matches for ``query``, at most ``top_k`` (Python slice semantics).

        Only chunks sharing at least one token with the query are returned,
        best first (ties keep index order); ``keyword_score`` is the BM25 score
        divided by the best score, so the first result scores ``1.0``.
        """
        index = self._index
        terms = list(dict.fromkeys(tokenize(query)))
        n_docs = len(index.chunks)
        if not terms or n_docs == 0:
            return []
        scores = np.zeros(n_docs, dtype=np.float64)
        for term in terms:
            term_id = index.vocabulary.get(term)
            if term_id is None:
                continue
            start = int(index.offsets[term_id])
            stop = int(index.offsets[term_id + 1])
            # Doc ids are unique within one term's postings, so the buffered
            # fancy-index add touches each document at most once per term.
            scores[index.doc_ids[start:stop]] += index.weights[start:stop]
        hits = np.flatnonzero(scores > 0)
        if hits.shape[0] == 0:
            return []
        hit_scores = scores[hits]
        order = stable_top(hit_scores, top_k)
        if order.shape[0] == 0:
            return []
        picked = hits[order].tolist()
        values = hit_scores[order]
        normalised = (values / values[0]).tolist()
        return [
            ScoredChunk(
                chunk=index.chunks[doc],
                keyword_score=score,
                retrieval_method=RetrievalMethod.KEYWORD,
                retrieval_rank=rank,
            )
            for rank, (doc, score) in enumerate(zip(picked, normalised, strict=True))
        ]
