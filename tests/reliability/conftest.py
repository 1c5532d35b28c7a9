"""Fixtures of the reliability tests: fail any asyncio test that blocks the event loop.

The guard is the shared ``no_blocking_on_the_loop`` fixture of ``tests/conftest.py``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from blockbuster import BlockBuster


@pytest.fixture(autouse=True)
def _guard_the_loop(no_blocking_on_the_loop: BlockBuster | None) -> Iterator[None]:
    """Every asyncio test of this directory fails if it blocks the event loop."""
    yield
