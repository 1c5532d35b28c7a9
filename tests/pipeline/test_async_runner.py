"""The async runner on its own: submission order, phases, barriers, micro-batching."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.to_thread
import numpy as np
import pytest
from support.engines import wait_until

from pipeline.helpers import chunks, embed, gated_rank, serving
from zerda_async.embedders import Embedder
from zerda_async.errors import EngineClosedError, failed_stage
from zerda_async.pipeline import (
    FINISHED,
    EngineState,
    Phase,
    Request,
    make_job,
    run_job,
)

pytestmark = pytest.mark.anyio


async def test_results_equal_the_sync_runner_in_submission_order(state: EngineState) -> None:
    queries = ["What is BM25?", "Where does the Nile flow?", "what is bm25?", "ما هو التعلم الآلي؟"]
    reference = EngineState()
    reference.index(chunks(), embed)
    expected = [run_job(make_job(q), reference).context for q in queries]
    async with serving(state) as runner:
        requests = [await runner.submit(make_job(q)) for q in queries]
        for request in requests:
            await request.done.wait()
    assert [r.result().context for r in requests] == expected
    assert [r.job.request_id for r in requests] == ["r1", "r2", "r3", "r4"]


async def test_a_request_reports_each_stage_then_finished(state: EngineState) -> None:
    seen: list[str] = []

    def sink(request: Request, stage: str, duration_ms: float) -> None:
        seen.append(stage)

    async with serving(state) as runner:
        request = await runner.submit(make_job("What is BM25?"), sink)
        await request.done.wait()
    assert seen[-1] == FINISHED
    assert seen[:-1] == [s for s in seen[:-1] if s != FINISHED]
    assert "retrieval" in seen and seen.index("retrieval") > seen.index("budget")


async def test_phases_move_forward_and_where_names_them(state: EngineState) -> None:
    with gated_rank(state) as (entered, release):
        async with serving(state, workers=1) as runner:
            runner.policy.forced = True  # speculation in worker threads: the loop stays free
            first = await runner.submit(make_job("What is BM25?"))
            second = await runner.submit(make_job("Where does the Nile flow?"))
            await anyio.to_thread.run_sync(entered.wait, 10)
            assert first.phase is Phase.SPECULATION
            assert runner.where(first) == "pipeline stage 'rank'"
            assert second.phase is Phase.WORKER
            assert runner.where(second).startswith("the speculation queue")
            release.set()
            await second.done.wait()
            assert first.done.is_set() and runner.where(first) == "pipeline stage commit"
    slot_wait = Request(make_job("x"), None)
    assert slot_wait.phase is Phase.SLOT
    assert runner.where(slot_wait).startswith("admission (all 64 in-flight slots")


async def test_barriers_apply_between_commits_in_order(state: EngineState) -> None:
    order: list[str] = []
    async with serving(state) as runner:
        first = await runner.submit(make_job("What is BM25?"))
        async with anyio.create_task_group() as tg:
            tg.start_soon(
                runner.barrier, lambda: order.append(f"barrier after {first.done.is_set()}")
            )
        second = await runner.submit(make_job("Where does the Nile flow?"))
        await second.done.wait()
    assert order == ["barrier after True"]


async def test_closed_runner_refuses_requests(state: EngineState) -> None:
    async with serving(state) as runner:
        pass
    with pytest.raises(EngineClosedError):
        await runner.submit(make_job("What is BM25?"))


async def test_batch_embedder_is_micro_batched_and_errors_name_retrieval(
    state: EngineState,
) -> None:
    calls: list[int] = []
    release = anyio.Event()

    async def batch(texts: list[Any]) -> np.ndarray:
        calls.append(len(texts))
        if len(calls) == 1:
            await release.wait()  # keep the first call in flight: the rest gather
        if any("fail" in str(t) for t in texts):
            raise ConnectionError("embedder down")
        return np.stack([embed(t) for t in texts])

    state.query_embedder = Embedder(batch_embed_fn=batch)
    queries = ["What is BM25?", "Where does the Nile flow?", "What is RRF?", "fail me"]
    # A long window: the requests behind the in-flight first call always gather.
    async with serving(state, embed_batch_window=1.0) as runner:
        requests = [await runner.submit(make_job(queries[0]))]
        await wait_until(lambda: calls == [1])
        requests += [await runner.submit(make_job(q)) for q in queries[1:]]
        release.set()
        for request in requests:
            await request.done.wait()
    # One lone call, one batch of the other three, which failed and was redone one by one.
    assert calls == [1, 3, 1, 1, 1], calls
    assert [isinstance(r.outcome, ConnectionError) for r in requests] == [False] * 3 + [True]
    error = requests[-1].outcome
    assert isinstance(error, BaseException) and failed_stage(error) == "retrieval"
    assert all(r.job.query_vector is not None for r in requests[:3])


async def test_abandoned_request_frees_its_slot_and_changes_nothing(state: EngineState) -> None:
    hang = anyio.Event()

    async def hung(texts: list[Any]) -> np.ndarray:
        await hang.wait()
        return np.stack([embed(t) for t in texts])

    state.query_embedder = Embedder(batch_embed_fn=hung)
    async with serving(state, max_in_flight=1) as runner:
        request = await runner.submit(make_job("What is BM25?"))
        assert request.phase is Phase.EMBEDDING
        assert runner.where(request) == "pipeline stage 'retrieval' (query embedding)"
        runner.abandon(request)
        await request.done.wait()
        assert runner.in_flight == 0 and runner.slots.value == 1
    assert state.adaptive.get_performance_report().get("total_queries", 0) == 0
    hang.set()
