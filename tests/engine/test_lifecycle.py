"""Lifecycle, cancellation, timeouts, backpressure, failures and streaming.

The invariant checked for every cancelled or timed-out call: either the call
raised and its request changed nothing (the engine ends in the state of the
same calls without it), or it returned a result and the request is part of
the serial history.  Nothing is left pending afterwards.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from contextlib import aclosing
from functools import partial
from typing import Any

import anyio
import anyio.abc
import msgspec
import pytest
from blockbuster import BlockBuster, BlockingError
from support.corpus import CORPUS, QUALITY, QUERIES
from support.embedding import hashed_embedding
from support.engines import assert_idle, wait_until

from zerda_async import AsyncContextEngine, EngineClosedError
from zerda_async.core.composer import SmartContextComposer
from zerda_async.core.filtering import ChunkFilter
from zerda_async.core.guard import ContextGuard
from zerda_async.core.query_analyzer import build_query_analyzer
from zerda_async.core.ranking import CompositeRanker
from zerda_async.errors import failed_stage
from zerda_async.events import (
    AnalysisEvent,
    ComposedEvent,
    DoneEvent,
    ErrorEvent,
    FilteredEvent,
    GuardedEvent,
    RankedEvent,
    RetrievedEvent,
)

from .support import (
    IndexCall,
    SubmissionLog,
    SyncReference,
    assert_same,
    check_against_sync,
    config_factory,
    force_inline,
    force_threads,
    keyword_retriever,
    outcome_fields,
    report_fields,
)

pytestmark = pytest.mark.anyio

INDEX: IndexCall = {"chunks": CORPUS, "source_quality_map": QUALITY}
FOLLOW_UP = "How does it handle long sequences?"
EMBED_INDEX: IndexCall = {**INDEX, "embed_fn": hashed_embedding}


def without_abandoned(log: SubmissionLog) -> None:
    """Drop requests whose callers gave up before their commit (they never ran)."""
    log.entries = [
        (kind, item)
        for kind, item in log.entries
        if not (kind == "run" and item.cancelled and item.outcome is None)
    ]


# -- injected components ---------------------------------------------------------------


class Tripwire:
    """Runs ``action`` once, the first time the pipeline reaches ``stage`` while armed."""

    def __init__(self) -> None:
        self.stage: str | None = None
        self.action: Callable[[], None] | None = None

    def arm(self, stage: str, action: Callable[[], None]) -> None:
        self.stage, self.action = stage, action

    def reached(self, stage: str) -> None:
        if self.stage == stage and self.action is not None:
            action, self.action = self.action, None
            action()


class TrippingComponents:
    """The default analyzer, filter, ranker, composer and guard, and a keyword
    retriever, each calling the tripwire with its stage name first."""

    def __init__(self, make_config: Callable[[], Any], trip: Tripwire) -> None:
        config = make_config()
        self.trip = trip
        self._analyzer = build_query_analyzer(config)
        self._retriever = keyword_retriever(make_config)
        self._filter = ChunkFilter(config)
        self._ranker = CompositeRanker(config)
        self._composer = SmartContextComposer(config)
        self._guard = ContextGuard(config)

    def components(self) -> dict[str, Any]:
        return {
            "query_analyzer": _Delegate(self, "analysis", self._analyzer, "analyze"),
            "retriever": _Delegate(self, "retrieval", self._retriever, "retrieve"),
            "chunk_filter": _Delegate(self, "filter", self._filter, "filter"),
            "ranker": _Delegate(self, "rank", self._ranker, "rank"),
            "composer": _Delegate(self, "compose", self._composer, "compose"),
            "guard": _Delegate(self, "guard", self._guard, "validate"),
        }


class _Delegate:
    def __init__(self, owner: TrippingComponents, stage: str, inner: Any, method: str) -> None:
        self._owner, self._stage, self._inner, self._method = owner, stage, inner, method

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._inner, name)
        if name != self._method:
            return target

        def call(*args: Any, **kwargs: Any) -> Any:
            self._owner.trip.reached(self._stage)
            return target(*args, **kwargs)

        return call


class GatedEmbedder:
    """An async embedder that waits for ``gate`` on the texts ``hold`` selects."""

    def __init__(self, hold: Callable[[str], bool] = lambda text: False) -> None:
        self.gate = anyio.Event()
        self.hold = hold
        self.calls = 0
        self.inside = 0
        self.max_inside = 0
        self.held = 0  # calls that waited for the gate
        self.cancelled = 0  # held calls cancelled before the gate opened

    async def __call__(self, text: str) -> Any:
        self.calls += 1
        self.inside += 1
        self.max_inside = max(self.max_inside, self.inside)
        try:
            if self.hold(text):
                self.held += 1
                try:
                    await self.gate.wait()
                except anyio.get_cancelled_exc_class():
                    self.cancelled += 1
                    raise
            return hashed_embedding(text)
        finally:
            self.inside -= 1


class SlowEmbedder:
    """An async embedder taking ``delay`` seconds per call (a network call)."""

    def __init__(self, delay: float) -> None:
        self.delay = delay

    async def __call__(self, text: str) -> Any:
        await anyio.sleep(self.delay)
        return hashed_embedding(text)


# -- closed engines ----------------------------------------------------------------------


async def _every_entry_point_raises(engine: AsyncContextEngine) -> None:
    with pytest.raises(EngineClosedError):
        await engine.run("What is ML?")
    with pytest.raises(EngineClosedError):
        await engine.run_many(["What is ML?"])
    with pytest.raises(EngineClosedError):
        await engine.run_multi(["What is ML?", "What is DL?"])
    with pytest.raises(EngineClosedError):
        await engine.index(CORPUS)
    with pytest.raises(EngineClosedError):
        await engine.clear_cache()
    with pytest.raises(EngineClosedError):
        async for _ in engine.stream("What is ML?"):
            pass


async def test_engine_closed_before_entering() -> None:
    engine = AsyncContextEngine()
    await _every_entry_point_raises(engine)
    assert engine.get_performance_report()["total_queries"] == 0


async def test_engine_closed_after_aclose() -> None:
    async with AsyncContextEngine() as engine:
        await engine.run("What is ML?")
        await engine.aclose()
        await engine.aclose()  # idempotent
        await _every_entry_point_raises(engine)
    with pytest.raises(EngineClosedError):
        async with engine:
            pass
    assert engine.get_performance_report()["total_queries"] == 1


async def test_aclose_finishes_in_flight_requests() -> None:
    make = config_factory()
    reference = SyncReference(make)
    embed = GatedEmbedder(hold=lambda text: text in QUERIES)
    late: list[BaseException] = []
    results: list[Any] = []

    async def call(engine: AsyncContextEngine, query: str) -> None:
        results.append(await engine.run(query))

    async def open_later(engine: AsyncContextEngine) -> None:
        await anyio.sleep(0.02)
        try:
            await engine.run("submitted while closing")
        except EngineClosedError as exc:
            late.append(exc)
        embed.gate.set()

    # The callers' task group encloses the engine: aclose() must run in the
    # task, and at the nesting level, that entered the engine.
    async with anyio.create_task_group() as tg, AsyncContextEngine(make()) as engine:
        log = SubmissionLog(engine)
        await engine.index(CORPUS, embed_fn=embed, source_quality_map=QUALITY)
        for query in QUERIES[:6]:
            tg.start_soon(call, engine, query)
        await wait_until(lambda: engine.statistics().in_flight == 6)
        tg.start_soon(open_later, engine)
        # Not inside fail_after(): aclose() exits the engine's task group,
        # which must not be nested in a cancel scope opened after it.
        await engine.aclose()
        # Every in-flight request finished before aclose() returned.
        assert len(results) == 6
        assert not engine.statistics().in_flight
    assert len(late) == 1
    index: IndexCall = {
        "chunks": CORPUS,
        "embed_fn": hashed_embedding,
        "source_quality_map": QUALITY,
    }
    check_against_sync(engine, log, reference, index_calls=[index])


async def test_exiting_with_an_error_fails_pending_requests() -> None:
    embed = GatedEmbedder(hold=lambda text: text == "stuck")
    outcome: list[BaseException] = []

    async def call(engine: AsyncContextEngine) -> None:
        try:
            await engine.run("stuck")
        except EngineClosedError as exc:
            outcome.append(exc)

    with pytest.RaisesGroup(KeyError):
        async with anyio.create_task_group() as tg, AsyncContextEngine() as engine:
            await engine.index(CORPUS, embed_fn=embed)
            tg.start_soon(call, engine)
            await wait_until(lambda: embed.inside == 1)
            raise KeyError("boom")
    assert len(outcome) == 1


# -- timeouts and cancellation -----------------------------------------------------------


async def test_timeout_raises_and_the_engine_keeps_serving() -> None:
    make = config_factory()
    reference = SyncReference(make)
    embed = GatedEmbedder(hold=lambda text: text.startswith("slow"))
    async with AsyncContextEngine(make()) as engine:
        log = SubmissionLog(engine)
        await engine.index(CORPUS, embed_fn=embed, source_quality_map=QUALITY)
        await engine.run_many(QUERIES[:3])
        with pytest.raises(TimeoutError):
            await engine.run("slow: what is machine learning?", timeout=0.05)
        try:
            # The abandoned request is still inside the embedder: later
            # requests must not wait for it.
            with anyio.fail_after(5):
                await engine.run_many(QUERIES[3:6])
                await engine.run("What is Python used for?", timeout=5)
            assert_idle(engine)
        finally:
            embed.gate.set()
    without_abandoned(log)
    check_against_sync(engine, log, reference, index_calls=[EMBED_INDEX])


async def test_closing_does_not_wait_for_abandoned_work() -> None:
    embed = GatedEmbedder(hold=lambda text: text == "stuck")
    with anyio.fail_after(5):
        async with AsyncContextEngine() as engine:
            await engine.index(CORPUS, embed_fn=embed)
            with pytest.raises(TimeoutError):
                await engine.run("stuck", timeout=0.05)
            assert (await engine.run("What is ML?")).context
            # The embedder call only the abandoned request waited for is
            # cancelled with it (RELIABILITY.md): nothing is left hanging,
            # before the engine closes (closing fails whatever is pending).
            assert (embed.held, embed.cancelled, embed.inside) == (1, 1, 0)
            assert_idle(engine)


@pytest.mark.parametrize("delay", [0.001, 0.004, 0.01, 0.02])
async def test_cancelling_run_many_keeps_a_prefix(delay: float) -> None:
    """Requests commit in order: a cancelled batch took effect for a prefix of it."""
    make = config_factory()
    reference = SyncReference(make)
    batch = [f"{q} (batch)" for q in QUERIES]
    async with AsyncContextEngine(make()) as engine:
        log = SubmissionLog(engine)
        await engine.index(CORPUS, embed_fn=SlowEmbedder(0.002), source_quality_map=QUALITY)
        with anyio.move_on_after(delay):
            await engine.run_many(batch, concurrency=4)
        await engine.run("What is Python used for?")
        assert_idle(engine)
    took_effect = [r.outcome is not None for r in log.requests if r.job.query in batch]
    assert took_effect == sorted(took_effect, reverse=True), took_effect
    without_abandoned(log)
    check_against_sync(engine, log, reference, index_calls=[EMBED_INDEX])


@pytest.mark.parametrize("api", ["run", "stream"])
async def test_timeout_while_a_followup_is_re_embedded(api: str) -> None:
    """The history changes the query after speculation, so the enriched query
    must be embedded again before the commit; that embedding hangs, the call
    times out, and the request leaves no trace (the engine keeps serving)."""
    make = config_factory()
    reference = SyncReference(make)
    embed = GatedEmbedder(hold=lambda text: text.startswith("[Previous conversation"))
    async with AsyncContextEngine(make()) as engine:
        log = SubmissionLog(engine)
        await engine.index(CORPUS, embed_fn=embed, source_quality_map=QUALITY)
        await engine.run("How does the transformer model handle long sequences?")
        answer = "The transformer uses attention."
        history = engine.get_history()
        assert history is not None
        history.turns[-1].answer = answer
        log.external("answer", None, answer)
        try:
            with pytest.raises(TimeoutError):
                if api == "run":
                    await engine.run(FOLLOW_UP, timeout=0.05)
                else:
                    async for _ in engine.stream(FOLLOW_UP, timeout=0.05):
                        pass
            # The re-embedding is cancelled with its request (RELIABILITY.md).
            await wait_until(lambda: embed.inside == 0)
            with anyio.fail_after(5):
                await engine.run_many(QUERIES[:3], use_history=False)
            assert_idle(engine)
        finally:
            embed.gate.set()
    without_abandoned(log)
    check_against_sync(engine, log, reference, index_calls=[EMBED_INDEX])


@pytest.mark.parametrize("placement", ["inline", "threads"])
@pytest.mark.parametrize("delay", [0.0, 0.0002, 0.001, 0.003, 0.006, 0.012, 0.03])
async def test_cancelling_callers_at_various_delays(delay: float, placement: str) -> None:
    """Cancel a history-enriched request (its commit must redo speculation) after ``delay``."""
    make = config_factory()
    reference = SyncReference(make)
    async with AsyncContextEngine(make()) as engine:
        (force_inline if placement == "inline" else force_threads)(engine)
        log = SubmissionLog(engine)
        await engine.index(CORPUS, embed_fn=SlowEmbedder(0.002), source_quality_map=QUALITY)
        await engine.run_many(QUERIES[:3])
        history = engine.get_history()
        assert history is not None
        history.turns[-1].answer = "The transformer uses attention."
        log.external("answer", None, "The transformer uses attention.")
        returned: list[Any] = []
        with anyio.move_on_after(delay) as scope:
            returned.append(await engine.run(FOLLOW_UP))
        await engine.run("What is Python used for?")
        assert_idle(engine)
    submitted = [r for r in log.requests if r.job.query == FOLLOW_UP]
    if scope.cancelled_caught:
        # Cancelled before or after entering the engine: it never ran.
        assert not returned
        assert all(r.outcome is None for r in submitted), "a cancelled request took effect"
    else:
        assert returned and returned[0] is submitted[0].outcome
    without_abandoned(log)
    check_against_sync(
        engine,
        log,
        reference,
        index_calls=[{**INDEX, "embed_fn": hashed_embedding}],
    )


@pytest.mark.parametrize("stage", ["analysis", "retrieval", "filter", "rank", "compose", "guard"])
async def test_cancellation_arriving_in_each_stage(stage: str) -> None:
    """The caller's scope is cancelled from inside a stage of its own request."""
    make = config_factory()
    trip = Tripwire()
    components = TrippingComponents(make, trip).components()
    reference = SyncReference(make, retriever=keyword_retriever(make))
    async with AsyncContextEngine(make(), **components) as engine:
        force_inline(engine)
        log = SubmissionLog(engine)
        await engine.index(**INDEX)
        await engine.run_many(QUERIES[:4])
        returned: list[Any] = []
        with anyio.CancelScope() as scope:
            trip.arm(stage, scope.cancel)
            returned.append(await engine.run("Explain reciprocal rank fusion"))
        assert trip.action is None, "the stage was never reached"
        await engine.run("What is Python used for?")
        assert_idle(engine)
    request = log.requests[4]
    # A cancellation arriving in a speculative stage usually abandons the
    # request, but the commit may be scheduled before the caller resumes to
    # give up; then the request completes and the call returns it.  Arriving
    # in compose or guard (inside the commit), it is always too late.
    if stage in ("compose", "guard"):
        assert not scope.cancelled_caught
    if scope.cancelled_caught:
        assert request.outcome is None, "a cancelled call's request took effect"
    else:
        assert returned and returned[0] is request.outcome
    without_abandoned(log)
    check_against_sync(engine, log, reference, index_calls=[INDEX])


