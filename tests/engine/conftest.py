"""Fixtures of the async-engine tests: fail any asyncio test that blocks the event loop.

``blockbuster`` patches the blocking primitives (``time.sleep``, file and
socket I/O, ``os.stat``, a blocking ``threading.Lock.acquire``, ...) so that a
call made *on a thread running an asyncio event loop* raises
``BlockingError``.  Calls made in worker threads (``anyio.to_thread``) are
not affected, so offloading stays allowed; a stage or embedder that blocks
on the loop fails its request, and the test then fails on the wrong outcome
or on the error itself.

It is enabled around every asyncio-backend test of this directory.  Trio has
no asyncio loop, so blockbuster cannot see it: the trio runs of the same
tests still check results, and the asyncio run of each test covers blocking.

Scope: every module is scanned (the engine, the test components and the
libraries underneath), with one exception: pytest-timeout's alarm handler,
which legitimately writes its report from the loop's thread.  Nothing in
the engine or in anyio needed an exemption.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from blockbuster import BlockBuster


@pytest.fixture(autouse=True)
def _guard_the_loop(no_blocking_on_the_loop: BlockBuster | None) -> Iterator[None]:
    """Every asyncio test of this directory fails if it blocks the event loop."""
    yield
