"""Embedders: one protocol for whatever turns texts into vectors.

* :class:`Embedder` — wraps the caller's ``embed_fn`` / ``batch_embed_fn`` (plain or
  coroutine functions), checks every vector and batches where it can;
* :class:`TextEmbedder` / :class:`AsyncTextEmbedder` — the protocol of the
  bundled adapters: ``emb(text)`` and ``emb.embed_batch(texts)``; pass them as
  ``index(chunks, embed_fn=emb, batch_embed_fn=emb.embed_batch)`` or
  ``index(chunks, **embed_kwargs(emb))``;
* :func:`default_embedder` — the best offline embedder installed
  (:class:`UniversalSentenceEncoder` with the ``embed`` extra) or ``None``;
* adapters for real backends, each in its own extra:
  :class:`SentenceTransformerEmbedder` and :class:`FastEmbedEmbedder` (local
  model folders), :class:`OpenAIEmbedder` (an OpenAI-compatible endpoint, async);
* :class:`HashingEmbedder` — the dependency-free offline embedder: *lexical*
  (hashed words and character n-grams), deterministic, no model files.
"""

from zerda_async.core.retrieval.vector import BatchEmbedFn, EmbedFn
from zerda_async.embedders._blas import blas_threads, default_blas_threads
from zerda_async.embedders._default import default_embedder, embedder_from_params
from zerda_async.embedders._embedder import (
    Embedder,
    check_embeddings,
    check_query_vector,
    is_coroutine_function,
)
from zerda_async.embedders._fastembed import FastEmbedEmbedder
from zerda_async.embedders._hashing import HashingEmbedder
from zerda_async.embedders._openai import OpenAIEmbedder
from zerda_async.embedders._protocol import AsyncTextEmbedder, TextEmbedder, embed_kwargs
from zerda_async.embedders._sentence_transformers import SentenceTransformerEmbedder
from zerda_async.embedders._use import UniversalSentenceEncoder, use_available

__all__ = [
    "AsyncTextEmbedder",
    "BatchEmbedFn",
    "EmbedFn",
    "Embedder",
    "FastEmbedEmbedder",
    "HashingEmbedder",
    "OpenAIEmbedder",
    "SentenceTransformerEmbedder",
    "TextEmbedder",
    "UniversalSentenceEncoder",
    "blas_threads",
    "check_embeddings",
    "check_query_vector",
    "default_blas_threads",
    "default_embedder",
    "embed_kwargs",
    "embedder_from_params",
    "is_coroutine_function",
    "use_available",
]
