"""The pipeline layer: the stage list, the per-request job, the walker and the two runners.

``STAGES`` is the documented run order; :func:`walk` is the one loop over it
for one job; :func:`run_job` drives it synchronously (the sync facade) and
:class:`AsyncRunner` runs the same stage objects for many concurrent requests
(the async engine).  Internal: no stability promise outside zerda-async.
"""

from zerda_async.pipeline._async_runner import AsyncRunner
from zerda_async.pipeline._cache_keys import config_fingerprint, context_key
from zerda_async.pipeline._job import (
    RUN_KEYWORDS,
    Ahead,
    Job,
    RunOptions,
    StageHook,
    StageTiming,
    check_run_keywords,
    make_job,
)
from zerda_async.pipeline._offload import OffloadPolicy, apply_group, default_threshold_ms
from zerda_async.pipeline._operations import (
    MultiQueryPlan,
    build_context,
    build_multi_query_context,
    compress_context,
    context_stats,
    join_multi_query,
    plan_multi_query,
)
from zerda_async.pipeline._requests import FINISHED, Phase, Request, RunnerSettings
from zerda_async.pipeline._shared import LOCK_SECONDS, StoreDown, guarded
from zerda_async.pipeline._stages import STAGES, Stage, build_result
from zerda_async.pipeline._state import Components, EngineState
from zerda_async.pipeline._walker import StageCallback, apply_stage, run_job, walk

__all__ = [
    "FINISHED",
    "LOCK_SECONDS",
    "RUN_KEYWORDS",
    "STAGES",
    "Ahead",
    "AsyncRunner",
    "Components",
    "EngineState",
    "Job",
    "MultiQueryPlan",
    "OffloadPolicy",
    "Phase",
    "Request",
    "RunOptions",
    "RunnerSettings",
    "Stage",
    "StageCallback",
    "StageHook",
    "StageTiming",
    "StoreDown",
    "apply_group",
    "apply_stage",
    "build_context",
    "build_multi_query_context",
    "build_result",
    "check_run_keywords",
    "compress_context",
    "config_fingerprint",
    "context_key",
    "context_stats",
    "default_threshold_ms",
    "guarded",
    "join_multi_query",
    "make_job",
    "plan_multi_query",
    "run_job",
    "walk",
]
