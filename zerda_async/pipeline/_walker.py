"""The walker: the one loop over the stage list for one job, used by both runners.

:func:`walk` applies each stage in order — timing it, naming it on an
exception, logging it, reporting it to the runner's ``on_stage`` and to the
request's own (``RunOptions.on_stage``) — and stops
at a cache hit (but for a stage that follows one: a session's turn).  A
stage the async runner already applied ahead (its speculation, see
:class:`~._job.Ahead`) is kept when it still holds and applied again when
not; a stage that must await (a coroutine embedder) is awaited.

:func:`walk` is a coroutine so that one implementation serves both runners:
the sync runner (:func:`run_job`) drives it to completion without an event
loop — no stage awaits there, so the coroutine finishes on its first step —
and the async runner's commit awaits it.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from time import perf_counter
from typing import Any, TypeVar

from zerda_async.core.models import ContextResult
from zerda_async.errors import annotate_stage_error
from zerda_async.pipeline._job import Job, StageHook, StageTiming
from zerda_async.pipeline._observe import emit_stage_event
from zerda_async.pipeline._shared import release_cache_lock
from zerda_async.pipeline._stages import STAGES, Stage, build_result
from zerda_async.pipeline._state import EngineState
from zerda_async.runtime import Steps

__all__ = ["StageCallback", "apply_stage", "run_job", "stage_steps", "walk"]

StageCallback = Callable[[str, float], None]
"""Called with (stage name, duration ms) after each stage of a walk, in order."""

_T = TypeVar("_T")


class _Timed:
    """Times one application of ``stage`` into ``job.timings``; names the stage on an exception.

    A small class rather than ``contextlib.contextmanager``: it runs for
    every stage of every request, and a generator-based manager costs more.
    """

    __slots__ = ("job", "stage", "started")

    def __init__(self, stage: Stage, job: Job) -> None:
        self.stage = stage
        self.job = job
        self.started = 0.0

    def __enter__(self) -> None:
        self.started = perf_counter()

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        # Returns None: the exception, if any, propagates unchanged.  Only an
        # Exception is named (not a cancellation); only a success is timed.
        if exc is None:
            self.job.timings[self.stage.name] = (perf_counter() - self.started) * 1000
        elif isinstance(exc, Exception):
            annotate_stage_error(exc, self.stage.error_name)


def apply_stage(stage: Stage, job: Job, state: EngineState) -> float:
    """Apply one sync stage, record its duration in ``job.timings`` and return it (ms).

    An exception propagates unchanged, with a note naming the stage.  Every
    place that applies a stage (the walk, the async runner's speculation)
    goes through here or :func:`apply_stage_async`.
    """
    with _Timed(stage, job):
        stage.apply(job, state)
    return job.timings[stage.name]


def stage_steps(stage: Stage, job: Job, state: EngineState) -> Steps[float]:
    """:func:`apply_stage` in the stage's pieces (:meth:`Stage.steps`); returns its duration.

    The duration recorded is the sum of the pieces: the time the stage
    worked, not the time it waited between pieces.
    """
    steps = stage.steps(job, state)
    spent = 0.0
    try:
        while True:
            started = perf_counter()
            try:
                next(steps)
            except StopIteration:
                break
            except Exception as exc:
                annotate_stage_error(exc, stage.error_name)
                raise
            finally:
                spent += perf_counter() - started
            yield
    finally:
        steps.close()  # abandoned between pieces: the stage's own generator ends now
    job.timings[stage.name] = spent * 1000
    return job.timings[stage.name]


async def apply_stage_async(stage: Stage, job: Job, state: EngineState) -> float:
    """:func:`apply_stage` for a stage that awaits (``stage.awaits(state)``)."""
    with _Timed(stage, job):
        await stage.apply_async(job, state)
    return job.timings[stage.name]


def _applied_ahead(stage: Stage, job: Job, state: EngineState) -> bool:
    """True when ``stage`` was applied ahead for this job's query and index; raises its error."""
    ahead = job.ahead
    if ahead is None or not stage.speculative:
        return False
    if ahead.query != job.effective_query or ahead.epoch != state.epoch:
        # History enrichment changed the query, or the index changed since:
        # the speculation is stale, and the walk applies the stages itself.
        job.ahead = None
        return False
    if ahead.error is not None and ahead.error_stage == stage.name:
        raise ahead.error
    return stage.name in ahead.applied


async def walk(
    job: Job,
    state: EngineState,
    stages: Sequence[Stage] = STAGES,
    on_stage: StageCallback | None = None,
) -> ContextResult:
    """Run ``job`` through ``stages`` in order and return its result (see the module docstring).

    Exceptions propagate unchanged (the documented errors are part of the
    contract) with a note naming the stage.  An exception of the request's
    ``on_stage`` callback is raised once every stage has run (a stage's own
    exception, raised later in the walk, wins over it).
    """
    hook = job.options.on_stage
    hook_error: Exception | None = None
    try:
        for stage in stages:
            if job.result is not None and not stage.after_hit(job, state):
                continue  # a cache hit ends the run, but for what must follow every request
            if _applied_ahead(stage, job, state):
                duration = job.timings.get(stage.name, 0.0)
            elif stage.awaits(state):
                duration = await apply_stage_async(stage, job, state)
            else:
                duration = apply_stage(stage, job, state)
            emit_stage_event(job, stage.name, duration)
            if on_stage is not None:
                on_stage(stage.name, duration)
            if hook is not None:
                hook_error = _call_hook(hook, job, stage.name, duration)
                if hook_error is not None:
                    hook = None  # the rest of the walk runs without it
    except Exception:
        if job.cache_locked:  # only with a shared cache store: never in the sync runner
            await release_cache_lock(job, state)
        raise
    result = build_result(job)
    if hook_error is not None:
        raise hook_error
    return result


def _call_hook(hook: StageHook, job: Job, stage: str, duration: float) -> Exception | None:
    """Call the request's ``on_stage``; what it raised (with a note), to raise after the walk."""
    try:
        hook(StageTiming(stage, duration, job.request_id))
    except Exception as exc:
        exc.add_note(
            f"zerda-async: raised by the on_stage callback after stage {stage!r}; "
            "the request ran every stage, its result was dropped"
        )
        return exc
    return None


def run_job(job: Job, state: EngineState, stages: Sequence[Stage] = STAGES) -> ContextResult:
    """The sync runner: :func:`walk` driven to completion without an event loop."""
    return _drive(walk(job, state, stages))


def _drive(coroutine: Coroutine[Any, Any, _T]) -> _T:
    """Run a coroutine that never suspends; raise if it tries to (a stage awaited)."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        result: _T = done.value
        return result
    coroutine.close()
    raise RuntimeError("a pipeline stage awaited I/O in the sync runner")
