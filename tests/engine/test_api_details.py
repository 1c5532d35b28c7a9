"""Stream events report the budget used; aclose() from another task."""

from __future__ import annotations

import pytest

from zerda_async import AsyncContextEngine
from zerda_async.events import AnalysisEvent, ComposedEvent

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
