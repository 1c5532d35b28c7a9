"""The thread hop: results, errors, limits, abandoning, and the asyncio worker threads."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time

import anyio
import pytest
from support.engines import wait_until

from zerda_async.runtime import _hop_pool, run_in_thread

pytestmark = pytest.mark.anyio

_REQUEST = contextvars.ContextVar("request", default="none")


def _whoami(tag: str) -> tuple[str, str, str]:
    return tag, threading.current_thread().name, _REQUEST.get()


def _fail(message: str) -> None:
    raise ValueError(message)


async def test_the_call_runs_in_another_thread_with_the_callers_context() -> None:
    _REQUEST.set("r7")
    tag, thread, seen = await run_in_thread(_whoami, "x", limiter=anyio.CapacityLimiter(1))
    assert tag == "x" and seen == "r7"
    assert thread != threading.current_thread().name


async def test_an_exception_reaches_the_caller_unchanged() -> None:
    with pytest.raises(ValueError, match="bad input 3"):
        await run_in_thread(_fail, "bad input 3", limiter=anyio.CapacityLimiter(1))


async def test_at_most_the_limiters_tokens_run_at_once() -> None:
    inside, peak = 0, 0
    lock = threading.Lock()

    def work() -> None:
        nonlocal inside, peak
        with lock:
            inside += 1
            peak = max(peak, inside)
        time.sleep(0.02)
        with lock:
            inside -= 1

    limiter = anyio.CapacityLimiter(2)
    async with anyio.create_task_group() as tg:
        for _ in range(6):
            tg.start_soon(lambda: run_in_thread(work, limiter=limiter))
    assert peak == 2 and limiter.borrowed_tokens == 0


async def test_a_cancelled_caller_abandons_the_thread_and_frees_its_token() -> None:
    entered, release, finished = threading.Event(), threading.Event(), threading.Event()

    def hang() -> str:
        entered.set()
        release.wait(10)
        finished.set()
        return "late"

    limiter = anyio.CapacityLimiter(1)
    with anyio.move_on_after(5) as scope:
        async with anyio.create_task_group() as tg:

            async def cancel_when_inside() -> None:
                await anyio.to_thread.run_sync(entered.wait, 10)
                tg.cancel_scope.cancel()

            tg.start_soon(cancel_when_inside)
            await run_in_thread(hang, limiter=limiter)
    assert not scope.cancelled_caught, "the caller waited for the hung call"
    assert limiter.borrowed_tokens == 0 and not finished.is_set()
    # The token is free at once: the next hop runs while the first still hangs.
    assert (await run_in_thread(_whoami, "next", limiter=limiter))[0] == "next"
    release.set()
    await anyio.to_thread.run_sync(finished.wait, 10)


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_idle_asyncio_workers_exit_after_their_idle_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_hop_pool, "IDLE_SECONDS", 0.05)
    monkeypatch.setattr(_hop_pool, "POLL_SECONDS", 0.02)
    limiter = anyio.CapacityLimiter(1)

    def ident() -> int:
        return threading.get_ident()

    used = {await run_in_thread(ident, limiter=limiter) for _ in range(20)}
    workers = [t for t in threading.enumerate() if t.ident in used]
    assert workers and all(t.name == "zerda-hop" and t.daemon for t in workers)
    await wait_until(lambda: not any(t.is_alive() for t in workers), timeout=5)


# -- threads end with their loop (the loop itself is the test's: these tests are sync) --------


def _threads(idents: set[int]) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.ident in idents]


def _gone_within(threads: list[threading.Thread], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    return not any(t.is_alive() for t in threads)


def test_idle_workers_exit_soon_after_their_loop_closed() -> None:
    """Idle hop threads of a finished ``asyncio.run`` are gone within 2 s, not 10."""

    async def concurrent_hops() -> set[int]:
        limiter = anyio.CapacityLimiter(4)
        used: set[int] = set()

        def record() -> None:
            used.add(threading.get_ident())
            time.sleep(0.02)  # overlap, so several workers start

        async with anyio.create_task_group() as tg:
            for _ in range(8):
                tg.start_soon(lambda: run_in_thread(record, limiter=limiter))
        return used

    workers = _threads(asyncio.run(concurrent_hops()))
    assert len(workers) >= 2 and all(t.name == "zerda-hop" for t in workers)
    assert _gone_within(workers, 2.0), "hop threads outlived their loop"


def test_a_worker_stuck_when_its_loop_closed_exits_when_its_call_returns() -> None:
    """A call abandoned by its caller keeps its thread only until the call returns."""
    release, entered = threading.Event(), threading.Event()
    stuck: set[int] = set()

    def hang() -> None:
        stuck.add(threading.get_ident())
        entered.set()
        release.wait(10)

    async def abandon() -> None:
        with anyio.move_on_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(lambda: run_in_thread(hang, limiter=anyio.CapacityLimiter(1)))
                await anyio.to_thread.run_sync(entered.wait, 5)
                tg.cancel_scope.cancel()

    asyncio.run(abandon())
    workers = _threads(stuck)
    try:
        assert len(workers) == 1 and workers[0].is_alive(), "the stuck call's thread"
    finally:
        release.set()
    assert _gone_within(workers, 1.0), "the thread outlived its call after the loop closed"


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_call_abandoned_before_it_started_is_skipped() -> None:
    ran = threading.Event()
    future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    future.cancel()
    assert _hop_pool._call(future, contextvars.copy_context(), ran.set, ()) is None
    assert not ran.is_set()


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_result_for_a_caller_that_gave_up_is_dropped() -> None:
    loop = asyncio.get_running_loop()
    errors: list[dict[str, object]] = []
    loop.set_exception_handler(lambda _loop, context: errors.append(context))
    try:
        entered, release, done = threading.Event(), threading.Event(), threading.Event()

        def late() -> str:
            entered.set()
            release.wait(10)
            done.set()
            return "late"

        future = _hop_pool.start_call(late)
        await anyio.to_thread.run_sync(entered.wait, 10)
        future.cancel()
        release.set()
        await anyio.to_thread.run_sync(done.wait, 10)
        # The worker delivers to a cancelled future (dropped) and serves the next call.
        tag = (await run_in_thread(_whoami, "after", limiter=anyio.CapacityLimiter(1)))[0]
        assert tag == "after" and future.cancelled()
        await anyio.sleep(0.01)
        assert not errors, errors
    finally:
        loop.set_exception_handler(None)


_FORK_SCRIPT = """
import os, sys, anyio
from zerda_async.runtime import run_in_thread

