"""run_placed: the policy places the call, and the call's CPU time moves the policy."""

from __future__ import annotations

import threading
import time

import anyio
import pytest

from zerda_async.runtime import OffloadPolicy, run_placed

pytestmark = pytest.mark.anyio


def _spin(ms: float) -> str:
    """Busy for ``ms`` of CPU time; the name of the thread it ran in."""
    end = time.thread_time() + ms / 1000
    while time.thread_time() < end:
        pass
    return threading.current_thread().name


async def test_small_work_runs_inline_and_costly_work_moves_to_a_thread() -> None:
    loop_thread = threading.current_thread().name
    limiter = anyio.CapacityLimiter(2)
    policy = OffloadPolicy(threshold_ms=5.0, min_corpus=1_000)
    # Before any measurement the size decides: small, so inline.
    assert await run_placed(policy, 10, _spin, 1.0, limiter=limiter) == loop_thread
    assert policy.average_ms is not None and 0.5 < policy.average_ms < 5.0
    # Costly calls raise the measured cost past the threshold: the next one is offloaded.
    for _ in range(8):
        await run_placed(policy, 10, _spin, 20.0, limiter=limiter)
    assert policy.average_ms > 5.0
    assert await run_placed(policy, 10, _spin, 1.0, limiter=limiter) != loop_thread


async def test_a_large_corpus_is_offloaded_before_it_is_measured() -> None:
    policy = OffloadPolicy(threshold_ms=5.0, min_corpus=1_000)
    ran_in = await run_placed(policy, 5_000, _spin, 0.1, limiter=anyio.CapacityLimiter(1))
    assert ran_in != threading.current_thread().name
    assert policy.average_ms is not None and policy.average_ms < 5.0  # the next runs inline