@pytest.mark.parametrize("stage", ["analysis", "retrieval", "filter", "rank"])
async def test_cancelling_a_request_blocked_in_a_worker_thread(stage: str) -> None:
    make = config_factory()
    trip = Tripwire()
    components = TrippingComponents(make, trip).components()
    reference = SyncReference(make, retriever=keyword_retriever(make))
    entered, release = threading.Event(), threading.Event()

    def block() -> None:
        entered.set()
        assert release.wait(10), "never released"

    async with AsyncContextEngine(make(), **components) as engine:
        force_threads(engine)
        log = SubmissionLog(engine)
        await engine.index(**INDEX)
        await engine.run_many(QUERIES[:4])
        trip.arm(stage, block)
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(engine.run, "Explain reciprocal rank fusion")
                await anyio.to_thread.run_sync(entered.wait)
                scope.cancel()
        assert scope.cancelled_caught
        try:
            # Served while the abandoned request still occupies a worker thread.
            with anyio.fail_after(5):
                await engine.run("What is Python used for?")
                await engine.run_many(QUERIES[4:8])
            assert_idle(engine)
        finally:
            release.set()
    assert log.requests[4].outcome is None
    without_abandoned(log)
    check_against_sync(engine, log, reference, index_calls=[INDEX])


async def test_backpressure_bounds_requests_inside() -> None:
    make = config_factory()
    reference = SyncReference(make)
    embed = GatedEmbedder(hold=lambda text: text in QUERIES)
    async with AsyncContextEngine(make(), max_in_flight=2) as engine:
        log = SubmissionLog(engine)
        await engine.index(CORPUS, embed_fn=embed, source_quality_map=QUALITY)
        calls_after_index = embed.calls
        distinct = [QUERIES[i] for i in (0, 2, 3, 4, 5, 7)]  # no single-flight followers
        async with anyio.create_task_group() as tg:
            for query in distinct:
                tg.start_soon(engine.run, query)
            await wait_until(lambda: engine.statistics().in_flight == 2)
            await anyio.sleep(0.02)
            # Two requests are inside (waiting in the embedder); four callers wait.
            assert engine.statistics().in_flight == 2
            assert len(log.requests) == 2
            assert engine.statistics().free_slots == 0
            assert embed.calls - calls_after_index == 2
            embed.gate.set()
        assert embed.max_inside <= 2
        assert_idle(engine)
    check_against_sync(engine, log, reference, index_calls=[EMBED_INDEX])


