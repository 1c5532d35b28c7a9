"""The async engine's updatable index: a corpus snapshot plus how to embed and search it.

:class:`LiveIndex` is immutable like the :class:`CorpusIndex` it wraps; the
engine swaps it whole.  The coroutines here do the heavy work of ``index``,
``add``, ``update`` and ``remove`` off the event loop: corpus embeddings are
computed in batches (awaited for coroutine embedders, in worker threads for
plain ones), normalised and stored straight into the index's dtype, then the
snapshot is built or updated in a worker thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
import numpy as np

from zerda_async.core.config import ContextEngineConfig
from zerda_async.core.index import CorpusIndex, VectorDType, unit_rows
from zerda_async.core.index.chunks import embedding_text
from zerda_async.core.index.vector_index import Matrix
from zerda_async.core.retrieval import IndexRetriever, IndexSearches, VectorRetriever
from zerda_async.embedders import Embedder, check_embeddings, check_query_vector
from zerda_async.errors import EmbeddingError, IndexStateError
from zerda_async.runtime import run_in_thread

__all__ = ["EMBED_BATCH", "LiveIndex", "build_live_index", "embed_rows"]

EMBED_BATCH = 512
"""Texts per corpus-embedding step at most (one batch call, or one worker-thread hop)."""

FIRST_STEP = 16
"""Texts of the first step; the next ones are sized from the rate measured so far."""

STEP_SECONDS = 0.5
"""About how long one step should take: a slow model (E5: a few texts per second per
core) reports progress every half second instead of every 512 texts, a fast one still
gets full steps of :data:`EMBED_BATCH`."""

Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class LiveIndex:
    """A corpus snapshot and what searching and growing it needs."""

    corpus: CorpusIndex
    embedder: Embedder | None
    adapter: Any
    dtype: VectorDType
    embed_heading: bool = False
    """The embedder reads each chunk's search heading first (``retriever.embed_heading``)."""

    @property
    def query_embed_fn(self) -> Callable[[Any], Any] | None:
        """The plain per-text embedder the vector retriever may call for queries.

        An asymmetric embedder's query form (see ``embedders.query_forms``).
        """
        embedder = self.embedder
        if embedder is None or embedder.is_async:
            return None
        return embedder.query_fn

    def retriever(self, config: ContextEngineConfig) -> IndexRetriever:
        """The retriever over this snapshot (cheap: it only wraps the arrays).

        It searches the snapshot as the memory index store and the local copy
        do (:class:`~zerda_async.core.retrieval.IndexSearches`) and fuses the
        hits as an engine on an index store does.
        """
        corpus = self.corpus
        adapter_retriever = None
        if self.adapter is not None:
            # An external store answers the vector list (the documented adapter search).
            adapter_retriever = VectorRetriever(config, vector_store_adapter=self.adapter)
        return IndexRetriever(
            config,
            IndexSearches(corpus),
            # Without a way to embed queries there are no vector results (documented).
            vectors=corpus.vectors is not None and self.embedder is not None,
            embed_fn=self.query_embed_fn,
            # Reliability: query vectors with NaN or the wrong dimension raise
            # EmbeddingError (RELIABILITY.md) instead of a numpy error or NaN scores.
            query_check=check_query_vector,
            vector_retriever=adapter_retriever,
            direction=None if self.embedder is None else self.embedder.script_direction,
        )

    async def added(self, chunks: Sequence[Any], limiter: anyio.CapacityLimiter) -> LiveIndex:
        """A new live index with ``chunks`` appended (embedded when the index has vectors)."""
        rows = await self._rows_for(chunks, limiter)
        corpus = await anyio.to_thread.run_sync(self.corpus.appended, chunks, rows, limiter=limiter)
        return replace(self, corpus=corpus)

    async def updated(
        self, chunks: Sequence[Any], limiter: anyio.CapacityLimiter
    ) -> tuple[LiveIndex, int]:
        """``chunks`` replace the live chunks with their doc ids (then appended)."""
        rows = await self._rows_for(chunks, limiter)
        corpus, removed = await anyio.to_thread.run_sync(
            self.corpus.replaced, chunks, rows, limiter=limiter
        )
        return replace(self, corpus=corpus), removed

    async def removed(
        self, doc_ids: Sequence[Any], limiter: anyio.CapacityLimiter
    ) -> tuple[LiveIndex, int]:
        """The chunks of ``doc_ids`` removed; also how many chunks that was."""
        corpus, removed = await anyio.to_thread.run_sync(
            self.corpus.without, doc_ids, limiter=limiter
        )
        return replace(self, corpus=corpus), removed

    async def _rows_for(
        self, chunks: Sequence[Any], limiter: anyio.CapacityLimiter
    ) -> Matrix | None:
        if self.corpus.vectors is None or not chunks:
            return None
        if self.embedder is None:
            raise IndexStateError(
                "this index holds vectors but the engine has no embedder to embed new chunks"
                " (pass embed_fn or batch_embed_fn to index() or load())"
            )
        texts = [embedding_text(c, self.embed_heading) for c in chunks]
        rows = await embed_rows(self.embedder, texts, self.dtype, limiter, None)
        dim = self.corpus.vectors.dim
        if self.corpus.vectors.n_positions and rows.shape[1] != dim:
            raise EmbeddingError(
                f"embedder returned {rows.shape[1]}-dimensional vectors for an index of {dim}"
            )
        return rows


