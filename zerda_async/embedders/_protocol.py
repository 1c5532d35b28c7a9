"""The shape every bundled embedder adapter has, so the engine takes any of them the same way.

A *text embedder* is an object that is both

* a plain callable ``emb(text) -> vector`` (what ``index(embed_fn=...)`` of the
  async engine and of ``sync_api.ContextEngine`` accept), and
* a batch form ``emb.embed_batch(texts) -> matrix`` with one row per text
  (what ``AsyncContextEngine.index(batch_embed_fn=...)`` accepts).

An *async* text embedder has the same two methods as coroutines (a network
endpoint).  :func:`embed_kwargs` turns either into the keyword arguments of
``AsyncContextEngine.index()`` / ``load()``.

Asymmetric models (E5, and any model trained with a query instruction) embed
a question differently from a document.  Such an embedder keeps the two
methods above for **passages** (what is indexed) and adds two for
**queries** (:class:`QueryEmbedder`): ``embed_query(text)`` and
``embed_queries(texts)`` (plain or coroutine, like the others).  The engine
finds them with :func:`query_forms` on the object passed as ``embed_fn`` (or
the object ``batch_embed_fn`` is a method of), so nothing else changes for
the caller: ``index(chunks, **embed_kwargs(emb))`` embeds chunks as passages
and every query as a query.  Symmetric embedders have no such methods and
embed both the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "AsyncTextEmbedder",
    "QueryEmbedder",
    "TextEmbedder",
    "as_texts",
    "embed_kwargs",
    "query_forms",
]


@runtime_checkable
class TextEmbedder(Protocol):
    """A synchronous embedder: one text or a batch of texts to L2-comparable vectors."""

    name: str
    """A short identifier of the model (recorded with a saved index)."""

    def __call__(self, text: Any) -> NDArray[np.floating[Any]]:
        """The vector of one text."""
        ...

    def embed_batch(self, texts: Sequence[Any]) -> NDArray[np.floating[Any]]:
        """One row per text, in order."""
        ...


@runtime_checkable
class AsyncTextEmbedder(Protocol):
    """An embedder whose two methods are coroutines (awaited on the event loop)."""

    name: str

    async def __call__(self, text: Any) -> NDArray[np.floating[Any]]:
        """The vector of one text."""
        ...

    async def embed_batch(self, texts: Sequence[Any]) -> NDArray[np.floating[Any]]:
        """One row per text, in order."""
        ...


@runtime_checkable
class QueryEmbedder(Protocol):
    """The query side of an asymmetric embedder (its passages: ``__call__`` / ``embed_batch``)."""

    def embed_query(self, text: Any) -> Any:
        """The vector of one query."""
        ...

    def embed_queries(self, texts: Sequence[Any]) -> Any:
        """One row per query, in order."""
        ...


def query_forms(
    embed_fn: Any, batch_embed_fn: Any = None
) -> tuple[Callable[[Any], Any], Callable[[list[Any]], Any]] | None:
    """``(embed_query, embed_queries)`` of an asymmetric embedder, or ``None`` (symmetric).

    Looked up on ``embed_fn`` itself, then on the object ``batch_embed_fn``
    is bound to (``emb.embed_batch`` passed alone).
    """
    for owner in (embed_fn, getattr(batch_embed_fn, "__self__", None)):
        if owner is not None and isinstance(owner, QueryEmbedder):
            return owner.embed_query, owner.embed_queries
    return None


def embed_kwargs(embedder: TextEmbedder | AsyncTextEmbedder) -> dict[str, Any]:
    """``{"embed_fn": embedder, "batch_embed_fn": embedder.embed_batch}``.

    ``await engine.index(chunks, **embed_kwargs(emb))`` gives the async engine
    both forms: the batch form embeds the corpus in batches and micro-batches
    concurrent queries.  ``sync_api.ContextEngine.index(chunks, embed_fn=emb)``
    takes the plain callable alone (the documented signature).
    """
    return {"embed_fn": embedder, "batch_embed_fn": embedder.embed_batch}


def as_texts(texts: Sequence[Any]) -> list[str]:
    """The texts as strings: ``None`` becomes ``""``, anything else ``str(value)``.

    A bare string is refused, because iterating it would embed its characters.
    """
    if isinstance(texts, str | bytes):
        raise TypeError("embed_batch() takes a sequence of texts, not a single string")
    return ["" if text is None else str(text) for text in texts]