# -- failures --------------------------------------------------------------------------


class ExplodingRanker:
    """The default ranker, raising for queries that mention 'explode'."""

    def __init__(self, make_config: Callable[[], Any]) -> None:
        self.inner = CompositeRanker(make_config())

    def rank(self, chunks: Any, analysis: Any, max_n: Any = None) -> Any:
        if "explode" in str(analysis.original_query):
            raise ValueError(f"cannot rank {analysis.original_query!r}")
        return self.inner.rank(chunks, analysis, max_n=max_n)


async def test_a_failing_ranker_fails_only_its_request() -> None:
    make = config_factory()
    reference = SyncReference(make, ranker=ExplodingRanker(make))
    queries = [*QUERIES[:5], "please explode now", *QUERIES[5:9]]
    errors: list[BaseException] = []

    async def call(query: str) -> None:
        try:
            await engine.run(query)
        except ValueError as exc:
            errors.append(exc)

    async with AsyncContextEngine(make(), ranker=ExplodingRanker(make)) as engine:
        log = SubmissionLog(engine)
        await engine.index(**EMBED_INDEX)
        async with anyio.create_task_group() as tg:
            for query in queries:
                tg.start_soon(call, query)
        assert len(errors) == 1
        assert failed_stage(errors[0]) == "rank"
        assert str(errors[0]) == "cannot rank 'please explode now'"
        mixed = await engine.run_many(
            ["explode again", "What is ML?", "explode again"], return_exceptions=True
        )
        assert [type(r).__name__ for r in mixed] == ["ValueError", "ContextResult", "ValueError"]
        assert failed_stage(mixed[0]) == "rank"
        with pytest.raises(ValueError, match="explode once more"):
            await engine.run_many(["Define tokenization", "explode once more", "Why cache?"])
        assert_idle(engine)
        # Every request of the failing run_many ran (they were all submitted).
        assert [r.done.is_set() for r in log.requests] == [True] * len(log.requests)
    check_against_sync(engine, log, reference, index_calls=[EMBED_INDEX])


