"""Every golden engine case, replayed through ``AsyncContextEngine`` (one test per case id).

The steps are the same protocol the sync replay uses
(:func:`golden.replay.engine_steps`); only the driver differs: its engine
calls are awaited on the async engine.  The legacy tuple operations
(``build``, ``compress_context``, ...) have no async counterpart, so they run
the shared pipeline operations on the async engine's own state.
"""

from __future__ import annotations

from typing import Any

import pytest
from golden.replay import check_case, drive_engine_steps_async, engine_setup, load_cases

from zerda_async import AsyncContextEngine
from zerda_async import pipeline as operations
from zerda_async.pipeline import EngineState

pytestmark = pytest.mark.anyio

CASES = [case for case in load_cases() if case["kind"] == "engine"]


class LegacyOps:
    """The documented legacy methods, on an async engine's state."""

    def __init__(self, state: EngineState) -> None:
        self.state = state

    def build(self, query: Any, chunks: Any, **kwargs: Any) -> str:
        return operations.build_context(self.state, query, chunks, **kwargs)

    def build_multi_query_context(self, queries: Any, all_chunks: Any) -> str:
        return operations.build_multi_query_context(self.state, queries, all_chunks)

    def compress_context(self, context: str, target_length: int) -> str:
        return operations.compress_context(self.state, context, target_length)

    def get_context_stats(self, context: str) -> dict[str, Any]:
        return operations.context_stats(self.state, context)


class AsyncDriver:
    """Replays engine steps on a running ``AsyncContextEngine``."""

    def __init__(self, engine: AsyncContextEngine) -> None:
        self.engine = engine

    async def index(self, chunks: list[Any], embed_fn: Any, source_quality_map: Any) -> bool:
        returned = await self.engine.index(
            chunks, embed_fn=embed_fn, source_quality_map=source_quality_map
        )
        return returned is self.engine

    async def run(self, query: Any, **kwargs: Any) -> Any:
        return await self.engine.run(query, **kwargs)

    async def run_multi(self, queries: Any, **kwargs: Any) -> str:
        return await self.engine.run_multi(queries, **kwargs)

    def get_history(self) -> Any:
        return self.engine.get_history()

    def get_performance_report(self) -> dict[str, Any]:
        return self.engine.get_performance_report()

    async def clear_cache(self) -> None:
        await self.engine.clear_cache()

    def legacy(self) -> LegacyOps:
        return LegacyOps(self.engine._state)


def test_there_are_engine_cases() -> None:
    assert len(CASES) >= 50


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
async def test_golden_engine_case_async(case: dict[str, Any]) -> None:
    config, counter = engine_setup(case["input"])
    kwargs = {} if counter is None else {"length_counter": counter}
    # The cases replay the documented package's acceptance of any configuration.
    async with AsyncContextEngine(config, validate=False, **kwargs) as engine:
        steps = await drive_engine_steps_async(AsyncDriver(engine), case["input"]["steps"])
    difference = check_case(case, {"steps": steps})
    assert difference is None, difference
