"""The async runner: the stage list for many concurrent requests, as phase tasks.

Topology (one task group, started by the engine; streams are anyio memory
object streams)::

    submit ─┬─► [embedding] ──► [speculation × workers] ──► request.speculated
            │                                                      │
            └──── commit stream, in submission order ──────► [commit] ──► outcome, events

* **submit** (here) takes an in-flight slot — backpressure: at most
  ``max_in_flight`` requests are inside — and puts the request on the commit
  stream, which fixes its place in the serial order, and on the speculation
  path, with no await in between.
* **embedding** (:mod:`._embedding_phase`; requests pass through it whenever
  the index has an embedder, of any kind) applies the query-embedding stage,
  micro-batched across requests.
* **speculation** workers (:mod:`._speculation`) apply the other speculative
  stages for the raw query, ahead of and concurrently with earlier requests.
* **commit** (:mod:`._commit`) is one task that walks each request's whole
  stage list with the one walker (:mod:`._walker`), keeping what speculation
  applied when it still holds.

A request that finds the runner idle (nothing pending, no barrier queued)
skips the phase tasks: :meth:`AsyncRunner.try_inline` admits it and
:meth:`AsyncRunner.run_inline` prepares and commits it in the caller's task
(the commit phase holds its next item back meanwhile).  One request at a time
then costs what the sync runner costs plus a checkpoint, instead of four
task hand-offs.

The streams are unbounded on purpose: the in-flight slots already bound the
live requests, but an abandoned request releases its slot while it may still
sit in a buffer, and barriers add to the commit stream, so a bounded buffer
could reject a later ``send_nowait``.

A request cancelled before its commit starts changes no shared state; once
its commit started it completes.  Caller code that may block (a plain query
embedder, a vector-store adapter, an injected retriever) always runs in a
worker thread, and an abandoned request releases the pipeline at once (its
embedder call is cancelled, a worker thread stuck in caller code is
abandoned), so one hung dependency fails only its own request.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence

import anyio
import anyio.abc
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from zerda_async.errors import EngineClosedError
from zerda_async.pipeline._commit import CommitPhase
from zerda_async.pipeline._embedding_phase import EmbeddingPhase
from zerda_async.pipeline._job import Job
from zerda_async.pipeline._offload import OffloadPolicy
from zerda_async.pipeline._requests import (
    FINISHED,
    Barrier,
    EventSink,
    Phase,
    Request,
    RunnerSettings,
)
from zerda_async.pipeline._speculation import Speculation
from zerda_async.pipeline._stages import STAGES, QueryEmbedding, Stage
from zerda_async.pipeline._state import EngineState

__all__ = ["AsyncRunner"]

_EMBEDDING_STAGE = "pipeline stage 'retrieval' (query embedding)"
_NOT_RUNNING = "the engine is not running (use 'async with' and not closed)"


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
        self.limiter = anyio.CapacityLimiter(settings.thread_limit)
        self.slots = anyio.Semaphore(settings.max_in_flight)
        self.policy = OffloadPolicy(settings.offload_threshold_ms, settings.offload_min_corpus)
        # A retriever passed to the engine's constructor is caller code (often
        # a remote vector store): never run it on the event loop.
        self.policy.external_calls = state.retriever is not None
        self.speculation = Speculation(
            state, stages, self.policy, self.limiter, loop_pacing=settings.loop_pacing
        )
        self.speculation.crowded = lambda: len(self._pending) > 1
        self.embedding = EmbeddingPhase(state, settings)
        self.commits = CommitPhase(state, stages, self.speculation, self._finish)
        self._ids = itertools.count(1)
        self._pending: set[Request] = set()
        # Barriers sent to the commit stream; pruned once applied (see _idle).
        self._barriers: list[Barrier] = []
        self._by_cache_key: dict[str, Request] = {}
        self._running = False
        self._closing = False
        self._tg: anyio.abc.TaskGroup | None = None
        # Set when serve() has returned: every phase task has exited.
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
        """Run the phase tasks until :meth:`close` (use with ``TaskGroup.start``)."""
        commit_send, commit_recv = anyio.create_memory_object_stream[Request | Barrier](math.inf)
        spec_send, spec_recv = anyio.create_memory_object_stream[Request](math.inf)
        embed_send, embed_recv = anyio.create_memory_object_stream[Request](math.inf)
        self._commit_send, self._spec_send, self._embed_send = commit_send, spec_send, embed_send
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                tg.start_soon(self.embedding.run, embed_recv, spec_send.clone())
                for _ in range(self.settings.workers):
                    tg.start_soon(self.speculation.worker, spec_recv.clone())
                spec_recv.close()
                tg.start_soon(self._commit_until_closed, commit_recv)
                self._running = True
                task_status.started()
        finally:
            self._running = False
            self._closing = True
            self._fail_pending(EngineClosedError("the engine was closed"))
            for stream in (commit_send, spec_send, embed_send):
                stream.close()
            self.stopped.set()

    async def _commit_until_closed(
        self, recv: MemoryObjectReceiveStream[Request | Barrier]
    ) -> None:
        await self.commits.run(recv)
        # The commit stream was closed and drained: every submitted request
        # has committed or was skipped, so what is left in the embedding and
        # speculation tasks belongs to abandoned requests (a hung embedder
        # call, say) and must not hold up close().
        if self._tg is not None:
            self._tg.cancel_scope.cancel()

    async def close(self) -> None:
        """Stop accepting requests; in-flight requests finish, then the tasks exit."""
        if self._closing:
            return
        self._closing = True
        for stream in (self._commit_send, self._embed_send, self._spec_send):
            if stream is not None:
                await stream.aclose()

    def cancel(self) -> None:
        """Abort all phase tasks now; pending requests fail with EngineClosedError."""
        self._closing = True
        if self._tg is not None:
            self._tg.cancel_scope.cancel()

    def _fail_pending(self, error: BaseException) -> None:
        for request in list(self._pending):
            if request.inline:
                # Its caller's task runs it: stop its speculation (it then
                # fails with ``error``), or let a started commit complete.
                if not request.committing:
                    request.outcome = error
                    self.abandon(request)
                continue
            if request.outcome is None:
                request.outcome = error
            request.speculated.set()
            self._finish(request)

    # -- submission --------------------------------------------------------------

    async def submit(
        self,
        job: Job,
        sink: EventSink | None = None,
        on_finish: Callable[[], None] | None = None,
    ) -> Request:
        """Enter the pipeline (waits for a free slot); the caller then awaits ``done``.

        ``on_finish`` is called once the request is finished (right after
        ``done`` is set), on the event loop: a way to react without a task
        waiting for each request.
        """
        if not self.running:
            raise EngineClosedError(_NOT_RUNNING)
        # A free slot is taken without yielding (a deadline still applies): a
        # yield per submission let run_many refill one place per loop turn.
        await anyio.lowlevel.checkpoint_if_cancelled()
        try:
            self.slots.acquire_nowait()
        except anyio.WouldBlock:
            await self.slots.acquire()
        if not self.running:
            self.slots.release()
            raise EngineClosedError("the engine was closed while the request waited for a slot")
        request = self._admit(job, sink)
        request.on_finish = on_finish
        assert self._commit_send is not None and self._spec_send is not None
        # No await between these sends: the commit stream's order is the
        # submission order.
        self._commit_send.send_nowait(request)
        if request.skip_speculation:
            request.phase = Phase.QUEUED
            request.speculated.set()
        elif self.state.query_embedder is not None:
            assert self._embed_send is not None
            request.phase = Phase.EMBEDDING
            self._embed_send.send_nowait(request)
        else:
            request.phase = Phase.WORKER
            self._spec_send.send_nowait(request)
        return request

    def try_inline(self, job: Job) -> Request | None:
        """Admit ``job`` to run in the caller's task when the runner is idle; else ``None``.

        The caller then awaits :meth:`run_inline` (at once: the request
        holds a slot and the commit phase's next item).
        """
        if not self._idle():
            return None
        self.slots.acquire_nowait()  # idle: every slot is free
        request = self._admit(job, None)
        request.inline = True
        request.phase = Phase.QUEUED
        return request

    async def run_inline(self, request: Request) -> None:
        """Prepare and commit a request admitted by :meth:`try_inline`, in this task.

        Cancelled before its commit started, the request is abandoned and
        changes nothing; once started, the commit completes (shielded).
        """
        self.commits.hold()
        try:
            await self.commits.process(request, shield=True)
        except BaseException:
            request.cancelled = True
            raise
        finally:
            self.commits.release()

    def _idle(self) -> bool:
        """True when nothing submitted is pending, queued or committing, and no one waits."""
        if not self.running or self._pending or self.commits.inline_active:
            return False
        if self.slots.value < self.settings.max_in_flight:
            return False  # a submit() waiting for a slot came first
        self._barriers = [b for b in self._barriers if not b.done.is_set()]
        return not self._barriers

    def _admit(self, job: Job, sink: EventSink | None) -> Request:
        job.request_id = job.request_id or f"r{next(self._ids)}"
        request = Request(job, sink)
        self._pending.add(request)
        self._plan_single_flight(request)
        return request

    async def barrier(self, apply: Callable[[], None]) -> None:
        """Apply ``apply`` after every request submitted before it has committed."""
        if not self.running:
            raise EngineClosedError(_NOT_RUNNING)
        assert self._commit_send is not None
        barrier = Barrier(apply)
        self._barriers.append(barrier)
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
        if request.spec_scope is not None:
            request.spec_scope.cancel()
        if request.embed_call is not None:
            request.embed_call.abandoned()

    # -- waiting: the one cancellation rule -------------------------------------------------

    async def wait(self, request: Request) -> None:
        """Wait until ``request`` is finished, under the runner's one cancellation rule.

        A caller that gives up (cancelled, timed out, any error) before the
        request's commit started abandons it: it changes no shared state.
        Once the commit started, the request will take effect, so the caller
        waits for it (shielded) instead of reporting a cancellation that did
        not happen; an enclosing cancelled scope still cancels the caller at
        its next checkpoint.
        """
        try:
            await request.done.wait()
        except anyio.get_cancelled_exc_class():
            if not await self.see_through(request):
                self.abandon(request)
                raise
        except BaseException:
            self.abandon(request)
            raise

    async def see_through(self, request: Request) -> bool:
        """On a caller's cancellation: wait (shielded) for a request whose commit started.

        True once such a request is finished; False, at once, for one whose
        commit has not started (the caller gives it up: :meth:`abandon`).  For
        callers that wait on something else than :meth:`wait` does (a stream
        of the request's events).
        """
        if not request.committing:
            return False
        with anyio.CancelScope(shield=True):
            await request.done.wait()
        return True

    def where(self, request: Request) -> str:
        """Where ``request`` is in the pipeline, for a timeout's message."""
        phase = request.phase
        if phase is Phase.SLOT:
            return f"admission (all {self.settings.max_in_flight} in-flight slots were taken)"
        if phase is Phase.EMBEDDING:
            return _EMBEDDING_STAGE
        if phase is Phase.WORKER:
            workers = self.settings.workers
            return f"the speculation queue (all {workers} speculation workers were busy)"
        if phase is Phase.SPECULATION:
            done = request.job.timings
            for stage in self.speculation.stages:
                if stage.name not in done:
                    if stage.name == QueryEmbedding.name:
                        return _EMBEDDING_STAGE  # applied here when the request runs inline
                    return f"pipeline stage {stage.error_name!r}"
            return "pipeline stage 'rank'"
        if phase is Phase.QUEUED:
            return "the commit queue (earlier requests had not committed yet)"
        return "pipeline stage commit"

    @property
    def in_flight(self) -> int:
        """Requests submitted and not finished yet."""
        return len(self._pending)

    @property
    def single_flights(self) -> int:
        """Cache misses currently leading a single flight."""
        return len(self._by_cache_key)

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
        on_finish, request.on_finish = request.on_finish, None
        if on_finish is not None:
            on_finish()
        if request.sink is not None:
            request.sink(request, FINISHED, 0.0)
