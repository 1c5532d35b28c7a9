"""LangChain: zerda as a ``BaseRetriever`` and as a runnable returning the context (``langchain``
extra).

Both take a :class:`sync_api.ContextEngine` or an entered
:class:`~zerda_async.AsyncContextEngine` (see :class:`ZerdaBackend` for how
sync and async calls run without blocking a loop).
"""

from __future__ import annotations

from typing import Any

from anyio.from_thread import BlockingPortal
from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda
from pydantic import ConfigDict, Field

from zerda_async.core.models import ContextResult
from zerda_async.integrations._backend import ZerdaBackend, chunk_metadata

__all__ = ["ZerdaRetriever", "zerda_context_runnable"]


def _documents(result: ContextResult, k: int) -> list[Document]:
    return [
        Document(
            page_content=sc.text,
            metadata=chunk_metadata(sc, rank),
            id=str(sc.doc_id),
        )
        for rank, sc in enumerate(result.chunks_used[:k], 1)
    ]


class ZerdaRetriever(BaseRetriever):
    """The ranked chunks of a zerda run as LangChain ``Document``s.

    Each document's metadata holds the chunk's own metadata plus ``doc_id``,
    ``source``, ``rank`` and its scores (``score`` is the composite score).
    ``k`` (at most that many documents), ``metadata_filters`` (boost) and
    ``filters`` (restrict retrieval to matching metadata: equality,
    ``{"$in": [...]}``, numeric ranges) are set here and can be overridden per
    call: ``retriever.invoke(q, k=3, filters={"lang": "en"})``.  ``filters``
    may also be a Mongo-style dict (``{"$and": [{"lang": {"$eq": "en"}}, ...]}``)
    or a ``langchain_core.structured_query`` ``Comparison``/``Operation``;
    what zerda cannot express (``$ne``, ``$or`` across fields...) is a
    ``ConfigError`` naming it.  An engine with its cache on is refused here,
    when the retriever is built (a cached context carries no chunks).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    engine: Any
    """A ``sync_api.ContextEngine`` or an entered ``AsyncContextEngine``."""
    k: int = Field(default=4, ge=1)
    metadata_filters: dict[str, Any] | None = None
    filters: Any = None
    """Restricting filters: zerda's language, a Mongo-style dict, a ``Comparison``..."""
    portal: BlockingPortal | None = None
    """For sync calls on an ``AsyncContextEngine``: a portal on the engine's loop."""
    use_history: bool = False

    def __init__(self, **data: Any) -> None:
        super().__init__(**data)
        self._backend()  # refuses a wrong engine (cache on, wrong type) now, not at first use

    def _backend(self) -> ZerdaBackend:
        return ZerdaBackend(self.engine, portal=self.portal, use_history=self.use_history)

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None,
        metadata_filters: dict[str, Any] | None = None,
        filters: Any = None,
    ) -> list[Document]:
        n = self.k if k is None else k
        result = self._backend().run(
            query, n, metadata_filters or self.metadata_filters, filters or self.filters
        )
        return _documents(result, n)

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
        metadata_filters: dict[str, Any] | None = None,
        filters: Any = None,
    ) -> list[Document]:
        n = self.k if k is None else k
        result = await self._backend().arun(
            query, n, metadata_filters or self.metadata_filters, filters or self.filters
        )
        return _documents(result, n)


def _query_of(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in ("query", "question", "input"):
            if isinstance(value.get(key), str):
                return str(value[key])
    raise TypeError(
        "the zerda context runnable takes a string or a dict with a 'query', 'question' or "
        f"'input' string, got {type(value).__name__}"
    )


def zerda_context_runnable(
    engine: Any,
    *,
    k: int = 8,
    metadata_filters: dict[str, Any] | None = None,
    filters: Any = None,
    portal: BlockingPortal | None = None,
) -> RunnableLambda[Any, str]:
    """A runnable mapping a query (or ``{"query": ...}``) to zerda's composed context string.

    ``filters`` restrict retrieval to the chunks whose metadata match.

    ``invoke`` runs the sync path, ``ainvoke`` the async one (never blocking
    the loop); pipe it into a prompt: ``{"context": runnable, ...} | prompt``.
    """
    backend = ZerdaBackend(engine, portal=portal)

    def context(value: Any) -> str:
        return backend.run(_query_of(value), k, metadata_filters, filters).context

    async def acontext(value: Any) -> str:
        return (await backend.arun(_query_of(value), k, metadata_filters, filters)).context

    return RunnableLambda(context, afunc=acontext, name="zerda_context")
