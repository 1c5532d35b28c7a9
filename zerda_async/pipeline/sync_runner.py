"""The sync runner: a plain loop over the stage list, used by the sync facade."""

from __future__ import annotations

from collections.abc import Sequence
from time import perf_counter

from ..core.models import ContextResult
from .job import Job
from .observe import emit_stage_event
from .stages import STAGES, Stage, build_result
from .state import EngineState

__all__ = ["annotate_stage_error", "apply_stage", "failed_stage", "run_job"]

_NOTE_PREFIX = "zerda-async: raised in pipeline stage "


def annotate_stage_error(exc: BaseException, stage: Stage) -> None:
    """Name the failing stage on the exception without changing its type or message."""
    if failed_stage(exc) is None:
        exc.add_note(f"{_NOTE_PREFIX}{stage.name!r}")


def failed_stage(exc: BaseException) -> str | None:
    """The name of the stage ``exc`` was raised in, if a runner annotated it."""
    for note in getattr(exc, "__notes__", ()):
        if isinstance(note, str) and note.startswith(_NOTE_PREFIX):
            return note[len(_NOTE_PREFIX) :].strip("'")
    return None


def apply_stage(stage: Stage, job: Job, state: EngineState) -> float:
    """Apply one stage, record its duration in ``job.timings`` and return it (ms).

    An exception propagates unchanged, with a note naming the stage.  Every
    runner applies stages through here.
    """
    started = perf_counter()
    try:
        stage.apply(job, state)
    except Exception as exc:
        annotate_stage_error(exc, stage)
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
