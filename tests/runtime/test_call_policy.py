"""CallPolicy: caller code starts in threads, moves inline after a cheap run, leaves at once.

And ``timed_call``, which measures what such a call cost.
"""

from __future__ import annotations

import math
import time

import pytest

from zerda_async.runtime import CALL_INLINE_MS, CALL_PROBATION, CallPolicy, timed_call


def _cheap(policy: CallPolicy, calls: int) -> None:
    for _ in range(calls):
        policy.observe(CALL_INLINE_MS / 10)


def test_calls_start_in_threads_and_run_inline_after_a_cheap_probation() -> None:
    policy = CallPolicy()
    assert policy.should_offload()  # never measured: a thread
    _cheap(policy, CALL_PROBATION - 1)
    assert policy.should_offload()
    _cheap(policy, 1)
    assert not policy.should_offload()


@pytest.mark.parametrize("slow_ms", [CALL_INLINE_MS * 1.5, 50.0, math.inf])
def test_one_slow_call_sends_the_calls_back_to_threads_for_a_longer_probation(
    slow_ms: float,
) -> None:
    policy = CallPolicy()
    _cheap(policy, CALL_PROBATION)
    policy.observe(slow_ms)  # inf: a thread call its caller gave up on
    assert policy.should_offload()
    assert policy.probation == 2 * CALL_PROBATION
    _cheap(policy, CALL_PROBATION)
    assert policy.should_offload()  # the doubled probation is not over yet
    _cheap(policy, CALL_PROBATION)
    assert not policy.should_offload()
    assert policy.average_ms is not None and math.isfinite(policy.average_ms)


def test_a_slow_call_within_the_probation_restarts_it() -> None:
    policy = CallPolicy(probation=4)
    _cheap(policy, 3)
    policy.observe(CALL_INLINE_MS * 4)
    _cheap(policy, 4)
    assert policy.should_offload()  # 8 cheap calls needed now
    _cheap(policy, 4)
    assert not policy.should_offload()


def test_an_engine_threshold_can_lower_the_budget_but_not_raise_it() -> None:
    assert CallPolicy(threshold_ms=50.0).threshold_ms == CALL_INLINE_MS
    strict = CallPolicy(threshold_ms=0.0, probation=2)
    _cheap(strict, 10)  # every call costs more than 0 ms
    assert strict.should_offload()


@pytest.mark.parametrize("forced", [True, False])
def test_a_pinned_placement_ignores_the_measurements(forced: bool) -> None:
    policy = CallPolicy()
    policy.forced = forced
    assert policy.should_offload() is forced
    _cheap(policy, 4 * CALL_PROBATION)
    assert policy.should_offload() is forced


def _spin(ms: float) -> str:
    end = time.thread_time() + ms / 1000
    while time.thread_time() < end:
        pass
    return "spun"


def _fail(message: str) -> None:
    raise ValueError(message)


def test_a_call_that_waits_costs_its_wall_time_and_a_busy_one_its_cpu_time() -> None:
    result, error, cost = timed_call(time.sleep, 0.005)  # waits: the whole 5 ms count
    assert error is None and cost >= 5.0
    result, error, cost = timed_call(_spin, 2.0)
    assert (result, error) == ("spun", None) and cost >= 2.0


def test_a_failing_call_reports_its_exception_and_its_cost() -> None:
    result, error, cost = timed_call(_fail, "no vector")
    assert result is None and isinstance(error, ValueError) and str(error) == "no vector"
    assert 0.0 <= cost < math.inf
