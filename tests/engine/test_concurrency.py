"""Serializability: concurrent requests return what running them one by one would.

Every test records the order in which requests (and ``index`` /
``clear_cache`` barriers) entered the async engine, replays that order on
``sync_api.ContextEngine`` and compares every result field, the final
performance report (minus the timing average), the cache statistics and every
conversation history.
"""

from __future__ import annotations

import random
import threading
from functools import partial
from typing import Any

import anyio
import pytest
from support.corpus import CORPUS, QUALITY, QUERIES
from support.embedding import hashed_embedding
from support.engines import assert_idle, wait_until

import sync_api
from zerda_async import AsyncContextEngine, SourceQuality

from .support import (
    CountingRetriever,
    IndexCall,
    SubmissionLog,
    SyncReference,
    check_against_sync,
    config_factory,
    force_inline,
    force_threads,
    keyword_retriever,
    result_of,
)

pytestmark = pytest.mark.anyio

INDEX: IndexCall = {"chunks": CORPUS, "embed_fn": hashed_embedding, "source_quality_map": QUALITY}

FOLLOW_UPS = [
    "How does it handle long sequences?",
    "And what about evaluation?",
    "كيف يعمل ذلك؟",
    "Why does that matter?",
]

ALICE = [f"{q} (asked by alice)" for q in QUERIES[2:10]]
BOB = [f"{q} (سؤال)" for q in QUERIES[5:12]]


def base_budget(query: str) -> int:
    return (
        sync_api.RuleBasedQueryAnalyzer(sync_api.ContextEngineConfig())
        .analyze(query)
        .context_budget
    )


def answer_last_turn(
    engine: AsyncContextEngine, log: SubmissionLog, session_id: str | None, answer: str
) -> None:
    """Answer the last recorded turn of a conversation (the engine is idle)."""
    history = engine.get_history(session_id)
    assert history is not None and history.turns
    history.turns[-1].answer = answer
    log.external("answer", session_id, answer)


async def test_run_many_matches_sync_one_by_one() -> None:
    make = config_factory()
    reference = SyncReference(make)
    async with AsyncContextEngine(make()) as engine:
        log = SubmissionLog(engine)
        await engine.index(**INDEX)
        # More than ten non-cached runs: the adaptive budget changes mid-batch.
        first = QUERIES + QUERIES[::-1] + QUERIES[:6]
        results = await engine.run_many(first)
        assert [r.context for r in results] == [result_of(r).context for r in log.requests]
        answer_last_turn(engine, log, None, "Transformers use attention.")
        await engine.run_many(FOLLOW_UPS + QUERIES[:4], max_chunks=5)
        # Two conversations at once, each its own history.
        async with anyio.create_task_group() as tg:
            tg.start_soon(partial(engine.run_many, ALICE, session_id="alice"))
            tg.start_soon(partial(engine.run_many, BOB, session_id="bob", concurrency=3))
        answer_last_turn(engine, log, "alice", "It is a family of models.")
        answer_last_turn(engine, log, "bob", "البيانات مهمة.")
        async with anyio.create_task_group() as tg:
            tg.start_soon(partial(engine.run_many, FOLLOW_UPS, session_id="alice"))
            tg.start_soon(partial(engine.run_many, FOLLOW_UPS, session_id="bob", use_history=False))
            tg.start_soon(partial(engine.run_many, FOLLOW_UPS[:2], override_budget=300))
        assert_idle(engine)
    compared = check_against_sync(engine, log, reference, index_calls=[INDEX])
    assert compared == len(log.requests) > 70
    budgets = [result_of(r).query_analysis.context_budget for r in log.requests]
    bases = [base_budget(r.job.query) for r in log.requests]
    adapted = [b for b, base in zip(budgets, bases, strict=True) if b not in (base, 300)]
    assert adapted, "the adaptive budget never changed: the test lost its point"
    hits = [r for r in log.requests if result_of(r).metadata.get("from_cache")]
    assert len(hits) > 10
    enriched = [
        r for r in log.requests if result_of(r).query_analysis.original_query != r.job.query
    ]
    assert enriched, "no history enrichment happened"


