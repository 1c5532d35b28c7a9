"""Hybrid retrieval: run the enabled retrievers and fuse their lists.

Lists are merged by content hash.  Documented fusion: each merged chunk scores
the weighted sum of its method scores; a chunk found by two or more methods
also earns a Reciprocal Rank Fusion bonus and is marked ``HYBRID``.  With
``retriever.fusion = "rrf"`` the lists are fused by weighted RRF instead
(:mod:`.fusion`).  The engine later
recomputes ``composite_score`` in its ranker, so the fused score only decides
which chunks survive the ``top_k`` cut and their ``retrieval_rank``.

``where=`` restricts instead of boosting: the filter language of
:mod:`zerda_async.core.filter_language`, pushed into each retriever that
accepts it (this package's three, marked ``accepts_where``), so a chunk outside
it is never scored into any list; the lists of other (injected) retrievers are
filtered on arrival.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, cast

from ...errors import ConfigError
from ..config import ContextEngineConfig, RetrieverConfig
from ..filter_language import Condition, Filters, matches, parse_filters
from ..models import RetrievalMethod, ScoredChunk
from ..strategy import HybridRetrieverStrategy
from .fusion import first_places, fuse_rrf

__all__ = [
    "RRF_K",
    "HybridRetriever",
    "MetadataSearcher",
    "QuerySearcher",
    "VectorSearcher",
]

RRF_K = 60
"""Reciprocal Rank Fusion constant: a chunk at 1-based rank r adds ``1 / (RRF_K + r)``."""


class QuerySearcher(Protocol):
    """A vector or keyword retriever: ``retrieve(query, top_k)``."""

    def retrieve(self, query: str, top_k: int, /) -> list[ScoredChunk]: ...


class VectorSearcher(Protocol):
    """A vector retriever that also accepts a precomputed ``query_vector``."""

    def retrieve(
        self, query: str, top_k: int, /, *, query_vector: Any = None
    ) -> list[ScoredChunk]: ...


class MetadataSearcher(Protocol):
    """A metadata retriever: ``retrieve(filters, top_k)``."""

    def retrieve(self, filters: dict[str, Any], top_k: int, /) -> list[ScoredChunk]: ...


class _Merged:
    """Fusion state of one content hash."""

    __slots__ = ("entry", "methods", "rrf")

    def __init__(self, entry: ScoredChunk, method: RetrievalMethod, rrf: float) -> None:
        self.entry = entry
        self.methods = [method]
        self.rrf = rrf


class HybridRetriever(HybridRetrieverStrategy):
    """Vector + BM25 (+ metadata) retrieval fused by content hash with an RRF bonus.

    Any retriever may be ``None`` (that method is skipped).  ``config.retriever``
    is read at every call: ``use_vector``, ``use_keyword``, ``use_metadata``,
    the three weights, ``top_k`` and ``metadata_filters``.
    """

    accepts_where = True
    """``retrieve`` takes ``where=`` (restricting filters, see the module notes)."""

    def __init__(
        self,
        config: ContextEngineConfig,
        vector_retriever: QuerySearcher | None = None,
        keyword_retriever: QuerySearcher | None = None,
        metadata_retriever: MetadataSearcher | None = None,
    ) -> None:
        self.config = config
        self.cfg: RetrieverConfig = config.retriever
        self.vector_retriever = vector_retriever
        self.keyword_retriever = keyword_retriever
        self.metadata_retriever = metadata_retriever

    def retrieve(
        self,
        query: str,
        top_k: int | None = None,
        filters: Mapping[str, Any] | None = None,
        *,
        query_vector: Any = None,
        where: Filters | None = None,
    ) -> list[ScoredChunk]:
        """Fused candidates for ``query``: at most ``top_k or config top_k``, best first.

        ``filters`` are laid over ``metadata_filters`` of the configuration and
        only used when metadata retrieval is enabled (they boost).  ``where``
        restricts every list to the chunks whose metadata satisfy it (see the
        module notes; a malformed one raises ``ConfigError`` naming its key).
        ``retrieval_rank`` and ``composite_score`` of the returned objects are
        set to their fused position and score.  A precomputed ``query_vector``
        is handed to the vector retriever (only when given, so a two-argument
        retriever works).
        """
        cfg = self.cfg
        k = top_k or cfg.top_k
        lists = self._method_lists(query, k, filters, query_vector, parse_filters(where))
        if cfg.fusion == "rrf":
            fused = fuse_rrf(lists, k, _weights(cfg), cfg.rrf_k)
            annotate = getattr(self.keyword_retriever, "annotate_coverage", None)
            if annotate is not None and any(sc.query_coverage < 0 for sc in fused):
                annotate(query, fused)
            return fused
        if cfg.fusion != "documented":
            raise ConfigError(
                f"unknown retriever.fusion {cfg.fusion!r}; expected 'documented' or 'rrf'"
            )
        return _fuse_documented(lists, k, cfg)

    def _method_lists(
        self,
        query: str,
        k: int,
        filters: Mapping[str, Any] | None,
        query_vector: Any,
        conditions: tuple[Condition, ...],
    ) -> list[tuple[RetrievalMethod, list[ScoredChunk]]]:
        """Each enabled method's own candidate list, in the documented order."""
        cfg = self.cfg
        eff_filters = {**cfg.metadata_filters, **(filters or {})}
        lists: list[tuple[RetrievalMethod, list[ScoredChunk]]] = []
        if cfg.use_vector and self.vector_retriever is not None:
            vec_kwargs: dict[str, Any] = {}
            if query_vector is not None:
                vec_kwargs["query_vector"] = query_vector
            found = _search(self.vector_retriever, conditions, query, k, **vec_kwargs)
            lists.append((RetrievalMethod.VECTOR, found))
        if cfg.use_keyword and self.keyword_retriever is not None:
            found = _search(self.keyword_retriever, conditions, query, k)
            lists.append((RetrievalMethod.KEYWORD, found))
        if cfg.use_metadata and self.metadata_retriever is not None and eff_filters:
            found = _search(self.metadata_retriever, conditions, eff_filters, k)
            lists.append((RetrievalMethod.METADATA, found))
        return lists


