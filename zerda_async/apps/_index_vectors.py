"""Vectors for ``zerda index``: cached by content, resumable, with a progress line.

``zerda index --out DIR`` keeps the passage vectors of its chunks in
``DIR/vectors.cache`` (:class:`~zerda_async.embedders.VectorCache`), written
while the corpus is embedded.  Indexing the same folder again embeds only
the chunks whose text is new or changed, and a run that was interrupted
(Ctrl-C, a crash) resumes where it stopped.  ``--store URL`` keeps its cache
in the user's cache folder, one file per store and model, and also reuses
the vectors already in the store (:func:`store_vectors`).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import numpy as np

from zerda_async.apps._interrupt import check_interrupt, embedding_started, embedding_stopped
from zerda_async.apps._progress import Progress
from zerda_async.core.index.chunks import embedding_text
from zerda_async.embedders import CachedEmbedder, VectorCache, cache_key

__all__ = ["VECTOR_CACHE", "Embedding", "start_embedding", "store_cache_path", "store_vectors"]

VECTOR_CACHE = "vectors.cache"
"""File name of the vector cache inside a saved index's directory."""


def store_cache_path(url: str, params: dict[str, Any], heading: bool = False) -> Path:
    """The vector cache file of an index store in the user's cache folder.

    One file per URL, model and ``heading`` (``retriever.embed_heading``): the
    vectors of one setting never share a file with the other's.
    """
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "zerda"
    key = f"{url}\0{cache_key(params)}" + ("\0heading" if heading else "")
    name = hashlib.sha256(key.encode()).hexdigest()[:24]
    return root / f"store-{name}.vectors"


@dataclass
class Embedding:
    """The cached embedder of one ``zerda index`` run and its progress line."""

    embedder: CachedEmbedder
    progress: Progress

    def summary(self) -> str:
        """``embedded 12 chunks (788 vectors reused from the cache)``."""
        return (
            f"embedded {self.embedder.embedded} chunk(s) with {self.embedder.name} "
            f"({self.embedder.reused} vector(s) reused from the cache)"
        )

    def finish(self, texts: Sequence[str]) -> None:
        """End the progress line; keep only ``texts`` (the index's chunks) in the cache."""
        embedding_stopped()
        self.progress.close()
        self.embedder.cache.keep(texts)

    def abort(self) -> None:
        """End the progress line; what was embedded stays in the cache file."""
        embedding_stopped()
        self.progress.close()


def start_embedding(
    embedder: Any,
    texts: Sequence[str],
    cache_path: Path,
    *,
    quiet: bool,
    preload: Sequence[tuple[str, Any]] = (),
) -> Embedding:
    """Wrap ``embedder`` in the cache at ``cache_path``; a progress line over what is missing.

    ``preload`` adds known (text, vector) pairs first (the vectors an index
    store already holds).
    """
    cache = VectorCache(cache_key(embedder.params()), cache_path)
    if preload:
        known = [(text, vector) for text, vector in preload if cache.get(text) is None]
        if known:
            cache.put([t for t, _ in known], np.asarray([v for _, v in known], dtype=np.float32))
    progress = Progress(len(cache.missing(texts)), label="embedding", unit="chunks", quiet=quiet)

    def advance(done: int) -> None:
        # Called after each step's vectors are in the cache: a stop asked by
        # Ctrl-C (apps._interrupt) ends the embedding here, between two steps.
        progress.advance(done)
        check_interrupt()

    wrapped = CachedEmbedder(embedder, cache, progress=advance)
    embedding_started()
    return Embedding(wrapped, progress)


async def store_vectors(
    url: str,
    store: Any,
    doc_ids: Sequence[str],
    chunks: Sequence[Any],
    embedder: Any,
    quiet: bool,
    heading: bool = False,
) -> Any:
    """The vectors of ``chunks`` for the index store at ``url``, which holds ``doc_ids``.

    Those the store or the cache holds are reused, the rest embedded (each
    chunk's search heading first with ``heading``: ``retriever.embed_heading``;
    then only the cache's vectors are reused, keyed by the text embedded).

    Embedding runs in a worker thread (the event loop keeps the store's
    connection alive), behind a progress line; the cache file keeps what an
    interrupted run embedded.
    """
    from zerda_async.stores import stored_vectors

    texts = [embedding_text(c, heading) for c in chunks]
    known: Sequence[tuple[str, Any]] = ()
    # The files' chunks as stored before (any chunking): their vectors are reused.
    # The store gives each vector with its chunk's text, which is what was
    # embedded only without headings: with them the text alone does not say
    # which heading the vector carries, so only the cache file is reused.
    if not heading:
        stems = {str(c.doc_id).rsplit("#", 1)[0] for c in chunks}
        before = [d for d in doc_ids if d.rsplit("#", 1)[0] in stems]
        known = await stored_vectors(store, before)
    path = store_cache_path(url, embedder.params(), heading)
    embedding = await anyio.to_thread.run_sync(
        lambda: start_embedding(embedder, texts, path, quiet=quiet, preload=known)
    )
    try:
        vectors = await anyio.to_thread.run_sync(embedding.embedder.embed_batch, texts)
    except BaseException:
        embedding.abort()
        raise
    embedding.finish(texts)
    print(embedding.summary())
    return vectors
