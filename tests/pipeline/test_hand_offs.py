"""The runner's hand-offs that cost loop iterations: taking a slot, and committing.

``submit`` takes a free slot without yielding to the loop (a cancelled caller
still submits nothing), and the commit phase commits the requests that are
ready back to back for up to ``CommitPhase.slice_ms`` before it yields (the
default, ``runtime.SLICE_MS``, is wall time; these tests pin it at both
extremes so that nothing depends on the machine's speed).
"""

from __future__ import annotations

import itertools
import math

import anyio
import anyio.lowlevel
import pytest

from pipeline.helpers import chunks, serving
from zerda_async.pipeline import AsyncRunner, EngineState, Request, make_job

pytestmark = pytest.mark.anyio


async def test_a_free_slot_is_taken_without_yielding_to_the_loop() -> None:
    state = EngineState()
    async with serving(state, max_in_flight=4) as runner:
        state.index(chunks())
        others_ran: list[bool] = []

        async def other() -> None:
            others_ran.append(True)

        async with anyio.create_task_group() as tg:
            tg.start_soon(other)  # runs at this task's next yield
            requests = [await runner.submit(make_job(f"BM25 question {i}")) for i in range(4)]
            assert not others_ran
            with anyio.fail_after(10):
                for request in requests:
                    await request.done.wait()
        assert others_ran and all(r.result().context for r in requests)


async def test_a_cancelled_caller_submits_nothing() -> None:
    state = EngineState()
    async with serving(state, max_in_flight=4) as runner:
        state.index(chunks())
        with anyio.CancelScope() as scope:
            scope.cancel()
            await runner.submit(make_job("What is BM25?"))
        assert scope.cancelled_caught
        assert runner.in_flight == 0 and runner.slots.value == 4


async def _finishes_per_turn(runner: AsyncRunner, n: int) -> list[int]:
    """Submit ``n`` requests, let them all speculate, then commit them.

    Returns how many requests finished between two consecutive steps of
    another task that yields at every step: commits that did not yield in
    between finish in the same gap.
    """
    finished = 0
    seen: list[int] = []

    async def watcher() -> None:
        while True:
            seen.append(finished)
            await anyio.lowlevel.checkpoint()

    def note() -> None:
        nonlocal finished
        finished += 1

    async with anyio.create_task_group() as tg:
        tg.start_soon(watcher)
        runner.commits.hold()  # nothing commits until every speculation is over
        requests: list[Request] = []
        for i in range(n):
            requests.append(await runner.submit(make_job(f"question {i} on BM25"), on_finish=note))
        with anyio.fail_after(10):
            for request in requests:
                await request.speculated.wait()
            runner.commits.release()
            for request in requests:
                await request.done.wait()
            await anyio.lowlevel.checkpoint()
            await anyio.lowlevel.checkpoint()
        tg.cancel_scope.cancel()
    assert all(r.result().context for r in requests) and seen[-1] == n
    return [b - a for a, b in itertools.pairwise(seen) if b != a]


async def test_ready_commits_run_back_to_back_within_a_slice() -> None:
    state = EngineState()
    async with serving(state, max_in_flight=8) as runner:
        state.index(chunks())
        runner.commits.slice_ms = math.inf
        per_turn = await _finishes_per_turn(runner, 8)
    assert per_turn == [8]  # one step of the commit task


async def test_the_commit_phase_yields_once_its_slice_is_used() -> None:
    state = EngineState()
    async with serving(state, max_in_flight=8) as runner:
        state.index(chunks())
        runner.commits.slice_ms = 0.0
        per_turn = await _finishes_per_turn(runner, 8)
    # A yield between commits: one each time on asyncio; trio runs the tasks
    # of a batch in any order, so two may fall between the watcher's steps.
    assert sum(per_turn) == 8 and max(per_turn) <= 2