async def hop():
    with anyio.fail_after(5):  # a hop handed to a thread that does not exist never returns
        return await run_in_thread(int, "7", limiter=anyio.CapacityLimiter(1))

assert anyio.run(hop) == 7  # the parent now has an idle worker thread
pid = os.fork()
if pid == 0:
    os._exit(0 if anyio.run(hop) == 7 else 1)  # the child's hop needs a worker of its own
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def test_a_forked_child_makes_hops_of_its_own() -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _FORK_SCRIPT], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr


_HOP_THREAD_SCRIPT = """
import threading, anyio
from zerda_async.runtime import run_in_thread

async def hop():
    return await run_in_thread(lambda: threading.current_thread().name,
                               limiter=anyio.CapacityLimiter(1))

print(anyio.run(hop))
"""


@pytest.mark.parametrize(
    ("setting", "thread"), [("pool", "zerda-hop"), ("anyio", "AnyIO worker thread")]
)
def test_zerda_thread_hop_picks_the_asyncio_hop(setting: str, thread: str) -> None:
    """``ZERDA_THREAD_HOP`` (read at import) picks the pool or anyio's threads: both benchmarked."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "ZERDA_THREAD_HOP": setting}
    done = subprocess.run(
        [sys.executable, "-c", _HOP_THREAD_SCRIPT], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == thread


def test_a_bad_zerda_thread_hop_names_the_variable() -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, "ZERDA_THREAD_HOP": "threads"}
    done = subprocess.run(
        [sys.executable, "-c", "import zerda_async.runtime"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode != 0
    assert "ZERDA_THREAD_HOP must be 'pool' or 'anyio', got 'threads'" in done.stderr
