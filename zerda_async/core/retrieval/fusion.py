"""Weighted Reciprocal Rank Fusion of the retrievers' own candidate lists.

Each method ranks its own candidates; a chunk at 1-based rank ``r`` in the list
of a method with weight ``w`` earns ``w / (k + r)``, summed over the methods
that found it (chunks are matched by content hash; a repeat within one list
counts once, at its first rank).  Scores of different methods are never
compared, so a chunk found by one method only is not penalised by a zero from
the other.  Every fused chunk keeps the evidence: ``fused_score``, each
method's score (``vector_score`` ...) and 1-based rank (``vector_rank`` ...,
0 when that method did not find it).  Ties keep first-seen order (vector
list, then keyword, then metadata).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from ..models import RetrievalMethod, ScoredChunk

__all__ = ["first_places", "fuse_rrf"]


def _record(target: ScoredChunk, source: ScoredChunk, method: RetrievalMethod, rank: int) -> None:
    """Copy ``method``'s score and rank from ``source`` onto ``target``."""
    if method is RetrievalMethod.VECTOR:
        target.vector_score = source.vector_score
        target.vector_rank = rank
    elif method is RetrievalMethod.KEYWORD:
        target.keyword_score = source.keyword_score
        target.keyword_rank = rank
        target.query_coverage = source.query_coverage
    else:
        target.metadata_score = source.metadata_score
        target.metadata_rank = rank


def first_places(results: Sequence[ScoredChunk]) -> Iterator[tuple[int, str, ScoredChunk]]:
    """(1-based rank, content hash, chunk) of each chunk's first place in one method's list.

    A chunk listed twice by one method counts once, at its first place; the
    ranks still count every place, as both fusions define them.
    """
    seen: set[str] = set()
    for rank, sc in enumerate(results, start=1):
        key = sc.content_hash
        if key not in seen:
            seen.add(key)
            yield rank, key, sc


def fuse_rrf(
    lists: Sequence[tuple[RetrievalMethod, Sequence[ScoredChunk]]],
    top_k: int,
    weights: Mapping[RetrievalMethod, float],
    k: int = 60,
) -> list[ScoredChunk]:
    """The ``top_k`` best chunks of ``lists`` by weighted RRF, best first.

    ``retrieval_rank`` (0-based) and ``composite_score`` (= ``fused_score``) of
    the returned chunks are their fused position and score; a chunk found by
    more than one method is marked ``HYBRID``.  ``top_k`` cuts like a slice;
    ``k`` must be positive.
    """
    if k <= 0:
        raise ValueError(f"retriever.rrf_k must be positive, got {k!r}")
    fused: dict[str, ScoredChunk] = {}
    methods: dict[str, int] = {}
    for method, results in lists:
        weight = weights[method]
        for rank, key, sc in first_places(results):
            entry = fused.get(key)
            if entry is None:
                entry = fused[key] = sc
                # A retriever may hand back an object it returned before: start clean.
                entry.fused_score = 0.0
                entry.vector_rank = entry.keyword_rank = entry.metadata_rank = 0
                if method is not RetrievalMethod.KEYWORD:
                    entry.query_coverage = -1.0
                entry.retrieval_method = method
                methods[key] = 0
            _record(entry, sc, method, rank)
            entry.fused_score += weight / (k + rank)
            methods[key] += 1
    ordered = sorted(fused.values(), key=lambda sc: sc.fused_score, reverse=True)[:top_k]
    for position, entry in enumerate(ordered):
        if methods[entry.content_hash] > 1:
            entry.retrieval_method = RetrievalMethod.HYBRID
        entry.retrieval_rank = position
        entry.composite_score = entry.fused_score
    return ordered
