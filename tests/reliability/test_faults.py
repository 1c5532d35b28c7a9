"""Fault injection on the async engine: failing embedders, stores and tokenizers, slow consumers.

Every fault is triggered by one request's text (see ``support.TRIGGER``) while
other requests are in flight with it.  The contract checked each time:

* only the affected request fails, with its own exception type and message,
  a note naming the stage (``failed_stage``) and, for a hang, within its
  ``timeout`` (a ``TimeoutError`` whose note says where it was waiting);
* the other requests return normal results (``check_result``);
* the engine keeps serving, ends idle (no pending request, single-flight
  entry or taken slot) and closes without waiting for a hung call;
* nothing blocks the event loop (blockbuster on asyncio, a heartbeat on trio).
"""

from __future__ import annotations

import gc
import time
import weakref
from collections.abc import Callable
from typing import Any

import anyio
import pytest
from support.corpus import CORPUS, QUERIES, sourced
from support.engines import assert_idle, wait_until

from zerda_async import AsyncContextEngine, ContextEngineConfig, EmbeddingError
from zerda_async.core.counters import make_token_counter
from zerda_async.core.retrieval import HybridRetriever, KeywordRetriever, VectorRetriever
from zerda_async.errors import failed_stage
from zerda_async.events import DoneEvent, ErrorEvent, StageEvent

from .support import TRIGGER, FaultyEmbedder, FaultyStore, FaultyTokenizer, check_result

pytestmark = pytest.mark.anyio

GOOD = [q for q in QUERIES if "machine learning" not in q.lower()][:8]
POISON = f"{TRIGGER}: what is machine learning?"
FORMS = ["sync_one", "sync_many", "one", "many"]
"""Embedder forms: plain per text, plain batch, coroutine per text, coroutine batch."""

BAD_OUTPUTS: dict[str, tuple[type[Exception], str]] = {
    "raise": (ConnectionError, "embedding service unavailable"),
    "nan": (EmbeddingError, "NaN or infinity"),
    "inf": (EmbeddingError, "NaN or infinity"),
    "none": (EmbeddingError, "None"),
    "text": (EmbeddingError, "not a numeric array"),
    "wrong_dim": (EmbeddingError, "dimensions"),
}


def notes(exc: BaseException) -> str:
    return " | ".join(getattr(exc, "__notes__", []))


class Heartbeat:
    """Measures how late the event loop wakes a task sleeping 5 ms at a time."""

    def __init__(self) -> None:
        self.lateness: list[float] = []
        self.stop = anyio.Event()

    async def run(self) -> None:
        while not self.stop.is_set():
            started = anyio.current_time()
            await anyio.sleep(0.005)
            self.lateness.append(anyio.current_time() - started - 0.005)

    @property
    def worst(self) -> float:
        return max(self.lateness, default=0.0)


async def run_with_poison(
    engine: AsyncContextEngine, poison_timeout: float | None
) -> tuple[BaseException | None, float, dict[int, Any]]:
    """Run POISON (``poison_timeout``) and GOOD concurrently: its error and time, their results."""
    results: dict[int, Any] = {}
    caught: list[tuple[BaseException | None, float]] = []
    started = anyio.current_time()

    async def poison() -> None:
        try:
            await engine.run(POISON, timeout=poison_timeout)
        except Exception as exc:
            caught.append((exc, anyio.current_time() - started))
        else:
            caught.append((None, anyio.current_time() - started))

    async def good(i: int, query: str) -> None:
        results[i] = await engine.run(query, timeout=10)

    async with anyio.create_task_group() as tg:
        tg.start_soon(poison)
        for i, query in enumerate(GOOD):
            tg.start_soon(good, i, query)
    # A caller that timed out returns before the commit task has skipped its
    # request (trio may also have submitted it last); give the engine a
    # bounded moment to settle before the tests check it is idle.
    with anyio.move_on_after(2):
        while engine.statistics().in_flight:
            await anyio.sleep(0.005)
    error, elapsed = caught[0]
    return error, elapsed, results


def check_others(results: dict[int, Any]) -> None:
    assert sorted(results) == list(range(len(GOOD)))
    for result in results.values():
        check_result(result, CORPUS)


# -- embedders returning garbage or raising ---------------------------------------------------


