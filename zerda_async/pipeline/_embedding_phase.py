"""The embedding phase: the query-embedding stage of concurrent requests, micro-batched.

Requests pass through this phase whenever the engine embeds queries ahead
(``state.query_embedder``: any embedder; a plain one runs in a thread hop).
While an embedder call is in flight, newly arriving requests gather for up to
``embed_batch_window`` seconds into one call of at most ``embed_batch_size``
texts; an idle embedder serves a lone request at once (no added latency).

Each call is shared by its requests through an :class:`~._requests.EmbedCall`,
cancelled as soon as one of them is abandoned: a call that has not returned
by then may be hung by that request's own text, so the others are embedded
again one by one.  One bad text never fails the requests it was batched
with (the sync engine embeds each query on its own).
"""

from __future__ import annotations

import time

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from zerda_async.embedders import Embedder
from zerda_async.errors import annotate_stage_error
from zerda_async.pipeline._job import Ahead
from zerda_async.pipeline._requests import EmbedCall, Phase, Request, RunnerSettings
from zerda_async.pipeline._stages import QueryEmbedding
from zerda_async.pipeline._state import EngineState

__all__ = ["EmbeddingPhase"]

_STAGE = QueryEmbedding()


class EmbeddingPhase:
    """Micro-batches the query embeddings of requests, then hands them to speculation."""

    def __init__(self, state: EngineState, settings: RunnerSettings) -> None:
        self.state = state
        self.settings = settings
        self.calls_in_flight = 0

    async def run(
        self,
        recv: MemoryObjectReceiveStream[Request],
        spec_send: MemoryObjectSendStream[Request],
    ) -> None:
        """Gather batches from ``recv``; each batch's call runs as its own task."""
        async with recv, spec_send, anyio.create_task_group() as tg:
            async for first in recv:
                batch = await self._gather(first, recv)
                # Each batch call runs as its own task so the next batch can
                # gather while this one is awaited.  It counts as in flight
                # from now: the requests that arrive before it starts should
                # wait for a batch too.
                self.calls_in_flight += 1
                tg.start_soon(self._embed_batch, batch, spec_send)

    async def _gather(
        self, first: Request, recv: MemoryObjectReceiveStream[Request]
    ) -> list[Request]:
        batch = [first]
        cap = self.settings.embed_batch_size
        embedder = self.state.query_embedder
        if embedder is None or not embedder.batches:
            return batch
        # Take what is already queued; wait the window for more only while
        # other embedder calls are in flight: an idle embedder serves a lone
        # request at once, a busy one lets requests pile up into a batch.
        while len(batch) < cap:
            try:
                batch.append(recv.receive_nowait())
            except (anyio.WouldBlock, anyio.EndOfStream):
                break
        if self.calls_in_flight and len(batch) < cap:
            with anyio.move_on_after(self.settings.embed_batch_window):
                while len(batch) < cap:
                    batch.append(await recv.receive())
        return batch

    async def _embed_batch(
        self, batch: list[Request], spec_send: MemoryObjectSendStream[Request]
    ) -> None:
        try:
            live = [r for r in batch if not r.cancelled]
            embedder = self.state.query_embedder
            if live and embedder is not None:
                await self._embed_live(embedder, live)
        finally:
            self.calls_in_flight -= 1
        for request in batch:
            if request.cancelled:
                request.phase = Phase.QUEUED
                request.speculated.set()
            else:
                request.phase = Phase.WORKER
                spec_send.send_nowait(request)

    async def _embed_live(self, embedder: Embedder, live: list[Request]) -> None:
        started = time.perf_counter()
        epoch = self.state.epoch
        for request in live:
            request.job.ahead = Ahead(query=request.job.query, epoch=epoch)
        call = EmbedCall(live)
        error: Exception | None = None
        embedded = False
        with call.scope:
            try:
                vectors = await embedder.embed_queries([r.job.query for r in live])
            except Exception as exc:
                error = exc
            else:
                for request, vector in zip(live, vectors, strict=True):
                    _embedded(request, vector)
                embedded = True
        if not embedded:
            if error is not None and len(live) == 1:
                _failed(live[0], error)
            else:
                # The shared call failed, or was cancelled because one of its
                # requests gave up: embed the remaining ones alone, concurrently.
                async with anyio.create_task_group() as tg:
                    for request in live:
                        if not request.cancelled:
                            tg.start_soon(self._embed_alone, embedder, request)
        cost = (time.perf_counter() - started) * 1000
        for request in live:
            request.embed_call = None
            request.job.timings[_STAGE.name] = cost

    async def _embed_alone(self, embedder: Embedder, request: Request) -> None:
        """Embed one request's query in a call of its own (cancelled if it gives up)."""
        if request.cancelled:
            # Abandoned after this task was scheduled: abandon() could only
            # cancel the batch call, so the new call must not even start.
            return
        with EmbedCall([request]).scope:
            try:
                vector = (await embedder.embed_queries([request.job.query]))[0]
            except Exception as error:
                _failed(request, error)
            else:
                _embedded(request, vector)


def _embedded(request: Request, vector: object) -> None:
    job = request.job
    job.query_vector = vector
    assert job.ahead is not None
    job.ahead.applied.add(_STAGE.name)


def _failed(request: Request, error: Exception) -> None:
    """Record a failed query embedding: the walk raises it at the query-embedding stage."""
    annotate_stage_error(error, _STAGE.error_name)
    ahead = request.job.ahead
    assert ahead is not None
    ahead.error, ahead.error_stage = error, _STAGE.name