# -- streaming -------------------------------------------------------------------------


MISS_EVENTS = [
    AnalysisEvent,
    RetrievedEvent,
    FilteredEvent,
    RankedEvent,
    ComposedEvent,
    GuardedEvent,
    DoneEvent,
]


async def test_stream_yields_typed_events_in_order() -> None:
    make = config_factory()
    reference = SyncReference(make)
    reference.index(**EMBED_INDEX)
    async with AsyncContextEngine(make()) as engine:
        await engine.index(**EMBED_INDEX)
        for query in QUERIES[:3]:
            events = [event async for event in engine.stream(query)]
            expected = reference.run(query)
            if expected.metadata.get("from_cache"):
                assert [type(e) for e in events] == [AnalysisEvent, DoneEvent]
                continue
            assert [type(e) for e in events] == MISS_EVENTS
            assert len({e.request_id for e in events}) == 1
            analysis, retrieved, filtered, ranked, composed, guarded, done = events
            assert isinstance(done, DoneEvent)
            result = done.result
            assert_same(outcome_fields(expected), outcome_fields(result), query)
            assert isinstance(retrieved, RetrievedEvent)
            assert retrieved.count == result.total_retrieved
            assert isinstance(filtered, FilteredEvent)
            assert filtered.count == result.total_after_filter
            assert isinstance(ranked, RankedEvent)
            assert [s.doc_id for s in ranked.sources] == [c.doc_id for c in result.chunks_used]
            assert [s.score for s in ranked.sources] == [
                c.composite_score for c in result.chunks_used
            ]
            assert isinstance(composed, ComposedEvent)
            assert composed.context_length == len(result.context)
            assert composed.budget == result.query_analysis.context_budget
            assert isinstance(guarded, GuardedEvent)
            assert (guarded.passed, guarded.warnings) == (
                result.guard_passed,
                result.guard_warnings,
            )
            assert isinstance(analysis, AnalysisEvent)
            assert analysis.language == result.query_analysis.language
            assert analysis.keywords == result.query_analysis.keywords
            for event in events[:-1]:
                encoded = msgspec.json.encode(event)
                assert msgspec.json.decode(encoded, type=type(event)) == event
        assert_idle(engine)
    assert_same(
        report_fields(reference.get_performance_report()),
        report_fields(engine.get_performance_report()),
        "report",
    )