def _fuse_documented(
    lists: list[tuple[RetrievalMethod, list[ScoredChunk]]], k: int, cfg: RetrieverConfig
) -> list[ScoredChunk]:
    """The documented fusion: weighted scores, plus 1/(60+rank) for chunks several methods found."""
    merged: dict[str, _Merged] = {}
    for method, results in lists:
        for rank1, key, sc in first_places(results):
            bonus = 1 / (RRF_K + rank1)
            state = merged.get(key)
            if state is None:
                merged[key] = _Merged(sc, method, bonus)
                continue
            _copy_score(state.entry, sc, method)
            state.methods.append(method)
            state.rrf += bonus

    scored: list[tuple[float, ScoredChunk]] = []
    for state in merged.values():
        entry = state.entry
        composite = (
            cfg.vector_weight * entry.vector_score
            + cfg.keyword_weight * entry.keyword_score
            + cfg.metadata_weight * entry.metadata_score
        )
        if len(state.methods) > 1:
            composite = composite + state.rrf
            entry.retrieval_method = RetrievalMethod.HYBRID
        scored.append((composite, entry))

    scored.sort(key=lambda pair: pair[0], reverse=True)
    result: list[ScoredChunk] = []
    for rank, (composite, entry) in enumerate(scored[:k]):
        entry.retrieval_rank = rank
        entry.composite_score = composite
        result.append(entry)
    return result


def _search(
    retriever: Any, conditions: tuple[Condition, ...], first: Any, k: int, **kwargs: Any
) -> list[ScoredChunk]:
    """``retriever.retrieve(first, k, **kwargs)`` restricted to ``conditions``.

    A retriever marked ``accepts_where`` gets them (and never scores a chunk
    outside them); any other is called as documented and its list filtered.
    """
    if not conditions:
        return cast(list[ScoredChunk], retriever.retrieve(first, k, **kwargs))
    if getattr(retriever, "accepts_where", False):
        return cast(list[ScoredChunk], retriever.retrieve(first, k, where=conditions, **kwargs))
    found = retriever.retrieve(first, k, **kwargs)
    return [sc for sc in found if matches(sc.metadata, conditions)]


def _weights(cfg: RetrieverConfig) -> dict[RetrievalMethod, float]:
    return {
        RetrievalMethod.VECTOR: cfg.vector_weight,
        RetrievalMethod.KEYWORD: cfg.keyword_weight,
        RetrievalMethod.METADATA: cfg.metadata_weight,
    }


def _copy_score(target: ScoredChunk, source: ScoredChunk, method: RetrievalMethod) -> None:
    if method is RetrievalMethod.VECTOR:
        target.vector_score = source.vector_score
    elif method is RetrievalMethod.KEYWORD:
        target.keyword_score = source.keyword_score
    else:
        target.metadata_score = source.metadata_score