@pytest.mark.parametrize("placement", ["inline", "threads"])
async def test_task_group_of_runs_matches_sync(placement: str) -> None:
    make = config_factory()
    reference = SyncReference(make)
    rng = random.Random(7)
    sessions = [None, "s1", "s2", "s3"]
    async with AsyncContextEngine(make(), max_in_flight=16) as engine:
        (force_inline if placement == "inline" else force_threads)(engine)
        log = SubmissionLog(engine)
        await engine.index(**INDEX)
        for round_no in range(3):
            async with anyio.create_task_group() as tg:
                for _ in range(40):
                    options: dict[str, Any] = {"session_id": rng.choice(sessions)}
                    if rng.random() < 0.15:
                        options["max_chunks"] = rng.choice([0, 3, 6])
                    if rng.random() < 0.1:
                        options["use_history"] = False
                    if rng.random() < 0.1:
                        options["record_turn"] = False
                    if rng.random() < 0.1:
                        options["metadata_filters"] = {"lang": "ar"}
                    query = rng.choice(QUERIES + FOLLOW_UPS)
                    tg.start_soon(partial(engine.run, query, **options))
            for sid in sessions:
                answer_last_turn(engine, log, sid, f"answer {round_no} for {sid}")
        assert_idle(engine)
    assert check_against_sync(engine, log, reference, index_calls=[INDEX]) == 120


async def test_a_thousand_racing_requests() -> None:
    make = config_factory()
    reference = SyncReference(make)
    rng = random.Random(1000)
    sessions = [None, "a", "b", "c", "d"]
    pool = QUERIES + FOLLOW_UPS + [f"question number {i} about machine learning" for i in range(40)]
    outcomes: list[Any] = []

    async def caller(query: str, session_id: str | None) -> None:
        outcomes.append(await engine.run(query, session_id=session_id))

    async with AsyncContextEngine(make()) as engine:
        log = SubmissionLog(engine)
        await engine.index(**INDEX)
        await engine.run_many(QUERIES[:4], session_id="a")
        answer_last_turn(engine, log, "a", "an answer that enriches the next turns")
        async with anyio.create_task_group() as tg:
            for i in range(1000):
                tg.start_soon(caller, rng.choice(pool), rng.choice(sessions))
                if i == 500:
                    # A barrier in the middle of the race is ordered like a request.
                    tg.start_soon(engine.clear_cache)
        assert_idle(engine)
    assert len(outcomes) == 1000
    assert {id(o) for o in outcomes} <= {id(r.outcome) for r in log.requests}
    assert check_against_sync(engine, log, reference, index_calls=[INDEX]) == 1004
    assert sum(1 for kind, _ in log.entries if kind == "clear_cache") == 1


async def test_index_and_clear_cache_barriers_keep_their_place() -> None:
    """A second ``index`` (new source-quality map) and ``clear_cache`` issued while
    earlier requests are still in flight apply between them and later requests,
    although later requests speculate ahead of the barrier."""
    make = config_factory()
    gate = threading.Event()
    retriever = CountingRetriever(keyword_retriever(make), gate=gate)
    reference = SyncReference(make, retriever=keyword_retriever(make))
    other_quality = {"Forum": SourceQuality.HIGH, "Textbook": SourceQuality.LOW}
    index_calls: list[IndexCall] = [
        {"chunks": CORPUS, "source_quality_map": QUALITY},
        {"chunks": CORPUS[:5], "source_quality_map": other_quality},
    ]
    async with AsyncContextEngine(make(), retriever=retriever) as engine:
        force_threads(engine)
        log = SubmissionLog(engine)
        await engine.index(**index_calls[0])

        def barriers() -> int:
            return sum(1 for kind, _ in log.entries if kind != "run")

        async with anyio.create_task_group() as tg:
            # Blocks in a worker thread inside the retriever until the gate opens.
            tg.start_soon(engine.run, "What is machine learning?")
            await wait_until(lambda: retriever.total == 1)
            tg.start_soon(partial(engine.index, **index_calls[1]))
            await wait_until(lambda: barriers() == 2)
            tg.start_soon(engine.run, "Machine learning and data quality, explained in detail")
            await wait_until(lambda: len(log.requests) == 2 and log.requests[1].speculated.is_set())
            tg.start_soon(engine.clear_cache)
            await wait_until(lambda: barriers() == 3)
            tg.start_soon(engine.run, "what is machine learning?")
            await wait_until(lambda: len(log.requests) == 3)
            gate.set()
        assert_idle(engine)
    check_against_sync(engine, log, reference, index_calls=index_calls)


