"""One way for every framework adapter to run zerda, from sync and from async code.

A :class:`ZerdaBackend` wraps either engine:

* the sync facade (:class:`sync_api.ContextEngine`): sync calls run it
  directly (no event loop is started, so it is safe inside a running loop's
  callbacks too); async calls run it in a worker thread (``anyio.to_thread``),
  so the loop never blocks.  A lock serialises the calls, because the facade's
  cache and history are not made for concurrent threads.
* the async engine (:class:`~zerda_async.AsyncContextEngine`, entered with
  ``async with``): async calls await it on the caller's loop; sync calls need
  the ``portal`` (an :class:`anyio.from_thread.BlockingPortal` running on the
  engine's loop) and go through it, from a thread other than the loop's.

The engine must have its cache off (``config.cache.enabled = False``): a
cache hit returns the context without its chunks (documented), and its key
ignores ``k``.  Every adapter refuses an engine with the cache on when it is
built, naming ``cache.enabled``, not at its first call.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from functools import partial
from typing import Any

import anyio.to_thread
from anyio.from_thread import BlockingPortal

from sync_api import ContextEngine
from zerda_async.core.models import ContextResult, ScoredChunk
from zerda_async.engine import AsyncContextEngine
from zerda_async.errors import ConfigError, SyncCallError
from zerda_async.integrations._filters import to_zerda_filters

__all__ = ["ZerdaBackend", "chunk_metadata"]


def _in_event_loop() -> bool:
    """Whether this thread is running an asyncio or trio loop (a sync wait would block it)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        return True
    trio = sys.modules.get("trio")
    in_trio_run = getattr(getattr(trio, "lowlevel", None), "in_trio_run", None)
    return bool(in_trio_run is not None and in_trio_run())


class ZerdaBackend:
    """Runs queries on a sync or async zerda engine for the framework adapters (see module)."""

    def __init__(
        self,
        engine: ContextEngine | AsyncContextEngine,
        *,
        portal: BlockingPortal | None = None,
        use_history: bool = False,
    ) -> None:
        if not isinstance(engine, ContextEngine | AsyncContextEngine):
            raise TypeError(
                "engine must be a sync_api.ContextEngine or a zerda_async.AsyncContextEngine, "
                f"got {type(engine).__name__}"
            )
        if engine.config.cache.enabled:
            # A cache hit carries no chunks (documented) and its key ignores k.
            raise ConfigError(
                "cache.enabled: the framework adapters return the ranked chunks, which a cache "
                "hit does not carry; build the engine with config.cache.enabled = False"
            )
        self.engine = engine
        self.portal = portal
        # A retriever call is not a conversation turn: no history by default.
        self.use_history = use_history
        self._lock = threading.Lock()

    def _kwargs(
        self, k: int, metadata_filters: dict[str, Any] | None, filters: Any
    ) -> dict[str, Any]:
        if k < 1:
            raise ValueError(f"k must be a positive number of chunks, got {k}")
        return {
            "metadata_filters": metadata_filters,
            # The framework's own filter objects, in zerda's language (or a clear error).
            "filters": to_zerda_filters(filters),
            "max_chunks": k,
            "use_history": self.use_history,
            "record_turn": self.use_history,
        }

    def _run_facade(self, query: str, kwargs: dict[str, Any]) -> ContextResult:
        assert isinstance(self.engine, ContextEngine)
        with self._lock:
            return self.engine.run(query, **kwargs)

    def run(
        self,
        query: str,
        k: int,
        metadata_filters: dict[str, Any] | None = None,
        filters: Any = None,
    ) -> ContextResult:
        """The result for ``query`` with at most ``k`` chunks, from sync code.

        ``metadata_filters`` boost (documented); ``filters`` restrict retrieval
        to the chunks whose metadata match (the engines' run option), in zerda's
        filter language or a framework's own form (see :mod:`._filters`).
        """
        kwargs = self._kwargs(k, metadata_filters, filters)
        if isinstance(self.engine, ContextEngine):
            return self._run_facade(query, kwargs)
        if self.portal is None:
            raise SyncCallError(
                "a sync call on an AsyncContextEngine needs portal= (an anyio BlockingPortal "
                "on the engine's loop); from async code use the async method instead"
            )
        if _in_event_loop():
            raise SyncCallError(
                "a sync call from inside an event loop would block it: use the async method"
            )
        return self.portal.call(partial(self.engine.run, query, **kwargs))

    async def arun(
        self,
        query: str,
        k: int,
        metadata_filters: dict[str, Any] | None = None,
        filters: Any = None,
    ) -> ContextResult:
        """The result for ``query`` with at most ``k`` chunks, without blocking the loop."""
        kwargs = self._kwargs(k, metadata_filters, filters)
        if isinstance(self.engine, ContextEngine):
            return await anyio.to_thread.run_sync(self._run_facade, query, kwargs)
        return await self.engine.run(query, **kwargs)


def chunk_metadata(sc: ScoredChunk, rank: int) -> dict[str, Any]:
    """The chunk's own metadata plus its citation fields and scores (for every adapter)."""
    own = sc.metadata if isinstance(sc.metadata, dict) else {}
    return {
        **own,
        "doc_id": sc.doc_id,
        "source": sc.source,
        "rank": rank,
        "score": float(sc.composite_score),
        "composite_score": float(sc.composite_score),
        "vector_score": float(sc.vector_score),
        "keyword_score": float(sc.keyword_score),
        "metadata_score": float(sc.metadata_score),
        "recency_score": float(sc.recency_score),
        "source_quality": sc.source_quality.name,
        "retrieval_method": sc.retrieval_method.value,
    }
