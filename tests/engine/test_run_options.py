"""The opt-in run options ``filters`` (restrict) and ``template`` (per request), on both engines."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator
from typing import Any

import pytest
from support.corpus import CORPUS
from support.embedding import hashed_embedding

import sync_api
from zerda_async import AsyncContextEngine, ContextEngineConfig, ContextResult
from zerda_async.core.models import ScoredChunk
from zerda_async.errors import ConfigError
from zerda_async.events import DoneEvent

pytestmark = pytest.mark.anyio

AR_QUERY = "ما هو التعلم الآلي؟"
EN_QUERY = "What is machine learning?"
AR_HEADER = "📚 المعلومات المسترجعة:"
EN_HEADER = "📚 Retrieved Information:"
LANG = {doc.doc_id: doc.metadata.get("lang") for doc in CORPUS}
YEAR: dict[str, Any] = {doc.doc_id: doc.metadata.get("year") for doc in CORPUS}
TEXT = {doc.doc_id: doc.text.strip() for doc in CORPUS}


def check_citations(result: ContextResult) -> None:
    """Every citation is its chunk's text exactly where it sits in the context."""
    assert result.citations
    for cit in result.citations:
        span = result.context[cit.start : cit.end]
        if cit.truncated:
            assert TEXT[cit.doc_id].startswith(span)
        else:
            assert span == TEXT[cit.doc_id]


@pytest.fixture
async def engine() -> AsyncIterator[AsyncContextEngine]:
    async with AsyncContextEngine() as eng:
        await eng.index(CORPUS, embed_fn=hashed_embedding)
        yield eng


async def test_filters_restrict_the_run_even_against_the_best_match(
    engine: AsyncContextEngine,
) -> None:
    plain = await engine.run(AR_QUERY)
    best = plain.chunks_used[0].doc_id
    assert LANG[best] == "ar"  # the Arabic chunks are the best matches
    english = await engine.run(AR_QUERY, filters={"lang": "en"})
    assert english.chunks_used
    assert {LANG[sc.doc_id] for sc in english.chunks_used} == {"en"}
    assert best not in {sc.doc_id for sc in english.chunks_used}
    assert {LANG[c.doc_id] for c in english.citations} == {"en"}
    check_citations(english)


async def test_ranges_and_in_lists_restrict_by_value(engine: AsyncContextEngine) -> None:
    ranged = await engine.run(EN_QUERY, filters={"year": {"$gte": 2017, "$lt": 2019}})
    assert ranged.chunks_used
    assert all(2017 <= YEAR[sc.doc_id] < 2019 for sc in ranged.chunks_used)
    listed = await engine.run(EN_QUERY, filters={"year": {"$in": [2015, 2023]}})
    assert listed.chunks_used
    assert {YEAR[sc.doc_id] for sc in listed.chunks_used} <= {2015, 2023}
    none = await engine.run(EN_QUERY, filters={"lang": "fr"})
    assert none.chunks_used == [] and none.citations == []


async def test_stream_run_many_and_run_multi_take_the_filters(
    engine: AsyncContextEngine,
) -> None:
    events = [event async for event in engine.stream(AR_QUERY, filters={"lang": "en"})]
    done = events[-1]
    assert isinstance(done, DoneEvent)
    assert {LANG[sc.doc_id] for sc in done.result.chunks_used} == {"en"}
    results = await engine.run_many([AR_QUERY, EN_QUERY], filters={"lang": "ar"})
    for result in results:
        assert result.chunks_used
        assert {LANG[sc.doc_id] for sc in result.chunks_used} == {"ar"}
    context = await engine.run_multi([AR_QUERY, EN_QUERY], filters={"lang": "en"})
    arabic_texts = [TEXT[d] for d, lang in LANG.items() if lang == "ar"]
    assert not any(text[:40] in context for text in arabic_texts)
    assert TEXT["ml"] in context


