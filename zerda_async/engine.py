"""``AsyncContextEngine``: the public async API of zerda-async.

Use it as an async context manager::

    async with AsyncContextEngine(config) as engine:
        await engine.index(chunks, embed_fn=embed)
        result = await engine.run("What is RAG?")

Every request goes through the one stage list of :mod:`zerda_async.pipeline`
(the same objects the sync facade runs), executed by the async runner.
Concurrent requests are *serializable*: each returns exactly what running the
requests one after another, in submission order, would return.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, Self

import anyio
import anyio.abc
import anyio.to_thread

from .core.config import ContextEngineConfig, LengthCounter
from .core.models import ContextResult, ConversationHistory, SourceQuality
from .core.retrieval import HybridRetriever, KeywordRetriever, MetadataRetriever, VectorRetriever
from .embedding import Embedder
from .errors import EngineClosedError
from .events import (
    AnalysisEvent,
    ComposedEvent,
    DoneEvent,
    ErrorEvent,
    FilteredEvent,
    GuardedEvent,
    RankedEvent,
    RetrievedEvent,
    SourceRef,
    StageEvent,
)
from .pipeline.async_runner import FINISHED, AsyncRunner, Request, RunnerSettings
from .pipeline.job import Job, RunOptions
from .pipeline.operations import join_multi_query, plan_multi_query
from .pipeline.state import EngineState
from .pipeline.sync_runner import failed_stage

__all__ = ["AsyncContextEngine"]

EmbedFn = Callable[[Any], Any]
BatchEmbedFn = Callable[[list[Any]], Any]


class AsyncContextEngine:
    """Async, streaming, concurrent context engine with the documented behaviour.

    Constructor parameters mirror the documented ``ContextEngine`` (``None``
    selects the default component).  ``max_in_flight`` bounds the requests
    inside the pipeline; further callers wait (backpressure).  The remaining
    keywords tune the runner: ``workers`` speculation tasks, ``thread_limit``
    worker threads for CPU-bound stages, and the query-embedding micro-batch
    ``embed_batch_window`` (seconds) and ``embed_batch_size``.
    """

    def __init__(
        self,
        config: ContextEngineConfig | None = None,
        *,
        query_analyzer: Any = None,
        retriever: Any = None,
        chunk_filter: Any = None,
        ranker: Any = None,
        composer: Any = None,
        guard: Any = None,
        budget_allocator: Any = None,
        length_counter: LengthCounter | None = None,
        max_in_flight: int = 64,
        workers: int = 2,
        thread_limit: int = 2,
        embed_batch_window: float = 0.002,
        embed_batch_size: int = 64,
    ) -> None:
        self._state = EngineState(
            config,
            query_analyzer,
            retriever,
            chunk_filter,
            ranker,
            composer,
            guard,
            budget_allocator,
            length_counter,
            owner_name="ContextEngine",
        )
        self.config = self._state.config
        self._runner = AsyncRunner(
            self._state,
            RunnerSettings(
                max_in_flight=max_in_flight,
                workers=workers,
                thread_limit=thread_limit,
                embed_batch_window=embed_batch_window,
                embed_batch_size=embed_batch_size,
            ),
        )
        self._tg: anyio.abc.TaskGroup | None = None
        self._closed = False

    # -- lifecycle ---------------------------------------------------------------

    async def __aenter__(self) -> Self:
        if self._closed or self._tg is not None:
            raise EngineClosedError("an AsyncContextEngine can be entered only once")
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        try:
            await self._tg.start(self._runner.serve)
        except BaseException:
            self._tg.cancel_scope.cancel()
            await self._tg.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        if exc_info[0] is not None:
            self._runner.cancel()
        await self.aclose()
        return None

    async def aclose(self) -> None:
        """Finish in-flight requests, stop the stage tasks; later calls raise."""
        if self._closed:
            return
        self._closed = True
        await self._runner.close()
        tg, self._tg = self._tg, None
        if tg is not None:
            await tg.__aexit__(None, None, None)

    def _check_open(self) -> None:
        if self._closed or self._tg is None or not self._runner.running:
            raise EngineClosedError(
                "AsyncContextEngine is not running: use 'async with AsyncContextEngine(...)'"
                " and do not use it after aclose()"
            )

    # -- indexing ----------------------------------------------------------------

    async def index(
        self,
        chunks: Sequence[Any] | None,
        embed_fn: EmbedFn | None = None,
        vector_store_adapter: Any = None,
        source_quality_map: Mapping[str, SourceQuality] | None = None,
        *,
        batch_embed_fn: BatchEmbedFn | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> Self:
        """Index ``chunks`` (documented semantics: only the first index installs a retriever).

        ``embed_fn`` and ``batch_embed_fn`` may be plain or coroutine functions;
        coroutine embedders are awaited on the event loop.  When a batch form is
        given, concurrent queries' embeddings are micro-batched into one call.
        ``progress(done, total)`` is called while the corpus is embedded.
        The new index takes effect after every request submitted earlier.
        """
        self._check_open()
        if not chunks:
            return self
        chunk_list = list(chunks)
        state = self._state
        embedder = None
        if (embed_fn or batch_embed_fn) and vector_store_adapter is None:
            embedder = Embedder(embed_fn, batch_embed_fn, limiter=self._runner.limiter)
        try:
            retrievers = await self._build_retrievers(
                chunk_list, embedder, vector_store_adapter, progress
            )
        except BaseException:
            # The documented engine replaces the map before embedding can fail.
            await self._runner.barrier(
                lambda: setattr(state, "source_quality_map", source_quality_map or {})
            )
            raise

        def install() -> None:
            state.source_quality_map = source_quality_map or {}
            if state.retriever is None:
                state.retriever = retrievers
                state.corpus_version += 1
                self._runner.corpus_size = len(chunk_list)
                ahead = embedder is not None and (embedder.is_async or embedder.batches)
                self._runner.embedder = embedder if ahead else None

        await self._runner.barrier(install)
        return self

    async def _build_retrievers(
        self,
        chunks: list[Any],
        embedder: Embedder | None,
        adapter: Any,
        progress: Callable[[int, int], None] | None,
    ) -> HybridRetriever:
        config = self._state.config
        limiter = self._runner.limiter
        vec_ret = VectorRetriever(config, vector_store_adapter=adapter)
        if embedder is not None and (embedder.is_async or embedder.batches):
            texts = [_chunk_text(c) for c in chunks]
            matrix = await embedder.embed_corpus(texts, progress)
            query_fn = None if embedder.is_async else embedder.embed_fn
            await anyio.to_thread.run_sync(
                lambda: vec_ret.index_vectors(chunks, matrix, query_fn), limiter=limiter
            )
        elif embedder is not None:
            sync_embed = embedder.embed_fn
            await anyio.to_thread.run_sync(
                lambda: vec_ret.index_chunks(chunks, sync_embed), limiter=limiter
            )

        def build_lexical() -> tuple[KeywordRetriever, MetadataRetriever]:
            return (
                KeywordRetriever(config, chunks=chunks),
                MetadataRetriever(config, chunks=chunks),
            )

        kw_ret, meta_ret = await anyio.to_thread.run_sync(build_lexical, limiter=limiter)
        return HybridRetriever(
            config=config,
            vector_retriever=vec_ret,
            keyword_retriever=kw_ret,
            metadata_retriever=meta_ret,
        )

    # -- running -----------------------------------------------------------------

    async def run(
        self,
        query: str,
        metadata_filters: dict[str, Any] | None = None,
        max_chunks: int | None = None,
        override_budget: int | None = None,
        use_history: bool = True,
        record_turn: bool = True,
        *,
        session_id: str | None = None,
        timeout: float | None = None,
    ) -> ContextResult:
        """Run the pipeline for ``query``; raises ``TimeoutError`` after ``timeout`` seconds.

        ``session_id`` selects a conversation history of its own (``None`` uses
        the documented single history).  A cancelled or timed-out request
        changes no shared state.
        """
        self._check_open()
        job = _make_job(
            query,
            metadata_filters,
            max_chunks,
            override_budget,
            use_history,
            record_turn,
            session_id,
        )
        with anyio.fail_after(timeout):
            request = await self._runner.submit(job)
            try:
                await request.done.wait()
            except BaseException:
                self._runner.abandon(request)
                raise
        return request.result()

    async def stream(
        self,
        query: str,
        metadata_filters: dict[str, Any] | None = None,
        max_chunks: int | None = None,
        override_budget: int | None = None,
        use_history: bool = True,
        record_turn: bool = True,
        *,
        session_id: str | None = None,
        timeout: float | None = None,
    ) -> AsyncIterator[StageEvent]:
        """Yield one typed event per stage, then ``done`` (or ``error``); see :mod:`.events`."""
        self._check_open()
        job = _make_job(
            query,
            metadata_filters,
            max_chunks,
            override_budget,
            use_history,
            record_turn,
            session_id,
        )
        # At most nine events per request: this buffer never fills, so a slow
        # consumer never stalls the commit task.
        send, recv = anyio.create_memory_object_stream[StageEvent](16)
        deadline = math.inf if timeout is None else anyio.current_time() + timeout

        def sink(request: Request, stage: str, duration_ms: float) -> None:
            if stage == FINISHED:
                final = _final_event(request)
                if final is not None:
                    send.send_nowait(final)
                send.close()
            else:
                for event in _events_for(request, stage, duration_ms):
                    send.send_nowait(event)

        request: Request | None = None
        try:
            with anyio.fail_after(_remaining(deadline)):
                request = await self._runner.submit(job, sink)
            with recv:
                while True:
                    with anyio.fail_after(_remaining(deadline)):
                        try:
                            event = await recv.receive()
                        except anyio.EndOfStream:
                            return
                    yield event
        finally:
            if request is not None and not request.done.is_set():
                self._runner.abandon(request)
            send.close()

    async def run_many(
        self,
        queries: Sequence[str],
        *,
        concurrency: int | None = None,
        return_exceptions: bool = False,
        **run_kwargs: Any,
    ) -> list[Any]:
        """Run ``queries`` concurrently (at most ``concurrency`` at once); results in order.

        The results equal running the queries one by one in list order.  When
        requests fail, the first failure (in list order) is raised after all
        have finished, unless ``return_exceptions`` puts them in the list.
        """
        self._check_open()
        timeout = run_kwargs.pop("timeout", None)
        session_id = run_kwargs.pop("session_id", None)
        limit = anyio.Semaphore(concurrency or len(queries) or 1)
        requests: list[Request] = []
        with anyio.fail_after(timeout):
            try:
                async with anyio.create_task_group() as tg:
                    for query in queries:
                        await limit.acquire()
                        job = _make_job_kwargs(query, session_id, run_kwargs)
                        request = await self._runner.submit(job)
                        requests.append(request)
                        tg.start_soon(_await_and_release, request, limit)
            except BaseException:
                for request in requests:
                    if not request.done.is_set():
                        self._runner.abandon(request)
                raise
        if return_exceptions:
            return [
                request.outcome if isinstance(request.outcome, BaseException) else request.result()
                for request in requests
            ]
        return [request.result() for request in requests]

    async def run_multi(
        self,
        queries: Sequence[str],
        global_budget: int | None = None,
        use_weighted: bool = True,
        **kwargs: Any,
    ) -> str:
        """Documented multi-query run: split the budget, run each query, join the sections."""
        self._check_open()
        if not queries:
            return ""
        plan = plan_multi_query(self._state, queries, global_budget, use_weighted)
        for reserved in ("override_budget", "record_turn"):
            if reserved in kwargs:
                raise TypeError(f"run() got multiple values for keyword argument '{reserved}'")
        timeout = kwargs.pop("timeout", None)
        with anyio.fail_after(timeout):
            requests = []
            try:
                for query, budget in zip(plan.queries, plan.budgets, strict=True):
                    session_id = kwargs.get("session_id")
                    job_kwargs = {k: v for k, v in kwargs.items() if k != "session_id"}
                    job = _make_job_kwargs(
                        query,
                        session_id,
                        {**job_kwargs, "override_budget": budget, "record_turn": False},
                    )
                    requests.append(await self._runner.submit(job))
                for request in requests:
                    await request.done.wait()
            except BaseException:
                for request in requests:
                    self._runner.abandon(request)
                raise
        contexts = [request.result().context for request in requests]
        return join_multi_query(self._state, plan, contexts)

    # -- shared state --------------------------------------------------------------

    def get_performance_report(self) -> dict[str, Any]:
        """Adaptive statistics plus cache statistics (as the documented engine reports)."""
        report = self._state.adaptive.get_performance_report()
        if self._state.cache is not None:
            report["cache"] = self._state.cache.stats
        return report

    def get_history(self, session_id: str | None = None) -> ConversationHistory | None:
        """The conversation of ``session_id`` (``None``: the documented single history)."""
        if session_id is None:
            return self._state.history  # type: ignore[no-any-return]
        return self._state.sessions.get(session_id)

    def set_conversation(self, history: Any, session_id: str | None = None) -> None:
        """Install ``history`` as the default conversation or as ``session_id``'s."""
        self._state.set_history(history, session_id)

    async def clear_cache(self) -> None:
        """Empty the context cache after every request submitted before this call."""
        self._check_open()
        cache = self._state.cache
        if cache is not None:
            await self._runner.barrier(cache.clear)

    @property
    def embedder_calls(self) -> int:
        """How many times the query/corpus embedder was called by this engine."""
        embedder = self._runner.embedder
        return 0 if embedder is None else embedder.calls


