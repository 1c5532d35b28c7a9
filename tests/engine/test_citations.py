"""Citations and the relevance flag through whole runs: sync facade, async engine, cache hits."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import sync_api
from zerda_async import AsyncContextEngine
from zerda_async.core.config import ContextEngineConfig

from .support import CORPUS, QUERIES

pytestmark = pytest.mark.anyio


def documented() -> ContextEngineConfig:
    return ContextEngineConfig()


def recommended() -> ContextEngineConfig:
    return ContextEngineConfig.recommended()


PROFILES: dict[str, Callable[[], ContextEngineConfig]] = {
    "documented": documented,
    "recommended": recommended,
}
OFF_TOPIC = "Quokka zyzzyva xylophone?"
# One query per cache key, so the first run of each is a miss.
ASKED = [*{q.strip().lower(): q for q in QUERIES}.values(), OFF_TOPIC]


def check(result: Any) -> None:
    """Citations locate their chunks' printed text; ``chunks_used`` is the ranked list."""
    texts = {doc.doc_id: doc.text.strip() for doc in CORPUS}
    assert result.total_included == result.total_after_rank or result.metadata.get("from_cache")
    for cit in result.citations:
        span = result.context[cit.start : cit.end]
        if cit.truncated:
            assert texts[cit.doc_id].startswith(span)
        else:
            assert span == texts[cit.doc_id]
    if result.nothing_relevant:
        assert result.citations == []


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_sync_cache_hit_returns_the_citations_of_the_miss(profile: str) -> None:
    engine = sync_api.ContextEngine(PROFILES[profile]()).index(CORPUS)
    for query in ASKED:
        miss = engine.run(query)
        hit = engine.run(f"  {query.upper()} ")
        check(miss)
        assert not miss.metadata.get("from_cache")
        if miss.guard_passed:
            assert hit.metadata == {"from_cache": True}
            assert hit.context == miss.context
            assert hit.citations == miss.citations
            assert hit.nothing_relevant == miss.nothing_relevant


def test_documented_profile_cites_without_changing_the_context() -> None:
    engine = sync_api.ContextEngine(documented()).index(CORPUS)
    result = engine.run("What is machine learning?")
    assert result.citations, "the documented composer cites what it packs"
    assert not result.nothing_relevant
    assert len(result.citations) < len(result.chunks_used)


def test_recommended_profile_flags_an_off_topic_question() -> None:
    engine = sync_api.ContextEngine(recommended()).index(CORPUS)
    result = engine.run(OFF_TOPIC)
    assert result.nothing_relevant
    assert result.citations == []
    assert "No information available." in result.context


@pytest.mark.parametrize("profile", sorted(PROFILES))
async def test_async_engine_equals_sync_and_caches_citations(profile: str) -> None:
    reference = sync_api.ContextEngine(PROFILES[profile]()).index(CORPUS)
    async with AsyncContextEngine(PROFILES[profile]()) as engine:
        await engine.index(CORPUS)
        for query in ASKED:
            expected = reference.run(query)
            miss = await engine.run(query)
            assert (miss.context, miss.citations, miss.nothing_relevant) == (
                expected.context,
                expected.citations,
                expected.nothing_relevant,
            )
            hit = await engine.run(query)
            if miss.guard_passed:
                assert hit.metadata == {"from_cache": True}
                assert hit.citations == miss.citations
