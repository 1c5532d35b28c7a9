"""One request through :meth:`AsyncContextEngine.stream`, collected with its stage timings.

The command line (``zerda query``) and the HTTP service both need the result
*and* how long each stage took; :func:`run_timed` gathers both from the stage
events, so there is one way to do it.
"""

from __future__ import annotations

import time

import msgspec

from zerda_async.core.models import ContextResult
from zerda_async.engine import AsyncContextEngine
from zerda_async.errors import ZerdaError
from zerda_async.events import DoneEvent, ErrorEvent, event_name
from zerda_async.pipeline import RunOptions

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
    options: RunOptions | None = None,
    *,
    timeout: float | None = None,
) -> TimedResult:
    """Run ``query`` with ``options`` (one :class:`RunOptions`) and collect its stage timings.

    Raises :class:`TimeoutError` past ``timeout`` seconds, and a failed
    stage's exception itself (unchanged: its type, message and the note that
    names the stage, :func:`zerda_async.errors.failed_stage`).
    """
    started = time.perf_counter()
    timings: dict[str, float] = {}
    events = engine.stream(query, timeout=timeout, options=options)
    async with events:
        async for event in events:
            if isinstance(event, DoneEvent):
                return TimedResult(
                    result=event.result,
                    timings_ms=timings,
                    request_id=event.request_id,
                    total_ms=(time.perf_counter() - started) * 1000,
                )
            if isinstance(event, ErrorEvent):
                # The stage's own exception, unchanged (its note names the
                # stage): the CLI and the service report it by its type.
                error = events.error
                assert error is not None, "an error event comes with its request's exception"
                raise error
            timings[event_name(event)] = event.duration_ms
    raise ZerdaError("the event stream ended without a result")