# -- helpers -------------------------------------------------------------------------


def _make_job(
    query: Any,
    metadata_filters: dict[str, Any] | None,
    max_chunks: int | None,
    override_budget: int | None,
    use_history: bool,
    record_turn: bool,
    session_id: str | None,
) -> Job:
    return Job(
        query=query,
        options=RunOptions(
            metadata_filters=metadata_filters,
            max_chunks=max_chunks,
            override_budget=override_budget,
            use_history=use_history,
            record_turn=record_turn,
            session_id=session_id,
        ),
    )


_RUN_KEYWORDS = ("metadata_filters", "max_chunks", "override_budget", "use_history", "record_turn")


def _make_job_kwargs(query: Any, session_id: str | None, kwargs: Mapping[str, Any]) -> Job:
    unknown = set(kwargs) - set(_RUN_KEYWORDS)
    if unknown:
        raise TypeError(f"run() got an unexpected keyword argument {sorted(unknown)[0]!r}")
    return _make_job(
        query,
        kwargs.get("metadata_filters"),
        kwargs.get("max_chunks"),
        kwargs.get("override_budget"),
        kwargs.get("use_history", True),
        kwargs.get("record_turn", True),
        session_id,
    )


async def _await_and_release(request: Request, limit: anyio.Semaphore) -> None:
    try:
        await request.done.wait()
    finally:
        limit.release()


