"""submit(on_finish=...): called once per request, when it is finished, abandoned or not."""

from __future__ import annotations

import anyio
import pytest

from pipeline.helpers import chunks, serving
from zerda_async.pipeline import EngineState, Request, make_job

pytestmark = pytest.mark.anyio


async def test_on_finish_is_called_once_after_done_for_each_request() -> None:
    state = EngineState()
    finished: list[tuple[int, bool]] = []
    async with serving(state, max_in_flight=8) as runner:
        state.index(chunks())
        requests: list[Request] = []
        for i in range(4):

            def note(i: int = i) -> None:
                finished.append((i, requests[i].done.is_set()))

            requests.append(await runner.submit(make_job(f"question {i} on BM25"), on_finish=note))
        runner.abandon(requests[2])  # abandoned before its commit: finished all the same
        with anyio.fail_after(10):
            for request in requests:
                await request.done.wait()
    assert sorted(finished) == [(0, True), (1, True), (2, True), (3, True)]
    assert requests[0].result().context
