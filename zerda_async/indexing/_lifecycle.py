"""The index lifecycle of :class:`~zerda_async.AsyncContextEngine`.

``index``, ``add``, ``update``, ``remove``, ``save`` and ``load`` all go
through :class:`IndexLifecycle`:

* changes are serialised by one writer lock, so each starts from the snapshot
  the previous one produced;
* the heavy work (embedding, tokenising, building) runs off the event loop,
  before the change is ordered among requests;
* the new snapshot is installed through a runner barrier, so it takes effect
  after every request submitted earlier and before every later one; the
  install bumps ``EngineState.epoch`` (speculative work is redone) and the
  corpus version in the async engine's cache keys (no context built from the
  old corpus is served);
* a change cancelled or failing before its barrier changes nothing.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import anyio
import anyio.to_thread

from zerda_async.core.index import VectorDType, VectorIndex
from zerda_async.core.models import SourceQuality
from zerda_async.core.retrieval.vector import BatchEmbedFn, EmbedFn
from zerda_async.embedders import Embedder
from zerda_async.errors import IndexFormatError, IndexStateError
from zerda_async.indexing._format import MANIFEST_FILE, SavedIndex
from zerda_async.indexing._live_index import LiveIndex, build_live_index
from zerda_async.indexing._persistence import save_index
from zerda_async.pipeline import AsyncRunner, EngineState
from zerda_async.runtime import CallPolicy

__all__ = ["IndexLifecycle"]


def _embedder(
    runner: AsyncRunner, embed_fn: EmbedFn | None, batch_embed_fn: BatchEmbedFn | None
) -> Embedder:
    """The index's embedder; its plain query calls in worker threads, unless the engine
    was built with ``cheap_embedder_on_loop=True``.

    Then ``offload="threads"`` keeps them in worker threads and ``"inline"``
    on the loop; ``"auto"`` lets a :class:`~zerda_async.runtime.CallPolicy`
    move them onto the loop once they measure cheaper than the hop.
    """
    if not runner.settings.cheap_embedder_on_loop:
        return Embedder(embed_fn, batch_embed_fn, limiter=runner.limiter)
    placement = CallPolicy(runner.settings.offload_threshold_ms)
    placement.forced = runner.policy.forced
    return Embedder(embed_fn, batch_embed_fn, limiter=runner.limiter, placement=placement)


class IndexLifecycle:
    """Builds, updates, saves and restores the engine's :class:`LiveIndex`."""

    def __init__(self, state: EngineState, runner: AsyncRunner, dtype: VectorDType) -> None:
        self._state = state
        self._runner = runner
        self.dtype = dtype
        self.live: LiveIndex | None = None
        self._writer = anyio.Lock()
        self._saving = anyio.Lock()
        state.cache_corpus_version = 0

    # -- index (documented) -------------------------------------------------------------

    async def index(
        self,
        chunks: Sequence[Any],
        embed_fn: EmbedFn | None,
        adapter: Any,
        source_quality_map: Mapping[str, SourceQuality] | None,
        batch_embed_fn: BatchEmbedFn | None,
        progress: Callable[[int, int], None] | None,
    ) -> None:
        """Build an index over ``chunks``; install it only if no retriever is installed yet."""
        state = self._state
        runner = self._runner
        embedder = None
        if (embed_fn or batch_embed_fn) and adapter is None:
            embedder = _embedder(runner, embed_fn, batch_embed_fn)
        async with self._writer:
            try:
                live = await build_live_index(
                    chunks,
                    embedder,
                    adapter,
                    self.dtype,
                    runner.limiter,
                    progress,
                    analyzer=state.config.retriever.text_analyzer,
                    embed_heading=state.config.retriever.embed_heading,
                )
            except BaseException:
                # The documented engine replaces the map before embedding can fail.
                def replace_map() -> None:
                    state.source_quality_map = source_quality_map or {}
                    state.epoch += 1  # invalidates speculation (see install)

                await runner.barrier(replace_map)
                raise
            # Installs are serialised by the writer lock, so this is the state
            # the barrier will see: the documented "first index() only" rule.
            first = state.retriever is None
            retriever = live.retriever(state.config) if first else None
            if first:
                self.live = live

            def install() -> None:
                state.source_quality_map = source_quality_map or {}
                # The source-quality stage is speculative: a request submitted
                # after this index() may already have speculated with the
                # previous map, so every install invalidates speculation.
                state.epoch += 1
                if retriever is not None:
                    self._install(live, retriever)

            await runner.barrier(install)

    def _install(self, live: LiveIndex, retriever: Any) -> None:
        state = self._state
        state.retriever = retriever
        state.cache_corpus_version = live.corpus.version
        self._runner.speculation.corpus_size = live.corpus.n_live
        # Every query is embedded ahead, by the embedding phase: a plain
        # embedder in a thread hop of its own, so the other speculative stages
        # need no thread when they are cheap (the retriever then never calls
        # caller code itself).
        self._state.query_embedder = live.embedder
        # Reliability: a vector-store adapter is caller code that may block,
        # so the speculative stages then always run in a worker thread.
        self._runner.policy.external_calls = live.adapter is not None

    # -- updates ------------------------------------------------------------------------------

    def _require_live(self) -> LiveIndex:
        if self.live is not None:
            return self.live
        if self._state.retriever is not None:
            raise IndexStateError(
                "this engine searches a retriever passed to its constructor; add, update,"
                " remove and save work on an index built by index() or load()"
            )
        raise IndexStateError("there is no index yet: call index() or load() first")

    async def change(
        self,
        compute: Callable[[LiveIndex, anyio.CapacityLimiter], Awaitable[tuple[LiveIndex, int]]],
    ) -> int:
        """Apply one update (``compute`` builds the new snapshot); returns its count."""
        async with self._writer:
            live = self._require_live()
            updated, count = await compute(live, self._runner.limiter)
            if updated.corpus is live.corpus:
                return count
            state = self._state
            retriever = updated.retriever(state.config)
            self.live = updated

            def install() -> None:
                state.epoch += 1
                self._install(updated, retriever)

            await self._runner.barrier(install)
            return count

    async def add(self, chunks: Sequence[Any]) -> int:
        """Append ``chunks``; returns how many were added."""
        items = list(chunks)

        async def compute(live: LiveIndex, limiter: anyio.CapacityLimiter) -> tuple[LiveIndex, int]:
            return await live.added(items, limiter), len(items)

        return await self.change(compute)

    async def update(self, chunks: Sequence[Any]) -> int:
        """Replace the chunks sharing a doc id with ``chunks``; returns how many were replaced."""
        items = list(chunks)

        async def compute(live: LiveIndex, limiter: anyio.CapacityLimiter) -> tuple[LiveIndex, int]:
            return await live.updated(items, limiter)

        return await self.change(compute)

    async def remove(self, doc_ids: Sequence[Any]) -> int:
        """Remove every chunk of ``doc_ids``; returns how many chunks were removed."""
        ids = list(doc_ids)

        async def compute(live: LiveIndex, limiter: anyio.CapacityLimiter) -> tuple[LiveIndex, int]:
            return await live.removed(ids, limiter)

        return await self.change(compute)

    # -- persistence ------------------------------------------------------------------------

    async def save(self, path: str | os.PathLike[str]) -> None:
        """Save the current snapshot (taken when called) atomically into ``path``."""
        async with self._writer:
            live = self._require_live()
        if live.adapter is not None:
            raise IndexStateError(
                "an index searched through a vector_store_adapter cannot be saved"
                " (its vectors live in the external store)"
            )
        state = self._state
        sources = dict(state.source_quality_map or {})
        config = state.config
        if config.retriever.embed_heading != live.embed_heading:
            # The saved configuration says how the saved vectors were embedded.
            config = copy.deepcopy(config)
            config.retriever.embed_heading = live.embed_heading
        async with self._saving:
            await anyio.to_thread.run_sync(
                save_index, path, live.corpus, config, sources, limiter=self._runner.limiter
            )

    async def restore(
        self,
        saved: SavedIndex,
        embed_fn: EmbedFn | None,
        batch_embed_fn: BatchEmbedFn | None,
    ) -> None:
        """Install a loaded index into an engine that is not running yet.

        Raises :class:`IndexFormatError` naming both analysers when the index
        was built with another text analyser than the configuration's, and
        likewise for another ``retriever.embed_heading`` (the vectors were
        embedded from other texts).
        """
        corpus = saved.corpus
        built_with = corpus.keyword.analyzer_name
        wanted = self._state.config.retriever.text_analyzer
        if built_with != wanted:
            raise IndexFormatError(
                saved.directory / MANIFEST_FILE,
                f"the index was built with text analyzer {built_with!r} but the configuration"
                f" asks for {wanted!r}; load it with config=None or a configuration whose"
                f" retriever.text_analyzer is {built_with!r}, or rebuild the index",
            )
        heading = saved.config.retriever.embed_heading
        if heading != self._state.config.retriever.embed_heading:
            raise IndexFormatError(
                saved.directory / MANIFEST_FILE,
                f"the index was embedded with retriever.embed_heading {heading} but the"
                f" configuration asks for {not heading}; load it with config=None or"
                f" retriever.embed_heading = {heading}, or rebuild the index",
            )
        vectors = corpus.vectors
        if vectors is not None and vectors.dtype != self.dtype:
            rows = await anyio.to_thread.run_sync(vectors.rows().astype, self.dtype)
            corpus = replace(corpus, vectors=VectorIndex.from_unit_rows(rows, self.dtype))
        embedder = None
        if embed_fn or batch_embed_fn:
            embedder = _embedder(self._runner, embed_fn, batch_embed_fn)
        live = LiveIndex(corpus, embedder, None, self.dtype, embed_heading=heading)
        state = self._state
        state.source_quality_map = dict(saved.source_quality_map)
        state.epoch += 1
        self.live = live
        self._install(live, live.retriever(state.config))
