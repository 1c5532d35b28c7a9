"""LlamaIndex: zerda as a ``BaseRetriever`` returning ``NodeWithScore`` (``llamaindex`` extra)."""

from __future__ import annotations

from typing import Any

from anyio.from_thread import BlockingPortal
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from zerda_async.core.models import ContextResult
from zerda_async.integrations._backend import ZerdaBackend, chunk_metadata

__all__ = ["ZerdaLlamaIndexRetriever"]


def _nodes(result: ContextResult, k: int) -> list[NodeWithScore]:
    return [
        NodeWithScore(
            node=TextNode(id_=str(sc.doc_id), text=sc.text, metadata=chunk_metadata(sc, rank)),
            score=float(sc.composite_score),
        )
        for rank, sc in enumerate(result.chunks_used[:k], 1)
    ]


class ZerdaLlamaIndexRetriever(BaseRetriever):
    """The ranked chunks of a zerda run as LlamaIndex nodes (score: the composite score).

    ``retrieve`` runs the sync path, ``aretrieve`` the async one (never
    blocking the loop); node metadata carries ``doc_id``, ``source``,
    ``rank`` and the chunk's scores.  ``metadata_filters`` boost matching
    chunks; ``filters`` restrict retrieval to them: LlamaIndex
    ``MetadataFilters`` (``EQ``, ``IN``, ``GT``/``GTE``/``LT``/``LTE``, AND, and
    OR between values of one key; other operators are a ``ConfigError`` naming
    them) or zerda's filter language (equality, ``$in``, ranges).
    """

    def __init__(
        self,
        engine: Any,
        *,
        k: int = 4,
        metadata_filters: dict[str, Any] | None = None,
        filters: Any = None,
        portal: BlockingPortal | None = None,
        **kwargs: Any,
    ) -> None:
        self._zerda = ZerdaBackend(engine, portal=portal)
        self._k = k
        self._boost = metadata_filters
        self._where = filters
        super().__init__(**kwargs)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        result = self._zerda.run(query_bundle.query_str, self._k, self._boost, self._where)
        return _nodes(result, self._k)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        result = await self._zerda.arun(query_bundle.query_str, self._k, self._boost, self._where)
        return _nodes(result, self._k)
