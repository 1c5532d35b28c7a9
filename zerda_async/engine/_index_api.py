"""The engine's index methods: index, add, update, remove, save, load, corpus size and version.

A base class of :class:`~zerda_async.engine.AsyncContextEngine` (kept apart so
the engine module stays one concern: requests and lifecycle).
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Self

from zerda_async.core.index.chunks import embedding_text
from zerda_async.core.models import SourceQuality
from zerda_async.core.retrieval.vector import BatchEmbedFn, EmbedFn
from zerda_async.indexing import IndexLifecycle
from zerda_async.pipeline import AsyncRunner, EngineState

__all__ = ["EngineParts", "IndexMethods"]


class EngineParts(ABC):
    """What the engine's method groups share (set by ``AsyncContextEngine.__init__``)."""

    _state: EngineState
    _runner: AsyncRunner
    _indexes: IndexLifecycle

    @abstractmethod
    def _check_open(self) -> None:
        """Raise ``EngineClosedError`` unless the engine runs (``AsyncContextEngine``'s)."""

    @property
    def corpus_size(self) -> int:
        """Chunks in the engine's own index (0 before ``index()`` / ``load()``)."""
        live = self._indexes.live
        return 0 if live is None else live.corpus.n_live

    @property
    def corpus_version(self) -> int:
        """Version of the engine's index: 0 when built, +1 per ``add``/``update``/``remove``."""
        live = self._indexes.live
        return 0 if live is None else live.corpus.version


class IndexMethods(EngineParts):
    """Building, changing, saving and loading the engine's index."""

    def doc_ids(self) -> list[Any]:
        """The doc id of each chunk in the engine's own index, in corpus order.

        Empty before ``index()`` / ``load()``; an index store lists its own
        (``PostgresIndexStore.doc_ids``).
        """
        live = self._indexes.live
        return [] if live is None else live.corpus.live_doc_ids()

    async def index(
        self,
        chunks: Sequence[Any] | None,
        embed_fn: EmbedFn | None = None,
        vector_store_adapter: Any = None,
        source_quality_map: Mapping[str, SourceQuality] | None = None,
        *,
        batch_embed_fn: BatchEmbedFn | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> Self:
        """Index ``chunks`` (documented semantics: only the first index installs a retriever).

        ``embed_fn`` and ``batch_embed_fn`` may be plain or coroutine functions;
        coroutine embedders are awaited on the event loop.  When a batch form is
        given, concurrent queries' embeddings are micro-batched into one call.
        ``progress(done, total)`` is called while the corpus is embedded (after
        the first 16 texts, then about every half second with a slow model),
        then again (from 0) while it is tokenised.  An asymmetric embedder
        (``embed_query`` / ``embed_queries``, e.g. E5) embeds chunks as
        passages and queries as queries.  The new index takes effect after
        every request submitted earlier.
        """
        self._check_open()
        if not chunks:
            return self
        await self._indexes.index(
            list(chunks),
            embed_fn,
            vector_store_adapter,
            source_quality_map,
            batch_embed_fn,
            progress,
        )
        return self

    async def add(self, chunks: Sequence[Any]) -> int:
        """Append ``chunks`` to the index (embedded with the engine's embedder); returns the count.

        No rebuild: the new chunks are tokenised (and embedded) on their own.
        Results afterwards equal those of a fresh index over the final corpus
        in corpus order (existing chunks, then the added ones).  The change
        takes effect after every request submitted earlier, and cached
        contexts of the old corpus are no longer served.
        """
        self._check_open()
        if self._state.stores.index is not None:
            return await self._store_write(chunks, replace=False)
        return await self._indexes.add(chunks)

    async def update(self, chunks: Sequence[Any]) -> int:
        """Replace the chunks sharing a doc id with ``chunks``; returns how many were replaced.

        Equivalent to ``remove`` of the new chunks' doc ids followed by
        ``add`` (so updated chunks move to the end of the corpus order);
        chunks with new doc ids are simply added.
        """
        self._check_open()
        if self._state.stores.index is not None:
            return await self._store_write(chunks, replace=True)
        return await self._indexes.update(chunks)

    async def remove(self, doc_ids: Sequence[Any]) -> int:
        """Remove every chunk whose doc id is in ``doc_ids``; returns how many were removed."""
        self._check_open()
        store = self._state.stores.index
        if store is not None:
            before = await store.count()
            await store.remove([str(d) for d in doc_ids])
            self._state.stores.clock.forget()  # this replica sees its own write at once
            return before - await store.count()
        return await self._indexes.remove(doc_ids)

    async def _store_write(self, chunks: Sequence[Any], *, replace: bool) -> int:
        """``add`` / ``update`` on the index store: one transaction, seen by every replica."""
        store = self._state.stores.index
        assert store is not None
        items = list(chunks)
        embedder = self._state.query_embedder
        vectors = None
        if embedder is not None and items:
            heading = self._state.config.retriever.embed_heading
            vectors = await embedder.embed_many([embedding_text(c, heading) for c in items])
        before = await store.count()
        if replace:
            await store.replace(items, vectors)
            self._state.stores.clock.forget()  # this replica sees its own write at once
            return len(items) - (await store.count() - before)
        await store.add(items, vectors)
        self._state.stores.clock.forget()
        return len(items)

    async def save(self, path: str | os.PathLike[str]) -> None:
        """Save the index as a directory (see :mod:`zerda_async.indexing._persistence`).

        The save is atomic: until it completes, ``path`` keeps the previous
        index, whatever happens (a crash, a full disk).  The snapshot saved is
        the index when ``save`` was called; requests keep running meanwhile.
        """
        self._check_open()
        await self._indexes.save(path)
