"""Loop pacing: one paced piece of inline work per event-loop iteration (asyncio)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import anyio
import pytest

from zerda_async.runtime import LoopPacer, OffloadPolicy, loop_pacing, set_loop_pacing

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