# -- single flight ---------------------------------------------------------------------


async def test_identical_concurrent_misses_compute_once() -> None:
    make = config_factory()
    gate = threading.Event()
    retriever = CountingRetriever(keyword_retriever(make), gate=gate)
    reference = SyncReference(make, retriever=keyword_retriever(make))
    queries = ["What is RAG?", "what is rag?", "  WHAT IS RAG?  "] * 4
    async with AsyncContextEngine(make(), retriever=retriever) as engine:
        force_threads(engine)
        log = SubmissionLog(engine)
        await engine.index(CORPUS, source_quality_map=QUALITY)
        async with anyio.create_task_group() as tg:
            for query in queries:
                tg.start_soon(engine.run, query)
            # Every request is inside while the first one computes.
            await wait_until(lambda: len(log.requests) == len(queries))
            gate.set()
        assert_idle(engine)
    assert retriever.total == 1, retriever.calls
    check_against_sync(
        engine,
        log,
        reference,
        index_calls=[{"chunks": CORPUS, "source_quality_map": QUALITY}],
    )
    hits = [result_of(r).metadata.get("from_cache", False) for r in log.requests]
    assert hits == [False] + [True] * (len(queries) - 1)


async def test_single_flight_when_the_leader_is_not_cached() -> None:
    """A guard failure stores nothing: every identical request computes, as in sync."""
    make = config_factory(guard__min_context_length=100_000)
    retriever = CountingRetriever(keyword_retriever(make))
    reference_retriever = CountingRetriever(keyword_retriever(make))
    reference = SyncReference(make, retriever=reference_retriever)
    async with AsyncContextEngine(make(), retriever=retriever) as engine:
        log = SubmissionLog(engine)
        await engine.index(CORPUS, source_quality_map=QUALITY)
        await engine.run_many(["What is RAG?"] * 6 + ["Define tokenization"] * 3)
        assert_idle(engine)
    check_against_sync(
        engine, log, reference, index_calls=[{"chunks": CORPUS, "source_quality_map": QUALITY}]
    )
    assert retriever.calls == reference_retriever.calls
    assert all(not result_of(r).guard_passed for r in log.requests)


async def test_single_flight_when_the_leader_is_cancelled() -> None:
    make = config_factory()
    gate = threading.Event()
    retriever = CountingRetriever(keyword_retriever(make), gate=gate)
    reference = SyncReference(make, retriever=keyword_retriever(make))
    async with AsyncContextEngine(make(), retriever=retriever) as engine:
        force_threads(engine)
        log = SubmissionLog(engine)
        await engine.index(CORPUS, source_quality_map=QUALITY)
        follower: list[Any] = []
        leader_scope = anyio.CancelScope()

        async def lead() -> None:
            with leader_scope:
                await engine.run("What is RAG?")

        async def follow() -> None:
            follower.append(await engine.run("what is rag?"))

        async with anyio.create_task_group() as tg:
            tg.start_soon(lead)
            await wait_until(lambda: retriever.total == 1)  # the leader computes
            tg.start_soon(follow)  # joins the leader's flight
            await wait_until(lambda: len(log.requests) == 2)
            leader_scope.cancel()  # the leader's caller gives up
            await wait_until(lambda: log.requests[0].cancelled)
            gate.set()
        assert_idle(engine)
        await engine.run("What is RAG?")  # a cache hit after the follower stored it
    assert len(follower) == 1 and not follower[0].metadata
    leader = log.requests[0]
    assert leader.cancelled and leader.outcome is None
    # The abandoned leader is not part of the serial history.
    log.entries = [(k, v) for k, v in log.entries if v is not leader]
    check_against_sync(
        engine, log, reference, index_calls=[{"chunks": CORPUS, "source_quality_map": QUALITY}]
    )
