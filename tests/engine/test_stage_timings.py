"""``RunOptions.on_stage``: each finished stage reported once, in order, the run unchanged."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from support.corpus import CORPUS, QUERIES
from support.embedding import hashed_embedding

from zerda_async import AsyncContextEngine, ContextEngineConfig, RunOptions, StageTiming
from zerda_async.apps import STAGE_EVENTS, run_timed
from zerda_async.errors import failed_stage
from zerda_async.pipeline import STAGES, EngineState, make_job, run_job

pytestmark = pytest.mark.anyio

ALL_STAGES = [stage.name for stage in STAGES]


def recorder() -> tuple[list[StageTiming], Callable[[StageTiming], None]]:
    seen: list[StageTiming] = []
    return seen, seen.append


def engine(cache: bool = True) -> AsyncContextEngine:
    config = ContextEngineConfig()
    config.cache.enabled = cache
    return AsyncContextEngine(config)


async def test_every_stage_is_reported_once_in_order_and_the_result_is_unchanged() -> None:
    seen, hook = recorder()
    async with engine(cache=False) as plain, engine(cache=False) as hooked:
        await plain.index(CORPUS, embed_fn=hashed_embedding)
        await hooked.index(CORPUS, embed_fn=hashed_embedding)
        expected = await plain.run(QUERIES[0])
        result = await hooked.run(QUERIES[0], options=RunOptions(on_stage=hook))
    assert result.context == expected.context and result.citations == expected.citations
    assert [t.stage for t in seen] == ALL_STAGES
    assert len({t.request_id for t in seen}) == 1 and seen[0].request_id
    assert all(isinstance(t.duration_ms, float) and t.duration_ms >= 0 for t in seen)


async def test_the_sync_runner_reports_the_same_stages() -> None:
    async_seen, async_hook = recorder()
    sync_seen, sync_hook = recorder()
    config = ContextEngineConfig()
    config.cache.enabled = False
    state = EngineState(config)
    state.index(CORPUS, hashed_embedding, None, None)
    run_job(make_job(QUERIES[1], options=RunOptions(on_stage=sync_hook)), state)
    async with engine(cache=False) as eng:
        await eng.index(CORPUS, embed_fn=hashed_embedding)
        await eng.run(QUERIES[1], options=RunOptions(on_stage=async_hook))
    assert [t.stage for t in sync_seen] == [t.stage for t in async_seen] == ALL_STAGES
    assert {t.request_id for t in sync_seen} == {""}  # the sync runner numbers no request


async def test_a_cache_hit_reports_the_lookup_and_what_follows_a_hit_only() -> None:
    seen, hook = recorder()
    async with engine() as eng:
        await eng.index(CORPUS, embed_fn=hashed_embedding)
        first = await eng.run(QUERIES[2])
        hit = await eng.run(QUERIES[2], options=RunOptions(on_stage=hook))
    assert hit.metadata.get("from_cache") and hit.context == first.context
    names = [t.stage for t in seen]
    assert names[0] == "cache_lookup" and "retrieval" not in names
    assert names == [n for n in ALL_STAGES if n in names]  # still in pipeline order


async def test_run_many_reports_each_request_under_its_own_id() -> None:
    seen, hook = recorder()
    async with engine(cache=False) as eng:
        await eng.index(CORPUS, embed_fn=hashed_embedding)
        await eng.run_many(QUERIES[:3], options=RunOptions(on_stage=hook))
    by_request: dict[str, list[str]] = {}
    for timing in seen:
        by_request.setdefault(timing.request_id, []).append(timing.stage)
    assert len(by_request) == 3
    assert all(names == ALL_STAGES for names in by_request.values())


async def test_a_failing_callback_lets_the_request_finish_then_raises_its_error() -> None:
    calls: list[str] = []

    def broken(timing: StageTiming) -> None:
        calls.append(timing.stage)
        raise LookupError("the caller's own bug")

    async with engine() as plain, engine() as hooked:
        for eng in (plain, hooked):
            await eng.index(CORPUS, embed_fn=hashed_embedding)
        expected = await plain.run(QUERIES[3])
        with pytest.raises(LookupError, match="the caller's own bug") as raised:
            await hooked.run(QUERIES[3], options=RunOptions(on_stage=broken))
        # Every stage ran: the context was cached and the turn recorded, as without it.
        again, again_expected = await hooked.run(QUERIES[3]), await plain.run(QUERIES[3])
        history, history_expected = hooked.get_history(), plain.get_history()
    assert calls == [ALL_STAGES[0]]  # called once, then left out for the rest of the walk
    notes = getattr(raised.value, "__notes__", [])
    assert any("on_stage" in note and repr(ALL_STAGES[0]) in note for note in notes)
    assert again.metadata.get("from_cache") and again.context == expected.context
    assert again_expected.metadata.get("from_cache")
    assert history is not None and history_expected is not None
    assert [t.query for t in history.turns] == [t.query for t in history_expected.turns]


async def test_a_stage_error_wins_over_the_callback_error() -> None:
    def broken(timing: StageTiming) -> None:
        raise LookupError("callback")

    def embed(text: str) -> Any:
        if text == "the embedder fails on this one":
            raise RuntimeError("embedder down")
        return hashed_embedding(text)

    async with engine(cache=False) as eng:
        await eng.index(CORPUS, embed_fn=embed)
        with pytest.raises(RuntimeError, match="embedder down") as raised:
            await eng.run("the embedder fails on this one", options=RunOptions(on_stage=broken))
    assert failed_stage(raised.value) == "retrieval"


async def _async_hook(timing: StageTiming) -> None:
    return None


class _AsyncCall:
    async def __call__(self, timing: StageTiming) -> None:
        return None


@pytest.mark.parametrize(
    ("hook", "message"),
    [
        (_async_hook, "plain callable, got the async function"),
        (_AsyncCall(), "plain callable, got the async function"),
        ("not callable", "on_stage must be callable, got str"),
    ],
)
async def test_an_async_or_uncallable_hook_is_refused_before_the_run(
    hook: Any, message: str
) -> None:
    async with engine() as eng:
        await eng.index(CORPUS, embed_fn=hashed_embedding)
        with pytest.raises(TypeError, match=message):
            await eng.run(QUERIES[0], options=RunOptions(on_stage=hook))
        history = eng.get_history()
        assert history is not None and history.turns == []  # nothing ran


async def test_on_stage_is_not_a_run_keyword() -> None:
    async with engine() as eng:
        await eng.index(CORPUS, embed_fn=hashed_embedding)
        with pytest.raises(TypeError, match="unexpected keyword argument 'on_stage'"):
            await eng.run_many(QUERIES[:1], on_stage=print)


async def test_the_apps_timings_keep_the_event_names_and_errors_pass_through() -> None:
    def embed(text: str) -> Any:
        if text == "the embedder fails on this one":
            raise RuntimeError("embedder down")
        return hashed_embedding(text)

    async with engine() as eng:
        await eng.index(CORPUS, embed_fn=embed)
        miss = await run_timed(eng, QUERIES[4])
        hit = await run_timed(eng, QUERIES[4])
        with pytest.raises(RuntimeError, match="embedder down") as raised:
            await run_timed(eng, "the embedder fails on this one")
    assert list(miss.timings_ms) == list(STAGE_EVENTS) and miss.request_id
    assert hit.result.metadata.get("from_cache") and list(hit.timings_ms) == ["analysis"]
    assert hit.result.context == miss.result.context
    assert failed_stage(raised.value) == "retrieval"  # the embedder's own exception