async def test_stream_on_a_cache_hit() -> None:
    async with AsyncContextEngine() as engine:
        await engine.index(**EMBED_INDEX)
        first = await engine.run("What is machine learning?")
        events = [e async for e in engine.stream("  what is MACHINE learning?")]
        assert [type(e) for e in events] == [AnalysisEvent, DoneEvent]
        analysis, done = events
        assert isinstance(done, DoneEvent) and isinstance(analysis, AnalysisEvent)
        assert done.result.context == first.context
        assert done.result.metadata == {"from_cache": True}
        assert done.result.chunks_used == []
        assert analysis.request_id == done.request_id
        assert analysis.budget == done.result.query_analysis.context_budget


async def test_stream_error_event() -> None:
    make = config_factory()
    async with AsyncContextEngine(make(), ranker=ExplodingRanker(make)) as engine:
        await engine.index(**EMBED_INDEX)
        events = [e async for e in engine.stream("explode, please")]
        assert [type(e) for e in events] == [
            AnalysisEvent,
            RetrievedEvent,
            FilteredEvent,
            ErrorEvent,
        ]
        error = events[-1]
        assert isinstance(error, ErrorEvent)
        assert (error.stage, error.error_type) == ("rank", "ValueError")
        assert error.message == "cannot rank 'explode, please'"
        assert_idle(engine)
        assert (await engine.run("What is ML?")).context


