"""BM25 keyword retrieval over per-term postings (:mod:`zerda_async.core.index.keyword_index`).

The retriever holds one immutable view (chunks + :class:`KeywordIndex`, see
:mod:`._base`) and swaps it whole on :meth:`KeywordRetriever.index_chunks`, so a ``retrieve``
running in a worker thread never sees a half-built index.  A query costs one
vectorised accumulation per distinct query term; no Python code runs per chunk.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..config import ContextEngineConfig
from ..filter_language import Condition
from ..index.analysis import TermMemo
from ..index.chunks import keyword_text
from ..index.keyword_index import BM25_B, BM25_K1, KeywordIndex
from ..models import RetrievalMethod, ScoredChunk
from ._base import IndexedRetriever
from ._common import stable_top
from .coverage import annotate_coverage
from .neighbours import neighbour_evidence

__all__ = ["BM25_B", "BM25_K1", "KeywordRetriever"]


class KeywordRetriever(IndexedRetriever[KeywordIndex]):
    """BM25 retrieval (``k1 = 1.5``, ``b = 0.75``) with scores normalised to the best hit.

    ``chunks`` (if truthy) are indexed immediately.  Chunk text is read with the
    :class:`ScoredChunk` duck-typing rules and tokenised by the text analyser
    ``config.retriever.text_analyzer`` (read when an index is built; the
    documented one is :func:`~zerda_async.core.retrieval.tokenize.tokenize`).
    Queries are tokenised by the analyser of the index they search.  A text
    that cannot be lower-cased (``None`` once ``page_content`` is consulted)
    raises :class:`AttributeError` and leaves the old index in place.
    """

    accepts_where = True
    """``retrieve`` takes ``where=`` (parsed restricting filters)."""

    def __init__(self, config: ContextEngineConfig, chunks: Iterable[Any] | None = None) -> None:
        self._terms = TermMemo()
        super().__init__(config, chunks)

    def _build(self, items: Sequence[Any]) -> KeywordIndex:
        return KeywordIndex.build([keyword_text(c) for c in items], analyzer=self.cfg.text_analyzer)

    def retrieve(
        self, query: str, top_k: int, *, where: tuple[Condition, ...] = ()
    ) -> list[ScoredChunk]:
        """Best BM25 matches for ``query``, at most ``top_k`` (Python slice semantics).

        Only chunks sharing at least one token with the query are returned,
        best first (ties keep index order); ``keyword_score`` is the BM25 score
        divided by the best score, so the first result scores ``1.0``.
        ``where`` (parsed restricting filters) drops the chunks whose metadata
        do not satisfy it before the top-k cut (BM25 statistics stay those of
        the whole corpus).
        """
        view = self._view
        terms = list(dict.fromkeys(view.index.analyzer.tokenize(query)))
        hits, hit_scores = view.index.scores(terms)
        if where:
            keep = view.masks.mask(where)[hits]
            hits, hit_scores = hits[keep], hit_scores[keep]
        if hits.shape[0] == 0:
            return []
        order = stable_top(hit_scores, top_k)
        if order.shape[0] == 0:
            return []
        positions = hits[order]
        values = hit_scores[order]
        normalised = (values / values[0]).tolist()
        coverage = view.index.coverage(terms, positions).tolist()
        docs = positions.tolist()
        chunks = view.chunks
        method = RetrievalMethod.KEYWORD
        # Built directly (no keyword call per hit), with the memoised hashes.
        return [
            ScoredChunk(
                chunks[doc],
                keyword_score=score,
                retrieval_method=method,
                retrieval_rank=rank,
                _content_hash=h,
                query_coverage=share,
            )
            for rank, (doc, score, share, h) in enumerate(
                zip(docs, normalised, coverage, view.hashes.digests(docs), strict=True)
            )
        ]

    def neighbour_evidence(
        self, query: str, candidates: Sequence[ScoredChunk], weight: float
    ) -> list[float]:
        """Each candidate's keyword evidence with its neighbours' terms at ``weight``.

        See :func:`~.neighbours.neighbour_evidence`; the query's terms are
        weighted with this index's idf, as :meth:`annotate_coverage` does.
        """
        index = self._view.index
        weights = index.query_weights(query)
        return neighbour_evidence(candidates, weights, weight, index.analyzer, self._terms)

    def annotate_coverage(self, query: str, chunks: Sequence[ScoredChunk]) -> None:
        """Set ``query_coverage`` on the ``chunks`` that lack it (found by another method).

        The chunk's text is analysed like an indexed one (memoised by content hash)
        and weighted with this index's idf, so the value equals the one a keyword
        hit of the same text gets.
        """
        index = self._view.index
        annotate_coverage(chunks, index.query_weights(query), index.analyzer, self._terms)
