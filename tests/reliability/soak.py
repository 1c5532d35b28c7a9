"""Soak driver: many requests through one async engine with random cancellations and timeouts.

Used by ``tests/reliability/test_soak.py`` (short form, in CI) and by
``bench/bench_soak.py`` (20,000 requests).  Everything is seeded, so a run
is reproducible up to scheduling.

Each client task takes the next request number and draws, from a generator
seeded with it: a query (a pool larger than the cache, 1 % of them making
the embedder raise and 0.5 % making it hang), a session id (from a pool
larger than ``max_sessions``, or none), an API (``run`` 70 %, ``stream`` 20 %,
``run_many`` 5 %, ``run_multi`` 5 %) and what happens to it (cancelled after
a random delay, a random ``timeout``, or neither; streams are sometimes left
early or read slowly).  Answers are set on some session turns, so history
enrichment and re-speculation happen too.

The embedder is a coroutine batch embedder (micro-batched queries) sleeping
0-2 ms per call.  After the run the engine must be back to its bounds: no
pending request, single-flight entry or taken slot, no task beyond those
running before the run, at most ``thread_limit`` more threads, no live
``EventStream``, the cache and the sessions within their configured sizes;
and resident memory may grow by less than 50 MB from the first to the last
quarter of the run.
"""

from __future__ import annotations

import gc
import itertools
import random
import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.to_thread
import numpy as np
from support.corpus import CORPUS, QUERIES, sourced
from support.embedding import hashed_embedding

from zerda_async import AsyncContextEngine, ContextEngineConfig, ContextResult
from zerda_async.engine import EventStream
from zerda_async.errors import failed_stage
from zerda_async.events import DoneEvent, ErrorEvent

from .support import check_result

__all__ = ["SoakReport", "SoakSettings", "problems", "rss_bytes", "run_soak"]

MB = 1 << 20
RSS_GROWTH_LIMIT = 50 * MB

_EN = ["model", "data", "retrieval", "vector", "ranking", "cache", "budget", "token", "query"]
_AR = ["نموذج", "بيانات", "استرجاع", "ترتيب", "ذاكرة", "ميزانية", "سؤال", "تعلم", "نص"]


@dataclass
class SoakSettings:
    """What the soak runs (defaults: the CI short form)."""

    requests: int = 5_000
    clients: int = 48
    seed: int = 20_240_601
    cancel_rate: float = 0.08
    timeout_rate: float = 0.08
    raise_rate: float = 0.01
    hang_rate: float = 0.005
    session_pool: int = 1_000
    max_sessions: int = 200
    max_in_flight: int = 32
    cache_size: int = 128
    cache_ttl: int = 1  # entries expire during the run, so expired entries get read too
    thread_limit: int = 2
    extra_docs: int = 300
    query_pool: int = 600


@dataclass
class SoakReport:
    """Counts, memory and what was left behind after a soak run."""

    requests: int = 0
    ok: int = 0
    cancelled: int = 0
    timeouts: int = 0
    injected_errors: int = 0
    streams: int = 0
    streams_left_early: int = 0
    unexpected: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0
    rss_first_quarter: int = 0
    rss_last_quarter: int = 0
    tasks_before: int = 0
    tasks_after: int = 0
    threads_before: int = 0
    threads_after: int = 0
    thread_limit: int = 0
    pending: int = 0
    single_flight: int = 0
    free_slots: int = 0
    max_in_flight: int = 0
    cache_size: int = 0
    cache_max: int = 0
    sessions: int = 0
    max_sessions: int = 0
    live_streams: int = 0
    embedder_calls: int = 0

    @property
    def rss_growth(self) -> int:
        return self.rss_last_quarter - self.rss_first_quarter


def problems(report: SoakReport) -> list[str]:
    """Every bound the run broke (empty when the engine held up)."""
    out = [f"unexpected outcome: {u}" for u in report.unexpected[:20]]
    done = report.ok + report.cancelled + report.timeouts + report.injected_errors
    if done != report.requests:
        out.append(f"{report.requests - done} requests have no recorded outcome")
    if report.pending or report.single_flight:
        out.append(f"left over: {report.pending} pending, {report.single_flight} single-flight")
    if report.free_slots != report.max_in_flight:
        out.append(f"slots: {report.free_slots} of {report.max_in_flight} free")
    if report.tasks_after > report.tasks_before:
        out.append(f"tasks: {report.tasks_before} before, {report.tasks_after} after")
    if report.threads_after > report.threads_before + report.thread_limit:
        out.append(
            f"threads: {report.threads_before} before, {report.threads_after} after"
            f" (limit {report.thread_limit})"
        )
    if report.live_streams:
        out.append(f"{report.live_streams} event streams still alive")
    if report.cache_size > report.cache_max:
        out.append(f"cache: {report.cache_size} entries > max_size {report.cache_max}")
    if report.sessions > report.max_sessions:
        out.append(f"sessions: {report.sessions} > max_sessions {report.max_sessions}")
    if report.rss_first_quarter and report.rss_growth >= RSS_GROWTH_LIMIT:
        out.append(f"resident memory grew by {report.rss_growth / MB:.1f} MB")
    return out


