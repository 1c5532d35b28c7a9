"""The service runs on uvicorn, which is asyncio-only: these tests use asyncio alone."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    """Run the service tests on asyncio only."""
    return "asyncio"
