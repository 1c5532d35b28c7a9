"""The async engine's retriever over its own index: searches, method lists, the one fusion.

:class:`IndexRetriever` takes the place of a :class:`~.hybrid.HybridRetriever`
over the async engine's :class:`~zerda_async.core.index.CorpusIndex` (built,
updated or loaded from a saved directory).  It searches through
:class:`~.searches.IndexSearches` — the memory index store's and the
PostgreSQL local copy's code — and turns the hits into the fused candidates
with :mod:`.hits`, as an engine on an index store does after awaiting its
searches.  So the in-process engine is one placement of the index among
others, not a path of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from zerda_async.runtime import Steps, finish

from ..config import ContextEngineConfig, RetrieverConfig
from ..filter_language import Filters
from ..index.analysis import TermMemo
from ..models import RetrievalMethod, ScoredChunk
from ..script_centring import ScriptDirection, question_vector
from .hits import Found, SearchPlan, fuse_found, method_list, plan_search
from .hybrid import _search
from .searches import IndexSearches

__all__ = ["IndexRetriever"]

QueryCheck = Callable[[Any, int], NDArray[np.float64]]


class IndexRetriever:
    """Hybrid retrieval over one index snapshot (``searches``), fused like a store's hits.

    ``vectors`` says whether vector search is possible (the index holds
    vectors and the engine can embed queries); ``embed_fn`` embeds a query
    when :meth:`retrieve` gets no ``query_vector``; ``query_check(vector,
    dim)`` validates every query vector (clear errors for NaN or a wrong
    dimension).  ``vector_retriever`` (a retriever over a vector-store adapter)
    answers the vector list instead of the index.  ``direction``: the
    embedder's script direction (with its question map), applied to query
    vectors by ``retriever.script_centring`` and ``retriever.question_map``.
    ``config.retriever`` is read at every call.
    """

    accepts_where = True
    """``retrieve`` takes ``where=`` (restricting filters)."""

    def __init__(
        self,
        config: ContextEngineConfig,
        searches: IndexSearches,
        *,
        vectors: bool,
        embed_fn: Callable[[Any], Any] | None = None,
        query_check: QueryCheck | None = None,
        vector_retriever: Any = None,
        direction: ScriptDirection | None = None,
    ) -> None:
        self.cfg: RetrieverConfig = config.retriever
        self.searches = searches
        self._vectors = vectors
        self._embed_fn = embed_fn
        self._query_check = query_check
        self._vector_retriever = vector_retriever
        self._direction = direction
        self._terms = TermMemo()

    @property
    def chunks(self) -> list[Any]:
        """The live chunks of the index, in corpus order."""
        return self.searches.index.live_chunks()

    def retrieve(
        self,
        query: str,
        top_k: int | None = None,
        filters: Mapping[str, Any] | None = None,
        *,
        query_vector: Any = None,
        where: Filters | None = None,
    ) -> list[ScoredChunk]:
        """Fused candidates for ``query``, as :meth:`HybridRetriever.retrieve` documents them."""
        steps = self.retrieve_steps(query, top_k, filters, query_vector=query_vector, where=where)
        return finish(steps)

    def retrieve_steps(
        self,
        query: str,
        top_k: int | None = None,
        filters: Mapping[str, Any] | None = None,
        *,
        query_vector: Any = None,
        where: Filters | None = None,
        step_work: int = 0,
    ) -> Steps[list[ScoredChunk]]:
        """:meth:`retrieve` in pieces (``step_work`` > 0): a piece per search, the scan in blocks.

        The async runner drives it when it paces the event loop; the
        candidates are :meth:`retrieve`'s.
        """
        cfg = self.cfg
        plan = plan_search(cfg, query, top_k, filters, where)
        searches = self.searches
        found = Found()
        if plan.vector:
            found.vector = yield from self._vector_steps(plan, query_vector, step_work)
        if plan.keyword:
            hits = searches.keyword(query, plan.searched, plan.where)
            found.keyword = method_list(RetrievalMethod.KEYWORD, hits)
            if step_work > 0:
                yield
        if plan.pairs:
            hits = searches.metadata(plan.pairs, plan.searched, plan.where)
            found.metadata = method_list(RetrievalMethod.METADATA, hits)
            if step_work > 0:
                yield
        analyzer = searches.index.keyword.analyzer
        return fuse_found(
            plan, cfg, found, lambda: searches.query_weights(query), analyzer, self._terms
        )

    def _vector_steps(
        self, plan: SearchPlan, query_vector: Any, step_work: int
    ) -> Steps[list[ScoredChunk] | None]:
        if self._vector_retriever is not None:
            return _search(self._vector_retriever, plan.where, plan.query, plan.searched)
        vectors = self.searches.index.vectors
        if not self._vectors or vectors is None or vectors.n_positions == 0:
            return None
        raw = query_vector if query_vector is not None else self._embed(plan.query)
        if self._query_check is not None:
            vector = self._query_check(raw, vectors.dim)
        else:
            vector = np.asarray(raw, dtype=np.float64).flatten()
        vector = question_vector(
            vector,
            self._direction,
            plan.query,
            centring=self.cfg.script_centring,
            mapping=self.cfg.question_map,
        )
        hits = yield from self.searches.vector_steps(vector, plan.searched, plan.where, step_work)
        if step_work > 0:
            yield
        return method_list(RetrievalMethod.VECTOR, hits, self.cfg.min_vector_score)

    def _embed(self, query: str) -> Any:
        if self._embed_fn is None:
            raise ValueError("no query embedding: pass query_vector or index with an embed_fn")
        return self._embed_fn(query)
