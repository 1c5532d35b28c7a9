"""Shared fixtures: the anyio backends every async test runs on."""

from __future__ import annotations

import pytest


@pytest.fixture(
    params=[
        pytest.param(("asyncio", {}), id="asyncio"),
        pytest.param(("trio", {}), id="trio"),
    ]
)
def anyio_backend(request: pytest.FixtureRequest) -> tuple[str, dict[str, object]]:
    """Run each ``@pytest.mark.anyio`` test on asyncio and on trio."""
    return request.param  # type: ignore[no-any-return]
