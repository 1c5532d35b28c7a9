"""Runtime helpers below every other layer: how work moves between the loop and threads.

Internal: no stability promise outside zerda-async.
"""

from zerda_async.runtime._call_cost import timed_call
from zerda_async.runtime._cpu_pressure import cpu_pressure
from zerda_async.runtime._offload_policy import (
    CALL_INLINE_MS,
    CALL_PROBATION,
    CONTENDED,
    CROWDED_THRESHOLD_MS,
    OFFLOAD_MIN_CORPUS,
    PIECES_EVERY,
    SPARE_CORE,
    CallPolicy,
    OffloadPolicy,
    default_threshold_ms,
    run_placed,
    spare_core,
    thread_pays,
)
from zerda_async.runtime._pacing import LoopPacer, loop_pacing, set_loop_pacing
from zerda_async.runtime._scan_threads import (
    SMALL_SCAN,
    free_cores,
    scan_blas_threads,
    scan_threads,
    set_scan_blas_threads,
)
from zerda_async.runtime._steps import SLICE_MS, Slice, Steps, finish, timed_steps
from zerda_async.runtime._threads import run_in_thread

__all__ = [
    "CALL_INLINE_MS",
    "CALL_PROBATION",
    "CONTENDED",
    "CROWDED_THRESHOLD_MS",
    "OFFLOAD_MIN_CORPUS",
    "PIECES_EVERY",
    "SLICE_MS",
    "SMALL_SCAN",
    "SPARE_CORE",
    "CallPolicy",
    "LoopPacer",
    "OffloadPolicy",
    "Slice",
    "Steps",
    "cpu_pressure",
    "default_threshold_ms",
    "finish",
    "free_cores",
    "loop_pacing",
    "run_in_thread",
    "run_placed",
    "scan_blas_threads",
    "scan_threads",
    "set_loop_pacing",
    "set_scan_blas_threads",
    "spare_core",
    "thread_pays",
    "timed_call",
    "timed_steps",
]