async def embed_rows(
    embedder: Embedder,
    texts: Sequence[Any],
    dtype: VectorDType,
    limiter: anyio.CapacityLimiter,
    progress: Progress | None,
) -> Matrix:
    """Normalised embeddings of ``texts`` as one ``dtype`` matrix, filled batch by batch.

    Only one batch is ever held in float64, so a float32 index never needs
    the corpus in float64.  ``progress(done, total)`` follows the batches.
    """
    total = len(texts)
    if embedder.embed_fn is not None and not embedder.batches and embedder.single_is_async:
        # Concurrent single-text coroutine calls: the embedder's own pool.
        matrix = await embedder.embed_corpus(texts, progress)
        return await anyio.to_thread.run_sync(unit_rows, matrix, dtype, limiter=limiter)
    out: Matrix | None = None
    start, step = 0, min(FIRST_STEP, EMBED_BATCH)
    while start < total:
        batch = list(texts[start : start + step])
        began = time.perf_counter()
        if embedder.batches:
            raw = await embedder.embed_many(batch)
            rows = await anyio.to_thread.run_sync(unit_rows, raw, dtype, limiter=limiter)
        else:
            assert embedder.embed_fn is not None
            # Reliability: abandonable, so a cancelled index() does not wait
            # for a hung embedder call (see run_in_thread).
            rows = await run_in_thread(
                _embed_each, embedder.embed_fn, batch, dtype, start, limiter=limiter
            )
        if out is None:
            out = np.empty((total, rows.shape[1]), dtype=dtype)
        elif rows.shape[1] != out.shape[1]:
            raise EmbeddingError(
                f"embedder returned vectors of different lengths: {[out.shape[1], rows.shape[1]]}"
            )
        out[start : start + rows.shape[0]] = rows
        start += len(batch)
        if progress is not None:
            progress(start, total)
        rate = len(batch) / max(time.perf_counter() - began, 1e-6)
        step = max(1, min(EMBED_BATCH, int(rate * STEP_SECONDS)))
    if out is None:
        return np.zeros((0, 0), dtype=dtype)
    return out


def _embed_each(
    embed_fn: Callable[[Any], Any], texts: list[Any], dtype: VectorDType, first: int = 0
) -> Matrix:
    # Stacking reports vectors of differing lengths within a batch as the
    # documented engine does (numpy's ValueError).
    raw = np.stack([np.asarray(embed_fn(text), dtype=np.float64).flatten() for text in texts])
    # Reliability: a NaN or infinite embedding fails the index, naming the text
    # (``first`` is the index of texts[0]), instead of giving that chunk NaN
    # scores in every later query.  Batch embedders are checked by Embedder.
    check_embeddings(raw, first)
    return unit_rows(raw, dtype)


async def build_live_index(
    chunks: Sequence[Any],
    embedder: Embedder | None,
    adapter: Any,
    dtype: VectorDType,
    limiter: anyio.CapacityLimiter,
    progress: Progress | None = None,
    analyzer: str = "documented",
    embed_heading: bool = False,
) -> LiveIndex:
    """Embed (when an embedder and no adapter is given) and index ``chunks``.

    ``progress(done, total)`` runs from 0 to ``len(chunks)`` while the corpus
    is embedded, then again while it is tokenised.  ``analyzer`` names the
    keyword index's text analyser (``retriever.text_analyzer``); ``embed_heading``
    gives the embedder each chunk's search heading first (``retriever.embed_heading``).
    """
    rows = None
    if embedder is not None and adapter is None:
        texts = [embedding_text(c, embed_heading) for c in chunks]
        rows = await embed_rows(embedder, texts, dtype, limiter, progress)
    total = len(chunks)

    def tokenised(done: int) -> None:
        if progress is not None:
            anyio.from_thread.run_sync(progress, done, total)

    corpus = await anyio.to_thread.run_sync(
        lambda: CorpusIndex.build(
            chunks, rows, progress=None if progress is None else tokenised, analyzer=analyzer
        ),
        limiter=limiter,
    )
    return LiveIndex(
        corpus=corpus, embedder=embedder, adapter=adapter, dtype=dtype, embed_heading=embed_heading
    )
