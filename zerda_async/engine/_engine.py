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
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, Self, Unpack

import anyio
import anyio.abc
import anyio.to_thread
import msgspec

from zerda_async.core.config import ContextEngineConfig
from zerda_async.core.index import VECTOR_DTYPES, VectorDType
from zerda_async.core.models import ContextResult, ConversationHistory, SourceQuality
from zerda_async.core.retrieval.vector import BatchEmbedFn, EmbedFn
from zerda_async.embedders import Embedder
from zerda_async.engine._event_stream import EventStream, add_timeout_note
from zerda_async.errors import EngineClosedError
from zerda_async.indexing._lifecycle import IndexLifecycle
from zerda_async.indexing._persistence import load_index
from zerda_async.pipeline._async_runner import AsyncRunner
from zerda_async.pipeline._job import Job, check_run_keywords, make_job
from zerda_async.pipeline._operations import join_multi_query, plan_multi_query
from zerda_async.pipeline._requests import Request, RunnerSettings
from zerda_async.pipeline._state import Components, EngineState
from zerda_async.stores import StoredTurn, Stores

__all__ = ["AsyncContextEngine", "EngineStatistics", "Offload"]

Offload = Literal["auto", "threads", "inline"]
"""Where the speculative stages run: by measured cost (default), always in threads, never."""

_OFFLOAD: dict[str, bool | None] = {"auto": None, "threads": True, "inline": False}


class EngineStatistics(msgspec.Struct, frozen=True, kw_only=True):
    """What :meth:`AsyncContextEngine.statistics` reports."""

    in_flight: int
    """Requests submitted and not finished."""
    max_in_flight: int
    free_slots: int
    """In-flight slots free now (``max_in_flight - in_flight`` once abandoned requests left)."""
    single_flights: int
    """Cache misses leading a single flight (identical requests wait for them)."""
    workers: int
    sessions: int
    """Per-``session_id`` conversations kept."""
    cached_contexts: int
    corpus_size: int
    corpus_version: int
    vector_dtype: str
    cache_bypassed: int = 0
    """Requests whose shared cache store did not answer (served without the cache)."""
    learning_bypassed: int = 0
    """Samples or reads the shared learning store did not answer (this replica's kept)."""


