"""Loop pacing: one paced piece of inline work per event-loop iteration (asyncio)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import anyio
import pytest

import zerda_async.runtime._offload_policy as offload_policy_module
from zerda_async.runtime import (
    PIECES_EVERY,
    SPARE_CORE,
    LoopPacer,
    OffloadPolicy,
    Steps,
    finish,
    loop_pacing,
    set_loop_pacing,
    spare_core,
    timed_steps,
)

pytestmark = pytest.mark.anyio


@pytest.fixture
def pacing_on() -> Iterator[None]:
    before = loop_pacing()
    set_loop_pacing(True)
    yield
    set_loop_pacing(before)


async def _order_around_a_timer(pacer: LoopPacer) -> list[str]:
    """Take a turn, let a timer fall due, take another: the order things ran in."""
    order: list[str] = []
    loop = asyncio.get_running_loop()
    await pacer.turn()
    order.append("first")
    # A timer falling due while the first group runs.
    loop.call_at(loop.time(), order.append, "timer")
    await pacer.turn()
    order.append("second")
    await asyncio.sleep(0.01)  # let a timer still pending report
    return order


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_second_turn_waits_for_the_timers_due_after_the_first(pacing_on: None) -> None:
    assert LoopPacer().active()
    assert await _order_around_a_timer(LoopPacer()) == ["first", "timer", "second"]


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_switched_off_a_turn_is_given_at_once(pacing_on: None) -> None:
    set_loop_pacing(False)
    assert not LoopPacer().active()
    assert await _order_around_a_timer(LoopPacer()) == ["first", "second", "timer"]


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_turns_alternate_between_tasks_and_all_of_them_run(pacing_on: None) -> None:
    pacer = LoopPacer()
    ran: list[int] = []

    async def group(n: int) -> None:
        for _ in range(3):
            await pacer.turn()
            ran.append(n)

    async with anyio.create_task_group() as tg:
        for n in range(3):
            tg.start_soon(group, n)
    assert sorted(ran) == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    # The first task's first turn is free; from then on, while others wait,
    # turns go round in arrival order: never the same task twice in a row.
    assert ran[1:] == [0, 1, 2, 0, 1, 2, 1, 2]


@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_trio_is_not_paced(pacing_on: None) -> None:
    pacer = LoopPacer()
    assert not LoopPacer().active()
    with anyio.fail_after(5):
        for _ in range(3):
            await pacer.turn()  # returns at once: no second iteration needed


def test_a_bad_pacing_value_is_refused_naming_it() -> None:
    with pytest.raises(TypeError, match="loop pacing must be True or False"):
        set_loop_pacing("on")  # type: ignore[arg-type]


def test_paced_crowded_work_gets_the_lone_budget() -> None:
    policy = OffloadPolicy(None, min_corpus=20_000)
    policy.observe(policy.threshold_ms / 2)  # above the crowded budget, within the lone one
    assert policy.should_offload(100_000, crowded=True)
    assert not policy.should_offload(100_000, crowded=True, paced=True)
    assert not policy.should_offload(100_000)


def test_paced_work_is_judged_by_its_largest_piece() -> None:
    policy = OffloadPolicy(None, min_corpus=20_000)
    # 30 ms in all, in pieces of 2 ms: inline when paced, not otherwise.
    policy.observe(30.0, largest_ms=2.0)
    assert not policy.should_offload(100_000, crowded=True, paced=True)
    assert policy.should_offload(100_000, crowded=True)
    assert policy.should_offload(100_000)
    # A run in one piece says nothing about the pieces: the largest stays.
    policy.observe(30.0)
    assert policy.largest_ms == 2.0
    # Pieces growing past the lone budget send the paced work to a thread.
    for _ in range(20):
        policy.observe(30.0, largest_ms=3 * policy.threshold_ms)
    assert policy.should_offload(100_000, crowded=True, paced=True)


def test_without_pieces_measured_paced_work_is_judged_whole() -> None:
    policy = OffloadPolicy(None, min_corpus=20_000)
    policy.observe(2 * policy.threshold_ms)
    assert policy.largest_ms is None
    assert policy.should_offload(100_000, crowded=True, paced=True)


def _counting(n: int, log: list[int]) -> Steps[int]:
    for i in range(n):
        log.append(i)
        yield
    return n * 10


def test_finish_runs_every_piece_and_returns_the_result() -> None:
    log: list[int] = []
    assert finish(_counting(4, log)) == 40
    assert log == [0, 1, 2, 3]


def test_a_zero_slice_runs_one_piece_at_a_time() -> None:
    log: list[int] = []
    steps = _counting(3, log)
    slices = []
    while True:
        piece = timed_steps(steps, 0.0)
        slices.append(len(log))
        if piece.done:
            break
    # Three pieces, then the return: each slice ran one more piece.
    assert slices == [1, 2, 3, 3]


def test_a_long_slice_runs_every_piece_at_once() -> None:
    log: list[int] = []
    piece = timed_steps(_counting(5, log), 60_000.0)
    assert piece.done
    assert log == [0, 1, 2, 3, 4]
    assert piece.cost_ms >= 0.0


@pytest.mark.parametrize(
    ("free", "spare"), [(2.0, True), (SPARE_CORE, True), (SPARE_CORE / 2, False), (None, False)]
)
def test_a_spare_core_is_one_the_machine_leaves_idle(
    monkeypatch: pytest.MonkeyPatch, free: float | None, spare: bool
) -> None:
    monkeypatch.setattr(offload_policy_module, "free_cores", lambda: free)
    assert spare_core() is spare


def test_offloaded_runs_go_in_pieces_only_to_learn_the_largest() -> None:
    policy = OffloadPolicy(None, min_corpus=20_000)
    # Nothing measured in pieces yet: every offloaded run goes in pieces.
    assert policy.pieces_in_thread()
    policy.observe(30.0)
    assert policy.pieces_in_thread()
    # Once a largest piece is known, one run in PIECES_EVERY goes in pieces.
    policy.observe(30.0, largest_ms=2.0)
    asked = [policy.pieces_in_thread() for _ in range(3 * PIECES_EVERY)]
    assert asked.count(True) == 3
    assert asked[PIECES_EVERY - 1] and not any(asked[: PIECES_EVERY - 1])
