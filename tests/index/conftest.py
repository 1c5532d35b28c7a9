"""Fixtures of the index tests: fail any asyncio test that blocks the event loop.

Same guard as ``tests/engine``: ``blockbuster`` turns a blocking call (file
I/O, ``time.sleep``, ...) made on a thread running an asyncio loop into an
error, so saving and loading must do their file I/O in worker threads.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from blockbuster import BlockBuster


@pytest.fixture(autouse=True)
def _guard_the_loop(no_blocking_on_the_loop: BlockBuster | None) -> Iterator[None]:
    """Every asyncio test of this directory fails if it blocks the event loop."""
    yield
