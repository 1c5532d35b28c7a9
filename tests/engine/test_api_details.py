"""Stream events report the budget used; aclose() from another task; a failed stream's error."""

from __future__ import annotations

from typing import Any

import pytest
from support.corpus import CORPUS
from support.embedding import hashed_embedding

from zerda_async import AsyncContextEngine
from zerda_async.errors import failed_stage
from zerda_async.events import AnalysisEvent, ComposedEvent, ErrorEvent

pytestmark = pytest.mark.anyio


async def test_analysis_event_budget_is_the_adaptive_budget_used_for_composition() -> None:
    async with AsyncContextEngine() as engine:
        # Ten placeholder contexts (no index) collapse later budgets to 200.
        for i in range(10):
            await engine.run(f"warm-up question {i}")
        events = [event async for event in engine.stream("one more question")]
    analysis = next(e for e in events if isinstance(e, AnalysisEvent))
    composed = next(e for e in events if isinstance(e, ComposedEvent))
    assert analysis.budget == composed.budget == 200


async def test_analysis_event_of_override_budget() -> None:
    async with AsyncContextEngine() as engine:
        events = [e async for e in engine.stream("a question", override_budget=1234)]
    analysis = next(e for e in events if isinstance(e, AnalysisEvent))
    assert analysis.budget == 1234


async def test_aclose_may_be_awaited_from_another_task() -> None:
    import anyio

    from zerda_async import EngineClosedError

    async with AsyncContextEngine() as engine:
        result = await engine.run("before closing")
        async with anyio.create_task_group() as tg:
            tg.start_soon(engine.aclose)
        with pytest.raises(EngineClosedError):
            await engine.run("after closing")
    assert result.context


async def test_a_streams_error_is_the_stages_own_exception() -> None:
    """What the error event describes in text, ``EventStream.error`` holds unchanged."""
    boom = RuntimeError("embedder exploded")

    def embed(text: Any) -> Any:
        if "boom" in str(text):
            raise boom
        return hashed_embedding(text)

    async with AsyncContextEngine() as engine:
        await engine.index(CORPUS, embed_fn=embed)
        async with engine.stream("boom goes the query") as events:
            assert events.error is None
            seen = [event async for event in events]
    assert isinstance(seen[-1], ErrorEvent) and seen[-1].message == "embedder exploded"
    assert events.error is boom and failed_stage(boom) == seen[-1].stage == "retrieval"