def _remaining(deadline: float) -> float | None:
    if deadline == math.inf:
        return None
    return max(0.0, deadline - anyio.current_time())


def _events_for(request: Request, stage: str, duration_ms: float) -> list[StageEvent]:
    job = request.job
    rid = job.request_id
    if stage == "analysis" and job.analysis is not None:
        a = job.analysis
        return [
            AnalysisEvent(
                request_id=rid,
                duration_ms=duration_ms,
                intent=a.intent.value,
                complexity=a.complexity.value,
                language=a.language,
                keywords=list(a.keywords),
                budget=a.context_budget,
            )
        ]
    if stage == "retrieval":
        return [RetrievedEvent(request_id=rid, duration_ms=duration_ms, count=len(job.retrieved))]
    if stage == "filter":
        return [FilteredEvent(request_id=rid, duration_ms=duration_ms, count=len(job.filtered))]
    if stage == "rank":
        sources = [
            SourceRef(doc_id=sc.doc_id, source=sc.source, score=sc.composite_score)
            for sc in job.ranked
        ]
        return [
            RankedEvent(
                request_id=rid, duration_ms=duration_ms, count=len(job.ranked), sources=sources
            )
        ]
    if stage == "compose":
        return [
            ComposedEvent(
                request_id=rid,
                duration_ms=duration_ms,
                context_length=len(job.context),
                budget=job.budget,
            )
        ]
    if stage == "guard":
        return [
            GuardedEvent(
                request_id=rid,
                duration_ms=duration_ms,
                passed=job.guard_passed,
                warnings=list(job.guard_warnings),
            )
        ]
    return []


def _final_event(request: Request) -> StageEvent | None:
    rid = request.job.request_id
    outcome = request.outcome
    if isinstance(outcome, ContextResult):
        return DoneEvent(request_id=rid, result=outcome)
    if isinstance(outcome, BaseException):
        return ErrorEvent(
            request_id=rid,
            stage=failed_stage(outcome) or "unknown",
            error_type=type(outcome).__name__,
            message=str(outcome),
        )
    return None


def _chunk_text(chunk: Any) -> Any:
    text = getattr(chunk, "text", None)
    if text:
        return text
    return getattr(chunk, "page_content", "")
