"""Vector retrieval: a native vector database, a LangChain-style store, or in-memory cosine.

The in-memory index (:mod:`zerda_async.core.index.vector_index`) keeps the
embeddings as a matrix whose rows are normalised once at index time, so a
query is a single matrix-vector product.  Cosines are rounded to 12 decimals
so that chunks with identical embeddings tie exactly, whatever order the
floating-point sums ran in.  Indexing here is float64, as documented.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..config import ContextEngineConfig, RetrieverConfig
from ..filter_language import Condition, matches
from ..index.chunks import embedding_text
from ..index.metadata_index import MetadataIndex
from ..index.vector_index import COSINE_DECIMALS, VectorIndex
from ..models import RetrievalMethod, ScoredChunk
from ..script_centring import direction_of, question_vector
from ._common import HashMemo, MetadataMasks, chunk_metadata, live_items, stable_top

__all__ = ["COSINE_DECIMALS", "BatchEmbedFn", "EmbedFn", "QueryCheck", "VectorRetriever"]

EmbedFn = Callable[[Any], Any]
"""Embeds one text: a vector (anything ``numpy.asarray`` accepts, flattened to 1-D).

The one embedder-function type of the project.  The async engine also takes
coroutine functions of this shape (``async def embed(text)``)."""

BatchEmbedFn = Callable[[list[Any]], Any]
"""Embeds a list of texts at once: one row per text (the async engine also awaits coroutines)."""

QueryCheck = Callable[[Any, int], NDArray[np.float64]]
"""Validates a query vector against the index dimension; returns it flat (float64)."""


@dataclass(frozen=True, slots=True)
class _Index:
    """One immutable in-memory index generation (swapped in whole)."""

    chunks: Sequence[Any]
    vectors: VectorIndex
    embed_fn: EmbedFn | None
    batch_embed_fn: BatchEmbedFn | None
    hashes: HashMemo
    masks: MetadataMasks


class VectorRetriever:
    """Similarity search through ``vector_db``, else ``vector_store_adapter``, else memory.

    * ``vector_db`` must provide ``search(query, top_k=...)`` returning
      ``(chunk, score)`` pairs.
    * ``vector_store_adapter`` must provide
      ``similarity_search_with_score(query, k=...)``; its scores are used as
      returned (no distance conversion).
    * Otherwise :meth:`index_chunks` builds an in-memory cosine index.

    Pairs scoring below ``config.retriever.min_vector_score`` are dropped.
    """

    accepts_where = True
    """``retrieve`` takes ``where=`` (parsed restricting filters)."""

    def __init__(
        self,
        config: ContextEngineConfig,
        vector_store_adapter: Any | None = None,
        vector_db: Any | None = None,
    ) -> None:
        self.cfg: RetrieverConfig = config.retriever
        self._adapter = vector_store_adapter
        self._vector_db = vector_db
        self._index: _Index | None = None
        # Set by the async engine (see over()): rejects NaN or wrong-dimension
        # query vectors with a clear error.  None keeps the documented
        # behaviour (numpy's result or error), as the sync facade needs.
        self._query_check: QueryCheck | None = None

    @classmethod
    def over(
        cls,
        config: ContextEngineConfig,
        chunks: Sequence[Any],
        vectors: VectorIndex,
        embed_fn: EmbedFn | None = None,
        batch_embed_fn: BatchEmbedFn | None = None,
        *,
        query_check: QueryCheck | None = None,
        metadata: MetadataIndex | None = None,
    ) -> VectorRetriever:
        """An in-memory retriever serving prebuilt ``vectors`` whose positions hold ``chunks``.

        ``embed_fn`` (or ``batch_embed_fn``) embeds queries for which
        :meth:`retrieve` receives no ``query_vector``.  ``query_check(vector,
        dim)``, when given, validates every query vector before the scan.
        ``metadata`` (the metadata index of the same positions, optional)
        serves the restricting filters; without it one is built when first needed.
        """
        retriever = cls(config)
        masks = MetadataMasks(chunks, metadata, vectors.live)
        retriever._index = _Index(
            chunks, vectors, embed_fn, batch_embed_fn, HashMemo(chunks), masks
        )
        retriever._query_check = query_check
        return retriever

    @property
    def chunks(self) -> list[Any]:
        """The chunks of the in-memory index (empty before :meth:`index_chunks`)."""
        index = self._index
        return [] if index is None else live_items(index.chunks, index.vectors.live)

    def index_chunks(
        self,
        chunks: Iterable[Any],
        embed_fn: EmbedFn | None,
        *,
        batch_embed_fn: BatchEmbedFn | None = None,
    ) -> None:
        """Embed every chunk's text and replace the in-memory index.

        With ``retriever.embed_heading`` the embedder reads each chunk's search
        heading before its text (``core.index.chunks.embedding_text``).

        ``embed_fn`` is called once per chunk unless ``batch_embed_fn`` is given,
        in which case it is called once with all texts (and also embeds queries
        when ``embed_fn`` is ``None``).  Errors from the embedding functions and
        numpy's error for vectors of different lengths propagate; the previous
        index then stays in place.
        """
        items = list(chunks)
        texts = [embedding_text(chunk, self.cfg.embed_heading) for chunk in items]
        if not items:
            matrix = np.zeros((0, 0), dtype=np.float64)
        elif batch_embed_fn is not None:
            matrix = _as_matrix(batch_embed_fn(texts), len(texts), "batch_embed_fn")
        else:
            if embed_fn is None:
                raise TypeError("'NoneType' object is not callable")
            matrix = np.stack(
                [np.asarray(embed_fn(text), dtype=np.float64).flatten() for text in texts]
            )
        self._install(items, matrix, embed_fn, batch_embed_fn)

    def index_vectors(
        self, chunks: Iterable[Any], vectors: ArrayLike, embed_fn: EmbedFn | None = None
    ) -> None:
        """Replace the in-memory index with precomputed embeddings, one row per chunk.

        This is how an asynchronous caller indexes after embedding the corpus
        itself.  ``embed_fn`` (optional) embeds queries for which
        :meth:`retrieve` receives no ``query_vector``.  A row count different
        from the number of chunks raises :class:`ValueError`.
        """
        items = list(chunks)
        if not items:
            matrix = np.zeros((0, 0), dtype=np.float64)
        else:
            matrix = _as_matrix(vectors, len(items), "vectors")
        self._install(items, matrix, embed_fn, None)

    def _install(
        self,
        items: list[Any],
        matrix: NDArray[np.float64],
        embed_fn: EmbedFn | None,
        batch_embed_fn: BatchEmbedFn | None,
    ) -> None:
        chunks = tuple(items)
        self._index = _Index(
            chunks=chunks,
            vectors=VectorIndex.from_matrix(matrix),
            embed_fn=embed_fn,
            batch_embed_fn=batch_embed_fn,
            hashes=HashMemo(chunks),
            masks=MetadataMasks(chunks),
        )

    def retrieve(
        self,
        query: str,
        top_k: int,
        *,
        query_vector: ArrayLike | None = None,
        where: tuple[Condition, ...] = (),
    ) -> list[ScoredChunk]:
        """The ``top_k`` most similar chunks with ``vector_score`` set, best first.

        ``query_vector`` (in-memory index only) replaces embedding ``query``;
        the database and adapter back-ends always receive the query text.
        ``where`` (parsed restricting filters) restricts the in-memory scan to
        the chunks that satisfy it, before the top-k cut; a database or adapter
        cannot be told, so their pairs are filtered after the search (fewer
        than ``top_k`` may remain).
        """
        if self._vector_db is not None:
            pairs: Sequence[tuple[Any, Any]] = self._vector_db.search(query, top_k=top_k)
        elif self._adapter is not None:
            pairs = self._adapter.similarity_search_with_score(query, k=top_k)
        else:
            return self._retrieve_in_memory(query, top_k, query_vector, where)
        min_score = self.cfg.min_vector_score
        kept = [
            (chunk, score)
            for chunk, score in pairs
            if not score < min_score and (not where or matches(chunk_metadata(chunk), where))
        ]
        return [
            ScoredChunk(
                chunk=chunk,
                vector_score=float(score),
                retrieval_method=RetrievalMethod.VECTOR,
                retrieval_rank=rank,
            )
            for rank, (chunk, score) in enumerate(kept)
        ]

    def _retrieve_in_memory(
        self,
        query: str,
        top_k: int,
        query_vector: ArrayLike | None,
        where: tuple[Condition, ...] = (),
    ) -> list[ScoredChunk]:
        index = self._index
        if index is None or index.vectors.n_positions == 0:
            return []
        if self._query_check is not None:
            raw = query_vector if query_vector is not None else _raw_query_embedding(index, query)
            query_vec = self._query_check(raw, index.vectors.dim)
        elif query_vector is not None:
            query_vec = np.asarray(query_vector, dtype=np.float64).flatten()
        else:
            query_vec = _embed_query(index, query)
        if self.cfg.script_centring:
            direction = direction_of(index.embed_fn, index.batch_embed_fn)
            query_vec = question_vector(
                query_vec, direction, query, centring=True, mapping=self.cfg.question_map
            )
        positions, sims = index.vectors.similarities(query_vec)
        if where:
            allowed = index.masks.mask(where)
            selected = np.flatnonzero(allowed if positions is None else allowed[positions])
            positions = selected if positions is None else positions[selected]
            sims = sims[selected]
        order = stable_top(sims, top_k)
        scores = sims[order]
        keep = ~(scores < self.cfg.min_vector_score)
        chosen = order if positions is None else positions[order]
        picked = chosen[keep].tolist()
        values = scores[keep].tolist()
        chunks = index.chunks
        method = RetrievalMethod.VECTOR
        # Built directly (no keyword call per hit), with the memoised hashes.
        return [
            ScoredChunk(
                chunks[doc], score, retrieval_method=method, retrieval_rank=rank, _content_hash=h
            )
            for rank, (doc, score, h) in enumerate(
                zip(picked, values, index.hashes.digests(picked), strict=True)
            )
        ]


def _as_matrix(raw: ArrayLike, rows: int, what: str) -> NDArray[np.float64]:
    matrix = np.asarray(raw, dtype=np.float64)
    got = 0 if matrix.ndim == 0 else int(matrix.shape[0])
    if got != rows:
        raise ValueError(f"{what}: expected {rows} vectors, got {got}")
    return matrix.reshape(rows, -1)


def _query_fn(embed_fn: EmbedFn) -> EmbedFn:
    """An asymmetric embedder's ``embed_query`` (E5: "query: "), else ``embed_fn`` itself."""
    query_form: EmbedFn | None = getattr(embed_fn, "embed_query", None)
    return embed_fn if query_form is None else query_form


def _raw_query_embedding(index: _Index, query: str) -> Any:
    """What the query embedder returned (before any conversion), for a query check."""
    if index.embed_fn is not None:
        return _query_fn(index.embed_fn)(query)
    return _embed_query(index, query)


def _embed_query(index: _Index, query: str) -> NDArray[np.float64]:
    if index.embed_fn is not None:
        return np.asarray(_query_fn(index.embed_fn)(query), dtype=np.float64).flatten()
    if index.batch_embed_fn is None:
        raise ValueError("no query embedding: pass query_vector or index with an embed_fn")
    # An asymmetric embedder's batch query form when batch_embed_fn is its method.
    owner = getattr(index.batch_embed_fn, "__self__", None)
    batch = getattr(owner, "embed_queries", None) or index.batch_embed_fn
    row: NDArray[np.float64] = _as_matrix(batch([query]), 1, "batch_embed_fn")[0]
    return row
