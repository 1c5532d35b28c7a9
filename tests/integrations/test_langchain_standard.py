"""LangChain's own standard retriever suite, run on :class:`ZerdaRetriever`."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langchain_core", reason="the 'langchain' extra is not installed")
standard = pytest.importorskip(
    "langchain_tests.integration_tests", reason="langchain-tests is not installed"
)

from zerda_async.integrations import ZerdaRetriever  # noqa: E402

from .conftest import QUERY, sync_engine  # noqa: E402

# The suite's async test has no marker of its own; LangChain runs on asyncio.
pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    """LangChain's async path is asyncio-only."""
    return "asyncio"


# The suite's package is untyped here (mypy sees Any), so subclassing it needs the ignore.
_Suite: Any = standard.RetrieversIntegrationTests


class TestZerdaRetrieverStandard(_Suite):  # type: ignore[misc]
    """The suite: ``k`` in the constructor and per call, documents, the async path."""

    @property
    def retriever_constructor(self) -> Any:
        return ZerdaRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"engine": sync_engine(), "k": 2}

    @property
    def retriever_query_example(self) -> str:
        return QUERY
