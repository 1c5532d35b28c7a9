"""Records the async runner keeps per request, its settings and its event-sink protocol."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio

from zerda_async.core.models import ContextResult
from zerda_async.errors import EngineClosedError
from zerda_async.pipeline._job import Job

__all__ = ["FINISHED", "Barrier", "EmbedCall", "EventSink", "Request", "RunnerSettings"]

EventSink = Callable[["Request", str, float], None]
"""Called with (request, stage name, duration ms) as a request's stages complete."""

FINISHED = "finished"
"""The stage name an event sink receives last, once the request has its outcome."""


class RunnerSettings:
    """Tunables of the async runner (all have measured, sensible defaults)."""

    def __init__(
        self,
        *,
        max_in_flight: int = 64,
        workers: int = 2,
        thread_limit: int = 2,
        embed_batch_window: float = 0.002,
        embed_batch_size: int = 64,
        offload_threshold_ms: float = 2.0,
        offload_min_corpus: int = 20_000,
    ) -> None:
        if max_in_flight < 1:
            raise ValueError(f"max_in_flight must be at least 1, got {max_in_flight!r}")
        if workers < 1 or thread_limit < 1:
            raise ValueError("workers and thread_limit must be at least 1")
        if embed_batch_window < 0 or embed_batch_size < 1:
            raise ValueError("embed_batch_window must be >= 0 and embed_batch_size >= 1")
        self.max_in_flight = max_in_flight
        self.workers = workers
        self.thread_limit = thread_limit
        self.embed_batch_window = embed_batch_window
        self.embed_batch_size = embed_batch_size
        self.offload_threshold_ms = offload_threshold_ms
        self.offload_min_corpus = offload_min_corpus


class Request:
    """A job inside the async runner, with its synchronisation and outcome."""

    def __init__(self, job: Job, sink: EventSink | None) -> None:
        self.job = job
        self.sink = sink
        self.done = anyio.Event()
        self.speculated = anyio.Event()
        self.outcome: ContextResult | BaseException | None = None
        self.cancelled = False
        self.committing = False
        self.skip_speculation = False
        self.spec_query: Any = None
        self.spec_version = -1
        self.spec_error: BaseException | None = None
        self.spec_error_stage: str | None = None
        # Set while the commit task re-runs this request's speculation ahead
        # of its commit (see AsyncRunner._prepare); abandon() cancels it.
        self.prepare_scope: anyio.CancelScope | None = None
        # The query's documented cache key while it leads a single flight (the
        # cache key proper may also carry the corpus version, see EngineState).
        self.flight_key: str | None = None
        # Set while a speculation worker runs this request's speculative
        # stages, and while its query embedding call is awaited: abandon()
        # cancels them so a hung dependency does not hold the pipeline.
        self.spec_scope: anyio.CancelScope | None = None
        self.embed_call: EmbedCall | None = None
        # Where the request is ("slot", "embedding", "worker", "speculation",
        # "queued", "commit"); only read to say where a timed-out request was.
        self.phase = "slot"

    def result(self) -> ContextResult:
        """The result, or the exception the request failed with."""
        if isinstance(self.outcome, BaseException):
            raise self.outcome
        if self.outcome is None:
            raise EngineClosedError("the request ended without a result (engine closed)")
        return self.outcome


class EmbedCall:
    """One embedder call, shared by the requests of a micro-batch.

    It is cancelled as soon as one of its requests is abandoned: a call that
    has not returned by then may be hung by that request's own text, so the
    requests still waiting are embedded again one by one (see
    ``AsyncRunner._embed_batch``), and a request alone in its call simply
    stops waiting.
    """

    def __init__(self, requests: list[Request]) -> None:
        self.requests = requests
        self.scope = anyio.CancelScope()
        for request in requests:
            request.embed_call = self

    def abandoned(self) -> None:
        """Called by ``abandon()`` for one of the requests."""
        self.scope.cancel()


class Barrier:
    """An engine-state change ordered among requests (index, clear_cache)."""

    def __init__(self, apply: Callable[[], None]) -> None:
        self.apply = apply
        self.done = anyio.Event()
        self.error: BaseException | None = None
