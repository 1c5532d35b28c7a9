"""One request through :meth:`AsyncContextEngine.stream`, collected with its stage timings.

The command line (``zerda query``) and the HTTP service both need the result
*and* how long each stage took; :func:`run_timed` gathers both from the stage
events, so there is one way to do it.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any, cast

import msgspec

from zerda_async.core.models import ContextResult
from zerda_async.engine import AsyncContextEngine
from zerda_async.errors import StageFailedError, StoreUnavailableError, ZerdaError
from zerda_async.events import DoneEvent, ErrorEvent, StageEvent, event_name

__all__ = ["STAGE_EVENTS", "TimedResult", "event_name", "run_timed"]

STAGE_EVENTS = ("analysis", "retrieved", "filtered", "ranked", "composed", "guarded")
"""The stage event names, in pipeline order (``done`` or ``error`` follows)."""


class TimedResult(msgspec.Struct):
    """A result, the duration of each stage event in milliseconds, the request id."""

    result: ContextResult
    timings_ms: dict[str, float]
    request_id: str
    total_ms: float


async def run_timed(
    engine: AsyncContextEngine,
    query: str,
    *,
    metadata_filters: dict[str, Any] | None = None,
    max_chunks: int | None = None,
    budget: int | None = None,
    session_id: str | None = None,
    filters: dict[str, Any] | None = None,
    template: str | None = None,
    timeout: float | None = None,
) -> TimedResult:
    """Run ``query`` and collect its stage timings.

    ``filters`` and ``template`` are the run options of the same names
    (restricting filters; this request's template, ``None`` for the engine's).

    Raises :class:`TimeoutError` past ``timeout`` seconds and
    :class:`StageFailedError` when a stage fails.
    """
    started = time.perf_counter()
    timings: dict[str, float] = {}
    events = cast(
        AsyncGenerator[StageEvent, None],
        engine.stream(
            query,
            metadata_filters,
            max_chunks,
            budget,
            session_id=session_id,
            filters=filters,
            template=template,
            timeout=timeout,
        ),
    )
    async with aclosing(events):
        async for event in events:
            if isinstance(event, DoneEvent):
                return TimedResult(
                    result=event.result,
                    timings_ms=timings,
                    request_id=event.request_id,
                    total_ms=(time.perf_counter() - started) * 1000,
                )
            if isinstance(event, ErrorEvent):
                if event.error_type == StoreUnavailableError.__name__:
                    # A store that does not answer is reported as itself (503, naming it).
                    raise _store_error(event.message)
                raise StageFailedError(event.stage, event.error_type, event.message)
            timings[event_name(event)] = event.duration_ms
    raise ZerdaError("the event stream ended without a result")


def _store_error(message: str) -> StoreUnavailableError:
    """The store error again from its message (as a stream's error event carries it)."""
    head, _, problem = message.partition(" is unavailable: ")
    store, _, url = head.partition(" at ")
    return StoreUnavailableError(store, url, problem)
