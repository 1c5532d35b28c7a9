"""Submitting jobs to the async runner and waiting for them: one, many, or a set.

The engine's ``run``, ``run_many`` and ``run_multi`` are thin wrappers over
these.  The cancellation rule (abandoned before its commit started, waited
for once it did) is the runner's: :meth:`AsyncRunner.wait`.  Here: the
deadlines, and a ``TimeoutError``'s note saying where the request was waiting.

``run_one`` lets a request that finds the runner idle run in the caller's
task (``AsyncRunner.try_inline``): the same stages and rules, without the
hand-offs between the phase tasks.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import anyio
import anyio.lowlevel

from zerda_async.core.models import ContextResult
from zerda_async.engine._event_stream import add_timeout_note
from zerda_async.pipeline import AsyncRunner, Job, Request

__all__ = ["run_jobs", "run_one", "submit_all"]


async def run_one(runner: AsyncRunner, job: Job, timeout: float | None) -> ContextResult:
    """Submit ``job``, wait for its outcome and return it (or raise its error)."""
    if timeout is None:  # no deadline: spare the cancel scope (a request at a time adds up)
        return await _run_one(runner, job, [])
    holder: list[Request] = []
    try:
        with anyio.fail_after(timeout):
            return await _run_one(runner, job, holder)
    except TimeoutError as exc:
        # Reliability: say where the request was waiting (RELIABILITY.md).
        add_timeout_note(exc, runner, holder[0] if holder else None)
        raise


async def _run_one(runner: AsyncRunner, job: Job, holder: list[Request]) -> ContextResult:
    # Every run() is a checkpoint, even one that then runs inline without
    # awaiting: a caller's loop of runs lets other tasks in.
    await anyio.lowlevel.checkpoint()
    request = runner.try_inline(job)
    if request is not None:
        holder.append(request)
        await runner.run_inline(request)
    else:
        request = await runner.submit(job)
        holder.append(request)
        await runner.wait(request)  # the runner's cancellation rule
    return request.result()


async def run_jobs(
    runner: AsyncRunner,
    jobs: Iterable[Job],
    concurrency: int,
    timeout: float | None,
    return_exceptions: bool,
) -> list[Any]:
    """Submit ``jobs`` with at most ``concurrency`` in flight; outcomes in order.

    The first failure (in order) is raised after all have finished, unless
    ``return_exceptions`` puts the exceptions in the list.
    """
    limit = anyio.Semaphore(concurrency)
    requests: list[Request] = []
    with anyio.fail_after(timeout):
        try:
            for job in jobs:
                # A free place is taken without yielding, and so is a free
                # slot in submit() (which still honours a cancellation): the
                # places freed in one loop iteration are refilled in one
                # step.  The runner gives the place back when the request
                # finishes (no task per request waits for it).
                try:
                    limit.acquire_nowait()
                except anyio.WouldBlock:
                    await limit.acquire()
                requests.append(await runner.submit(job, on_finish=limit.release))
            for request in requests:
                await request.done.wait()
        except BaseException:
            for request in requests:
                if not request.done.is_set():
                    runner.abandon(request)
            raise
    if return_exceptions:
        return [
            request.outcome if isinstance(request.outcome, BaseException) else request.result()
            for request in requests
        ]
    return [request.result() for request in requests]


async def submit_all(
    runner: AsyncRunner, jobs: Sequence[Job], timeout: float | None
) -> list[Request]:
    """Submit every job, then wait for all; any failure to wait abandons them all."""
    requests: list[Request] = []
    with anyio.fail_after(timeout):
        try:
            for job in jobs:
                requests.append(await runner.submit(job))
            for request in requests:
                await request.done.wait()
        except BaseException:
            for request in requests:
                runner.abandon(request)
            raise
    return requests
