"""Where a plain query embedder runs: always in a thread by default; with
``cheap_embedder_on_loop=True`` in a thread until it measures cheap, then on the loop.

The placement is then ``runtime.CallPolicy``'s (its rule is unit-tested in
``tests/runtime/test_call_policy.py``); here, the engine's use of it: a cheap
``embed_fn`` ends up on the loop's thread, a slow one (it sleeps: blockbuster
would fail it on the loop) never does, a cheap one that turns slow goes back
to a thread at its next call, ``offload="threads"`` pins the threads (and a
hang then fails only its own request), and cancelling requests whose query
embedding runs inline leaves the engine as the sync runner would.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import anyio
import numpy as np
import pytest
from support.engines import assert_idle

from zerda_async import AsyncContextEngine
from zerda_async.runtime import CALL_PROBATION

from .support import (
    CORPUS,
    QUALITY,
    QUERIES,
    SubmissionLog,
    SyncReference,
    check_against_sync,
    config_factory,
    hashed_embedding,
)

pytestmark = pytest.mark.anyio

TRIGGER = "zzhang"
# Enough queries for a cheap embedder to pass its probation even when a few
# of its calls in threads are slowed down by the machine's other load.
MAX_QUERIES = 40 * CALL_PROBATION


class PlainEmbedder:
    """The golden 64-dim embedder as a plain ``embed_fn``, noting where each query call ran."""

    def __init__(self, *, sleep_s: float = 0.0) -> None:
        self.sleep_s = sleep_s
        self.spin_ms = 0.0
        self.querying = False  # set after index(): corpus calls are not placed
        self.threads: list[int] = []
        self.gate = threading.Event()

    def __call__(self, text: Any) -> np.ndarray:
        if self.querying:
            self.threads.append(threading.get_ident())
        if TRIGGER in str(text):
            self.gate.wait(10)  # hangs until released
        if self.sleep_s:
            time.sleep(self.sleep_s)
        if self.spin_ms:
            end = time.perf_counter() + self.spin_ms / 1000
            while time.perf_counter() < end:
                pass
        return hashed_embedding(text)

    def on_loop(self, call: int = -1) -> bool:
        return self.threads[call] == threading.get_ident()


def query(i: int) -> str:
    """A distinct question each time (repeated ones come from the query-vector cache)."""
    return f"{QUERIES[i % len(QUERIES)]} ({i})"


async def index(engine: AsyncContextEngine, embedder: PlainEmbedder) -> None:
    await engine.index(CORPUS, embed_fn=embedder, source_quality_map=QUALITY)
    embedder.querying = True


async def run_until_inline(engine: AsyncContextEngine, embedder: PlainEmbedder) -> int:
    """Run new questions until the embedder was called on the loop; the questions run."""
    for i in range(MAX_QUERIES):
        await engine.run(query(i))
        if embedder.on_loop():
            return i + 1
    raise AssertionError(f"a cheap plain embedder never ran inline in {MAX_QUERIES} queries")


async def test_a_cheap_plain_embedder_moves_onto_the_loop_after_its_probation() -> None:
    make = config_factory()
    reference = SyncReference(make)
    embedder = PlainEmbedder()
    async with AsyncContextEngine(make(), cheap_embedder_on_loop=True) as engine:
        log = SubmissionLog(engine)
        await index(engine, embedder)
        ran = await run_until_inline(engine, embedder)
        for i in range(ran, ran + 5):
            await engine.run(query(i))
        assert_idle(engine)
    assert ran > CALL_PROBATION  # the probation's calls went to threads
    assert not any(embedder.on_loop(i) for i in range(CALL_PROBATION))
    assert all(embedder.on_loop(i) for i in range(ran - 1, ran + 5))
    check_against_sync(
        engine,
        log,
        reference,
        index_calls=[
            {"chunks": CORPUS, "embed_fn": hashed_embedding, "source_quality_map": QUALITY}
        ],
    )


async def test_a_slow_plain_embedder_stays_in_threads() -> None:
    embedder = PlainEmbedder(sleep_s=0.001)  # four times the inline budget, and blocking
    async with AsyncContextEngine(cheap_embedder_on_loop=True) as engine:
        await index(engine, embedder)
        for i in range(CALL_PROBATION + 8):
            result = await engine.run(query(i))
            assert result.chunks_used
    assert len(embedder.threads) == CALL_PROBATION + 8
    assert not any(embedder.on_loop(i) for i in range(len(embedder.threads)))


async def test_a_cheap_embedder_that_turns_slow_goes_back_to_a_thread_at_once() -> None:
    embedder = PlainEmbedder()
    async with AsyncContextEngine(cheap_embedder_on_loop=True) as engine:
        await index(engine, embedder)
        ran = await run_until_inline(engine, embedder)
        embedder.spin_ms = 1.0  # busy on the loop: measured, not blocking
        await engine.run(query(ran))
        assert embedder.on_loop()
        embedder.spin_ms = 0.0
        await engine.run(query(ran + 1))
        assert not embedder.on_loop()
        for i in range(ran + 2, ran + 2 + CALL_PROBATION):
            await engine.run(query(i))
        assert not any(embedder.on_loop(-1 - i) for i in range(CALL_PROBATION))


async def test_offload_threads_pins_the_embedder_to_threads_and_a_hang_fails_alone() -> None:
    embedder = PlainEmbedder()
    try:
        async with AsyncContextEngine(offload="threads", cheap_embedder_on_loop=True) as engine:
            await index(engine, embedder)
            for i in range(2 * CALL_PROBATION):
                await engine.run(query(i))
            assert not any(embedder.on_loop(i) for i in range(len(embedder.threads)))
            with pytest.raises(TimeoutError):
                await engine.run(f"What is {TRIGGER}?", timeout=0.2)
            assert (await engine.run(query(999))).chunks_used
    finally:
        embedder.gate.set()


async def test_by_default_even_a_cheap_plain_embedder_stays_in_threads() -> None:
    """The safe rule unless the engine opts in: a cheap call that later blocks on a
    network or a lock must not be able to stall the loop."""
    embedder = PlainEmbedder()
    async with AsyncContextEngine() as engine:
        await index(engine, embedder)
        for i in range(4 * CALL_PROBATION):
            await engine.run(query(i))
    assert len(embedder.threads) == 4 * CALL_PROBATION
    assert not any(embedder.on_loop(i) for i in range(len(embedder.threads)))


def test_the_opt_in_must_be_a_bool() -> None:
    with pytest.raises(TypeError, match="cheap_embedder_on_loop"):
        AsyncContextEngine(cheap_embedder_on_loop="yes")  # type: ignore[arg-type]


async def test_cancelled_requests_with_an_inline_embedder_change_nothing() -> None:
    make = config_factory()
    reference = SyncReference(make)
    embedder = PlainEmbedder()
    async with AsyncContextEngine(make(), cheap_embedder_on_loop=True) as engine:
        log = SubmissionLog(engine)
        await index(engine, embedder)
        ran = await run_until_inline(engine, embedder)
        cancelled = 0

        async def one(i: int) -> None:
            nonlocal cancelled
            with anyio.CancelScope() as scope:
                if i % 2:
                    scope.deadline = anyio.current_time() + 0.0005 * (i % 7)
                await engine.run(query(i))
            cancelled += scope.cancelled_caught

        async with anyio.create_task_group() as tg:
            for i in range(ran, ran + 24):
                tg.start_soon(one, i)
        # One at a time again: they run in their callers' tasks, and can be cancelled there.
        for i in range(ran + 24, ran + 32):
            with anyio.CancelScope() as scope:
                if i % 2:
                    scope.cancel()
                await engine.run(query(i))
            cancelled += scope.cancelled_caught
        assert_idle(engine)
    assert cancelled
    assert any(embedder.on_loop(i) for i in range(ran, len(embedder.threads)))
    # An abandoned request is not part of the serial history.
    log.entries = [(k, v) for k, v in log.entries if k != "run" or v.outcome is not None]
    check_against_sync(
        engine,
        log,
        reference,
        index_calls=[
            {"chunks": CORPUS, "embed_fn": hashed_embedding, "source_quality_map": QUALITY}
        ],
    )
