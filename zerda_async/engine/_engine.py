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

import os
from collections.abc import Sequence
from typing import Any, Self, Unpack

import anyio
import anyio.abc
import anyio.to_thread
import msgspec

from zerda_async.core.config import ContextEngineConfig
from zerda_async.core.index import VectorDType
from zerda_async.core.models import ContextResult
from zerda_async.core.retrieval.vector import BatchEmbedFn, EmbedFn
from zerda_async.embedders import Embedder
from zerda_async.engine._calls import run_jobs, run_one, submit_all
from zerda_async.engine._event_stream import EventStream
from zerda_async.engine._index_api import IndexMethods
from zerda_async.engine._state_api import StateMethods
from zerda_async.engine._statistics import (
    OFFLOAD_MODES,
    EngineStatistics,
    Offload,
    check_arguments,
)
from zerda_async.errors import EngineClosedError
from zerda_async.indexing import IndexLifecycle, load_index
from zerda_async.pipeline import (
    AsyncRunner,
    Components,
    EngineState,
    Job,
    RunnerSettings,
    RunOptions,
    join_multi_query,
    make_job,
    plan_multi_query,
)
from zerda_async.stores import Stores

__all__ = ["AsyncContextEngine", "EngineStatistics", "Offload"]


class AsyncContextEngine(IndexMethods, StateMethods):
    """Async, streaming, concurrent context engine with the documented behaviour.

    The components of the documented ``ContextEngine`` (``query_analyzer``, ``retriever``,
    ``chunk_filter``, ``ranker``, ``composer``, ``guard``, ``budget_allocator``,
    ``length_counter``; see :class:`~zerda_async.pipeline.Components`) are keyword arguments
    here; ``None`` selects the documented default; ``reranker`` (not documented) reorders
    the first ranked chunks (docs/api.md, "Rerankers").  ``max_in_flight`` bounds the
    requests inside the pipeline; further callers wait (backpressure).  The remaining
    keywords tune the runner: ``workers`` speculation tasks, ``thread_limit`` worker
    threads for CPU-bound stages (and a plain reranker), and the query-embedding
    micro-batch ``embed_batch_window`` (seconds) and ``embed_batch_size``.

    ``vector_dtype`` stores the in-memory embedding matrix as ``"float64"`` (default:
    the documented scores exactly) or ``"float32"`` (half the memory and scan time;
    cosines then differ by about 1e-8, which can reorder near-ties).

    ``config`` is checked with :meth:`ContextEngineConfig.validate` (a
    ``ConfigError`` naming the field for an error: an unknown template, a
    negative or NaN weight, a budget that is not positive; a large weight is
    valid, weights being relative), so every configuration ``sync_api`` runs sensibly
    gives the same result here; ``validate=False`` accepts anything the documented
    package accepts (its golden cases replay that way).

    ``max_sessions`` bounds the per-``session_id`` conversations kept; beyond it the
    least recently run one is dropped (``None``: keep every session).  The context cache
    never holds more than ``config.cache.max_size`` entries (the documented cache can
    exceed it once entries expire; :class:`~zerda_async.core.cache.BoundedContextCache`).

    ``offload`` places the speculative stages: ``"auto"`` (default) in worker threads when
    their measured CPU cost outweighs the thread hop, or whenever they call caller code
    that may block; ``"threads"`` always; ``"inline"`` never (on the event loop).  In
    ``"auto"``, groups whose measured CPU cost is at most ``offload_threshold_ms`` run inline
    (``None``: two GIL switch intervals, 10 ms by default; with other requests
    in flight a group over 2 ms goes to a thread unless the loop is paced;
    see :func:`zerda_async.pipeline.default_threshold_ms` and
    :data:`zerda_async.runtime.CROWDED_THRESHOLD_MS`).  A threshold given here
    applies in both cases.  ``loop_pacing`` (asyncio only): a group over 2 ms
    runs in pieces, one per event-loop iteration (in a thread instead while
    others are in flight and a core is free), and stays inline while its
    largest piece fits the budget, so a due timer waits for about one piece
    (docs/performance.md); ``None`` follows the process-wide switch
    (``zerda_async.runtime.set_loop_pacing``, ``ZERDA_LOOP_PACING``; on by
    default), ``True`` / ``False`` pins it for this engine.
    ``cheap_embedder_on_loop=True`` runs a plain query embedder on the loop once 16 calls
    in a row cost under 0.25 ms, less than the thread hop (``runtime.CallPolicy``); off
    (default) it stays in threads: a cheap one that then blocks (a cache before a network
    call, a lock held by an indexing batch) would stall the loop beyond any timeout.

    ``stores`` (a :class:`~zerda_async.stores.Stores` record) moves the index,
    the sessions, the context cache and the adaptive statistics into shared
    stores, so that several engines — replicas in other processes or on other
    machines — serve as one; see docs/stores.md.  Left ``None`` (or any field of
    it), everything stays in this process.  The engine does not close the stores.
    """

    def __init__(
        self,
        config: ContextEngineConfig | None = None,
        *,
        max_in_flight: int = 64,
        workers: int = 2,
        thread_limit: int = 2,
        embed_batch_window: float = 0.002,
        embed_batch_size: int = 64,
        vector_dtype: VectorDType = "float64",
        max_sessions: int | None = 10_000,
        offload: Offload = "auto",
        stores: Stores | None = None,
        validate: bool = True,
        offload_threshold_ms: float | None = None,
        loop_pacing: bool | None = None,
        cheap_embedder_on_loop: bool = False,
        **components: Unpack[Components],
    ) -> None:
        check_arguments(offload, vector_dtype, components)
        if config is not None and validate:
            # The async engine owns its configuration: an error (an unknown
            # template, a negative weight) fails here, naming the field,
            # instead of silently changing every context.  sync_api keeps the
            # documented acceptance of anything.
            config.validate()
        self._state = EngineState(
            config,
            components,
            owner_name="ContextEngine",
            max_sessions=max_sessions,
            # Reliability: never more than cache.max_size contexts, even after
            # entries expire (RELIABILITY.md); identical until then.
            bounded_cache=True,
        )
        # Private sessions: keyed by the effective query, a hit is a turn (docs/sessions.md).
        self._state.private_cache = True
        self.config = self._state.config
        self._runner = AsyncRunner(
            self._state,
            RunnerSettings(
                max_in_flight=max_in_flight,
                workers=workers,
                thread_limit=thread_limit,
                embed_batch_window=embed_batch_window,
                embed_batch_size=embed_batch_size,
                offload_threshold_ms=offload_threshold_ms,
                loop_pacing=loop_pacing,
                cheap_embedder_on_loop=cheap_embedder_on_loop,
            ),
        )
        self._runner.policy.forced = OFFLOAD_MODES[offload]
        self._state.thread_limiter = self._runner.limiter
        self._use_stores(stores or Stores())
        self._indexes = IndexLifecycle(self._state, self._runner, vector_dtype)
        self._tg: anyio.abc.TaskGroup | None = None
        self._closed = False

    def _use_stores(self, stores: Stores) -> None:
        state = self._state
        state.stores = stores
        if stores.index is None:
            return
        # Retrieval searches the store: there is no in-process index to wait for.
        state.source_quality_map = {}
        embed = stores.embedder
        if embed is not None:
            state.query_embedder = Embedder(
                embed, getattr(embed, "embed_batch", None), limiter=self._runner.limiter
            )

    @property
    def stores(self) -> Stores:
        """The shared stores this engine uses (all ``None``: everything in this process)."""
        return self._state.stores

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
        # The task group is left here, by the task that entered it (anyio
        # requires that); aclose() itself may run in any task.
        tg, self._tg = self._tg, None
        if tg is not None:
            await tg.__aexit__(None, None, None)
        return None

    async def aclose(self) -> None:
        """Finish in-flight requests and stop the stage tasks; later calls raise.

        May be awaited from any task (a shutdown handler, say); the
        ``async with`` block still owns the engine and leaves it on exit.
        """
        if self._closed:
            return
        self._closed = True
        if self._tg is None:
            return
        await self._runner.close()
        await self._runner.stopped.wait()

    def _check_open(self) -> None:
        if self._closed or self._tg is None or not self._runner.running:
            raise EngineClosedError(
                "AsyncContextEngine is not running: use 'async with AsyncContextEngine(...)'"
                " and do not use it after aclose()"
            )

    @classmethod
    async def load(
        cls,
        path: str | os.PathLike[str],
        embed_fn: EmbedFn | None = None,
        config: ContextEngineConfig | None = None,
        *,
        batch_embed_fn: BatchEmbedFn | None = None,
        **engine_kwargs: Any,
    ) -> AsyncContextEngine:
        """An engine over the index saved in ``path``, ready for ``async with``.

        ``embed_fn`` / ``batch_embed_fn`` embed queries (and chunks added later); they
        must be the embedder the index was built with.  Without one, vector search
        returns nothing.  ``config=None`` uses the configuration saved with the index.
        The vector dtype is the saved one unless ``vector_dtype`` is given.  Arrays are
        memory-mapped.  Raises :class:`~zerda_async.errors.IndexFormatError` naming the
        file for a missing, truncated, corrupt, foreign or newer-format index.
        """
        saved = await anyio.to_thread.run_sync(load_index, path)
        dtype: VectorDType = engine_kwargs.pop("vector_dtype", None) or (
            "float32" if saved.manifest.dtype == "float32" else "float64"
        )
        engine = cls(
            saved.config if config is None else config, vector_dtype=dtype, **engine_kwargs
        )
        await engine._indexes.restore(saved, embed_fn, batch_embed_fn)
        return engine

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
        filters: dict[str, Any] | None = None,
        template: str | None = None,
        timeout: float | None = None,
        options: RunOptions | None = None,
    ) -> ContextResult:
        """Run the pipeline for ``query``; raises ``TimeoutError`` after ``timeout`` seconds.

        ``session_id`` selects a conversation history of its own (``None`` uses
        the documented single history).  ``filters`` restricts retrieval to the chunks
        whose metadata satisfy it (equality, ``{"$in": [...]}``, numeric ranges such as
        ``{"$gte": 1, "$lt": 5}``; the boosting ``metadata_filters`` stay as documented);
        ``template`` composes this request with that template (or ``"auto"``).
        ``options`` gives them all as one :class:`RunOptions` instead.  A bad filter or
        template raises ``ConfigError`` naming it, before anything runs.  A cancelled or
        timed-out request changes no shared state.  A ``TimeoutError`` carries a note
        saying where the request was waiting (a pipeline stage, a queue).
        """
        self._check_open()
        job = make_job(
            query,
            session_id,
            metadata_filters=metadata_filters,
            max_chunks=max_chunks,
            override_budget=override_budget,
            use_history=use_history,
            record_turn=record_turn,
            filters=filters,
            template=template,
            options=options,
        )
        return await run_one(self._runner, job, timeout)

    def stream(
        self,
        query: str,
        metadata_filters: dict[str, Any] | None = None,
        max_chunks: int | None = None,
        override_budget: int | None = None,
        use_history: bool = True,
        record_turn: bool = True,
        *,
        session_id: str | None = None,
        filters: dict[str, Any] | None = None,
        template: str | None = None,
        timeout: float | None = None,
        options: RunOptions | None = None,
    ) -> EventStream:
        """One typed event per stage, then ``done`` (or ``error``); see :mod:`.events`.

        Returns an :class:`~zerda_async.engine._event_stream.EventStream` to iterate
        with ``async for``: breaking out releases the request at once (no
        ``aclose`` needed; ``async with`` works too).  The request is submitted
        when the first event is awaited.
        """

        def new_job() -> Job:
            self._check_open()
            return make_job(
                query,
                session_id,
                metadata_filters=metadata_filters,
                max_chunks=max_chunks,
                override_budget=override_budget,
                use_history=use_history,
                record_turn=record_turn,
                filters=filters,
                template=template,
                options=options,
            )

        return EventStream(self._runner, new_job, timeout)

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
        # Checked once (frozen, shared by every query): a bad keyword raises before any submit.
        checked = make_job("", run_kwargs.pop("session_id", None), **run_kwargs).options
        jobs = (Job(query=q, options=checked) for q in queries)
        return await run_jobs(
            self._runner, jobs, concurrency or len(queries) or 1, timeout, return_exceptions
        )

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
        base = make_job("", kwargs.pop("session_id", None), **kwargs).options
        if base.override_budget is not None or not base.record_turn:
            raise TypeError("run_multi() sets override_budget and record_turn itself")
        one_shot = msgspec.structs.replace(base, record_turn=False)
        jobs = [
            Job(query=q, options=msgspec.structs.replace(one_shot, override_budget=b))
            for q, b in zip(plan.queries, plan.budgets, strict=True)
        ]
        requests = await submit_all(self._runner, jobs, timeout)
        contexts = [request.result().context for request in requests]
        return join_multi_query(self._state, plan, contexts)