@pytest.mark.parametrize("closing", ["aclosing", "explicit_aclose", "break_only"])
async def test_a_consumer_that_stops_early(closing: str) -> None:
    make = config_factory()
    reference = SyncReference(make)
    async with AsyncContextEngine(make()) as engine:
        log = SubmissionLog(engine)
        await engine.index(**EMBED_INDEX)
        seen: list[Any] = []
        if closing == "aclosing":
            async with aclosing(engine.stream("What is machine learning?")) as events:
                async for event in events:
                    seen.append(event)
                    break
        elif closing == "explicit_aclose":
            stream = engine.stream("What is machine learning?")
            seen.append(await stream.__anext__())
            await stream.aclose()  # type: ignore[attr-defined,unused-ignore]
        else:
            # stream() returns an EventStream, not an async generator: breaking
            # out releases the request at once, with no ResourceWarning on trio
            # (filterwarnings=error would turn one into a failure).
            async for event in engine.stream("What is machine learning?"):
                seen.append(event)
                break
        assert [type(e) for e in seen] == [AnalysisEvent]
        # The engine keeps serving; the stopped request either completed or
        # never took effect, and nothing is left behind.
        await engine.run_many(QUERIES[:4])
        await wait_until(lambda: not engine.statistics().in_flight)
        assert_idle(engine)
    without_abandoned(log)
    check_against_sync(engine, log, reference, index_calls=[EMBED_INDEX])


