"""Session, cache and learning stores in PostgreSQL, for a deployment with one dependency.

* Sessions: one row per turn; appending and setting the answer each run in
  a transaction holding an advisory lock on the session, so concurrent
  replicas never lose or misnumber a turn.  Only the last ``max_turns`` stay.
* Cache: rows by (key, version) with an expiry; writes trim to
  ``max_entries`` (oldest first).  The single-flight lock is a row with a
  holder and an expiry, taken by an upsert that only wins over an expired one.
* Learning: one row per sample (the last :data:`LEARNING_WINDOW` are kept)
  and a total.
"""

from __future__ import annotations

import secrets
from typing import Any, TypeVar

from ._memory import LEARNING_WINDOW
from ._pg_common import PgPool, migrate, valid_prefix
from ._protocols import LearningSample, StoredTurn

__all__ = ["PostgresCacheStore", "PostgresLearningStore", "PostgresSessionStore"]

STATE_SCHEMA: tuple[tuple[str, ...], ...] = (
    (
        "CREATE TABLE {p}turns (session_id text NOT NULL, turn int NOT NULL,"
        " query text NOT NULL, answer text NOT NULL DEFAULT '', PRIMARY KEY (session_id, turn))",
        "CREATE TABLE {p}cache (key text NOT NULL, version bigint NOT NULL, value text NOT NULL,"
        " stored_at timestamptz NOT NULL DEFAULT clock_timestamp(),"
        " expires_at timestamptz NOT NULL, PRIMARY KEY (key, version))",
        "CREATE INDEX {p}cache_stored ON {p}cache (stored_at)",
        "CREATE TABLE {p}cache_locks (key text NOT NULL, version bigint NOT NULL,"
        " holder text NOT NULL, expires_at timestamptz NOT NULL, PRIMARY KEY (key, version))",
        "CREATE TABLE {p}samples (id bigserial PRIMARY KEY, response_ms float8 NOT NULL,"
        " context_length int NOT NULL, chunk_count int NOT NULL, guard_passed bool NOT NULL)",
    ),
)

_S = TypeVar("_S", bound="_PgStateBase")


class _PgStateBase:
    name = "store"

    def __init__(self, url: str, *, prefix: str = "zerda_", operation_timeout: float = 5.0) -> None:
        self.prefix = valid_prefix(prefix)
        self._pg = PgPool(url, self.name, max_size=4, operation_timeout=operation_timeout)

    @classmethod
    async def open(cls: type[_S], url: str, **options: Any) -> _S:
        """Connect, create or migrate the tables, open the pool."""
        store = cls(url, **options)
        await store._pg.run_once(lambda conn: migrate(conn, store.prefix, STATE_SCHEMA, "state"))
        await store._pg.open()
        return store

    async def aclose(self) -> None:
        """Close the pool."""
        await self._pg.close()


class PostgresSessionStore(_PgStateBase):
    """Histories as rows; atomic per session (advisory transaction lock)."""

    name = "session store"

    def __init__(self, url: str, *, max_turns: int = 100, **options: Any) -> None:
        super().__init__(url, **options)
        self.max_turns = max_turns

    async def append_turn(self, session_id: str, query: str) -> int:
        """Append a turn; the session's turn count (at most ``max_turns``)."""
        p = self.prefix
        async with self._pg.connection() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (p + session_id,))
            cur = await conn.execute(
                f"INSERT INTO {p}turns (session_id, turn, query) SELECT %s,"
                f" coalesce(max(turn), 0) + 1, %s FROM {p}turns WHERE session_id = %s"
                " RETURNING turn",
                (session_id, query, session_id),
            )
            row = await cur.fetchone()
            assert row is not None
            await conn.execute(
                f"DELETE FROM {p}turns WHERE session_id = %s AND turn <= %s",
                (session_id, int(row[0]) - self.max_turns),
            )
            return min(int(row[0]), self.max_turns)

    async def set_answer(self, session_id: str, answer: str) -> bool:
        """Set the last turn's answer; False when the session has no turn."""
        p = self.prefix
        async with self._pg.connection() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (p + session_id,))
            cur = await conn.execute(
                f"UPDATE {p}turns SET answer = %s WHERE session_id = %s AND turn ="
                f" (SELECT max(turn) FROM {p}turns WHERE session_id = %s)",
                (answer, session_id, session_id),
            )
            return cur.rowcount == 1

    async def turns(self, session_id: str) -> list[StoredTurn]:
        """The session's turns, oldest first."""
        async with self._pg.connection() as conn:
            cur = await conn.execute(
                f"SELECT query, answer FROM {self.prefix}turns WHERE session_id = %s ORDER BY turn",
                (session_id,),
            )
            return [StoredTurn(q, a) for q, a in await cur.fetchall()]


