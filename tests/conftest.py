"""Shared fixtures: the anyio backends every async test runs on, and the hypothesis profile."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

# Property-based tests are deterministic by default (CI): a fixed derandomized
# profile with no example database, so every run draws the same examples.
# HYPOTHESIS_PROFILE=dev explores new random examples (and remembers failures)
# while developing.  Tests keep their own max_examples with @settings.
settings.register_profile("ci", derandomize=True, database=None, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(
    params=[
        pytest.param(("asyncio", {}), id="asyncio"),
        pytest.param(("trio", {}), id="trio"),
    ]
)
def anyio_backend(request: pytest.FixtureRequest) -> tuple[str, dict[str, object]]:
    """Run each ``@pytest.mark.anyio`` test on asyncio and on trio."""
    return request.param  # type: ignore[no-any-return]
