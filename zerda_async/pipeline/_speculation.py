"""The speculation phase: a request's speculative stages, applied ahead of its commit.

Workers take requests off the speculation stream and apply the speculative
stages (analysis, retrieval, source quality, filter, rank, rerank; the
query embedding is usually applied before, by the embedding phase) for the
raw query, recording them in the job's :class:`~._job.Ahead`.  A stage
marked ``after_cache_miss`` (the reranker's) is left to the walk when the
context cache will answer; after an index change only ``query_only`` work
(the query vector) is kept.  Consecutive sync
stages run as one group, on the event loop, on it in pieces paced by a
:class:`~zerda_async.runtime.LoopPacer` (one slice of pieces per loop
iteration), or in one worker-thread hop, as the
:class:`~._offload.OffloadPolicy` says; a stage that awaits is awaited.

The commit phase calls :meth:`Speculation.apply` again, before a request's
commit, when history enrichment changed the query or the index changed since.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream

from zerda_async.errors import annotate_stage_error
from zerda_async.pipeline._cache_keys import cache_holds
from zerda_async.pipeline._job import Ahead, Job
from zerda_async.pipeline._offload import OffloadPolicy, apply_group, group_steps
from zerda_async.pipeline._requests import Phase, Request
from zerda_async.pipeline._stages import Stage
from zerda_async.pipeline._state import EngineState
from zerda_async.pipeline._walker import apply_stage_async
from zerda_async.runtime import LoopPacer, run_in_thread, thread_pays, timed_steps

__all__ = ["Speculation"]


class Speculation:
    """Applies the speculative stages of requests ahead of their commits."""

    def __init__(
        self,
        state: EngineState,
        stages: Sequence[Stage],
        policy: OffloadPolicy,
        limiter: anyio.CapacityLimiter,
        *,
        loop_pacing: bool | None = None,
    ) -> None:
        self.state = state
        self.stages = tuple(s for s in stages if s.speculative)
        self.policy = policy
        self.limiter = limiter
        # Set by the engine's index lifecycle: the corpus size decides the
        # placement before the policy has measured anything.
        self.corpus_size = 0
        # Set by the runner: True while other requests are in flight, whose
        # inline work would share the loop iteration (the policy's crowded
        # threshold then applies).
        self.crowded: Callable[[], bool] = lambda: False
        # One inline piece of work per loop iteration (runtime._pacing);
        # ``loop_pacing`` None follows the process-wide switch.
        self.pacer = LoopPacer(loop_pacing)
        # True when a crowded group should go to a worker thread, not be
        # paced: a core is free or every core is contended
        # (runtime.thread_pays); tests pin it.
        self.thread_pays: Callable[[], bool] = thread_pays

    async def worker(self, recv: MemoryObjectReceiveStream[Request]) -> None:
        """One speculation worker: apply each request's speculative stages, in arrival order."""
        async with recv:
            async for request in recv:
                if not request.cancelled:
                    await self.apply(request, request.job.query)
                request.phase = Phase.QUEUED
                request.speculated.set()

    async def apply(self, request: Request, query: Any) -> None:
        """Apply the speculative stages not yet applied for ``query``; errors go into ``ahead``.

        ``abandon()`` cancels the request's scope: the caller moves on at
        once instead of waiting for a hung call (whose thread is abandoned).
        """
        job = request.job
        job.effective_query = query
        ahead = self._ahead_for(job, query)
        todo = self._todo(ahead)
        costly = any(s.after_cache_miss and s.awaits(self.state) for s in todo)
        if costly and cache_holds(job, self.state, query):
            # The walk's cache lookup will answer: leave those stages to the walk,
            # which runs them itself should the entry be gone by then.
            todo = [s for s in todo if not s.after_cache_miss]
        request.phase = Phase.SPECULATION
        if not todo:
            return
        try:
            if any(stage.awaits(self.state) for stage in todo) or self._placement()[0]:
                await self._apply_cancellable(request, todo)
            else:
                # One group on the loop: nothing abandon() could interrupt
                # (a paced group checks between its pieces), so no scope.
                await self._run_group(request, todo)
        except Exception as exc:
            failed = next((s for s in todo if s.name not in job.timings), todo[-1])
            annotate_stage_error(exc, failed.error_name)
            ahead.error, ahead.error_stage = exc, failed.name
        finally:
            ahead.applied.update(s.name for s in todo if s.name in job.timings)

    async def _apply_cancellable(self, request: Request, todo: Sequence[Stage]) -> None:
        """Apply ``todo`` in the scope ``abandon()`` cancels (the request then moves on)."""
        with anyio.CancelScope() as scope:
            request.spec_scope = scope
            try:
                await self._apply_stages(request, todo)
            finally:
                request.spec_scope = None

    def _placement(self) -> tuple[bool, bool]:
        """(offload, paced) for the next sync group: a worker thread, or inline and paced.

        Paced: the group costs more than the policy's crowded budget and the
        :class:`~zerda_async.runtime.LoopPacer` is active, so the group runs
        in pieces, one per loop iteration, and may stay inline while its
        largest piece is within the lone-request budget.  Other requests in
        flight or not: a lone request's long group would hold up the caller's
        own timers and sockets just the same.  But while others are in
        flight and a core is free, or every core is contended, the group is
        not paced and goes to a worker thread, whose GIL-free scan then runs
        beside the loop (:func:`~zerda_async.runtime.thread_pays`).
        """
        crowded = self.crowded()
        paced = self.policy.over_crowded_budget() and self.pacer.active()
        if paced and crowded and self.thread_pays():
            paced = False
        return self.policy.should_offload(self.corpus_size, crowded, paced), paced

    def _ahead_for(self, job: Job, query: Any) -> Ahead:
        """The job's speculation record for ``query``, keeping what still holds."""
        old = job.ahead
        epoch = self.state.epoch
        if old is not None and old.query == query and old.epoch == epoch:
            return old
        ahead = Ahead(query=query, epoch=epoch)
        if old is not None and old.query == query and old.error is None:
            # The query vector depends on the query only: an index change
            # does not make it stale.
            ahead.applied = {s.name for s in self.stages if s.name in old.applied and s.query_only}
        # Forget stale timings, so where() names the stage running now.
        for stage in self.stages:
            if stage.name not in ahead.applied:
                job.timings.pop(stage.name, None)
        job.ahead = ahead
        return ahead

    def _todo(self, ahead: Ahead) -> list[Stage]:
        """The speculative stages still to apply, in order, up to a recorded error."""
        todo = []
        for stage in self.stages:
            if ahead.error is not None and stage.name == ahead.error_stage:
                break
            if stage.name not in ahead.applied:
                todo.append(stage)
        return todo

    async def _apply_stages(self, request: Request, stages: Sequence[Stage]) -> None:
        group: list[Stage] = []
        for stage in stages:
            if stage.awaits(self.state):
                await self._run_group(request, group)
                group = []
                await apply_stage_async(stage, request.job, self.state)
            else:
                group.append(stage)
        await self._run_group(request, group)

    async def _run_group(self, request: Request, stages: Sequence[Stage]) -> None:
        """Run consecutive sync stages in a thread hop, inline, or inline in paced pieces.

        The one place that places a group (:meth:`_placement`).  A cancelled
        hop abandons its thread (which finishes its current call on its
        own): only the abandoned request's job is still written to.  A paced
        group stops between two pieces once its request is abandoned.
        """
        if not stages:
            return
        job = request.job
        offload, paced = self._placement()
        if offload and not (self.pacer.active() and self.policy.pieces_in_thread()):
            self.policy.observe(
                await run_in_thread(apply_group, job, self.state, stages, limiter=self.limiter)
            )
        elif offload:
            # Now and then in pieces inside the thread, timed one by one: the
            # policy learns the largest piece, which decides whether a paced
            # run fits (runtime.PIECES_EVERY).
            spent, largest = await run_in_thread(
                _timed_group, job, self.state, stages, limiter=self.limiter
            )
            self.policy.observe(spent, largest)
        elif paced:
            await self._run_paced(request, stages)
        else:
            self.policy.observe(apply_group(job, self.state, stages))

    async def _run_paced(self, request: Request, stages: Sequence[Stage]) -> None:
        """The group in slices of pieces, each slice on a turn of the loop pacer."""
        steps = group_steps(request.job, self.state, stages)
        spent = largest = 0.0
        try:
            while True:
                await self.pacer.turn()
                if request.cancelled:
                    return  # abandoned while waiting: the commit skips it
                piece = timed_steps(steps)
                spent += piece.cost_ms
                largest = max(largest, piece.cost_ms)
                if piece.done:
                    break
        finally:
            steps.close()
        self.policy.observe(spent, largest)


def _timed_group(job: Job, state: EngineState, stages: Sequence[Stage]) -> tuple[float, float]:
    """Run the group in slices of pieces back to back: (CPU ms in all, of the largest slice)."""
    steps = group_steps(job, state, stages)
    spent = largest = 0.0
    while True:
        piece = timed_steps(steps)
        spent += piece.cost_ms
        largest = max(largest, piece.cost_ms)
        if piece.done:
            return spent, largest