def rss_bytes() -> int:
    """Resident set size of this process (Linux ``/proc``; 0 elsewhere)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as fh:
            pages = int(fh.read().split()[1])
    except (OSError, ValueError, IndexError):
        return 0
    import os

    return pages * os.sysconf("SC_PAGE_SIZE")


class _Embedder:
    """Coroutine batch embedder: 0-2 ms per call; raises on "poison", hangs on "hang"."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.hung = 0

    async def __call__(self, texts: list[Any]) -> Any:
        await anyio.sleep(self.rng.uniform(0, 0.002))
        for text in texts:
            if "poison" in str(text):
                raise ConnectionError("embedding service rejected the text")
            if "hang" in str(text):
                self.hung += 1
                try:
                    await anyio.sleep_forever()
                finally:
                    self.hung -= 1
        return np.stack([hashed_embedding(t) for t in texts])


def _corpus(settings: SoakSettings) -> list[Any]:
    rng = random.Random(settings.seed)
    docs = list(CORPUS)
    for i in range(settings.extra_docs):
        words = _AR if i % 3 == 0 else _EN
        text = " ".join(rng.choice(words) for _ in range(rng.randint(8, 40)))
        docs.append(sourced(f"x{i}", f"Document {i}: {text}.", f"src{i % 11}", lang="en"))
    return docs


def _queries(settings: SoakSettings) -> list[str]:
    rng = random.Random(settings.seed + 1)
    pool = list(QUERIES)
    while len(pool) < settings.query_pool:
        words = _AR if len(pool) % 3 == 0 else _EN
        pool.append(" ".join(rng.choice(words) for _ in range(rng.randint(2, 7))) + "?")
    return pool


