"""The commit phase: one task that walks each request's stage list in submission order.

Everything that reads or writes shared state (cache, histories, adaptive
budget) happens here, one request after another, so concurrent requests
return what running them one by one would.  Before a request's walk, the
phase makes its speculation hold (:meth:`CommitPhase.prepare`); the walk then
keeps the stages applied ahead and applies the others.  Barriers (index
changes, ``clear_cache``) travel on the same stream and apply between commits.

A request that finds the runner idle is committed in its caller's task
instead (:meth:`CommitPhase.process` between :meth:`CommitPhase.hold` and
:meth:`CommitPhase.release`): the phase then waits for that commit before
taking its next item, so the order stays the submission order.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from typing import Any

import anyio
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectReceiveStream

from zerda_async.core.models import ContextResult
from zerda_async.pipeline._cache_keys import cache_holds
from zerda_async.pipeline._job import Job
from zerda_async.pipeline._requests import Barrier, Phase, Request
from zerda_async.pipeline._speculation import Speculation
from zerda_async.pipeline._stages import HistoryEnrichment, Stage
from zerda_async.pipeline._state import EngineState
from zerda_async.pipeline._state_stages import enriched_query
from zerda_async.pipeline._walker import walk
from zerda_async.runtime import SLICE_MS

__all__ = ["CommitPhase"]

_UNKNOWN: Any = object()


class CommitPhase:
    """Commits requests (and applies barriers) in the order they were submitted."""

    def __init__(
        self,
        state: EngineState,
        stages: Sequence[Stage],
        speculation: Speculation,
        finish: Callable[[Request], None],
    ) -> None:
        self.state = state
        self.stages = tuple(stages)
        self.speculation = speculation
        self.finish = finish
        self._enrichment = next((s for s in self.stages if isinstance(s, HistoryEnrichment)), None)
        # Set while a request is committed in its caller's task (see hold()).
        self._inline_done: anyio.Event | None = None
        # Ready commits run back to back for this long before the task yields.
        self.slice_ms = SLICE_MS

    async def run(self, recv: MemoryObjectReceiveStream[Request | Barrier]) -> None:
        """Take requests and barriers off ``recv`` until it is closed and drained."""
        async with recv:
            slice_start = time.perf_counter()
            while True:
                # Commits that are ready run back to back for up to a slice
                # (runtime.SLICE_MS) before the task yields: one yield per
                # commit let the speculation workers run a group each per
                # commit, so commits, and the places they free for new
                # requests, fell behind and the embedder sat idle.  The
                # yield comes before an item is taken, so a cancellation
                # there leaves it on the stream.
                if (time.perf_counter() - slice_start) * 1000 >= self.slice_ms:
                    await anyio.lowlevel.checkpoint()
                    slice_start = time.perf_counter()
                try:
                    item = recv.receive_nowait()
                except anyio.WouldBlock:
                    try:
                        item = await recv.receive()
                    except anyio.EndOfStream:
                        break
                    slice_start = time.perf_counter()
                except anyio.EndOfStream:
                    break
                if self._inline_done is not None:
                    await self._after_inline()
                    slice_start = time.perf_counter()
                if isinstance(item, Barrier):
                    try:
                        item.apply()
                    except Exception as exc:
                        item.error = exc
                    item.done.set()
                    continue
                if not item.speculated.is_set():
                    await item.speculated.wait()
                    slice_start = time.perf_counter()
                await self.process(item)
        await self._after_inline()

    async def process(self, request: Request, *, shield: bool = False) -> None:
        """Prepare and commit ``request`` (skipped when abandoned); it always finishes.

        ``shield``: the commit itself cannot be cancelled (a request committed
        in its caller's task: once its commit started it completes).
        """
        try:
            if request.cancelled:
                return
            await self.prepare(request)
            if request.cancelled:
                return
            request.phase = Phase.COMMIT
            request.committing = True
            # A walk with no stage that awaits cannot be interrupted: no scope needed.
            shielded = shield and self._walk_awaits()
            try:
                with anyio.CancelScope(shield=True) if shielded else nullcontext():
                    request.outcome = await self.commit(request)
            except Exception as exc:
                request.outcome = exc
        finally:
            self.finish(request)

    def hold(self) -> None:
        """Hold the phase's next item back while a request commits in its caller's task.

        Only called when the runner is idle (nothing submitted is pending),
        so that request is next in the submission order; whatever is
        submitted meanwhile waits for :meth:`release`.
        """
        assert self._inline_done is None, "one inline commit at a time"
        self._inline_done = anyio.Event()

    def release(self) -> None:
        """End :meth:`hold`: the phase takes its next item."""
        done, self._inline_done = self._inline_done, None
        if done is not None:
            done.set()

    @property
    def inline_active(self) -> bool:
        """True while a request commits in its caller's task."""
        return self._inline_done is not None

    async def _after_inline(self) -> None:
        while self._inline_done is not None:
            await self._inline_done.wait()

    async def commit(self, request: Request) -> ContextResult:
        """Walk the stage list for ``request``, reporting each stage to its event sink."""
        sink = request.sink
        if sink is None:
            return await walk(request.job, self.state, self.stages)

        def on_stage(name: str, duration_ms: float) -> None:
            sink(request, name, duration_ms)

        return await walk(request.job, self.state, self.stages, on_stage)

    def _walk_awaits(self) -> bool:
        return any(stage.awaits(self.state) for stage in self.stages)

    async def prepare(self, request: Request) -> None:
        """Redo the speculation that history or an index change made stale, before committing.

        Re-running the speculative stages is the only await before a commit.
        Inside the walk it would come after the cache lookup had counted, so
        a caller giving up meanwhile could not leave the engine untouched;
        done here, before any stage touches shared state, ``abandon`` simply
        cancels it and the request is skipped.  Nothing else commits
        meanwhile, so the prediction holds when the walk starts (the walk
        checks again, and applies stale stages itself).
        """
        job = request.job
        effective = self._peek_effective_query(job)
        if effective is _UNKNOWN:
            return  # the walk raises the history stage's error in its place
        ahead = job.ahead
        if ahead is not None and ahead.query == effective and ahead.epoch == self.state.epoch:
            return
        if request.skip_speculation and cache_holds(job, self.state, effective):
            return
        await self.speculation.apply(request, effective)

    def _peek_effective_query(self, job: Job) -> Any:
        """The query the history stage will produce, without changing any state."""
        if self._enrichment is None:
            return job.query
        try:
            return enriched_query(job, self.state)
        except Exception:
            return _UNKNOWN
