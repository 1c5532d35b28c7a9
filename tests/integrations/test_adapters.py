"""LangChain, LlamaIndex and Haystack adapters on both engines, sync and async, never blocking."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest
from anyio.from_thread import BlockingPortal

from sync_api import ContextEngine, ContextEngineConfig
from zerda_async import AsyncContextEngine, ConfigError
from zerda_async.errors import SyncCallError
from zerda_async.integrations import ZerdaBackend

from .conftest import CORPUS, QUERY, Doc

# Imported here, not in the async tests: importing reads files, which would
# block the loop (and fail the blockbuster check).
try:
    import langchain_core  # noqa: F401

    from zerda_async.integrations import ZerdaRetriever, zerda_context_runnable
except ImportError:
    HAVE_LANGCHAIN = False
else:
    HAVE_LANGCHAIN = True
try:
    from llama_index.core.schema import NodeWithScore

    from zerda_async.integrations import ZerdaLlamaIndexRetriever
except ImportError:
    HAVE_LLAMAINDEX = False
else:
    HAVE_LLAMAINDEX = True
try:
    import haystack.tools  # noqa: F401  (Pipeline.run_async imports it lazily, on the loop)
    from haystack import Pipeline

    from zerda_async.integrations import ZerdaHaystackRetriever
except ImportError:
    HAVE_HAYSTACK = False
else:
    HAVE_HAYSTACK = True

needs_langchain = pytest.mark.skipif(
    not HAVE_LANGCHAIN, reason="the 'langchain' extra is not installed"
)
needs_llamaindex = pytest.mark.skipif(
    not HAVE_LLAMAINDEX, reason="the 'llamaindex' extra is not installed"
)
needs_haystack = pytest.mark.skipif(
    not HAVE_HAYSTACK, reason="the 'haystack' extra is not installed"
)

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    """The frameworks' async paths run on asyncio (blockbuster checks the loop there)."""
    return "asyncio"


@pytest.fixture(autouse=True)
def _no_blocking(no_blocking_on_the_loop: object) -> None:
    """Every async test here fails if the adapters block the event loop."""


@pytest.fixture
async def async_engine() -> AsyncIterator[AsyncContextEngine]:
    config = ContextEngineConfig()
    config.composer.template = "english"
    config.cache.enabled = False
    async with AsyncContextEngine(config) as engine:
        await engine.index(CORPUS)
        yield engine


def _expected(engine: ContextEngine, k: int) -> list[str]:
    return [sc.doc_id for sc in engine.run(QUERY, max_chunks=k).chunks_used]


def test_backend_refuses_an_engine_whose_cache_would_hide_the_chunks() -> None:
    with pytest.raises(ConfigError, match=r"cache\.enabled"):
        ZerdaBackend(ContextEngine().index(CORPUS))
    with pytest.raises(TypeError, match="engine must be"):
        ZerdaBackend(object())


@needs_langchain
def test_langchain_documents_carry_citations_and_scores(engine: ContextEngine) -> None:
    docs = ZerdaRetriever(engine=engine, k=3).invoke(QUERY)
    assert [d.metadata["doc_id"] for d in docs] == _expected(engine, 3)
    first = docs[0]
    assert first.id == first.metadata["doc_id"] and first.metadata["rank"] == 1
    assert first.metadata["source"] == first.metadata["doc_id"]  # no source metadata given
    assert first.page_content == next(c.text for c in CORPUS if c.doc_id == first.id)
    scores = [d.metadata["score"] for d in docs]
    assert scores == sorted(scores, reverse=True) and scores[0] > 0
    assert {"vector_score", "keyword_score", "composite_score"} <= set(first.metadata)


@needs_langchain
async def test_langchain_async_paths_on_both_engines(
    engine: ContextEngine, async_engine: AsyncContextEngine
) -> None:
    want = _expected(engine, 2)
    on_facade = await ZerdaRetriever(engine=engine, k=2).ainvoke(QUERY)
    on_async = await ZerdaRetriever(engine=async_engine).ainvoke(QUERY, k=2)
    assert [d.id for d in on_facade] == [d.id for d in on_async] == want
    context = await zerda_context_runnable(async_engine, k=2).ainvoke({"question": QUERY})
    assert context == engine.run(QUERY, max_chunks=2).context
    # A sync call on the async engine from inside its loop would block it: refused.
    with pytest.raises(SyncCallError, match="portal"):
        ZerdaRetriever(engine=async_engine).invoke(QUERY)


