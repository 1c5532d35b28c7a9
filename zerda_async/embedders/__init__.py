"""Embedders: one protocol for whatever turns texts into vectors.

* :class:`Embedder` — wraps the caller's ``embed_fn`` / ``batch_embed_fn`` (plain or
  coroutine functions), checks every vector and batches where it can;
* :class:`TextEmbedder` / :class:`AsyncTextEmbedder` — the protocol of the
  bundled adapters: ``emb(text)`` and ``emb.embed_batch(texts)``; pass them as
  ``index(chunks, embed_fn=emb, batch_embed_fn=emb.embed_batch)`` or
  ``index(chunks, **embed_kwargs(emb))``;
* :func:`default_embedder` — the best offline embedder installed
  (:class:`E5Embedder`, multilingual E5 small, with the ``embed`` extra) or ``None``;
* :class:`E5UseEmbedder` — e5-small and multilingual USE v3 in one vector whose
  dot product is a weighted cosine (opt-in: better across languages);
* asymmetric embedders (E5) embed queries with ``embed_query`` /
  ``embed_queries`` and passages with ``emb(text)`` / ``embed_batch``; the
  engine finds the query forms itself (:func:`query_forms`);
* adapters for real backends, each in its own extra:
  :class:`SentenceTransformerEmbedder` and :class:`FastEmbedEmbedder` (local
  model folders), :class:`OpenAIEmbedder` (an OpenAI-compatible endpoint, async);
* :class:`CachedEmbedder` / :class:`VectorCache` — passage vectors kept by
  content hash (in a file), so indexing again embeds only new or changed texts
  and an interrupted run resumes;
* :class:`HashingEmbedder` — the dependency-free offline embedder: *lexical*
  (hashed words and character n-grams), deterministic, no model files.
"""

from zerda_async.core.retrieval.vector import BatchEmbedFn, EmbedFn
from zerda_async.embedders._blas import blas_threads, default_blas_threads
from zerda_async.embedders._default import default_embedder, embedder_from_params
from zerda_async.embedders._e5 import E5_FLOOR, E5_MARGIN_FLOOR, E5Embedder, e5_available
from zerda_async.embedders._e5_use import (
    E5_USE_DIRECTION,
    E5_USE_FLOOR,
    E5_USE_WEIGHT,
    E5UseEmbedder,
)
from zerda_async.embedders._embedder import (
    QUERY_CACHE_SIZE,
    Embedder,
    check_embeddings,
    check_query_vector,
    is_coroutine_function,
)
from zerda_async.embedders._fastembed import FastEmbedEmbedder
from zerda_async.embedders._hashing import HashingEmbedder
from zerda_async.embedders._openai import OpenAIEmbedder
from zerda_async.embedders._protocol import (
    AsyncTextEmbedder,
    QueryEmbedder,
    TextEmbedder,
    embed_kwargs,
    query_forms,
)
from zerda_async.embedders._sentence_transformers import SentenceTransformerEmbedder
from zerda_async.embedders._use import UniversalSentenceEncoder, use_available
from zerda_async.embedders._vector_cache import CachedEmbedder, VectorCache, cache_key

__all__ = [
    "E5_FLOOR",
    "E5_MARGIN_FLOOR",
    "E5_USE_DIRECTION",
    "E5_USE_FLOOR",
    "E5_USE_WEIGHT",
    "QUERY_CACHE_SIZE",
    "AsyncTextEmbedder",
    "BatchEmbedFn",
    "CachedEmbedder",
    "E5Embedder",
    "E5UseEmbedder",
    "EmbedFn",
    "Embedder",
    "FastEmbedEmbedder",
    "HashingEmbedder",
    "OpenAIEmbedder",
    "QueryEmbedder",
    "SentenceTransformerEmbedder",
    "TextEmbedder",
    "UniversalSentenceEncoder",
    "VectorCache",
    "blas_threads",
    "cache_key",
    "check_embeddings",
    "check_query_vector",
    "default_blas_threads",
    "default_embedder",
    "e5_available",
    "embed_kwargs",
    "embedder_from_params",
    "is_coroutine_function",
    "query_forms",
    "use_available",
]
