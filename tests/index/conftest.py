"""Fixtures of the index tests: fail any asyncio test that blocks the event loop.

Same guard as ``tests/engine``: ``blockbuster`` turns a blocking call (file
I/O, ``time.sleep``, ...) made on a thread running an asyncio loop into an
error, so saving and loading must do their file I/O in worker threads.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from blockbuster import BlockBuster, blockbuster_ctx


@pytest.fixture(autouse=True)
def no_blocking_on_the_loop(request: pytest.FixtureRequest) -> Iterator[BlockBuster | None]:
    """Activate blockbuster for the asyncio run of each anyio test."""
    if "anyio_backend" not in request.fixturenames:
        yield None
        return
    backend = request.getfixturevalue("anyio_backend")
    name = backend[0] if isinstance(backend, tuple) else backend
    if name != "asyncio":
        yield None
        return
    with blockbuster_ctx() as buster:
        yield buster