@pytest.mark.parametrize("mode", list(BAD_OUTPUTS))
@pytest.mark.parametrize("form", FORMS)
async def test_a_bad_query_embedding_fails_only_its_request(form: str, mode: str) -> None:
    embedder = FaultyEmbedder(mode)
    async with AsyncContextEngine() as engine:
        await engine.index(CORPUS, **embedder.kwargs(form))
        queries = [*GOOD[:4], POISON, *GOOD[4:]]
        # Submitted together: a batch embedder gets the bad text with good ones.
        outcomes = await engine.run_many(queries, return_exceptions=True)
        failed = [o for o in outcomes if isinstance(o, BaseException)]
        assert failed == [outcomes[4]], [type(o).__name__ for o in outcomes]
        error_type, message = BAD_OUTPUTS[mode]
        assert isinstance(failed[0], error_type), repr(failed[0])
        assert message in str(failed[0])
        assert failed_stage(failed[0]) == "retrieval"
        for outcome in outcomes[:4] + outcomes[5:]:
            check_result(outcome, CORPUS)
        check_result(await engine.run("Why cache contexts, again?"), CORPUS)
        assert_idle(engine)


@pytest.mark.parametrize("mode", ["nan", "inf"])
@pytest.mark.parametrize("form", FORMS)
async def test_a_non_finite_corpus_embedding_fails_the_index(form: str, mode: str) -> None:
    bad = sourced("bad", f"{TRIGGER} ivy is a plant that causes an itchy rash", "Forum")
    corpus = [*CORPUS[:5], bad, *CORPUS[5:10]]
    embedder = FaultyEmbedder(mode)
    async with AsyncContextEngine() as engine:
        with pytest.raises(EmbeddingError, match="NaN or infinity") as caught:
            await engine.index(corpus, **embedder.kwargs(form))
        if form == "sync_one":
            assert "text 5" in str(caught.value)
        # Nothing was installed: the documented placeholder, as after any failed index().
        assert not (await engine.run("What is machine learning?")).chunks_used
        embedder.armed = False
        await engine.index(corpus, **embedder.kwargs(form))
        check_result(await engine.run("What is machine learning?"), corpus)
        assert_idle(engine)


# -- hung dependencies ------------------------------------------------------------------------


@pytest.mark.parametrize("form", FORMS)
async def test_a_hung_embedder_fails_only_its_request_within_its_timeout(form: str) -> None:
    embedder = FaultyEmbedder("hang")
    heartbeat = Heartbeat()
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(heartbeat.run)
            async with AsyncContextEngine() as engine:
                await engine.index(CORPUS, **embedder.kwargs(form))
                error, elapsed, results = await run_with_poison(engine, 0.3)
                assert isinstance(error, TimeoutError), repr(error)
                assert 0.3 <= elapsed < 1.5, elapsed
                assert "timed out in pipeline stage 'retrieval'" in notes(error)
                check_others(results)
                check_result(await engine.run("Define tokenization", timeout=5), CORPUS)
                assert_idle(engine)
                if form in ("one", "many"):
                    # A coroutine call is cancelled with the request that gave up.
                    await wait_until(lambda: embedder.inside == 0)
                closing = anyio.current_time()
            # Closing does not wait for a worker thread stuck in a plain embedder.
            assert anyio.current_time() - closing < 1.0
            heartbeat.stop.set()
    finally:
        embedder.release()
    assert heartbeat.worst < 0.25, heartbeat.worst


@pytest.mark.parametrize("mode", ["raise", "hang"])
async def test_a_failing_vector_store_fails_only_its_request(mode: str) -> None:
    store = FaultyStore(CORPUS, mode)
    heartbeat = Heartbeat()
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(heartbeat.run)
            async with AsyncContextEngine() as engine:
                await engine.index(CORPUS, vector_store_adapter=store)
                error, elapsed, results = await run_with_poison(engine, 0.3)
                assert isinstance(error, TimeoutError), repr(error)
                if mode == "raise":
                    # The store's own timeout: its message, and the stage it failed in.
                    assert str(error) == "vector store read timed out after 2.0 s"
                    assert failed_stage(error) == "retrieval"
                else:
                    assert 0.3 <= elapsed < 1.5, elapsed
                    assert "timed out in pipeline stage 'retrieval'" in notes(error)
                check_others(results)
                assert_idle(engine)
                closing = anyio.current_time()
            assert anyio.current_time() - closing < 1.0
            heartbeat.stop.set()
    finally:
        store.release()
    assert heartbeat.worst < 0.25, heartbeat.worst


