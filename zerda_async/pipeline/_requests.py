"""Records the async runner keeps per request, its settings and its event-sink protocol."""

from __future__ import annotations

import enum
from collections.abc import Callable

import anyio

from zerda_async.core.models import ContextResult
from zerda_async.errors import EngineClosedError
from zerda_async.pipeline._job import Job
from zerda_async.runtime import OFFLOAD_MIN_CORPUS

__all__ = ["FINISHED", "Barrier", "EmbedCall", "EventSink", "Phase", "Request", "RunnerSettings"]

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
        offload_threshold_ms: float | None = None,
        offload_min_corpus: int = OFFLOAD_MIN_CORPUS,
        loop_pacing: bool | None = None,
        cheap_embedder_on_loop: bool = False,
    ) -> None:
        if max_in_flight < 1:
            raise ValueError(f"max_in_flight must be at least 1, got {max_in_flight!r}")
        if workers < 1 or thread_limit < 1:
            raise ValueError("workers and thread_limit must be at least 1")
        if embed_batch_window < 0 or embed_batch_size < 1:
            raise ValueError("embed_batch_window must be >= 0 and embed_batch_size >= 1")
        if offload_threshold_ms is not None and not offload_threshold_ms >= 0:
            raise ValueError(f"offload_threshold_ms must be >= 0, got {offload_threshold_ms!r}")
        self.max_in_flight = max_in_flight
        self.workers = workers
        self.thread_limit = thread_limit
        self.embed_batch_window = embed_batch_window
        self.embed_batch_size = embed_batch_size
        self.offload_threshold_ms = offload_threshold_ms
        self.offload_min_corpus = offload_min_corpus
        if loop_pacing is not None and not isinstance(loop_pacing, bool):
            raise TypeError(f"loop_pacing must be None, True or False, got {loop_pacing!r}")
        # None: the process-wide switch (runtime.set_loop_pacing); a bool pins it.
        self.loop_pacing = loop_pacing
        if not isinstance(cheap_embedder_on_loop, bool):
            raise TypeError(
                f"cheap_embedder_on_loop must be True or False, got {cheap_embedder_on_loop!r}"
            )
        # Off: a plain query embedder always runs in a worker thread (the safe rule).
        self.cheap_embedder_on_loop = cheap_embedder_on_loop


class Phase(enum.Enum):
    """Where a request is in the async runner; only read to say where a timed-out one was."""

    SLOT = "slot"  # waiting for an in-flight slot
    EMBEDDING = "embedding"  # its query embedding is being computed
    WORKER = "worker"  # queued for a speculation worker
    SPECULATION = "speculation"  # its speculative stages are running
    QUEUED = "queued"  # waiting for earlier requests to commit
    COMMIT = "commit"  # its commit (the walk over the stage list) is running


class Request:
    """A job inside the async runner, with its synchronisation and outcome."""

    def __init__(self, job: Job, sink: EventSink | None) -> None:
        self.job = job
        self.sink = sink
        self.done = anyio.Event()
        # Set once the request's speculation is over (or skipped): the commit
        # task waits for it before committing the request.
        self.speculated = anyio.Event()
        self.outcome: ContextResult | BaseException | None = None
        self.cancelled = False
        self.committing = False
        # Committed in its caller's task (the runner was idle), not by the
        # commit phase: see AsyncRunner.try_inline.
        self.inline = False
        # A single-flight follower: an identical cache miss is in flight ahead
        # of it, so it skips speculation and most likely hits the cache.
        self.skip_speculation = False
        # The query's documented cache key while it leads a single flight (the
        # cache key proper may also carry the corpus version, see EngineState).
        self.flight_key: str | None = None
        # Cancelled by abandon(): the scope of the speculation running for this
        # request (in a worker or ahead of its commit) and its embedder call,
        # so a hung dependency does not hold the pipeline.
        self.spec_scope: anyio.CancelScope | None = None
        self.embed_call: EmbedCall | None = None
        # Called once when the request finishes (AsyncRunner.submit's on_finish).
        self.on_finish: Callable[[], None] | None = None
        self.phase = Phase.SLOT

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
