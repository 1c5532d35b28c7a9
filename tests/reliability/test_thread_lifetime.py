"""Threads end with the loop: after a run with hung or cancelled calls, no worker thread lingers.

Each test starts and closes its own asyncio loop (the tests are sync), notes
the threads alive before, and checks that every thread the run started is
gone within 2 s of the loop closing, or of the stuck call it was in
returning.  (On trio, blocking calls run in trio's process-wide thread cache,
which keeps an idle thread 10 s for the next run: trio's design, not ours.)
"""

from __future__ import annotations

import threading
import time
from typing import Any

import anyio
import pytest
from support.corpus import CORPUS, QUERIES

from zerda_async import AsyncContextEngine

from .support import TRIGGER, FaultyEmbedder, FaultyStore, check_result

POISON = f"{TRIGGER}: what is machine learning?"
CANCELLED = set(range(0, 50, 2)) | {1, 3}
"""The 27 of 50 runs the cancel-in-flight check gives up on."""


class RecordingStore(FaultyStore):
    """The hanging vector store, noting every thread it is called in."""

    def __init__(self) -> None:
        super().__init__(CORPUS, "hang")
        self.threads: set[threading.Thread] = set()

    def similarity_search_with_score(self, query: str, k: int = 4) -> list[tuple[Any, float]]:
        self.threads.add(threading.current_thread())
        return super().similarity_search_with_score(query, k)


class RecordingEmbedder(FaultyEmbedder):
    """A faulty plain embedder, noting every thread it is called in."""

    def __init__(self, mode: str, *, delay: float = 0.0) -> None:
        super().__init__(mode, delay=delay)
        self.threads: set[threading.Thread] = set()

    def sync_one(self, text: Any) -> Any:
        self.threads.add(threading.current_thread())
        return super().sync_one(text)


def _alive_after(threads: set[threading.Thread], seconds: float) -> list[str]:
    """The names of ``threads`` still alive after ``seconds`` (joined meanwhile)."""
    deadline = time.monotonic() + seconds
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    return [t.name for t in threads if t.is_alive()]


@pytest.mark.parametrize("dependency", ["vector store", "embedder"])
def test_a_call_hung_past_its_timeout_keeps_no_thread_once_it_returns(dependency: str) -> None:
    """A sync store or embedder hanging past ``run(timeout=...)``: its thread ends with the call."""
    store, embedder = RecordingStore(), RecordingEmbedder("hang")
    keywords: dict[str, Any] = (
        {"vector_store_adapter": store}
        if dependency == "vector store"
        else {"embed_fn": embedder.sync_one}
    )

    async def run_and_close() -> None:
        async with AsyncContextEngine() as engine:
            await engine.index(CORPUS, **keywords)
            with pytest.raises(TimeoutError):
                await engine.run(POISON, timeout=0.3)
            check_result(await engine.run(QUERIES[0], timeout=5), CORPUS)

    try:
        anyio.run(run_and_close, backend="asyncio")
        # The loop is closed; the hung call still holds its thread.
        assert store.inside + embedder.inside == 1
    finally:
        store.release()
        embedder.release()
    threads = store.threads | embedder.threads
    assert threads and not _alive_after(threads, 2.0)


def test_cancelling_runs_in_flight_leaves_no_thread_after_the_loop() -> None:
    """27 of 50 runs cancelled while their plain embedder works: no thread outlives the loop."""
    embedder = RecordingEmbedder("slow", delay=0.02)
    queries = [f"{TRIGGER} {QUERIES[i % len(QUERIES)]} ({i})" for i in range(50)]
    outcome = {"done": 0, "cancelled": 0}

    async def one(engine: AsyncContextEngine, i: int, query: str) -> None:
        with anyio.CancelScope() as scope:
            if i in CANCELLED:  # at various points of their way
                scope.deadline = anyio.current_time() + 0.002 * (i % 7)
            check_result(await engine.run(query, timeout=10), CORPUS)
            outcome["done"] += 1
        if scope.cancelled_caught:
            outcome["cancelled"] += 1

    async def cancel_in_flight() -> None:
        async with AsyncContextEngine(thread_limit=8) as engine:
            await engine.index(CORPUS, embed_fn=embedder.sync_one)
            async with anyio.create_task_group() as tg:
                for i, query in enumerate(queries):
                    tg.start_soon(one, engine, i, query)

    anyio.run(cancel_in_flight, backend="asyncio")
    assert outcome["cancelled"] and outcome["done"] + outcome["cancelled"] == 50, outcome
    assert embedder.threads and not _alive_after(embedder.threads, 2.0)