class HangingVectorDB:
    """A native vector database client (``search``) that blocks on :data:`TRIGGER` queries."""

    def __init__(self, store: FaultyStore) -> None:
        self.store = store

    def search(self, query: str, top_k: int = 5) -> list[tuple[Any, float]]:
        return self.store.similarity_search_with_score(query, k=top_k)


async def test_an_injected_retriever_runs_off_the_loop_and_can_hang() -> None:
    store = FaultyStore(CORPUS, "hang")
    config = ContextEngineConfig()
    retriever = HybridRetriever(
        config,
        vector_retriever=VectorRetriever(config, vector_db=HangingVectorDB(store)),
        keyword_retriever=KeywordRetriever(config, chunks=CORPUS),
    )
    try:
        async with AsyncContextEngine(config, retriever=retriever) as engine:
            await engine.index(CORPUS)  # the documented source-quality map
            error, elapsed, results = await run_with_poison(engine, 0.3)
            assert isinstance(error, TimeoutError) and 0.3 <= elapsed < 1.5
            assert "timed out in pipeline stage 'retrieval'" in notes(error)
            check_others(results)
            assert_idle(engine)
    finally:
        store.release()


async def test_a_slow_plain_embedder_never_blocks_the_loop() -> None:
    """A sync query embedder (a network client, say) runs in a worker thread."""
    embedder = FaultyEmbedder("slow", delay=0.2)
    heartbeat = Heartbeat()
    async with anyio.create_task_group() as tg:
        tg.start_soon(heartbeat.run)
        async with AsyncContextEngine() as engine:
            await engine.index(CORPUS, embed_fn=embedder.sync_one)
            for _ in range(3):
                check_result(await engine.run(POISON), CORPUS)  # 0.2 s in the embedder
                check_result(await engine.run(f"{POISON} (again)"), CORPUS)
        heartbeat.stop.set()
    assert heartbeat.worst < 0.1, heartbeat.worst


# -- timeouts name where the request waited -------------------------------------------------------


async def test_timeouts_say_where_the_request_was_waiting() -> None:
    embedder = FaultyEmbedder("hang")
    try:
        async with AsyncContextEngine(max_in_flight=2) as engine:
            await engine.index(CORPUS, embed_fn=embedder.one)
            async with anyio.create_task_group() as tg:
                errors: list[BaseException] = []

                async def call(query: str, timeout: float) -> None:
                    try:
                        await engine.run(query, timeout=timeout)
                    except TimeoutError as exc:
                        errors.append(exc)

                tg.start_soon(call, POISON, 0.6)  # hangs in its embedding
                await wait_until(lambda: embedder.inside == 1)
                tg.start_soon(call, "What is BM25?", 0.3)  # committed after POISON
                await wait_until(lambda: engine.statistics().in_flight == 2)
                tg.start_soon(call, "What is RAG?", 0.1)  # no slot left
        where = sorted(notes(e) for e in errors)
        assert len(where) == 3
        assert any("admission (all 2 in-flight slots were taken)" in n for n in where)
        assert any("the commit queue" in n for n in where)
        assert any("pipeline stage 'retrieval' (query embedding)" in n for n in where)
    finally:
        embedder.release()


async def test_a_stream_timeout_says_where_the_request_was() -> None:
    embedder = FaultyEmbedder("hang")
    try:
        async with AsyncContextEngine() as engine:
            await engine.index(CORPUS, batch_embed_fn=embedder.many)
            with pytest.raises(TimeoutError) as caught:
                async for _ in engine.stream(POISON, timeout=0.2):
                    pass
            assert "pipeline stage 'retrieval'" in notes(caught.value)
            events = [e async for e in engine.stream("What is BM25?", timeout=5)]
            assert isinstance(events[-1], DoneEvent)
            await wait_until(lambda: embedder.inside == 0)
            assert_idle(engine)
    finally:
        embedder.release()


# -- tokenizers ---------------------------------------------------------------------------------


