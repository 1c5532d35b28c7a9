"""Engine state: the components of the pipeline and the state shared by requests.

:class:`EngineState` is what both runners execute the stages against.  It is
built once per engine with the documented defaults for every component that
the caller did not inject, and it owns the index-time objects (retriever,
source-quality map) and the shared per-request state (cache, histories,
adaptive statistics).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

import anyio

from zerda_async.core.adaptive import AdaptiveLearningSystem
from zerda_async.core.budget import EqualBudgetAllocation
from zerda_async.core.cache import BoundedContextCache, ContextCache
from zerda_async.core.composer import SmartContextComposer
from zerda_async.core.config import ContextEngineConfig, LengthCounter
from zerda_async.core.counters import char_counter
from zerda_async.core.filtering import ChunkFilter
from zerda_async.core.guard import ContextGuard
from zerda_async.core.index.analysis import TermMemo
from zerda_async.core.models import ConversationHistory, SourceQuality
from zerda_async.core.query_analyzer import build_query_analyzer
from zerda_async.core.ranking import CompositeRanker
from zerda_async.core.retrieval import (
    HybridRetriever,
    KeywordRetriever,
    MetadataRetriever,
    VectorRetriever,
)
from zerda_async.core.retrieval.vector import BatchEmbedFn, EmbedFn
from zerda_async.core.vector_floor import Floor, floor_of
from zerda_async.embedders import Embedder
from zerda_async.errors import MissingSourceQualityMap
from zerda_async.stores import Stores

__all__ = ["Components", "EngineState"]


class Components(TypedDict, total=False):
    """The injectable components of an engine; a missing or ``None`` one is the documented default.

    The one list of them: the sync facade passes its documented positional
    parameters as this record, the async engine takes them as keywords.
    """

    query_analyzer: Any
    retriever: Any
    chunk_filter: Any
    ranker: Any
    composer: Any
    guard: Any
    budget_allocator: Any
    length_counter: LengthCounter | None
    reranker: Any


class EngineState:
    """Components and shared state of one engine.

    Parameters mirror the documented ``ContextEngine`` constructor; ``None``
    selects the documented default component.
    """

    def __init__(
        self,
        config: ContextEngineConfig | None = None,
        components: Components | None = None,
        *,
        owner_name: str = "ContextEngine",
        max_sessions: int | None = None,
        bounded_cache: bool = False,
    ) -> None:
        self.config = config or ContextEngineConfig()
        self.owner_name = owner_name
        self._install_components(components or {})
        # Set by the async engine, which embeds every query ahead of retrieval
        # (see the query_embedding stage); the sync facade's retriever embeds
        # queries itself.
        self.query_embedder: Embedder | None = None
        # The sync facade's embedder's calibration of the relevance floor (set by index()).
        self._index_floor: Floor | None = None
        self._init_request_state(max_sessions, bounded_cache)
        # None until the first successful index(): the documented engine only
        # creates the map there, and an injected retriever used before that fails.
        self.source_quality_map: Mapping[str, Any] | None = None
        # Bumped by every change of index-time state (retriever, source-quality
        # map, corpus); the async runner redoes speculative work begun under an
        # older epoch.
        self.epoch = 0
        # None keeps the documented cache key (the sync facade).  The async
        # engine sets the version of its corpus here (bumped by add, update and
        # remove), and it becomes part of every cache key, so a context built
        # from an older corpus is never served.
        self.cache_corpus_version: int | None = None
        # False keeps the documented cache (the sync facade): keyed by the raw
        # query, looked up before the history enrichment.  The async engine sets
        # it: the key is the effective query's, private to the conversation
        # whose turns enriched it, and a hit is still a turn of its session
        # (see pipeline._cache_keys).  ``instance_id`` scopes this engine's
        # default conversation in a cache shared with other engines.
        self.private_cache = False
        self.instance_id = uuid.uuid4().hex
        # Shared stores (none by default: everything in this process), what
        # was bypassed because a cache or learning store did not answer, and
        # when the shared learning window was last read.
        self.stores = Stores()
        self.bypassed: dict[str, int] = {"cache": 0, "learning": 0}
        self.learning_read_at = float("-inf")
        # Stores that failed to answer (by id): until when requests skip them, and
        # why (pipeline._shared.StoreDown).
        self.stores_down: dict[int, Any] = {}
        # The analysed texts of chunks an index store returned (query coverage), by hash.
        self.term_memo = TermMemo()

    def _install_components(self, given: Components) -> None:
        """The injected components, and the documented default for each one missing."""
        self.counter: LengthCounter = given.get("length_counter") or char_counter
        self.analyzer: Any = given.get("query_analyzer") or build_query_analyzer(self.config)
        self.chunk_filter: Any = given.get("chunk_filter") or ChunkFilter(self.config)
        self.ranker: Any = given.get("ranker") or CompositeRanker(self.config)
        self.composer: Any = given.get("composer") or SmartContextComposer(
            self.config, self.counter
        )
        self.guard: Any = given.get("guard") or ContextGuard(self.config)
        # Stored for compatibility; the documented engine never consults it.
        self.budget_allocator: Any = given.get("budget_allocator") or EqualBudgetAllocation()
        self.adaptive = AdaptiveLearningSystem(self.config)
        self.retriever = given.get("retriever")
        # Not a documented component: the async engine's reranker (the rerank stage),
        # and the limiter of the worker threads it runs in (set by the async engine).
        self.reranker: Any = given.get("reranker")
        self.thread_limiter: anyio.CapacityLimiter | None = None

    def _init_request_state(self, max_sessions: int | None, bounded_cache: bool) -> None:
        """The state requests share: the context cache and the conversation histories."""
        cache_cfg = self.config.cache
        # The async engine asks for a cache that never exceeds max_size (see
        # BoundedContextCache); the sync facade keeps the documented one.
        cache_type = BoundedContextCache if bounded_cache else ContextCache
        self.cache: ContextCache | None = (
            cache_type(max_size=cache_cfg.max_size, ttl_seconds=cache_cfg.ttl_seconds)
            if cache_cfg.enabled
            else None
        )
        self.history: Any = (
            ConversationHistory(session_id=f"session_{int(time.time())}")
            if self.config.multi_turn
            else None
        )
        # Per-session conversations, least recently run first.  With
        # ``max_sessions`` the least recently run ones are dropped beyond that
        # many (session ids come from clients: without a bound they would
        # grow without limit); None keeps them all.
        if max_sessions is not None and max_sessions < 1:
            raise ValueError(f"max_sessions must be at least 1 or None, got {max_sessions!r}")
        self.max_sessions = max_sessions
        self.sessions: dict[str, ConversationHistory] = {}

    # -- shared state lookups -------------------------------------------------

    def history_for(self, session_id: str | None) -> Any:
        """The conversation of ``session_id``; ``None`` selects the default history."""
        if session_id is None:
            return self.history
        found = self.sessions.get(session_id)
        if found is None and self.config.multi_turn:
            found = self.sessions[session_id] = ConversationHistory(session_id=session_id)
            self._evict_sessions()
        return found

    def set_history(self, history: Any, session_id: str | None = None) -> None:
        """Install ``history`` as the default conversation or as ``session_id``'s."""
        if session_id is None:
            self.history = history
        else:
            self.sessions.pop(session_id, None)
            self.sessions[session_id] = history
            self._evict_sessions()

    def touch_session(self, session_id: str | None) -> None:
        """Mark ``session_id``'s conversation as the most recently run (commit order only)."""
        if session_id is not None and session_id in self.sessions:
            self.sessions[session_id] = self.sessions.pop(session_id)

    def _evict_sessions(self) -> None:
        limit = self.max_sessions
        if limit is None:
            return
        while len(self.sessions) > limit:
            del self.sessions[next(iter(self.sessions))]

    def require_source_quality_map(self) -> Mapping[str, Any]:
        """The source-quality map, or the documented ``AttributeError`` before ``index()``."""
        if self.source_quality_map is None:
            raise MissingSourceQualityMap(
                f"'{self.owner_name}' object has no attribute '_source_quality_map'"
            )
        return self.source_quality_map

    @property
    def vector_floor(self) -> Floor | None:
        """The calibration of the relevance floor of the embedder that embeds queries, if any.

        The async engine's query embedder's, else the one ``index()`` was given
        (``zerda_async.core.vector_floor``).
        """
        if self.query_embedder is not None:
            return self.query_embedder.vector_floor
        return self._index_floor

    # -- indexing ---------------------------------------------------------------

    def index(
        self,
        chunks: Sequence[Any] | None,
        embed_fn: EmbedFn | None = None,
        vector_store_adapter: Any = None,
        source_quality_map: Mapping[str, SourceQuality] | None = None,
        *,
        batch_embed_fn: BatchEmbedFn | None = None,
    ) -> bool:
        """Build retrievers over ``chunks`` (the documented ``index`` semantics).

        Returns ``False`` (and changes nothing) for an empty or ``None`` corpus.
        Only the first successful call installs a retriever; later calls still
        tokenise and embed the chunks but keep the first retriever, replacing
        only the source-quality map.
        """
        if not chunks:
            return False
        chunk_list = list(chunks)
        # Replaced before anything can fail, as in the documented engine.
        self.source_quality_map = source_quality_map or {}
        vec_ret = VectorRetriever(self.config, vector_store_adapter=vector_store_adapter)
        kw_ret = KeywordRetriever(self.config, chunks=chunk_list)
        meta_ret = MetadataRetriever(self.config, chunks=chunk_list)
        if (embed_fn or batch_embed_fn) and vector_store_adapter is None:
            vec_ret.index_chunks(chunk_list, embed_fn, batch_embed_fn=batch_embed_fn)
        if self.retriever is None:
            if embed_fn or batch_embed_fn:
                self._index_floor = floor_of(embed_fn, batch_embed_fn)
            self.retriever = HybridRetriever(
                config=self.config,
                vector_retriever=vec_ret,
                keyword_retriever=kw_ret,
                metadata_retriever=meta_ret,
            )
            self.epoch += 1
        return True
