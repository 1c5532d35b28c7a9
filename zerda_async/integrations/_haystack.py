"""Haystack 2: zerda as a pipeline component returning documents and the context (``haystack``
extra)."""

from __future__ import annotations

from typing import Any

from anyio.from_thread import BlockingPortal
from haystack import Document, component

from zerda_async.core.models import ContextResult
from zerda_async.integrations._backend import ZerdaBackend, chunk_metadata

__all__ = ["ZerdaHaystackRetriever"]


def _output(result: ContextResult, k: int) -> dict[str, Any]:
    documents = [
        Document(
            id=str(sc.doc_id),
            content=sc.text,
            meta=chunk_metadata(sc, rank),
            score=float(sc.composite_score),
        )
        for rank, sc in enumerate(result.chunks_used[:k], 1)
    ]
    return {"documents": documents, "context": result.context}


@component
class ZerdaHaystackRetriever:
    """Outputs ``documents`` (the ranked chunks, with scores) and ``context`` (zerda's string).

    ``run`` is the sync path; ``run_async`` (used by ``AsyncPipeline``) never
    blocks the loop.  ``top_k`` and ``filters`` can be overridden per run.
    ``filters`` restrict retrieval to the chunks whose metadata match, as a
    Haystack retriever's do, in Haystack's filter syntax (``{"field":
    "meta.lang", "operator": "==", "value": "en"}``, nested ``{"operator":
    "AND", "conditions": [...]}``; ``==``, ``in``, ``>``, ``>=``, ``<``, ``<=`` on
    ``meta.*`` fields, AND, and OR between values of one field — anything else
    is a ``ConfigError`` naming it) or in zerda's filter language (``{"lang":
    "en", "year": {"$gte": 2020}, "kind": {"$in": [...]}}``);
    ``metadata_filters`` are zerda's documented boosting filters.
    """

    def __init__(
        self,
        engine: Any,
        top_k: int = 4,
        filters: dict[str, Any] | None = None,
        portal: BlockingPortal | None = None,
        metadata_filters: dict[str, Any] | None = None,
    ) -> None:
        self._zerda = ZerdaBackend(engine, portal=portal)
        self.top_k = top_k
        self.filters = filters
        self.metadata_filters = metadata_filters

    @component.output_types(documents=list[Document], context=str)
    def run(
        self, query: str, top_k: int | None = None, filters: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Documents and context for ``query``."""
        k = self.top_k if top_k is None else top_k
        result = self._zerda.run(query, k, self.metadata_filters, filters or self.filters)
        return _output(result, k)

    @component.output_types(documents=list[Document], context=str)
    async def run_async(
        self, query: str, top_k: int | None = None, filters: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """The same as :meth:`run`, on the loop without blocking it."""
        k = self.top_k if top_k is None else top_k
        result = await self._zerda.arun(query, k, self.metadata_filters, filters or self.filters)
        return _output(result, k)