async def test_a_failing_tokenizer_fails_only_the_requests_it_cannot_count() -> None:
    poison = sourced("poison", f"{TRIGGER} ivy toxicodendron radicans urushiol dermatitis", "Wiki")
    corpus = [*CORPUS, poison]
    counter = make_token_counter(FaultyTokenizer())
    async with AsyncContextEngine(length_counter=counter) as engine:
        await engine.index(corpus)
        queries = [*GOOD[:3], f"{TRIGGER} ivy dermatitis", *GOOD[3:6]]
        outcomes = await engine.run_many(queries, return_exceptions=True)
        failed = [o for o in outcomes if isinstance(o, BaseException)]
        assert failed == [outcomes[3]]
        assert isinstance(failed[0], UnicodeError) and "tokenizer cannot encode" in str(failed[0])
        assert failed_stage(failed[0]) == "compose"
        for outcome in outcomes[:3] + outcomes[4:]:
            check_result(outcome, corpus, budget_rule=False)
        events = [e async for e in engine.stream(f"{TRIGGER} urushiol")]
        assert isinstance(events[-1], ErrorEvent) and events[-1].stage == "compose"
        assert_idle(engine)


# -- slow and vanishing stream consumers ----------------------------------------------------------


async def test_a_slow_stream_consumer_does_not_hold_up_other_requests() -> None:
    async with AsyncContextEngine() as engine:
        await engine.index(CORPUS)
        finished: list[float] = []
        started = anyio.current_time()
        slow_events: list[StageEvent] = []

        async def slow_consumer() -> None:
            async for event in engine.stream("How does the transformer handle long sequences?"):
                slow_events.append(event)
                await anyio.sleep(0.1)  # a slow client between every event

        async def other(query: str) -> None:
            check_result(await engine.run(query), CORPUS)
            finished.append(anyio.current_time() - started)

        async with anyio.create_task_group() as tg:
            tg.start_soon(slow_consumer)
            await wait_until(lambda: bool(slow_events))
            for i, query in enumerate(GOOD * 3):
                tg.start_soon(other, f"{query} #{i}")
        assert len(finished) == len(GOOD) * 3
        # Everyone else finished long before the slow consumer's ~0.7 s.
        assert max(finished) < 0.5, max(finished)
        assert isinstance(slow_events[-1], DoneEvent)
        assert_idle(engine)


@pytest.mark.parametrize("how", ["break", "drop_unstarted", "drop_mid_stream"])
async def test_streams_left_early_release_their_request(how: str) -> None:
    async with AsyncContextEngine() as engine:
        await engine.index(CORPUS, embed_fn=FaultyEmbedder("slow", delay=0.05).one)
        if how == "break":
            async for _ in engine.stream(POISON):
                break
        else:
            stream = engine.stream(POISON)
            if how == "drop_mid_stream":
                await stream.__anext__()
            ref = weakref.ref(stream)
            del stream
            gc.collect()
            assert ref() is None
        # Released at once (no aclose, no ResourceWarning): nothing pending.
        await wait_until(lambda: not engine.statistics().in_flight, timeout=2)
        check_result(await engine.run("What is BM25?"), CORPUS)
        assert_idle(engine)


# -- the engine itself: closing with work stuck in threads -----------------------------------------


async def test_closing_with_threads_stuck_in_caller_code() -> None:
    store = FaultyStore(CORPUS, "hang")
    try:
        started = time.perf_counter()
        async with AsyncContextEngine() as engine:
            await engine.index(CORPUS, vector_store_adapter=store)
            async with anyio.create_task_group() as tg:
                for i in range(4):
                    tg.start_soon(_expect_timeout, engine.run, f"{POISON} {i}", 0.2)
            # The two speculation workers each left a thread stuck in the store
            # (abandoned); the other two requests gave up before they started.
            assert store.inside == engine.statistics().workers == 2
            check_result(await engine.run("What is BM25?", timeout=5), CORPUS)
            assert_idle(engine)
        assert time.perf_counter() - started < 3
    finally:
        store.release()
    await wait_until(lambda: store.inside == 0)


async def _expect_timeout(call: Callable[..., Any], query: str, timeout: float) -> None:
    with pytest.raises(TimeoutError):
        await call(query, timeout=timeout)