async def test_the_cache_key_carries_the_filters_and_the_template(
    engine: AsyncContextEngine,
) -> None:
    first = await engine.run(AR_QUERY)
    filtered = await engine.run(AR_QUERY, filters={"lang": "en", "year": {"$gte": 2015}})
    assert not filtered.metadata.get("from_cache")
    assert filtered.context != first.context
    # The same filters in another order: the same key, a hit with the same citations.
    again = await engine.run(AR_QUERY, filters={"year": {"$gte": 2015}, "lang": "en"})
    assert again.metadata.get("from_cache") is True
    assert again.context == filtered.context and again.citations == filtered.citations
    english = await engine.run(AR_QUERY, template="english")
    assert not english.metadata.get("from_cache")
    assert english.context.startswith(EN_HEADER)
    # Naming the configured template is the same request as naming none.
    assert (await engine.run(AR_QUERY, template="arabic")).metadata.get("from_cache") is True


async def test_one_engine_composes_each_request_with_its_template(
    engine: AsyncContextEngine,
) -> None:
    assert engine.config.composer.template == "arabic"
    cases = [
        (EN_QUERY, None, AR_HEADER),
        (EN_QUERY, "english", EN_HEADER),
        (EN_QUERY, "auto", EN_HEADER),
        (AR_QUERY, "auto", AR_HEADER),
        (AR_QUERY, "structured", "=== CONTEXT START ==="),
    ]
    for query, template, header in cases:
        result = await engine.run(query, template=template, use_history=False)
        assert result.context.startswith(header), (query, template)
        check_citations(result)


async def test_bad_options_raise_config_error_before_anything_runs(
    engine: AsyncContextEngine,
) -> None:
    with pytest.raises(ConfigError, match="'year'"):
        await engine.run(EN_QUERY, filters={"year": {"$gte": "2020"}})
    with pytest.raises(ConfigError, match="template"):
        await engine.run(EN_QUERY, template="klingon")
    with pytest.raises(ConfigError, match="'lang'"):
        await engine.run_many([EN_QUERY], filters={"lang": {"$in": []}})
    assert engine.statistics().in_flight == 0


async def test_an_injected_retriever_without_where_is_filtered_by_the_stage() -> None:
    class Plain:
        calls = 0

        def retrieve(self, query: str, top_k: int, filters: Any = None) -> list[ScoredChunk]:
            Plain.calls += 1
            return [ScoredChunk(chunk=c, keyword_score=0.5) for c in CORPUS[:top_k]]

    config = ContextEngineConfig()
    config.cache.enabled = False
    async with AsyncContextEngine(config, retriever=Plain()) as eng:
        await eng.index(CORPUS)  # installs the source-quality map; the retriever stays
        plain = await eng.run(EN_QUERY, filters={"year": 2016})
    assert Plain.calls == 1
    assert plain.chunks_used
    assert {YEAR[sc.doc_id] for sc in plain.chunks_used} == {2016}


def test_the_sync_facade_takes_both_options_keyword_only() -> None:
    params = list(inspect.signature(sync_api.ContextEngine.run).parameters.values())
    documented = ["self", "query", "metadata_filters", "max_chunks", "override_budget"]
    assert [p.name for p in params[:5]] == documented
    assert [(p.name, p.kind) for p in params[-2:]] == [
        ("filters", inspect.Parameter.KEYWORD_ONLY),
        ("template", inspect.Parameter.KEYWORD_ONLY),
    ]
    engine = sync_api.ContextEngine().index(CORPUS, embed_fn=hashed_embedding)
    result = engine.run(AR_QUERY, filters={"lang": "en"}, template="auto")
    assert result.context.startswith(AR_HEADER)
    assert {LANG[sc.doc_id] for sc in result.chunks_used} == {"en"}
    check_citations(result)


async def test_the_async_engine_validates_its_configuration() -> None:
    config = ContextEngineConfig()
    config.ranking.weight_recency = -0.5
    with pytest.raises(ConfigError, match=r"ranking\.weight_recency"):
        AsyncContextEngine(config)
    # The documented package accepts anything; validate=False replays that.
    async with AsyncContextEngine(config, validate=False) as eng:
        assert eng.config.ranking.weight_recency == -0.5
