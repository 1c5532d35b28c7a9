"""What the PostgreSQL stores share: the pool, error translation and the schema migrator.

psycopg's async client runs on asyncio only, so these stores do too.  Every
operation runs under ``operation_timeout``; a dead, stopped or unreachable
server becomes :class:`~zerda_async.errors.StoreUnavailableError` naming the
store, and the pool replaces broken connections by itself (each connection
is checked before it is handed out), so the store recovers without a restart.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import anyio
import psycopg
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from ..errors import StoreSchemaError, StoreUnavailableError
from ._urls import redact

__all__ = ["PgPool", "redact", "valid_prefix"]


def valid_prefix(prefix: str) -> str:
    """A table-name prefix made of lower-case letters, digits and underscores."""
    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,30}", prefix):
        raise ValueError(f"table prefix {prefix!r}: use lower-case letters, digits and '_'")
    return prefix


class PgPool:
    """A connection pool plus the store name used in every error."""

    def __init__(
        self,
        url: str,
        store: str,
        *,
        max_size: int = 4,
        operation_timeout: float = 10.0,
        connect_timeout: float = 5.0,
        configure: Callable[[psycopg.AsyncConnection[Any]], Any] | None = None,
    ) -> None:
        self.url = url
        self.store = store
        self.operation_timeout = operation_timeout
        self.connect_timeout = connect_timeout
        self.pool: AsyncConnectionPool[psycopg.AsyncConnection[Any]] = AsyncConnectionPool(
            url,
            min_size=1,
            max_size=max_size,
            open=False,
            timeout=operation_timeout,
            kwargs={"connect_timeout": max(1, int(connect_timeout)), "autocommit": True},
            configure=configure,
            check=AsyncConnectionPool.check_connection,
            reconnect_timeout=0,
            name=store,
        )

    def unavailable(self, problem: object) -> StoreUnavailableError:
        """The error naming this store."""
        text = (
            str(problem).strip().splitlines()[0] if str(problem).strip() else type(problem).__name__
        )
        return StoreUnavailableError(self.store, redact(self.url), text)

    async def open(self) -> None:
        """Open the pool, failing with a clear error when the server does not answer."""
        try:
            with anyio.fail_after(self.connect_timeout + 1):
                await self.pool.open(wait=True, timeout=self.connect_timeout)
        except (PoolTimeout, psycopg.OperationalError, TimeoutError) as exc:
            await self.pool.close(timeout=1)
            raise self.unavailable(exc) from exc

    async def run_once(
        self, work: Callable[[psycopg.AsyncConnection[Any]], Awaitable[Any]]
    ) -> None:
        """``work(conn)`` on a connection of its own, before the pool opens (migrations)."""
        try:
            with anyio.fail_after(self.connect_timeout + self.operation_timeout):
                conn = await psycopg.AsyncConnection.connect(
                    self.url, autocommit=True, connect_timeout=max(1, int(self.connect_timeout))
                )
                async with conn:
                    await work(conn)
        except TimeoutError as exc:
            raise self.unavailable("no answer in time") from exc
        except psycopg.OperationalError as exc:
            raise self.unavailable(exc) from exc

    @contextlib.asynccontextmanager
    async def connection(
        self, timeout: float | None = None
    ) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """A pooled connection for one operation, under ``timeout`` (the operation timeout)."""
        limit = self.operation_timeout if timeout is None else timeout
        try:
            with anyio.fail_after(limit):
                async with self.pool.connection() as conn:
                    yield conn
        except TimeoutError as exc:
            raise self.unavailable(f"no answer within {limit:g} s") from exc
        except (PoolTimeout, psycopg.OperationalError, psycopg.InterfaceError) as exc:
            raise self.unavailable(exc) from exc

    async def close(self) -> None:
        """Close every connection."""
        await self.pool.close(timeout=2)


async def migrate(
    conn: psycopg.AsyncConnection[Any],
    prefix: str,
    steps: Sequence[Sequence[str]],
    component: str,
) -> int:
    """Bring the ``component`` schema to ``len(steps)``; returns the version it found.

    ``{p}schema_version`` holds one row per component; an advisory lock makes
    concurrent first starts of several replicas migrate once.  A version newer
    than this code raises :class:`StoreSchemaError`.
    """
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (prefix + component,))
        await conn.execute(
            f"CREATE TABLE IF NOT EXISTS {prefix}schema_version"
            " (component text PRIMARY KEY, version int NOT NULL)"
        )
        cur = await conn.execute(
            f"SELECT version FROM {prefix}schema_version WHERE component = %s", (component,)
        )
        row = await cur.fetchone()
        current = 0 if row is None else int(row[0])
        if current > len(steps):
            raise StoreSchemaError(
                f"{component} schema version {current} is newer than this code ({len(steps)})"
            )
        for number in range(current + 1, len(steps) + 1):
            for statement in steps[number - 1]:
                await conn.execute(statement.format(p=prefix))
        await conn.execute(
            f"INSERT INTO {prefix}schema_version VALUES (%s, %s)"
            " ON CONFLICT (component) DO UPDATE SET version = EXCLUDED.version",
            (component, len(steps)),
        )
    return current
