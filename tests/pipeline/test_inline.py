"""A request that finds the async runner idle runs in its caller's task, still in order."""

from __future__ import annotations

import anyio
import anyio.to_thread
import pytest

from pipeline.helpers import chunks, embed, gated_rank, serving
from zerda_async.pipeline import (
    FINISHED,
    EngineState,
    Phase,
    Request,
    make_job,
    run_job,
)

pytestmark = pytest.mark.anyio


async def test_an_idle_runner_runs_a_lone_request_inline(state: EngineState) -> None:
    reference = EngineState()
    reference.index(chunks(), embed)
    expected = run_job(make_job("What is BM25?"), reference)
    async with serving(state, max_in_flight=4) as runner:
        request = runner.try_inline(make_job("What is BM25?"))
        assert request is not None and request.inline
        assert runner.in_flight == 1 and runner.slots.value == 3
        await runner.run_inline(request)
        assert request.done.is_set() and runner.in_flight == 0 and runner.slots.value == 4
    assert request.result().context == expected.context
    assert request.phase is Phase.COMMIT


async def test_what_arrives_during_an_inline_request_comes_after_it(state: EngineState) -> None:
    order: list[str] = []

    def sink(request: Request, stage: str, duration_ms: float) -> None:
        if stage == FINISHED:
            order.append(request.job.query)

    async with serving(state, max_in_flight=4) as runner:
        runner.policy.forced = True  # speculation in worker threads: the loop stays free
        with gated_rank(state) as (entered, release):
            first = runner.try_inline(make_job("What is BM25?"))
            assert first is not None

            async def inline() -> None:
                assert first is not None
                await runner.run_inline(first)
                order.append(first.job.query)

            async def barrier() -> None:
                await runner.barrier(lambda: order.append("barrier"))

            async with anyio.create_task_group() as tg:
                tg.start_soon(inline)
                await anyio.to_thread.run_sync(entered.wait, 10)
                assert runner.where(first) == "pipeline stage 'rank'"
                # Not idle any more: the next request takes the phase tasks.
                assert runner.try_inline(make_job("Where does the Nile flow?")) is None
                second = await runner.submit(make_job("Where does the Nile flow?"), sink)
                tg.start_soon(barrier)
                await anyio.sleep(0.05)
                assert order == [] and not second.done.is_set()
                release.set()
        await second.done.wait()
    assert order == ["What is BM25?", "Where does the Nile flow?", "barrier"]


async def test_a_cancelled_inline_request_changes_nothing(state: EngineState) -> None:
    async with serving(state, max_in_flight=4) as runner:
        runner.policy.forced = True
        with gated_rank(state) as (entered, _release):
            request = runner.try_inline(make_job("What is BM25?"))
            assert request is not None
            with anyio.CancelScope() as scope:

                async def cancel_when_inside() -> None:
                    await anyio.to_thread.run_sync(entered.wait, 10)
                    scope.cancel()

                async with anyio.create_task_group() as tg:
                    tg.start_soon(cancel_when_inside)
                    await runner.run_inline(request)
            assert scope.cancelled_caught
        assert request.cancelled and not request.committing and request.outcome is None
        assert runner.in_flight == 0 and runner.slots.value == 4
        assert not state.history.turns, "an abandoned request recorded a turn"
        # The runner is idle again: the next request runs inline too.
        again = runner.try_inline(make_job("What is BM25?"))
        assert again is not None
        await runner.run_inline(again)
    assert again.result().context