class PostgresCacheStore(_PgStateBase):
    """Contexts by (key, version) with expiry, a size bound and expiring compute locks."""

    name = "cache store"

    def __init__(
        self, url: str, *, max_entries: int = 10_000, ttl_seconds: float = 300.0, **options: Any
    ) -> None:
        super().__init__(url, **options)
        self.max_entries = max_entries
        self.ttl_seconds = ttl_seconds
        self._token = secrets.token_hex(8)

    async def get(self, key: str, version: int) -> str | None:
        """The unexpired value for ``key`` at ``version``."""
        async with self._pg.connection() as conn:
            cur = await conn.execute(
                f"SELECT value FROM {self.prefix}cache WHERE key = %s AND version = %s"
                " AND expires_at > clock_timestamp()",
                (key, version),
            )
            row = await cur.fetchone()
        return None if row is None else str(row[0])

    async def put(self, key: str, version: int, value: str) -> None:
        """Upsert, then trim to ``max_entries`` (oldest first)."""
        p = self.prefix
        async with self._pg.connection() as conn, conn.transaction():
            await conn.execute(
                f"INSERT INTO {p}cache (key, version, value, expires_at) VALUES"
                " (%s, %s, %s, clock_timestamp() + make_interval(secs => %s))"
                " ON CONFLICT (key, version) DO UPDATE SET value = EXCLUDED.value,"
                " stored_at = clock_timestamp(), expires_at = EXCLUDED.expires_at",
                (key, version, value, self.ttl_seconds),
            )
            await conn.execute(
                f"DELETE FROM {p}cache WHERE (key, version) IN (SELECT key, version FROM {p}cache"
                " ORDER BY stored_at DESC OFFSET %s)",
                (self.max_entries,),
            )

    async def acquire(self, key: str, version: int, ttl_seconds: float) -> bool:
        """Take the lock unless another holder's lock has not expired."""
        async with self._pg.connection() as conn:
            cur = await conn.execute(
                f"INSERT INTO {self.prefix}cache_locks AS l VALUES (%s, %s, %s,"
                " clock_timestamp() + make_interval(secs => %s))"
                " ON CONFLICT (key, version) DO UPDATE SET holder = EXCLUDED.holder,"
                " expires_at = EXCLUDED.expires_at WHERE l.expires_at <= clock_timestamp()"
                " RETURNING holder",
                (key, version, self._token, ttl_seconds),
            )
            return await cur.fetchone() is not None

    async def release(self, key: str, version: int) -> None:
        """Drop the lock if it is still ours."""
        async with self._pg.connection() as conn:
            await conn.execute(
                f"DELETE FROM {self.prefix}cache_locks WHERE key = %s AND version = %s"
                " AND holder = %s",
                (key, version, self._token),
            )


class PostgresLearningStore(_PgStateBase):
    """Samples of every replica; the window is the last :data:`LEARNING_WINDOW` rows."""

    name = "learning store"

    async def record(self, sample: LearningSample) -> None:
        """Insert the sample and drop rows older than the window."""
        p = self.prefix
        async with self._pg.connection() as conn:
            cur = await conn.execute(
                f"INSERT INTO {p}samples (response_ms, context_length, chunk_count, guard_passed)"
                " VALUES (%s, %s, %s, %s) RETURNING id",
                (
                    sample.response_ms,
                    sample.context_length,
                    sample.chunk_count,
                    sample.guard_passed,
                ),
            )
            row = await cur.fetchone()
            assert row is not None
            await conn.execute(
                f"DELETE FROM {p}samples WHERE id <= %s", (int(row[0]) - 4 * LEARNING_WINDOW,)
            )

    async def window(self) -> tuple[list[LearningSample], int]:
        """The last samples (oldest first) and the total recorded (ids are never reused)."""
        p = self.prefix
        async with self._pg.connection() as conn:
            cur = await conn.execute(
                f"SELECT response_ms, context_length, chunk_count, guard_passed, id FROM"
                f" (SELECT * FROM {p}samples ORDER BY id DESC LIMIT %s) w ORDER BY id",
                (LEARNING_WINDOW,),
            )
            rows = await cur.fetchall()
            cur = await conn.execute(f"SELECT last_value, is_called FROM {p}samples_id_seq")
            seq = await cur.fetchone()
        total = 0 if seq is None or not seq[1] else int(seq[0])
        return [LearningSample(float(r), int(c), int(n), bool(g)) for r, c, n, g, _ in rows], total