async def test_stream_timeout() -> None:
    embed = GatedEmbedder(hold=lambda text: text == "stuck")
    async with AsyncContextEngine() as engine:
        await engine.index(CORPUS, embed_fn=embed)
        with pytest.raises(TimeoutError):
            async for _ in engine.stream("stuck", timeout=0.05):
                pass
        try:
            with anyio.fail_after(5):
                events = [e async for e in engine.stream("What is ML?", timeout=5)]
            assert isinstance(events[-1], DoneEvent)
        finally:
            embed.gate.set()


# -- the blocking detector ----------------------------------------------------------------


async def test_blocking_the_event_loop_is_detected(
    anyio_backend_name: str, no_blocking_on_the_loop: BlockBuster | None
) -> None:
    """The conftest fixture turns a blocking call on the asyncio loop into an error.

    Trio has no asyncio loop for blockbuster to watch, so the fixture stays off
    there; a blocking call then goes unreported by it but still stalls the loop,
    which a task sleeping alongside sees (the heartbeat of the fault tests).
    """
    if anyio_backend_name == "asyncio":
        assert no_blocking_on_the_loop is not None
        with pytest.raises(BlockingError):
            time.sleep(0.001)
        return
    assert no_blocking_on_the_loop is None
    woke: list[float] = []

    async def heartbeat(*, task_status: anyio.abc.TaskStatus[None]) -> None:
        started = anyio.current_time()
        task_status.started()
        await anyio.sleep(0.001)
        woke.append(anyio.current_time() - started)

    async with anyio.create_task_group() as tg:
        await tg.start(heartbeat)  # returns once the heartbeat is sleeping
        time.sleep(0.05)  # blocks the trio loop: nothing else can run meanwhile
    # A 1 ms sleep took (nearly) the whole block: the loop could not run it sooner
    # (the margin allows for trio's clock and time.sleep's differing by a hair).
    assert woke and woke[0] >= 0.04, woke


async def test_a_blocking_component_on_the_loop_fails_its_request(anyio_backend_name: str) -> None:
    make = config_factory()
    trip = Tripwire()
    components = TrippingComponents(make, trip).components()
    async with AsyncContextEngine(make(), **components) as engine:
        force_inline(engine)
        await engine.index(**INDEX)
        trip.arm("rank", partial(time.sleep, 0.001))
        if anyio_backend_name == "asyncio":
            with pytest.raises(BlockingError) as caught:
                await engine.run("What is ML?")
            assert failed_stage(caught.value) == "rank"
        else:
            await engine.run("What is ML?")
        assert (await engine.run("What is DL?")).context
