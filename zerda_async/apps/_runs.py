"""One request through :meth:`AsyncContextEngine.run`, collected with its stage timings.

The command line (``zerda query``) and the HTTP service both need the result
*and* how long each stage took; :func:`run_timed` gathers both through the
request's ``on_stage`` callback (:class:`~zerda_async.pipeline.StageTiming`),
so there is one way to do it.  The result and a failed stage's exception come
back from ``run()`` itself, unchanged.
"""

from __future__ import annotations

import time

import msgspec

from zerda_async.core.models import ContextResult
from zerda_async.engine import AsyncContextEngine
from zerda_async.events import event_name
from zerda_async.pipeline import RunOptions, StageTiming

__all__ = ["STAGE_EVENTS", "TimedResult", "event_name", "run_timed"]

STAGE_EVENTS = ("analysis", "retrieved", "filtered", "ranked", "composed", "guarded")
"""The stage event names, in pipeline order (``done`` or ``error`` follows)."""

_EVENT_OF_STAGE = dict(
    zip(("analysis", "retrieval", "filter", "rank", "compose", "guard"), STAGE_EVENTS, strict=True)
) | {"rerank": "ranked"}
"""The stages whose timings are reported, under the name of their stream event; rank and
rerank both count toward ``ranked``, as the stream's ranked event does."""


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

    The timings are keyed as the stream's events are (``analysis``,
    ``retrieved``, ...); a cache hit reports its lookup, which analysed the
    query, as ``analysis``.  Raises :class:`TimeoutError` past ``timeout``
    seconds, and a failed stage's exception itself (unchanged: its type,
    message and the note that names the stage,
    :func:`zerda_async.errors.failed_stage`).
    """
    started = time.perf_counter()
    timings: dict[str, float] = {}
    seen: list[StageTiming] = []

    def on_stage(done: StageTiming) -> None:
        seen.append(done)
        name = _EVENT_OF_STAGE.get(done.stage)
        if name is not None:
            timings[name] = timings.get(name, 0.0) + done.duration_ms

    hooked = msgspec.structs.replace(options or RunOptions(), on_stage=on_stage)
    result = await engine.run(query, timeout=timeout, options=hooked)
    if result.metadata.get("from_cache") and seen:
        timings["analysis"] = seen[0].duration_ms  # the cache lookup's
    return TimedResult(
        result=result,
        timings_ms=timings,
        request_id=seen[0].request_id if seen else "",
        total_ms=(time.perf_counter() - started) * 1000,
    )
