"""Where stage groups run: inline on the event loop or in worker threads.

:class:`~zerda_async.runtime.OffloadPolicy` decides from measured CPU cost;
:func:`apply_group` runs consecutive stages and measures them.  The thread hop
itself is :func:`zerda_async.runtime.run_in_thread`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from zerda_async.pipeline._job import Job
from zerda_async.pipeline._stages import Stage
from zerda_async.pipeline._state import EngineState
from zerda_async.pipeline._walker import apply_stage, stage_steps
from zerda_async.runtime import OffloadPolicy, Steps, default_threshold_ms

__all__ = ["OffloadPolicy", "apply_group", "default_threshold_ms", "group_steps"]


def apply_group(job: Job, state: EngineState, stages: Sequence[Stage]) -> float:
    """Apply ``stages`` to ``job`` in order; returns the CPU milliseconds they used.

    The offload policy needs the work itself: CPU time of this thread leaves
    out time spent waiting for the GIL, which in a busy worker thread would
    otherwise make cheap work look expensive and keep it off the loop.
    """
    group_start = time.thread_time()
    for stage in stages:
        apply_stage(stage, job, state)
    return (time.thread_time() - group_start) * 1000


def group_steps(job: Job, state: EngineState, stages: Sequence[Stage]) -> Steps[None]:
    """:func:`apply_group` in the stages' pieces (:meth:`Stage.steps`), for a paced run."""
    for stage in stages:
        yield from stage_steps(stage, job, state)
