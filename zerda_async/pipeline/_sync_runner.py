"""The sync runner: a plain loop over the stage list, used by the sync facade."""

from __future__ import annotations

from collections.abc import Sequence
from time import perf_counter

from zerda_async.core.models import ContextResult
from zerda_async.errors import annotate_stage_error
from zerda_async.pipeline._job import Job
from zerda_async.pipeline._observe import emit_stage_event
from zerda_async.pipeline._stages import STAGES, Stage, build_result
from zerda_async.pipeline._state import EngineState

__all__ = ["apply_stage", "run_job"]


def apply_stage(stage: Stage, job: Job, state: EngineState) -> float:
    """Apply one stage, record its duration in ``job.timings`` and return it (ms).

    An exception propagates unchanged, with a note naming the stage.  Every
    runner applies stages through here.
    """
    started = perf_counter()
    try:
        stage.apply(job, state)
    except Exception as exc:
        annotate_stage_error(exc, stage.name)
        raise
    duration = (perf_counter() - started) * 1000
    job.timings[stage.name] = duration
    return duration


def run_job(job: Job, state: EngineState, stages: Sequence[Stage] = STAGES) -> ContextResult:
    """Run ``job`` through ``stages`` in order and return its result.

    A cache hit ends the loop early.  Exceptions propagate unchanged (the
    documented errors are part of the contract) with a note naming the stage.
    """
    for stage in stages:
        if job.result is not None:
            break
        emit_stage_event(job, stage.name, apply_stage(stage, job, state))
    return build_result(job)
