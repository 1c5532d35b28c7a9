"""From an index's search hits to the fused candidates: the part every placement shares.

An index — the in-process one (:class:`~.searches.IndexSearches`), a saved
directory loaded into it, the PostgreSQL store or its local copy — answers
three searches with :class:`Hit` lists, best first, ties by corpus position:
vector (rounded cosine), keyword (raw BM25, with each hit's query coverage)
and metadata (the share of filter pairs matched), and tells the query's term
weights (:data:`~.coverage.QueryWeights`).  What to search is decided once
(:func:`plan_search`), the hits become the method lists here
(:func:`method_list`) and :func:`fuse_found` fuses them with the one fusion
(:func:`~.fusion.fuse`).  Only fetching the hits differs between a
placement in this process (plain calls) and a store (awaited calls), so two
placements holding the same chunks give the same candidates by construction.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from ..config import RetrieverConfig
from ..filter_language import Condition, Filters, parse_filters
from ..index.analysis import Analyzer, TermMemo
from ..models import RetrievalMethod, ScoredChunk
from .coverage import QueryWeights, annotate_coverage
from .fusion import MethodList, fuse, measures_coverage, search_depth
from .neighbours import neighbour_evidence

__all__ = ["Found", "Hit", "SearchPlan", "fuse_found", "method_list", "plan_search"]


class Hit(msgspec.Struct, frozen=True):
    """One search result with its evidence (a Struct: one is built per candidate).

    ``position`` is the chunk's corpus position in the index that found it;
    ``score`` its raw score for the method searched (vector: cosine rounded
    to 12 decimals; keyword: BM25, which the method list divides by the best
    one; metadata: the share of pairs matched); its rank is its place in the
    list.  ``coverage`` is the keyword search's query coverage (``-1``: not
    measured), ``content_hash`` the chunk's hash when the index memoised it
    (``""``: computed when needed).
    """

    position: int
    chunk: Any
    score: float
    coverage: float = -1.0
    content_hash: str = ""


class SearchPlan(msgspec.Struct, frozen=True):
    """What one retrieval searches: the run's query and options against the configuration.

    ``pairs`` are the boosting metadata pairs (empty: no metadata search),
    ``where`` the restricting filters every search applies before its cut,
    ``coverage`` whether the fusion measures every fused chunk's coverage.
    """

    query: str
    k: int
    vector: bool
    keyword: bool
    pairs: dict[str, Any]
    where: tuple[Condition, ...]
    coverage: bool
    depth: int = 0
    """How many hits each search returns (``k``, or ``retriever.fusion_depth`` for convex
    fusion, :func:`~.fusion.search_depth`); the fusion keeps ``k``."""

    @property
    def searched(self) -> int:
        """The depth of each search (``k`` for a plan built without one)."""
        return self.depth or self.k


def plan_search(
    cfg: RetrieverConfig,
    query: str,
    top_k: int | None,
    metadata_filters: Mapping[str, Any] | None,
    where: Filters | None,
) -> SearchPlan:
    """The plan of one retrieval (a malformed ``where`` raises ``ConfigError`` naming its key).

    ``metadata_filters`` are laid over the configuration's and only searched
    when metadata retrieval is enabled.
    """
    conditions = parse_filters(where)
    pairs = {**cfg.metadata_filters, **(metadata_filters or {})} if cfg.use_metadata else {}
    k = top_k or cfg.top_k
    coverage = measures_coverage(cfg)
    return SearchPlan(
        query,
        k,
        cfg.use_vector,
        cfg.use_keyword,
        pairs,
        conditions,
        coverage,
        search_depth(cfg, k),
    )


def method_list(
    method: RetrievalMethod, hits: list[Hit], min_vector_score: float = 0.0
) -> list[ScoredChunk]:
    """One method's candidate list from its hits, as the fusion takes it.

    Vector hits scoring below ``min_vector_score`` are dropped (after the
    search's cut, as the vector retriever does); keyword scores are divided
    by the best one, so the first scores ``1.0``, and keep their coverage.
    """
    if method is RetrievalMethod.VECTOR:
        return [
            ScoredChunk(
                chunk=h.chunk,
                _content_hash=h.content_hash,
                vector_score=h.score,
                retrieval_method=method,
                retrieval_rank=rank,
            )
            for rank, h in enumerate(h for h in hits if not h.score < min_vector_score)
        ]
    if method is RetrievalMethod.KEYWORD:
        best = hits[0].score if hits else 1.0
        return [
            ScoredChunk(
                chunk=h.chunk,
                _content_hash=h.content_hash,
                keyword_score=h.score / best,
                retrieval_method=method,
                retrieval_rank=rank,
                query_coverage=h.coverage,
            )
            for rank, h in enumerate(hits)
        ]
    return [
        ScoredChunk(
            chunk=h.chunk,
            _content_hash=h.content_hash,
            metadata_score=h.score,
            retrieval_method=method,
            retrieval_rank=rank,
        )
        for rank, h in enumerate(hits)
    ]


@dataclass(slots=True)
class Found:
    """The method lists of one retrieval (``None``: that method was not searched)."""

    vector: list[ScoredChunk] | None = None
    keyword: list[ScoredChunk] | None = None
    metadata: list[ScoredChunk] | None = None

    def lists(self) -> list[MethodList]:
        """The lists searched, in the fusion's order: vector, keyword, metadata."""
        pairs = (
            (RetrievalMethod.VECTOR, self.vector),
            (RetrievalMethod.KEYWORD, self.keyword),
            (RetrievalMethod.METADATA, self.metadata),
        )
        return [(method, found) for method, found in pairs if found is not None]


def fuse_found(
    plan: SearchPlan,
    cfg: RetrieverConfig,
    found: Found,
    query_weights: Callable[[], QueryWeights] | None,
    analyzer: Analyzer,
    memo: TermMemo,
) -> list[ScoredChunk]:
    """The fused candidates of ``found``; with ``plan.coverage``, every one's coverage measured.

    ``query_weights`` (called only when a fused chunk lacks coverage) gives the
    query's term weights in the index searched; ``analyzer`` is that index's
    text analyser, ``memo`` a cache of analysed chunk texts.  With convex fusion
    and ``cfg.neighbour_weight`` above 0, the keyword list's evidence counts its
    candidates' neighbours (:mod:`.neighbours`; needs ``query_weights``).
    """
    neighbours = cfg.fusion == "convex" and cfg.neighbour_weight > 0 and bool(found.keyword)
    weights = query_weights() if neighbours and query_weights is not None else None
    evidence = None
    if weights is not None and found.keyword:
        evidence = neighbour_evidence(found.keyword, weights, cfg.neighbour_weight, analyzer, memo)
    fused = fuse(found.lists(), plan.k, cfg, evidence)
    if plan.coverage and query_weights is not None and any(sc.query_coverage < 0 for sc in fused):
        annotate_coverage(fused, weights or query_weights(), analyzer, memo)
    return fused