@needs_langchain
async def test_sync_calls_on_the_async_engine_go_through_a_portal(
    async_engine: AsyncContextEngine,
) -> None:
    async with BlockingPortal() as portal:
        retriever = ZerdaRetriever(engine=async_engine, portal=portal, k=3)
        docs = await anyio.to_thread.run_sync(retriever.invoke, QUERY)
        runnable = zerda_context_runnable(async_engine, portal=portal, k=3)
        context = await anyio.to_thread.run_sync(runnable.invoke, QUERY)
    assert len(docs) == 3
    assert context == (await async_engine.run(QUERY, max_chunks=3)).context
    with pytest.raises(TypeError, match="'query'"):
        zerda_context_runnable(async_engine).invoke(42)


@needs_llamaindex
async def test_llamaindex_retriever_sync_and_async(engine: ContextEngine) -> None:
    retriever = ZerdaLlamaIndexRetriever(engine, k=3)
    nodes = await anyio.to_thread.run_sync(retriever.retrieve, QUERY)
    anodes = await retriever.aretrieve(QUERY)
    assert all(isinstance(n, NodeWithScore) for n in nodes)
    assert [n.node.node_id for n in nodes] == [n.node.node_id for n in anodes]
    assert [n.node.node_id for n in nodes] == _expected(engine, 3)
    assert nodes[0].score == nodes[0].node.metadata["composite_score"] > 0
    assert nodes[0].node.metadata["doc_id"] == nodes[0].node.node_id


@needs_haystack
async def test_haystack_component_sync_async_and_in_pipelines(engine: ContextEngine) -> None:
    component = ZerdaHaystackRetriever(engine, top_k=2)
    out = await anyio.to_thread.run_sync(lambda: component.run(query=QUERY, top_k=3))
    assert [d.id for d in out["documents"]] == _expected(engine, 3)
    assert out["context"] == engine.run(QUERY, max_chunks=3).context
    assert out["documents"][0].score == out["documents"][0].meta["composite_score"]
    aout = await component.run_async(query=QUERY)
    assert [d.id for d in aout["documents"]] == _expected(engine, 2)

    # Haystack 3 runs one Pipeline class both ways (2.x had AsyncPipeline).
    pipeline = Pipeline()
    pipeline.add_component("zerda", ZerdaHaystackRetriever(engine, top_k=2))
    piped = await pipeline.run_async({"zerda": {"query": QUERY}})
    assert [d.id for d in piped["zerda"]["documents"]] == _expected(engine, 2)

    def run_sync_pipeline() -> list[str]:
        sync_pipeline = Pipeline()
        sync_pipeline.add_component("zerda", ZerdaHaystackRetriever(engine, top_k=1))
        result = sync_pipeline.run({"zerda": {"query": QUERY}})
        return [d.id for d in result["zerda"]["documents"]]

    assert await anyio.to_thread.run_sync(run_sync_pipeline) == _expected(engine, 1)


def _tagged_engine() -> ContextEngine:
    """The corpus with a ``kind`` on each chunk: the retrieval ones are ``"search"``."""
    config = ContextEngineConfig()
    config.cache.enabled = False
    tagged = [
        Doc(d.doc_id, d.text, {"kind": "search" if d.doc_id[:3] in {"rag", "bm2", "rrf"} else "x"})
        for d in CORPUS
    ]
    return ContextEngine(config).index(tagged)


async def test_every_adapter_passes_the_restricting_filters_through() -> None:
    engine = _tagged_engine()
    only = {"kind": "x"}
    everything = [sc.doc_id for sc in engine.run(QUERY, max_chunks=4).chunks_used]
    assert everything and all(d[:3] in {"rag", "bm2", "rrf"} for d in everything[:2])
    expected = [sc.doc_id for sc in engine.run(QUERY, max_chunks=4, filters=only).chunks_used]
    assert not any(d[:3] in {"rag", "bm2", "rrf"} for d in expected)
    found: list[list[str]] = []
    if HAVE_LANGCHAIN:
        retriever = ZerdaRetriever(engine=engine, k=4)
        found.append([d.id or "" for d in retriever.invoke(QUERY, filters=only)])
        found.append([d.id or "" for d in await retriever.ainvoke(QUERY, filters=only)])
        runnable = zerda_context_runnable(engine, k=4, filters=only)
        assert "Retrieval-augmented" not in runnable.invoke(QUERY)
    if HAVE_LLAMAINDEX:
        nodes = ZerdaLlamaIndexRetriever(engine, k=4, filters=only).retrieve(QUERY)
        found.append([n.node.node_id for n in nodes])
    if HAVE_HAYSTACK:
        out = ZerdaHaystackRetriever(engine, top_k=4).run(QUERY, filters=only)
        found.append([d.id for d in out["documents"]])
    assert found and all(ids == expected for ids in found)
