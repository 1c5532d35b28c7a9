"""Under concurrency the runner keeps less work on the event loop, unless it paces it.

Inline stage groups of concurrent requests run back to back in one loop
iteration, so the policy's crowded threshold (2 ms) applies while other
requests are in flight; a lone request keeps the larger budget (10 ms).
On asyncio with loop pacing (the default), a group over the crowded budget
runs in pieces instead (one per loop iteration) and keeps the lone budget,
unless a core is free for a worker thread (``runtime.thread_pays``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import pytest

from pipeline.helpers import chunks, serving
from zerda_async.pipeline import EngineState, make_job
from zerda_async.runtime import (
    CROWDED_THRESHOLD_MS,
    OffloadPolicy,
    default_threshold_ms,
    loop_pacing,
    set_loop_pacing,
)

pytestmark = pytest.mark.anyio

_RANK_CPU_MS = 5.0  # between the crowded threshold and the lone-request one


def _costly_rank(
    state: EngineState, threads: list[str], crowded: Callable[[], bool] = lambda: False
) -> list[bool]:
    """Make the rank stage cost ~5 ms of CPU; record the thread it runs in and ``crowded()``."""
    rank = state.ranker.rank
    seen: list[bool] = []

    def spinning(*args: Any, **kwargs: Any) -> Any:
        threads.append(threading.current_thread().name)
        seen.append(crowded())
        end = time.thread_time() + _RANK_CPU_MS / 1000
        while time.thread_time() < end:
            pass
        return rank(*args, **kwargs)

    state.ranker.rank = spinning
    return seen


def test_the_crowded_threshold_applies_only_while_others_are_in_flight() -> None:
    assert CROWDED_THRESHOLD_MS < _RANK_CPU_MS < default_threshold_ms()
    policy = OffloadPolicy(None, min_corpus=20_000)
    policy.observe(_RANK_CPU_MS)
    assert not policy.should_offload(100_000)
    assert policy.should_offload(100_000, crowded=True)
    # An explicit threshold is the caller's choice for every placement.
    pinned = OffloadPolicy(10.0, min_corpus=20_000)
    pinned.observe(_RANK_CPU_MS)
    assert not pinned.should_offload(100_000, crowded=True)


@pytest.fixture(params=[True, False], ids=["paced", "unpaced"])
def pacing(request: pytest.FixtureRequest) -> Iterator[bool]:
    """Loop pacing on or off for the test, restored afterwards."""
    before = loop_pacing()
    set_loop_pacing(request.param)
    yield request.param
    set_loop_pacing(before)


@pytest.mark.parametrize("spare", [False, True], ids=["no-spare-core", "spare-core"])
async def test_concurrent_requests_offload_what_a_lone_request_runs_inline(
    pacing: bool, spare: bool, anyio_backend_name: str
) -> None:
    pacer_on = pacing and anyio_backend_name == "asyncio"  # trio is never paced
    # With a core free (or every core contended), crowded groups go to
    # threads instead of being paced.
    paced = pacer_on and not spare
    loop_thread = threading.current_thread().name
    threads: list[str] = []
    state = EngineState()
    async with serving(state, max_in_flight=16, workers=2) as runner:
        # Indexed after the runner started, as the engine does: the runner
        # then counts the retriever as its own, not as caller code.
        state.index(chunks())
        crowded = _costly_rank(state, threads, lambda: runner.in_flight > 1)
        runner.speculation.thread_pays = lambda: spare
        # A lone request on an idle runner: measured, and kept on the loop.
        for query in ("What is BM25?", "Where does the Nile flow?"):
            request = runner.try_inline(make_job(query))
            assert request is not None
            await runner.run_inline(request)
        assert threads == [loop_thread, loop_thread]
        threads.clear()
        requests = [
            await runner.submit(make_job(f"question {i} about rank fusion")) for i in range(8)
        ]
        with anyio.fail_after(10):
            for request in requests:
                await request.done.wait()
        assert all(r.result().context for r in requests)
    assert len(threads) == 8
    if paced:
        # Paced, the ~5 ms groups keep the lone budget: all on the loop.
        assert threads == [loop_thread] * 8
    elif pacer_on:
        # A group placed while alone is paced on the loop, and others may
        # arrive between its pieces; those placed among others went to threads.
        assert any(t != loop_thread for t in threads), (threads, crowded)
    else:
        # A group is placed right before it runs inline, so every group that
        # ran on the loop found no other request in flight; with others in
        # flight the ~5 ms groups went to worker threads.  (How many groups
        # find the runner crowded depends on scheduling: a request may finish
        # before the next one is submitted.)
        on_loop = [c for t, c in zip(threads, crowded[2:], strict=True) if t == loop_thread]
        assert not any(on_loop), (threads, crowded)
        assert any(crowded[2:]), "no request found others in flight: nothing was tested"
