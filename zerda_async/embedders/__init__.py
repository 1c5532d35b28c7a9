"""Embedders: one protocol for whatever turns texts into vectors.

* :class:`Embedder` — wraps the caller's ``embed_fn`` / ``batch_embed_fn`` (plain or
  coroutine functions), checks every vector and batches where it can;
* :class:`HashingEmbedder` — the bundled offline embedder: *lexical* (hashed
  character n-grams), deterministic, no model files.
"""

from zerda_async.core.retrieval.vector import BatchEmbedFn, EmbedFn
from zerda_async.embedders._embedder import (
    Embedder,
    check_embeddings,
    check_query_vector,
    is_coroutine_function,
)
from zerda_async.embedders._hashing import HashingEmbedder

__all__ = [
    "BatchEmbedFn",
    "EmbedFn",
    "Embedder",
    "HashingEmbedder",
    "check_embeddings",
    "check_query_vector",
    "is_coroutine_function",
]