async def run_soak(settings: SoakSettings) -> SoakReport:
    """Run the soak on the current event loop and report (see the module docstring)."""
    report = SoakReport(requests=settings.requests, thread_limit=settings.thread_limit)
    config = ContextEngineConfig()
    config.cache.max_size = settings.cache_size
    config.cache.ttl_seconds = settings.cache_ttl
    corpus = _corpus(settings)
    ids = {id(c) for c in corpus}
    queries = _queries(settings)
    embedder = _Embedder(settings.seed)
    streams: weakref.WeakSet[EventStream] = weakref.WeakSet()
    counter = itertools.count()
    completed = 0
    samples: list[tuple[int, int]] = []
    n = settings.requests

    def classify(outcome: Any) -> None:
        if isinstance(outcome, (ContextResult, str)):
            report.ok += 1
            if isinstance(outcome, ContextResult):
                check_result(outcome, corpus)
                assert all(id(sc.chunk) in ids for sc in outcome.chunks_used)
        elif isinstance(outcome, TimeoutError) and failed_stage(outcome) is None:
            report.timeouts += 1
        elif isinstance(outcome, ConnectionError) and failed_stage(outcome) == "retrieval":
            report.injected_errors += 1
        else:
            report.unexpected.append(repr(outcome)[:200])

    async def one(engine: AsyncContextEngine, i: int) -> None:
        nonlocal completed
        rng = random.Random(settings.seed * 1_000_003 + i)
        query = rng.choice(queries)
        roll = rng.random()
        hang = roll < settings.hang_rate
        if hang:
            query = f"hang {query}"
        elif roll < settings.hang_rate + settings.raise_rate:
            query = f"poison {query}"
        session = None if rng.random() < 0.3 else f"s{rng.randrange(settings.session_pool)}"
        api = rng.choices(["run", "stream", "many", "multi"], [70, 20, 5, 5])[0]
        fate = rng.random()
        timeout: float | None = None
        cancel_after: float | None = None
        if hang or fate < settings.timeout_rate:
            timeout = rng.uniform(0.0005, 0.02)
        elif fate < settings.timeout_rate + settings.cancel_rate:
            cancel_after = rng.uniform(0, 0.005)
        outcome: Any = _NONE
        try:
            with anyio.CancelScope() as scope:
                if cancel_after is not None:
                    scope.deadline = anyio.current_time() + cancel_after
                outcome = await _call(engine, api, query, session, timeout, rng, streams, report)
        except Exception as exc:
            outcome = exc
        if outcome is _LEFT:
            report.ok += 1  # the consumer chose to leave the stream: a normal outcome
        elif outcome is not _NONE:
            classify(outcome)
        elif scope.cancelled_caught:
            report.cancelled += 1
        else:
            report.unexpected.append(f"no outcome for {api} {query!r}")
        completed += 1
        if session is not None and rng.random() < 0.3:
            history = engine.get_history(session)
            if history is not None and history.turns:
                history.turns[-1].answer = f"an answer to {query[:20]}"

    async def client(engine: AsyncContextEngine) -> None:
        while (i := next(counter)) < n:
            await one(engine, i)

    async def monitor(stop: anyio.Event) -> None:
        while not stop.is_set():
            samples.append((completed, await anyio.to_thread.run_sync(rss_bytes)))
            with anyio.move_on_after(0.2):
                await stop.wait()

    started = time.perf_counter()
    async with AsyncContextEngine(
        config,
        max_in_flight=settings.max_in_flight,
        max_sessions=settings.max_sessions,
        thread_limit=settings.thread_limit,
    ) as engine:
        await engine.index(corpus, batch_embed_fn=embedder)
        gc.collect()
        report.tasks_before = len(anyio.get_running_tasks())
        report.threads_before = threading.active_count()
        stop = anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(monitor, stop)
            async with anyio.create_task_group() as clients:
                for _ in range(settings.clients):
                    clients.start_soon(client, engine)
            stop.set()
        samples.append((completed, await anyio.to_thread.run_sync(rss_bytes)))
        report.elapsed_s = time.perf_counter() - started
        # Abandoned requests leave once the commit task skips them.
        with anyio.move_on_after(10):
            while engine.statistics().in_flight or embedder.hung:
                await anyio.sleep(0.01)
        gc.collect()
        await anyio.sleep(0.05)
        runner = engine._runner
        report.tasks_after = len(anyio.get_running_tasks())
        report.threads_after = threading.active_count()
        report.pending = len(runner._pending)
        report.single_flight = len(runner._by_cache_key)
        report.free_slots = int(runner.slots.value)
        report.max_in_flight = settings.max_in_flight
        stats = engine.get_performance_report()["cache"]
        report.cache_size, report.cache_max = stats["size"], stats["max_size"]
        report.sessions, report.max_sessions = engine.statistics().sessions, settings.max_sessions
        report.live_streams = len(streams)
        report.embedder_calls = engine.embedder_calls
    first = [rss for done, rss in samples if done <= n // 4]
    last = [rss for done, rss in samples if done >= n - n // 4]
    report.rss_first_quarter = max(first, default=0)
    report.rss_last_quarter = max(last, default=0)
    return report


_NONE: Any = object()
_LEFT: Any = object()


async def _call(
    engine: AsyncContextEngine,
    api: str,
    query: str,
    session: str | None,
    timeout: float | None,
    rng: random.Random,
    streams: weakref.WeakSet[EventStream],
    report: SoakReport,
) -> Any:
    """One request through ``api``; returns its outcome (a result, an exception or _LEFT)."""
    if api == "run":
        return await engine.run(query, session_id=session, timeout=timeout)
    if api == "stream":
        report.streams += 1
        stream = engine.stream(query, session_id=session, timeout=timeout)
        streams.add(stream)
        leave_after = rng.choice([None, None, None, 1, 3])
        slow = rng.random() < 0.2
        outcome: Any = _NONE
        seen = 0
        async for event in stream:
            seen += 1
            if isinstance(event, DoneEvent):
                outcome = event.result
            elif isinstance(event, ErrorEvent):
                outcome = _error_of(event)
            if outcome is _NONE and leave_after is not None and seen >= leave_after:
                report.streams_left_early += 1
                return _LEFT  # dropped without aclose(): EventStream releases it
            if slow:
                await anyio.sleep(0.001)
        if outcome is _NONE:
            return RuntimeError("the stream ended without a done or error event")
        return outcome
    if api == "many":
        batch = [query, *rng.sample(["What is BM25?", "ما هو التعلم الآلي؟", "Why cache?"], 2)]
        outcomes = await engine.run_many(
            batch, session_id=session, timeout=timeout, return_exceptions=True
        )
        bad = [o for o in outcomes if isinstance(o, BaseException)]
        return bad[0] if bad else outcomes[0]
    return await engine.run_multi(
        [query, "What is retrieval augmented generation?"],
        global_budget=rng.choice([None, 300, 1500]),
        session_id=session,
        timeout=timeout,
    )


def _error_of(event: Any) -> BaseException:
    """The exception an ``error`` event stands for (for classification)."""
    if event.error_type == "ConnectionError":
        exc: BaseException = ConnectionError(event.message)
        exc.add_note(f"zerda-async: raised in pipeline stage {event.stage!r}")
        return exc
    return RuntimeError(f"{event.error_type} in {event.stage}: {event.message}")
