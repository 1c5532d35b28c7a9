"""Two replicas' session and cache stores on one Redis or PostgreSQL server (session tests)."""

from __future__ import annotations

from typing import Any

from zerda_async.stores import (
    PostgresCacheStore,
    PostgresSessionStore,
    RedisCacheStore,
    RedisSessionStore,
    Stores,
)

__all__ = ["server_stores"]


async def server_stores(kind: str, url: str, prefix: str, opened: list[Any]) -> list[Stores]:
    """Two :class:`Stores` sharing the ``"redis"`` (else PostgreSQL) server at ``url``.

    Every store is appended to ``opened`` as soon as it exists, so the caller
    closes what was opened even when a later one fails.
    """
    stores = []
    for _ in range(2):
        if kind == "redis":
            sessions: Any = RedisSessionStore(url, prefix=prefix)
            opened.append(sessions)
            cache: Any = RedisCacheStore(url, prefix=prefix)
            opened.append(cache)
        else:
            sessions = await PostgresSessionStore.open(url, prefix=prefix)
            opened.append(sessions)
            cache = await PostgresCacheStore.open(url, prefix=prefix)
            opened.append(cache)
        stores.append(Stores(sessions=sessions, cache=cache))
    return stores
