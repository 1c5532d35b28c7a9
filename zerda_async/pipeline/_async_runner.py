"""The async runner: the same stage list as long-lived tasks joined by memory streams.

Topology (one task group, started by the engine)::

    submit ──► [embed] ──► [speculate × W] ──► (speculated event)
       │                                              │
       └────────────── submission order ──────────► [commit] ──► result / events

* **submit** takes an in-flight slot (backpressure: at most ``max_in_flight``
  requests are inside) and puts the request on two streams at once: the
  commit stream, which fixes its place in the serial order, and the
  speculation path.
* **embed** (only with a coroutine or batch embedder) micro-batches the query
  embeddings of concurrent requests: while an embedder call is in flight it
  waits a short window for more requests, up to a size cap, then makes one
  call; an idle embedder gets a lone request at once.
* **speculate** workers run the *speculative* stages (analysis, retrieval,
  source quality, filter, rank) for the raw query, ahead of and concurrently
  with earlier requests — in a worker thread under a capacity limiter when
  their measured CPU cost outweighs the thread hop (see ``offload``).
* **commit** is one task that walks the whole stage list for each request in
  submission order, keeping the speculative output when the history stage
  left the query unchanged and the corpus did not change meanwhile (otherwise
  re-running those stages).  Everything that reads or writes shared state
  (cache, histories, adaptive budget) therefore happens in submission order,
  so concurrent requests return what running them one by one would.

A request cancelled before its commit starts changes no shared state; once its
commit started it completes (commits never await except to re-run stages).

Reliability (see RELIABILITY.md): caller code that may block (a plain query
embedder, a vector-store adapter, an injected retriever) always runs in a
worker thread; a request that is abandoned (cancelled or timed out) while
its embedding or speculative stages are still running releases the
pipeline at once — an embedder call shared only by abandoned requests is
cancelled, and a worker thread stuck in caller code is abandoned (it ends
when that call returns) — so one hung dependency fails only its own request.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from zerda_async.core.models import ContextResult
from zerda_async.embedders._embedder import Embedder
from zerda_async.errors import EngineClosedError, annotate_stage_error, failed_stage
from zerda_async.pipeline._job import Job
from zerda_async.pipeline._observe import emit_stage_event
from zerda_async.pipeline._offload import OffloadPolicy, apply_group
from zerda_async.pipeline._requests import (
    FINISHED,
    Barrier,
    EmbedCall,
    EventSink,
    Request,
    RunnerSettings,
)
from zerda_async.pipeline._stages import STAGES, HistoryEnrichment, Retrieval, Stage, build_result
from zerda_async.pipeline._state import EngineState
from zerda_async.pipeline._sync_runner import apply_stage
from zerda_async.runtime import run_in_thread

__all__ = ["AsyncRunner"]

_RETRIEVAL = Retrieval()
_UNKNOWN: Any = object()


class AsyncRunner:
    """Executes the stage list for many concurrent requests (see the module docstring)."""

    def __init__(
        self,
        state: EngineState,
        settings: RunnerSettings,
        stages: Sequence[Stage] = STAGES,
    ) -> None:
        self.state = state
        self.settings = settings
        self.stages = tuple(stages)
        self.speculative = tuple(s for s in self.stages if s.speculative)
        self._enrichment = next((s for s in self.stages if isinstance(s, HistoryEnrichment)), None)
        self.limiter = anyio.CapacityLimiter(settings.thread_limit)
        self.slots = anyio.Semaphore(settings.max_in_flight)
        self.policy = OffloadPolicy(settings.offload_threshold_ms, settings.offload_min_corpus)
        # A retriever passed to the engine's constructor is caller code (often
        # a remote vector store): never run it on the event loop.
        self.policy.external_calls = state.retriever is not None
        # Set when queries must be embedded ahead of retrieval (a coroutine or
        # batch embedder); a plain per-text embedder is called by the retriever.
        self.embedder: Embedder | None = None
        self._embed_calls_in_flight = 0
        self.corpus_size = 0
        self._ids = itertools.count(1)
        self._pending: set[Request] = set()
        self._by_cache_key: dict[str, Request] = {}
        self._running = False
        self._closing = False
        self._tg: anyio.abc.TaskGroup | None = None
        # Set when serve() has returned: every stage task has exited.
        self.stopped = anyio.Event()
        self._commit_send: MemoryObjectSendStream[Request | Barrier] | None = None
        self._spec_send: MemoryObjectSendStream[Request] | None = None
        self._embed_send: MemoryObjectSendStream[Request] | None = None

    # -- lifecycle ---------------------------------------------------------------

    @property
    def running(self) -> bool:
        """True between :meth:`serve` starting and the runner closing."""
        return self._running and not self._closing

    async def serve(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Run the stage tasks until :meth:`close` (use with ``TaskGroup.start``)."""
        # The slots bound the live requests to max_in_flight, but the buffers
        # are unbounded: barriers add to the commit stream, and an abandoned
        # request releases its slot (see abandon) while it may still sit in
        # the speculation or embedding buffer, so a bounded buffer could
        # reject a later send_nowait.
        commit_send, commit_recv = anyio.create_memory_object_stream[Request | Barrier](math.inf)
        spec_send, spec_recv = anyio.create_memory_object_stream[Request](math.inf)
        embed_send, embed_recv = anyio.create_memory_object_stream[Request](math.inf)
        self._commit_send, self._spec_send, self._embed_send = commit_send, spec_send, embed_send
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                tg.start_soon(self._embed_stage, embed_recv, spec_send.clone())
                for _ in range(self.settings.workers):
                    tg.start_soon(self._speculate_stage, spec_recv.clone())
                spec_recv.close()
                tg.start_soon(self._commit_stage, commit_recv)
                self._running = True
                task_status.started()
        finally:
            self._running = False
            self._closing = True
            self._fail_pending(EngineClosedError("the engine was closed"))
            for stream in (commit_send, spec_send, embed_send):
                stream.close()
            self.stopped.set()

    async def close(self) -> None:
        """Stop accepting requests; in-flight requests finish, then the tasks exit."""
        if self._closing:
            return
        self._closing = True
        for stream in (self._commit_send, self._embed_send, self._spec_send):
            if stream is not None:
                await stream.aclose()

    def cancel(self) -> None:
        """Abort all stage tasks now; pending requests fail with EngineClosedError."""
        self._closing = True
        if self._tg is not None:
            self._tg.cancel_scope.cancel()

    def _fail_pending(self, error: BaseException) -> None:
        for request in list(self._pending):
            if request.outcome is None:
                request.outcome = error
            request.speculated.set()
            self._finish(request)

    # -- submission --------------------------------------------------------------

    async def submit(self, job: Job, sink: EventSink | None = None) -> Request:
        """Enter the pipeline (waits for a free slot); the caller then awaits ``done``."""
        if not self.running:
            raise EngineClosedError("the engine is not running (use 'async with' and not closed)")
        await self.slots.acquire()
        if not self.running:
            self.slots.release()
            raise EngineClosedError("the engine was closed while the request waited for a slot")
        job.request_id = job.request_id or f"r{next(self._ids)}"
        request = Request(job, sink)
        self._pending.add(request)
        self._plan_single_flight(request)
        assert self._commit_send is not None and self._spec_send is not None
        # No await between these sends: the commit stream's order is the
        # submission order.
        self._commit_send.send_nowait(request)
        if request.skip_speculation:
            request.phase = "queued"
            request.speculated.set()
        elif self.embedder is not None:
            assert self._embed_send is not None
            request.phase = "embedding"
            self._embed_send.send_nowait(request)
        else:
            request.phase = "worker"
            self._spec_send.send_nowait(request)
        return request

    async def barrier(self, apply: Callable[[], None]) -> None:
        """Apply ``apply`` after every request submitted before it has committed."""
        if not self.running:
            raise EngineClosedError("the engine is not running (use 'async with' and not closed)")
        assert self._commit_send is not None
        barrier = Barrier(apply)
        self._commit_send.send_nowait(barrier)
        await barrier.done.wait()
        if barrier.error is not None:
            raise barrier.error

    def abandon(self, request: Request) -> None:
        """The caller gave up (cancelled or timed out): skip its commit if not started."""
        request.cancelled = True
        # The commit task waits for a request's speculation before committing
        # it.  An abandoned request is skipped anyway, so it must not keep the
        # requests behind it waiting while its embedding or speculation is
        # still running (a slow embedder call, a blocked worker thread).
        request.speculated.set()
        if request.prepare_scope is not None:
            request.prepare_scope.cancel()
        # A worker stuck in this request's speculation (a hung vector store,
        # say) is freed; its thread, if any, is abandoned.
        if request.spec_scope is not None:
            request.spec_scope.cancel()
        if request.embed_call is not None:
            request.embed_call.abandoned()

    def where(self, request: Request) -> str:
        """Where ``request`` is in the pipeline, for a timeout's message.

        The stage it waits in (``"retrieval"`` for its query embedding), or a
        description of the queue it waits in.
        """
        phase = request.phase
        if phase == "slot":
            return f"admission (all {self.settings.max_in_flight} in-flight slots were taken)"
        if phase == "embedding":
            return "pipeline stage 'retrieval' (query embedding)"
        if phase == "worker":
            return (
                f"the speculation queue (all {self.settings.workers} speculation workers were busy)"
            )
        if phase == "speculation":
            done = request.job.timings
            for stage in self.speculative:
                if stage.name not in done:
                    return f"pipeline stage {stage.name!r}"
            return "pipeline stage 'rank'"
        if phase == "queued":
            return "the commit queue (earlier requests had not committed yet)"
        return "pipeline stage commit"

    def _plan_single_flight(self, request: Request) -> None:
        # An identical cache miss already in flight will most likely store the
        # context this request then hits, so computing it twice is skipped.
        cache = self.state.cache
        if cache is None:
            return
        try:
            key = cache.make_key(request.job.query, request.job.options.metadata_filters)
        except Exception:
            return  # the commit raises the documented error for this query
        leader = self._by_cache_key.get(key)
        if leader is not None and not leader.done.is_set():
            request.skip_speculation = True
        else:
            self._by_cache_key[key] = request
            request.flight_key = key

    def _finish(self, request: Request) -> None:
        if request in self._pending:
            self._pending.discard(request)
            key = request.flight_key
            if key is not None and self._by_cache_key.get(key) is request:
                del self._by_cache_key[key]
            self.slots.release()
        request.done.set()
        if request.sink is not None:
            request.sink(request, FINISHED, 0.0)

    # -- stage tasks -------------------------------------------------------------

    async def _embed_stage(
        self,
        recv: MemoryObjectReceiveStream[Request],
        spec_send: MemoryObjectSendStream[Request],
    ) -> None:
        async with recv, spec_send, anyio.create_task_group() as tg:
            async for first in recv:
                batch = [first]
                cap = self.settings.embed_batch_size
                if self.embedder is not None and self.embedder.batches:
                    # Take what is already queued; wait the window for more
                    # only while other embedder calls are in flight: an idle
                    # embedder serves a lone request at once (no added
                    # latency), a busy one lets requests pile up into a batch.
                    while len(batch) < cap:
                        try:
                            batch.append(recv.receive_nowait())
                        except (anyio.WouldBlock, anyio.EndOfStream):
                            break
                    if self._embed_calls_in_flight and len(batch) < cap:
                        with anyio.move_on_after(self.settings.embed_batch_window):
                            while len(batch) < cap:
                                batch.append(await recv.receive())
                # Each batch call runs as its own task so the next batch can
                # gather while this one is awaited.  It counts as in flight
                # from now: the requests that arrive before it starts should
                # wait for a batch too.
                self._embed_calls_in_flight += 1
                tg.start_soon(self._embed_batch, batch, spec_send)

    async def _embed_batch(
        self, batch: list[Request], spec_send: MemoryObjectSendStream[Request]
    ) -> None:
        try:
            await self._embed_batch_call(batch, spec_send)
        finally:
            self._embed_calls_in_flight -= 1

    async def _embed_batch_call(
        self, batch: list[Request], spec_send: MemoryObjectSendStream[Request]
    ) -> None:
        live = [r for r in batch if not r.cancelled]
        embedder = self.embedder
        if live and embedder is not None:
            started = time.perf_counter()
            # Cancelled by abandon() when one of these requests gives up, so a
            # hung embedder call never outlives its callers (see EmbedCall).
            call = EmbedCall(live)
            error: Exception | None = None
            embedded = False
            with call.scope:
                try:
                    vectors = await embedder.embed_many([r.job.query for r in live])
                except Exception as exc:
                    error = exc
                else:
                    for request, vector in zip(live, vectors, strict=True):
                        request.job.query_vector = vector
                    embedded = True
            if not embedded:
                if error is not None and len(live) == 1:
                    self._embedding_failed(live[0], error)
                else:
                    # The shared call failed, or was cancelled because one of
                    # its requests gave up (its text may be what hangs the
                    # embedder).  One bad text must not fail the requests it
                    # was batched with (the sync engine embeds each query on
                    # its own): embed the remaining ones alone, concurrently.
                    async with anyio.create_task_group() as tg:
                        for request in live:
                            if not request.cancelled:
                                tg.start_soon(self._embed_alone, embedder, request)
            cost = (time.perf_counter() - started) * 1000
            for request in live:
                request.embed_call = None
                request.job.timings["query_embedding"] = cost
        for request in batch:
            if request.spec_error is not None or request.cancelled:
                request.spec_query = request.job.query
                request.spec_version = self.state.epoch
                request.phase = "queued"
                request.speculated.set()
            else:
                request.phase = "worker"
                spec_send.send_nowait(request)

    async def _embed_alone(self, embedder: Embedder, request: Request) -> None:
        """Embed one request's query in a call of its own (cancelled if it gives up)."""
        if request.cancelled:
            # Abandoned after this task was scheduled: abandon() could only
            # cancel the batch call, so the new call must not even start.
            return
        with EmbedCall([request]).scope:
            try:
                request.job.query_vector = (await embedder.embed_many([request.job.query]))[0]
            except Exception as error:
                self._embedding_failed(request, error)

    def _embedding_failed(self, request: Request, exc: Exception) -> None:
        """Record a failed query embedding; the speculative stages before retrieval still run.

        The embedding belongs to the retrieval stage, so the request fails
        there, as the sync run fails inside the retriever, after analysing
        the query: the commit needs that analysis to reach retrieval.
        """
        job = request.job
        if job.effective_query is None:
            job.effective_query = job.query
        annotate_stage_error(exc, _RETRIEVAL.name)
        request.spec_error, request.spec_error_stage = exc, _RETRIEVAL.name
        before = tuple(itertools.takewhile(lambda s: s.name != _RETRIEVAL.name, self.speculative))
        try:
            apply_group(job, self.state, before)
        except Exception as error:
            request.spec_error, request.spec_error_stage = error, failed_stage(error)

    async def _speculate_stage(self, recv: MemoryObjectReceiveStream[Request]) -> None:
        async with recv:
            async for request in recv:
                if not request.cancelled:
                    request.phase = "speculation"
                    await self._speculate(request)
                request.phase = "queued"
                request.speculated.set()

    async def _speculate(self, request: Request) -> None:
        job = request.job
        job.effective_query = job.query
        request.spec_query = job.query
        request.spec_version = self.state.epoch
        # abandon() cancels this scope: the worker moves on to the next
        # request instead of waiting for a hung call of this one.
        with anyio.CancelScope() as scope:
            request.spec_scope = scope
            try:
                await self._run_group(job, self.speculative)
            except Exception as exc:
                request.spec_error = exc
                request.spec_error_stage = failed_stage(exc)
        request.spec_scope = None

    async def _run_group(self, job: Job, stages: Sequence[Stage]) -> None:
        """Run consecutive stages inline or in one thread hop, as the policy says.

        A cancelled hop abandons its thread (which finishes its current call
        on its own): only the abandoned request's job is still written to.
        """
        if self.policy.should_offload(self.corpus_size):
            cost = await run_in_thread(apply_group, job, self.state, stages, limiter=self.limiter)
        else:
            cost = apply_group(job, self.state, stages)
        self.policy.observe(cost)

    async def _commit_stage(self, recv: MemoryObjectReceiveStream[Request | Barrier]) -> None:
        async with recv:
            async for item in recv:
                if isinstance(item, Barrier):
                    try:
                        item.apply()
                    except Exception as exc:
                        item.error = exc
                    item.done.set()
                    continue
                await item.speculated.wait()
                try:
                    if item.cancelled:
                        continue
                    await self._prepare(item)
                    if item.cancelled:
                        continue
                    item.phase = "commit"
                    item.committing = True
                    try:
                        item.outcome = await self._commit(item)
                    except Exception as exc:
                        item.outcome = exc
                finally:
                    self._finish(item)
        # The commit stream was closed and drained: every submitted request
        # has committed or was skipped, so what is left in the embedding and
        # speculation tasks belongs to abandoned requests (a hung embedder
        # call, say) and must not hold up close().
        if self._tg is not None:
            self._tg.cancel_scope.cancel()

    async def _prepare(self, request: Request) -> None:
        """Redo the speculation that history or an index change made stale, before committing.

        Re-running the speculative stages (for a history-enriched query, or
        after an index barrier) is a commit's only await.  Inside the commit it
        would come after the cache lookup had already counted, so a caller
        giving up meanwhile could not leave the engine untouched; done here,
        before any stage touches shared state, ``abandon`` simply cancels it
        and the request is skipped.  Nothing else can commit meanwhile, so the
        prediction holds when the commit starts (the commit re-checks anyway).
        Single-flight followers are left alone: they mostly hit the cache.
        """
        if request.skip_speculation:
            return
        job = request.job
        state = self.state
        effective = self._peek_effective_query(job)
        if effective is _UNKNOWN or (
            effective == request.spec_query and request.spec_version == state.epoch
        ):
            return
        job.effective_query = effective
        request.phase = "speculation"
        with anyio.CancelScope() as scope:
            request.prepare_scope = scope
            request.spec_version = state.epoch
            await self._redo_speculation(request)
        request.prepare_scope = None

    def _peek_effective_query(self, job: Job) -> Any:
        """The query the history stage will produce, without changing any state."""
        session_id = job.options.session_id
        if self._enrichment is None:
            return _UNKNOWN
        if session_id is not None and session_id not in self.state.sessions:
            return job.query  # the stage would create an empty conversation: no enrichment
        try:
            self._enrichment.apply(job, self.state)
        except Exception:
            return _UNKNOWN  # the commit raises it, in its documented place
        return job.effective_query

    async def _commit(self, request: Request) -> ContextResult:
        job = request.job
        state = self.state
        reuse: bool | None = None  # decided when the first speculative stage is reached
        for stage in self.stages:
            if job.result is not None:
                break
            if stage.speculative:
                if reuse is None:
                    reuse = (
                        not request.skip_speculation
                        and job.effective_query == request.spec_query
                        and request.spec_version == state.epoch
                    )
                    if not reuse:
                        await self._redo_speculation(request)
                        reuse = True
                if request.spec_error is not None and request.spec_error_stage in (
                    None,
                    stage.name,
                ):
                    annotate_stage_error(request.spec_error, stage.name)
                    raise request.spec_error
                self._emit(request, stage.name, job.timings.get(stage.name, 0.0))
                continue
            self._emit(request, stage.name, apply_stage(stage, job, state))
        if job.result is not None and job.result.metadata.get("from_cache"):
            self._emit(request, "analysis", job.timings.get("cache_lookup", 0.0))
        return build_result(job)

    async def _redo_speculation(self, request: Request) -> None:
        """Recompute the speculative stages for the effective query (history changed it)."""
        job = request.job
        request.spec_error = request.spec_error_stage = None
        stale_vector = job.effective_query != request.spec_query or job.query_vector is None
        # Recorded before the embedding: a failed attempt is this query's
        # outcome, and the commit must not embed it a second time.
        request.spec_query = job.effective_query
        if stale_vector:
            job.query_vector = None
            embedder = self.embedder
            if embedder is not None:
                request.phase = "embedding"
                try:
                    job.query_vector = (await embedder.embed_many([job.effective_query]))[0]
                except Exception as exc:
                    self._embedding_failed(request, exc)
                    return
                finally:
                    request.phase = "speculation"
        # Forget the stale stage timings, so where() sees the stage running now.
        for stage in self.speculative:
            job.timings.pop(stage.name, None)
        try:
            await self._run_group(job, self.speculative)
        except Exception as exc:
            request.spec_error = exc
            request.spec_error_stage = failed_stage(exc)

    # -- events --------------------------------------------------------------------

    def _emit(self, request: Request, stage: str, duration_ms: float) -> None:
        emit_stage_event(request.job, stage, duration_ms)
        if request.sink is not None:
            request.sink(request, stage, duration_ms)
