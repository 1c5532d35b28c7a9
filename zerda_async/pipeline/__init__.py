"""The pipeline layer: the stage list, the per-request job, the walker and the two runners.

``STAGES`` is the documented run order; :func:`run_job` walks it synchronously (the
sync facade) and :class:`AsyncRunner` runs the same stage objects for many
concurrent requests (the async engine).  Internal: no stability promise.
"""

from zerda_async.pipeline._async_runner import AsyncRunner
from zerda_async.pipeline._job import Job, RunOptions
from zerda_async.pipeline._offload import OffloadPolicy, apply_group
from zerda_async.pipeline._operations import (
    MultiQueryPlan,
    build_context,
    build_multi_query_context,
    compress_context,
    context_stats,
    join_multi_query,
    plan_multi_query,
)
from zerda_async.pipeline._requests import FINISHED, Request, RunnerSettings
from zerda_async.pipeline._stages import STAGES, Stage, build_result
from zerda_async.pipeline._state import EngineState
from zerda_async.pipeline._sync_runner import apply_stage, run_job

__all__ = [
    "FINISHED",
    "STAGES",
    "AsyncRunner",
    "EngineState",
    "Job",
    "MultiQueryPlan",
    "OffloadPolicy",
    "Request",
    "RunOptions",
    "RunnerSettings",
    "Stage",
    "apply_group",
    "apply_stage",
    "build_context",
    "build_multi_query_context",
    "build_result",
    "compress_context",
    "context_stats",
    "join_multi_query",
    "plan_multi_query",
    "run_job",
]
