"""The runner's one cancellation rule, :meth:`AsyncRunner.wait`: abandoned before the commit,
waited for (shielded) once it started."""

from __future__ import annotations

import anyio
import anyio.to_thread
import pytest

from pipeline.helpers import gated_rank, serving
from zerda_async.pipeline import EngineState, make_job

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("committing", [False, True])
async def test_a_waiter_gives_up_before_the_commit_and_sees_it_through_after(
    state: EngineState, committing: bool
) -> None:
    async with serving(state, max_in_flight=4) as runner:
        runner.policy.forced = True  # speculation in a worker thread, held at rank
        with gated_rank(state) as (entered, release):
            request = await runner.submit(make_job("What is BM25?"))
            await anyio.to_thread.run_sync(entered.wait, 10)
            # As the commit task marks a request whose commit it started (the
            # commit itself follows the held speculation).
            request.committing = committing
            async with anyio.create_task_group() as tg:

                async def release_later() -> None:
                    await anyio.sleep(0.1)
                    release.set()

                tg.start_soon(release_later)
                with anyio.move_on_after(0.02) as scope:
                    await runner.wait(request)
        with anyio.fail_after(5):
            while runner.in_flight:
                await anyio.sleep(0.005)
    if committing:
        # Too late to give up: the caller waited for the request that took effect.
        assert not scope.cancelled_caught and not request.cancelled
        assert request.result().context
    else:
        assert scope.cancelled_caught and request.cancelled and request.outcome is None
