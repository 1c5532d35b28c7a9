"""Coroutine and batch embedders: same contexts as the sync engine, micro-batching, failures.

The reference is ``sync_api.ContextEngine`` indexed with the equivalent sync
embedder (:func:`golden.replay.hashed_embedding`, 64 dimensions); the async
engine embeds the corpus and the queries itself and hands the retriever
precomputed vectors.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import anyio
import numpy as np
import pytest
from support.corpus import CORPUS, QUALITY, QUERIES
from support.embedding import batch_of, hashed_embedding
from support.engines import assert_idle, wait_until

from zerda_async import AsyncContextEngine, EmbeddingError
from zerda_async.errors import failed_stage

from .support import (
    IndexCall,
    SubmissionLog,
    SyncReference,
    assert_same,
    check_against_sync,
    config_factory,
    engine_state,
    result_of,
)

pytestmark = pytest.mark.anyio

SYNC_INDEX: IndexCall = {
    "chunks": CORPUS,
    "embed_fn": hashed_embedding,
    "source_quality_map": QUALITY,
}
FOLLOW_UPS = ["How does it handle long sequences?", "كيف يعمل ذلك؟", "And evaluation?"]
S1_FOLLOW_UPS = ["Why does that matter?", "ما أهمية ذلك؟", "And the cost?"]


class AsyncEmbedder:
    """Coroutine embedders (one text, or a batch) that count calls and batch sizes."""

    def __init__(self, fail_on: str | None = None, delay: float = 0.0) -> None:
        self.fail_on = fail_on
        self.delay = delay
        self.batches: list[int] = []
        self.singles = 0

    def _check(self, text: Any) -> None:
        if self.fail_on is not None and self.fail_on in str(text):
            raise RuntimeError(f"embedding service rejected {text!r}")

    async def one(self, text: Any) -> np.ndarray:
        self.singles += 1
        await anyio.sleep(self.delay)
        self._check(text)
        return hashed_embedding(text)

    async def many(self, texts: list[Any]) -> np.ndarray:
        self.batches.append(len(texts))
        await anyio.sleep(self.delay)
        for text in texts:
            self._check(text)
        return np.stack([hashed_embedding(t) for t in texts])


def embed_kwargs(mode: str, embedder: AsyncEmbedder) -> dict[str, Any]:
    if mode == "coroutine":
        return {"embed_fn": embedder.one}
    if mode == "coroutine_batch":
        return {"batch_embed_fn": embedder.many}
    if mode == "both":
        return {"embed_fn": embedder.one, "batch_embed_fn": embedder.many}
    if mode == "sync_batch":
        return {"batch_embed_fn": batch_of(hashed_embedding)}
    raise AssertionError(mode)


async def drive_conversation(engine: AsyncContextEngine, log: SubmissionLog) -> None:
    """Concurrent batches with cache hits, Arabic, sessions and enriched follow-ups."""
    await engine.run_many(QUERIES)
    await engine.run_many([f"{q} (s1)" for q in QUERIES[2:5]], session_id="s1")
    for sid in (None, "s1"):
        history = engine.get_history(sid)
        assert history is not None and history.turns
        history.turns[-1].answer = f"an answer for {sid}"
        log.external("answer", sid, f"an answer for {sid}")
    async with anyio.create_task_group() as tg:
        for sid, follow_ups in ((None, FOLLOW_UPS), ("s1", S1_FOLLOW_UPS)):
            for query in follow_ups:
                tg.start_soon(partial(engine.run, query, session_id=sid))


@pytest.mark.parametrize("mode", ["coroutine", "coroutine_batch", "both", "sync_batch"])
async def test_embedders_give_the_sync_contexts(mode: str) -> None:
    make = config_factory()
    reference = SyncReference(make)
    embedder = AsyncEmbedder()
    progress: list[tuple[int, int]] = []
    async with AsyncContextEngine(make()) as engine:
        log = SubmissionLog(engine)
        await engine.index(
            CORPUS,
            source_quality_map=QUALITY,
            progress=lambda done, total: progress.append((done, total)),
            **embed_kwargs(mode, embedder),
        )
        await drive_conversation(engine, log)
        assert_idle(engine)
    assert progress and progress[-1] == (len(CORPUS), len(CORPUS))
    check_against_sync(engine, log, reference, index_calls=[SYNC_INDEX])
    if mode in ("coroutine_batch", "both"):
        assert embedder.singles == 0  # the batch form is preferred
    enriched = {
        r.job.options.session_id
        for r in log.requests
        if result_of(r).query_analysis.original_query != r.job.query
    }
    assert enriched == {None, "s1"}, "a follow-up was not enriched: re-embedding went untested"


async def test_concurrent_queries_share_embedder_calls() -> None:
    make = config_factory()
    reference = SyncReference(make)
    embedder = AsyncEmbedder(delay=0.001)
    queries = [f"{QUERIES[i % len(QUERIES)]} (variant {i})" for i in range(32)]
    async with AsyncContextEngine(make()) as engine:
        log = SubmissionLog(engine)
        await engine.index(CORPUS, batch_embed_fn=embedder.many, source_quality_map=QUALITY)
        index_calls, before = len(embedder.batches), engine.embedder_calls
        async with anyio.create_task_group() as tg:
            for query in queries:
                tg.start_soon(engine.run, query)
        query_batches = embedder.batches[index_calls:]
        assert sum(query_batches) == 32
        assert len(query_batches) <= 4, query_batches  # far fewer than 32 calls
        assert engine.embedder_calls - before == len(query_batches)
        assert_idle(engine)
    check_against_sync(engine, log, reference, index_calls=[SYNC_INDEX])


async def test_micro_batches_respect_the_size_cap() -> None:
    # A call in flight is what makes later requests gather into a batch.
    embedder = AsyncEmbedder(delay=0.01)
    queries = [f"question {i} about retrieval" for i in range(20)]
    async with AsyncContextEngine(embed_batch_size=6, embed_batch_window=0.05) as engine:
        await engine.index(CORPUS, batch_embed_fn=embedder.many)
        index_calls = len(embedder.batches)
        await engine.run_many(queries)
        query_batches = embedder.batches[index_calls:]
    assert sum(query_batches) == 20
    assert max(query_batches) <= 6
    assert len(query_batches) <= 6


async def test_an_idle_embedder_serves_a_lone_request_without_the_batch_window() -> None:
    embedder = AsyncEmbedder()
    async with AsyncContextEngine(embed_batch_window=30.0) as engine:
        await engine.index(CORPUS, batch_embed_fn=embedder.many)
        index_calls = len(embedder.batches)
        with anyio.fail_after(5):  # would take the whole 30 s window if it waited
            await engine.run("a lone question about retrieval")
        assert embedder.batches[index_calls:] == [1]


async def test_identical_concurrent_misses_embed_once() -> None:
    embedder = AsyncEmbedder(delay=0.005)
    async with AsyncContextEngine() as engine:
        await engine.index(CORPUS, embed_fn=embedder.one)
        before = embedder.singles
        results = await engine.run_many(["What is RAG?", "what is rag?", " What is RAG? "] * 3)
    assert embedder.singles - before == 1
    assert [bool(r.metadata) for r in results] == [False] + [True] * 8


@pytest.mark.parametrize("mode", ["coroutine", "coroutine_batch"])
async def test_a_failing_embedder_fails_only_its_request(mode: str) -> None:
    make = config_factory()

    def failing_sync(text: Any) -> np.ndarray:
        if "boom" in str(text):
            raise RuntimeError(f"embedding service rejected {text!r}")
        return hashed_embedding(text)

    reference = SyncReference(make)
    embedder = AsyncEmbedder(fail_on="boom", delay=0.001)
    queries = [*QUERIES[:4], "boom: what is machine learning?", *QUERIES[4:8]]
    async with AsyncContextEngine(make()) as engine:
        log = SubmissionLog(engine)
        await engine.index(CORPUS, source_quality_map=QUALITY, **embed_kwargs(mode, embedder))
        # Submitted together, so a batch embedder sees the bad text with good ones.
        outcomes = await engine.run_many(queries, return_exceptions=True)
        errors = [o for o in outcomes if isinstance(o, BaseException)]
        assert len(errors) == 1, [type(o).__name__ for o in outcomes]
        assert isinstance(errors[0], RuntimeError)
        assert "boom" in str(errors[0])
        assert failed_stage(errors[0]) == "retrieval"
        with pytest.raises(RuntimeError, match="rejected"):
            await engine.run("boom again")
        assert (await engine.run("What is Python used for?")).context
        assert_idle(engine)
    check_against_sync(
        engine,
        log,
        reference,
        index_calls=[{**SYNC_INDEX, "embed_fn": failing_sync}],
    )


@pytest.mark.parametrize(
    "bad",
    [
        lambda texts: np.zeros((len(texts) + 1, 64)),
        lambda texts: np.zeros(64),
    ],
    ids=["too_many_rows", "flat"],
)
async def test_an_embedder_returning_the_wrong_shape(bad: Callable[[list[Any]], Any]) -> None:
    calls = 0

    async def embed(texts: list[Any]) -> Any:
        nonlocal calls
        calls += 1
        return np.stack([hashed_embedding(t) for t in texts]) if calls == 1 else bad(texts)

    async with AsyncContextEngine() as engine:
        await engine.index(CORPUS[:1], batch_embed_fn=embed)
        with pytest.raises(EmbeddingError, match="expected"):
            await engine.run("What is ML?")
        with pytest.raises(EmbeddingError):
            await engine.run("What is DL?")
        assert_idle(engine)


async def test_a_failing_corpus_embedding_keeps_the_documented_state() -> None:
    make = config_factory()

    async def fail(text: Any) -> Any:
        raise RuntimeError("embedding service down")

    reference = SyncReference(make)
    async with AsyncContextEngine(make()) as engine:
        with pytest.raises(RuntimeError, match="down"):
            await engine.index(CORPUS, embed_fn=fail, source_quality_map=QUALITY)
        # No retriever was installed: the placeholder context, like the sync engine.
        result = await engine.run("What is machine learning?")
        await engine.index(CORPUS, embed_fn=hashed_embedding, source_quality_map=QUALITY)
        second = await engine.run("Define tokenization")

    def sync_fail(text: Any) -> Any:
        raise RuntimeError("embedding service down")

    with pytest.raises(RuntimeError):
        reference.index(CORPUS, embed_fn=sync_fail, source_quality_map=QUALITY)
    assert_same(reference.run("What is machine learning?").context, result.context, "after failure")
    reference.index(**SYNC_INDEX)
    assert_same(reference.run("Define tokenization").context, second.context, "after retry")
    assert_same(engine_state(reference, [None]), engine_state(engine, [None]), "state")


async def test_embedder_calls_are_awaited_on_the_loop() -> None:
    """Coroutine embedders run on the event loop (their own awaits are fine)."""
    seen: list[bool] = []

    async def embed(text: Any) -> np.ndarray:
        try:
            anyio.get_current_task()
            seen.append(True)
        except RuntimeError:
            seen.append(False)
        await anyio.sleep(0)
        return hashed_embedding(text)

    async with AsyncContextEngine() as engine:
        await engine.index(CORPUS[:5], embed_fn=embed)
        await engine.run("What is ML?")
        await wait_until(lambda: len(seen) == 6)
    assert all(seen)
