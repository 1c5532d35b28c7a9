"""Fixtures of the embedder tests: asyncio tests fail if they block the event loop."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from blockbuster import BlockBuster


@pytest.fixture(autouse=True)
def _guard_the_loop(no_blocking_on_the_loop: BlockBuster | None) -> Iterator[None]:
    """Every asyncio test of this directory fails if it blocks the event loop."""
    yield
