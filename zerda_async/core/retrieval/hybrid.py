"""Hybrid retrieval over retriever objects: run the enabled ones, fuse their lists.

The documented ``HybridRetriever`` (the sync facade's, and any engine given
retriever objects): it asks each retriever for its own candidate list and
hands the lists to the one fusion, :func:`~.fusion.fuse` (the documented
weighted sum with an RRF bonus, or ``retriever.fusion = "rrf"``); an index
searched through hits (:mod:`.hits`) is fused by the same function.  The
engine later recomputes ``composite_score`` in its ranker, so the fused score
only decides which chunks survive the ``top_k`` cut and their
``retrieval_rank``.

``where=`` restricts instead of boosting: the filter language of
:mod:`zerda_async.core.filter_language`, pushed into each retriever that
accepts it (this package's three, marked ``accepts_where``), so a chunk outside
it is never scored into any list; the lists of other (injected) retrievers are
filtered on arrival.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, cast

from ..config import ContextEngineConfig, RetrieverConfig
from ..filter_language import Condition, Filters, matches, parse_filters
from ..models import RetrievalMethod, ScoredChunk
from ..strategy import HybridRetrieverStrategy
from .fusion import RRF_K, MethodList, fuse, measures_coverage, search_depth

__all__ = [
    "RRF_K",
    "HybridRetriever",
    "MetadataSearcher",
    "QuerySearcher",
    "VectorSearcher",
]


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
        depth = search_depth(cfg, k)  # convex fusion fuses deeper lists than it keeps
        lists = self._method_lists(query, depth, filters, query_vector, parse_filters(where))
        fused = fuse(lists, k, cfg, self._neighbour_evidence(query, lists))
        if measures_coverage(cfg) and any(sc.query_coverage < 0 for sc in fused):
            annotate = getattr(self.keyword_retriever, "annotate_coverage", None)
            if annotate is not None:
                annotate(query, fused)
        return fused

    def _neighbour_evidence(self, query: str, lists: list[MethodList]) -> list[float] | None:
        """The keyword list's neighbour-aware evidence (``retriever.neighbour_weight``), or None.

        Only for convex fusion with a positive weight and a keyword retriever
        that measures it (``neighbour_evidence``, as :class:`.keyword.KeywordRetriever`).
        """
        cfg = self.cfg
        if cfg.fusion != "convex" or cfg.neighbour_weight <= 0:
            return None
        keyword = next((found for m, found in lists if m is RetrievalMethod.KEYWORD), None)
        measure = getattr(self.keyword_retriever, "neighbour_evidence", None)
        if not keyword or measure is None:
            return None
        return cast(list[float], measure(query, keyword, cfg.neighbour_weight))

    def _method_lists(
        self,
        query: str,
        k: int,
        filters: Mapping[str, Any] | None,
        query_vector: Any,
        conditions: tuple[Condition, ...],
    ) -> list[MethodList]:
        """Each enabled method's own candidate list, in the documented order."""
        cfg = self.cfg
        eff_filters = {**cfg.metadata_filters, **(filters or {})}
        lists: list[MethodList] = []
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