class AsyncContextEngine:
    """Async, streaming, concurrent context engine with the documented behaviour.

    The components of the documented ``ContextEngine`` (``query_analyzer``,
    ``retriever``, ``chunk_filter``, ``ranker``, ``composer``, ``guard``,
    ``budget_allocator``, ``length_counter``; see
    :class:`~zerda_async.pipeline.Components`) are keyword arguments here;
    ``None`` selects the documented default.  ``max_in_flight`` bounds the requests
    inside the pipeline; further callers wait (backpressure).  The remaining
    keywords tune the runner: ``workers`` speculation tasks, ``thread_limit``
    worker threads for CPU-bound stages, and the query-embedding micro-batch
    ``embed_batch_window`` (seconds) and ``embed_batch_size``.

    ``vector_dtype`` stores the in-memory embedding matrix as ``"float64"``
    (default: the documented scores exactly) or ``"float32"`` (half the memory
    and scan time; cosines then differ by about 1e-8, which can reorder
    near-ties).

    ``config`` is checked with :meth:`ContextEngineConfig.validate` (a
    ``ConfigError`` naming the field for an unknown template, a weight outside
    [0, 1], a budget that is not positive); ``validate=False`` accepts what
    the documented package accepts (its golden cases replay that way).

    ``max_sessions`` bounds the per-``session_id`` conversations kept; beyond
    it the least recently run one is dropped (``None``: keep every session).
    The context cache never holds more than ``config.cache.max_size``
    entries (the documented cache can exceed it once entries expire; see
    :class:`~zerda_async.core.cache.BoundedContextCache`).

    ``offload`` places the speculative stages: ``"auto"`` (default) in worker
    threads when their measured CPU cost outweighs the thread hop, or
    whenever they call caller code that may block; ``"threads"`` always;
    ``"inline"`` never (on the event loop).

    ``stores`` (a :class:`~zerda_async.stores.Stores` record) moves the index,
    the sessions, the context cache and the adaptive statistics into shared
    stores, so that several engines — replicas in other processes or on other
    machines — serve as one; see the README's "Shared stores" section.  Left
    ``None`` (or any field of it), everything stays in this process as before.
    The engine does not close the stores (their owner does).
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
        **components: Unpack[Components],
    ) -> None:
        if offload not in _OFFLOAD:
            raise ValueError(f"offload must be one of {sorted(_OFFLOAD)}, got {offload!r}")
        if vector_dtype not in VECTOR_DTYPES:
            raise ValueError(f"vector_dtype must be one of {VECTOR_DTYPES}, got {vector_dtype!r}")
        unknown = set(components) - set(Components.__annotations__)
        if unknown:
            raise TypeError(
                f"AsyncContextEngine() got an unexpected keyword argument {sorted(unknown)[0]!r}"
            )
        if config is not None and validate:
            # The async engine owns its configuration: a typo (an unknown
            # template, a weight outside [0, 1]) fails here, naming the field,
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
        self._runner.policy.forced = _OFFLOAD[offload]
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
        ``progress(done, total)`` is called while the corpus is embedded, then
        again (from 0) while it is tokenised.  The new index takes effect after
        every request submitted earlier.
        """
        self._check_open()
        if not chunks:
            return self
        await self._indexes.index(
            list(chunks),
            embed_fn,
            vector_store_adapter,
            source_quality_map,
            batch_embed_fn,
            progress,
        )
        return self

    async def add(self, chunks: Sequence[Any]) -> int:
        """Append ``chunks`` to the index (embedded with the engine's embedder); returns the count.

        No rebuild: the new chunks are tokenised (and embedded) on their own.
        Results afterwards equal those of a fresh index over the final corpus
        in corpus order (existing chunks, then the added ones).  The change
        takes effect after every request submitted earlier, and cached
        contexts of the old corpus are no longer served.
        """
        self._check_open()
        if self._state.stores.index is not None:
            return await self._store_write(chunks, replace=False)
        return await self._indexes.add(chunks)

    async def update(self, chunks: Sequence[Any]) -> int:
        """Replace the chunks sharing a doc id with ``chunks``; returns how many were replaced.

        Equivalent to ``remove`` of the new chunks' doc ids followed by
        ``add`` (so updated chunks move to the end of the corpus order);
        chunks with new doc ids are simply added.
        """
        self._check_open()
        if self._state.stores.index is not None:
            return await self._store_write(chunks, replace=True)
        return await self._indexes.update(chunks)

    async def remove(self, doc_ids: Sequence[Any]) -> int:
        """Remove every chunk whose doc id is in ``doc_ids``; returns how many were removed."""
        self._check_open()
        store = self._state.stores.index
        if store is not None:
            before = await store.count()
            await store.remove([str(d) for d in doc_ids])
            self._state.stores.clock.forget()  # this replica sees its own write at once
            return before - await store.count()
        return await self._indexes.remove(doc_ids)

    async def _store_write(self, chunks: Sequence[Any], *, replace: bool) -> int:
        """``add`` / ``update`` on the index store: one transaction, seen by every replica."""
        store = self._state.stores.index
        assert store is not None
        items = list(chunks)
        embedder = self._state.query_embedder
        vectors = None
        if embedder is not None and items:
            vectors = await embedder.embed_many([_chunk_text(c) for c in items])
        before = await store.count()
        if replace:
            await store.replace(items, vectors)
            self._state.stores.clock.forget()  # this replica sees its own write at once
            return len(items) - (await store.count() - before)
        await store.add(items, vectors)
        self._state.stores.clock.forget()
        return len(items)

    async def save(self, path: str | os.PathLike[str]) -> None:
        """Save the index as a directory (see :mod:`zerda_async.indexing._persistence`).

        The save is atomic: until it completes, ``path`` keeps the previous
        index, whatever happens (a crash, a full disk).  The snapshot saved is
        the index when ``save`` was called; requests keep running meanwhile.
        """
        self._check_open()
        await self._indexes.save(path)

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

        ``embed_fn`` / ``batch_embed_fn`` embed queries (and chunks added
        later); they must be the embedder the index was built with.  Without
        one, vector search returns nothing.  ``config=None`` uses the
        configuration saved with the index.  The vector dtype is the saved
        one unless ``vector_dtype`` is given.  Arrays are memory-mapped.
        Raises :class:`~zerda_async.errors.IndexFormatError` naming the file
        for a missing, truncated, corrupt, foreign or newer-format index.
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

    @property
    def corpus_size(self) -> int:
        """Chunks in the engine's own index (0 before ``index()`` / ``load()``)."""
        live = self._indexes.live
        return 0 if live is None else live.corpus.n_live

    @property
    def corpus_version(self) -> int:
        """Version of the engine's index: 0 when built, +1 per ``add``/``update``/``remove``."""
        live = self._indexes.live
        return 0 if live is None else live.corpus.version

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
    ) -> ContextResult:
        """Run the pipeline for ``query``; raises ``TimeoutError`` after ``timeout`` seconds.

        ``session_id`` selects a conversation history of its own (``None`` uses
        the documented single history).  ``filters`` restricts retrieval to the
        chunks whose metadata satisfy it (equality, ``{"$in": [...]}``, numeric
        ranges such as ``{"$gte": 1, "$lt": 5}``; the boosting
        ``metadata_filters`` stay as documented); ``template`` composes this
        request with that template (or ``"auto"``).  A bad filter or template
        raises ``ConfigError`` naming it, before anything runs.  A cancelled or
        timed-out request changes no shared state.  A ``TimeoutError`` carries a note saying
        where the request was waiting (a pipeline stage, a queue).
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
        )
        request: Request | None = None
        try:
            with anyio.fail_after(timeout):
                request = await self._runner.submit(job)
                try:
                    await request.done.wait()
                except anyio.get_cancelled_exc_class():
                    if not request.committing:
                        self._runner.abandon(request)
                        raise
                    # Too late to give up: the commit has started (it may await a
                    # re-run of the speculative stages) and will complete, changing
                    # shared state.  Reporting a cancellation would hide a request
                    # that took effect, so wait for it (shielded) and return its
                    # outcome; an enclosing cancelled scope still cancels the caller
                    # at its next checkpoint.
                    with anyio.CancelScope(shield=True):
                        await request.done.wait()
                except BaseException:
                    self._runner.abandon(request)
                    raise
        except TimeoutError as exc:
            # Reliability: say where the request was waiting (RELIABILITY.md).
            add_timeout_note(exc, self._runner, request)
            raise
        return request.result()

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
        session_id = run_kwargs.pop("session_id", None)
        # Reliability: a bad keyword raises TypeError before anything is submitted.
        check_run_keywords(run_kwargs)
        limit = anyio.Semaphore(concurrency or len(queries) or 1)
        requests: list[Request] = []
        with anyio.fail_after(timeout):
            try:
                async with anyio.create_task_group() as tg:
                    for query in queries:
                        await limit.acquire()
                        job = make_job(query, session_id, **run_kwargs)
                        request = await self._runner.submit(job)
                        requests.append(request)
                        tg.start_soon(_await_and_release, request, limit)
            except BaseException as exc:
                for request in requests:
                    if not request.done.is_set():
                        self._runner.abandon(request)
                # Only the submission loop can fail inside the group (the tasks
                # just wait): raise its error itself, as run() would (e.g.
                # EngineClosedError), not wrapped in an exception group.
                if (
                    isinstance(exc, BaseExceptionGroup)
                    and len(exc.exceptions) == 1
                    and isinstance(exc.exceptions[0], Exception)
                ):
                    raise exc.exceptions[0] from None
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
                    job_kwargs = {k: v for k, v in kwargs.items() if k != "session_id"}
                    job_kwargs.update(override_budget=budget, record_turn=False)
                    job = make_job(query, kwargs.get("session_id"), **job_kwargs)
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

    async def turns(self, session_id: str) -> list[StoredTurn]:
        """The turns of ``session_id`` (query and recorded answer), oldest first.

        Read from the session store when the engine has one, else from this
        process's conversation; an unknown session has none.
        """
        store = self._state.stores.sessions
        if store is not None:
            return await store.turns(session_id)
        history = self._state.sessions.get(session_id)
        if history is None:
            return []
        return [StoredTurn(t.query, t.answer) for t in history.turns]

    async def record_answer(self, session_id: str, answer: str) -> bool:
        """Record the LLM's ``answer`` on the last turn of ``session_id``; False without a turn.

        Answered turns enrich the session's later queries (``config.multi_turn``).
        """
        store = self._state.stores.sessions
        if store is not None:
            return await store.set_answer(session_id, answer)
        history = self._state.sessions.get(session_id)
        if history is None or not history.turns:
            return False
        history.turns[-1].answer = answer
        return True

    def set_conversation(self, history: Any, session_id: str | None = None) -> None:
        """Install ``history`` as the default conversation or as ``session_id``'s."""
        self._state.set_history(history, session_id)

    async def clear_cache(self) -> None:
        """Empty the context cache after every request submitted before this call."""
        self._check_open()
        cache = self._state.cache
        if cache is not None:
            await self._runner.barrier(cache.clear)

    def statistics(self) -> EngineStatistics:
        """A snapshot of the engine's load and state (for operators and tests)."""
        runner, state = self._runner, self._state
        return EngineStatistics(
            in_flight=runner.in_flight,
            max_in_flight=runner.settings.max_in_flight,
            free_slots=int(runner.slots.value),
            single_flights=runner.single_flights,
            workers=runner.settings.workers,
            sessions=len(state.sessions),
            cached_contexts=0 if state.cache is None else int(state.cache.stats["size"]),
            corpus_size=self.corpus_size,
            corpus_version=self.corpus_version,
            vector_dtype=self._indexes.dtype,
            cache_bypassed=state.bypassed["cache"],
            learning_bypassed=state.bypassed["learning"],
        )

    @property
    def embedder_calls(self) -> int:
        """How many times the query/corpus embedder was called by this engine."""
        embedder = self._state.query_embedder
        return 0 if embedder is None else embedder.calls


# -- helpers -------------------------------------------------------------------------


def _chunk_text(chunk: Any) -> Any:
    return getattr(chunk, "text", None) or getattr(chunk, "page_content", "")


async def _await_and_release(request: Request, limit: anyio.Semaphore) -> None:
    try:
        await request.done.wait()
    finally:
        limit.release()
