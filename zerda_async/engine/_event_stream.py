"""The async iterator returned by :meth:`AsyncContextEngine.stream`.

:class:`EventStream` yields one typed event per stage, then ``done`` (or
``error``).  It is a plain async iterator rather than an async generator, so
leaving it early needs no ``aclose()``: breaking out of ``async for`` (or
dropping the object) releases the request at once, on asyncio and on trio,
without the "async generator was garbage collected" ``ResourceWarning``.
``async with engine.stream(q) as events:`` and ``contextlib.aclosing`` work
too and release it deterministically on any interpreter.

Releasing a stream whose request has not started committing abandons the
request (it changes no shared state); once the commit started, the request
completes and its remaining events are dropped.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from types import TracebackType

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from zerda_async.core.models import ContextResult
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
    SourceRef,
    StageEvent,
)
from zerda_async.pipeline import FINISHED, AsyncRunner, Job, Request

__all__ = ["EVENT_BUFFER", "EventStream", "add_timeout_note"]

EVENT_BUFFER = 16
"""Events buffered per stream.  A request has at most nine, so a slow consumer
never stalls the commit task."""


def add_timeout_note(exc: BaseException, runner: AsyncRunner, request: Request | None) -> None:
    """Note on a request's ``TimeoutError`` where the request was when time ran out."""
    where = (
        f"admission (all {runner.settings.max_in_flight} in-flight slots were taken)"
        if request is None
        else runner.where(request)
    )
    exc.add_note(f"zerda-async: timed out in {where}")


class _Sink:
    """Turns the runner's stage notifications into events on the stream's buffer.

    It holds the send side only (never the :class:`EventStream`), so the
    runner keeping a request alive does not keep its stream object alive.
    """

    def __init__(self, send: MemoryObjectSendStream[StageEvent]) -> None:
        self.send = send

    def __call__(self, request: Request, stage: str, duration_ms: float) -> None:
        try:
            if stage == FINISHED:
                final = _final_event(request)
                if final is not None:
                    self.send.send_nowait(final)
                self.send.close()
            else:
                for event in _events_for(request, stage, duration_ms):
                    self.send.send_nowait(event)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            # The consumer left (broke out, timed out or was cancelled) while
            # the request was committing: drop its events.  Raising here would
            # escape from the commit task and kill the engine.
            pass


class EventStream:
    """The stage events of one request (see :meth:`AsyncContextEngine.stream`).

    The request is submitted when the first event is awaited (so a closed
    engine raises :class:`~zerda_async.errors.EngineClosedError` there).
    ``timeout`` covers the whole stream, the consumer's time between events
    included; it raises :class:`TimeoutError` with a note saying where the
    request was.  :meth:`aclose` (or leaving ``async with``) releases it.
    """

    def __init__(
        self, runner: AsyncRunner, make_job: Callable[[], Job], timeout: float | None
    ) -> None:
        self._runner = runner
        self._make_job = make_job
        self._timeout = timeout
        self._deadline = math.inf
        self._request: Request | None = None
        self._send: MemoryObjectSendStream[StageEvent] | None = None
        self._recv: MemoryObjectReceiveStream[StageEvent] | None = None
        self._started = False
        self._closed = False

    @property
    def error(self) -> BaseException | None:
        """The failed request's exception itself, as its stage raised it (type, message, notes).

        What the stream's :class:`~zerda_async.events.ErrorEvent` describes in
        text, for a caller that reports the error itself (the CLI and the
        service do).  ``None`` until the request finished, and for a request
        that succeeded.
        """
        request = self._request
        if request is None or not request.done.is_set():
            return None
        outcome = request.outcome
        return outcome if isinstance(outcome, BaseException) else None

    # -- iteration ----------------------------------------------------------------------

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> StageEvent:
        if self._closed:
            raise StopAsyncIteration
        try:
            if not self._started:
                await self._start()
            event = await self._next_event()
        except TimeoutError as exc:
            add_timeout_note(exc, self._runner, self._request)
            self.close()
            raise
        except BaseException:
            self.close()
            raise
        if event is None:
            self.close()
            raise StopAsyncIteration
        return event

    async def _start(self) -> None:
        self._started = True
        job = self._make_job()
        self._send, self._recv = anyio.create_memory_object_stream[StageEvent](EVENT_BUFFER)
        if self._timeout is not None:
            self._deadline = anyio.current_time() + self._timeout
        with anyio.fail_after(self._remaining()):
            self._request = await self._runner.submit(job, _Sink(self._send))

    async def _next_event(self) -> StageEvent | None:
        request, recv = self._request, self._recv
        assert request is not None and recv is not None
        while True:
            if request.done.is_set():
                # Every event is buffered once the request is done: drain
                # them without a checkpoint.
                try:
                    return recv.receive_nowait()
                except (anyio.EndOfStream, anyio.WouldBlock):
                    return None
            with anyio.fail_after(self._remaining()):
                try:
                    return await recv.receive()
                except anyio.EndOfStream:
                    return None
                except anyio.get_cancelled_exc_class():
                    # The runner's rule, as in run(): a request whose commit
                    # started completes (the stream too); else the caller gives
                    # up, and closing the stream abandons the request.
                    if not await self._runner.see_through(request):
                        raise
                    continue

    def _remaining(self) -> float | None:
        if self._deadline == math.inf:
            return None
        return max(0.0, self._deadline - anyio.current_time())

    # -- release --------------------------------------------------------------------------

    def close(self) -> None:
        """Release the request (abandoned unless its commit started); idempotent."""
        if self._closed:
            return
        self._closed = True
        request = self._request
        if request is not None and not request.done.is_set():
            self._runner.abandon(request)
        for stream in (self._send, self._recv):
            if stream is not None:
                stream.close()

    async def aclose(self) -> None:
        """:meth:`close`, awaitable (for ``contextlib.aclosing`` and generator-style callers)."""
        self.close()

    async def __aenter__(self) -> EventStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __del__(self) -> None:
        # A consumer that broke out of ``async for`` drops the last reference
        # here (on its own thread, CPython refcounting).  close() only calls
        # synchronous anyio methods; if the event loop is gone (interpreter
        # shutdown) there is nothing left to release.
        with contextlib.suppress(Exception):
            self.close()


# -- events ------------------------------------------------------------------------------


def _events_for(request: Request, stage: str, duration_ms: float) -> list[StageEvent]:
    job = request.job
    rid = job.request_id
    # The analysis event goes out once the budget stage has written the
    # budget actually used into the analysis (a cache hit has no budget stage:
    # its analysis, with the analyzer's budget, is final at once).
    from_cache = job.result is not None
    if (stage == "budget" or (stage == "cache_lookup" and from_cache)) and job.analysis is not None:
        a = job.analysis
        return [
            AnalysisEvent(
                request_id=rid,
                duration_ms=job.timings.get("analysis", duration_ms),
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
    if stage == "rerank":
        # Sent once the order is final: after the rerank stage (a no-op without a
        # reranker), timed as ranking and reranking together.
        sources = [
            SourceRef(doc_id=sc.doc_id, source=sc.source, score=sc.composite_score)
            for sc in job.ranked
        ]
        spent = job.timings.get("rank", 0.0) + duration_ms
        return [
            RankedEvent(request_id=rid, duration_ms=spent, count=len(job.ranked), sources=sources)
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
