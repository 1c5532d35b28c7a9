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
    limiter = anyio.CapacityLimiter(1)

    def ident() -> int:
        return threading.get_ident()

    used = {await run_in_thread(ident, limiter=limiter) for _ in range(20)}
    workers = [t for t in threading.enumerate() if t.ident in used]
    assert workers and all(t.name == "zerda-hop" and t.daemon for t in workers)
    await wait_until(lambda: not any(t.is_alive() for t in workers), timeout=5)


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
