"""Shared fixtures: the anyio backends, the hypothesis profile and the event-loop blocking guard."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from blockbuster import BlockBuster, blockbuster_ctx
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


@pytest.fixture
def no_blocking_on_the_loop(request: pytest.FixtureRequest) -> Iterator[BlockBuster | None]:
    """Fail the asyncio run of an anyio test that blocks the event loop (blockbuster).

    ``blockbuster`` patches the blocking primitives (``time.sleep``, file and
    socket I/O, ``os.stat``, a blocking ``threading.Lock.acquire``, ...) so
    that a call made on a thread running an asyncio loop raises
    ``BlockingError``; worker threads are not affected, so offloading stays
    allowed.  Trio has no asyncio loop, so only the asyncio run of each test
    checks blocking.  Directories opt in with an autouse fixture in their
    conftest.  One exemption: pytest-timeout's alarm handler, which writes
    its report from the loop's thread.
    """
    if "anyio_backend" not in request.fixturenames:
        yield None
        return
    backend = request.getfixturevalue("anyio_backend")
    name = backend[0] if isinstance(backend, tuple) else backend
    if name != "asyncio":
        yield None
        return
    with blockbuster_ctx() as buster:
        # pytest-timeout's SIGALRM handler runs on the loop's thread and writes
        # its report there; without this a hung test would fail with a
        # misleading BlockingError instead of the timeout report.
        for name in ("io.TextIOWrapper.write", "io.BufferedWriter.write", "os.write"):
            buster.functions[name].can_block_in("pytest_timeout.py", {"timeout_sigalrm"})
        yield buster
