"""Redis session, cache and learning stores (redis-py's asyncio client).

* Sessions: one list per session (``{prefix}s:{id}``) of JSON turns.  Appending
  a turn and setting the last answer are Lua scripts, so each is atomic
  across replicas; a session keeps its last ``max_turns`` turns and expires
  ``session_ttl`` seconds after its last write.
* Cache: ``{prefix}c:{version}:{key}`` with a TTL; a sorted set of keys by
  insertion time bounds the entries (a Lua script stores and trims at once).
  The single-flight lock is ``SET NX PX`` with a random token; releasing
  deletes it only if the token is still ours.
* Learning: a list of the last :data:`LEARNING_WINDOW` samples and a counter,
  written together in one MULTI.

Every command runs under ``operation_timeout``; a down, killed or stopped
server raises :class:`~zerda_async.errors.StoreUnavailableError` naming the
store, and the client reconnects on the next command once the server is back.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
import redis.asyncio as aioredis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from ..errors import StoreUnavailableError
from ._memory import LEARNING_WINDOW
from ._pg_common import redact
from ._protocols import LearningSample, StoredTurn

__all__ = ["RedisCacheStore", "RedisLearningStore", "RedisSessionStore"]

_T = TypeVar("_T")

_APPEND = """
redis.call('RPUSH', KEYS[1], ARGV[1])
redis.call('LTRIM', KEYS[1], -tonumber(ARGV[2]), -1)
redis.call('EXPIRE', KEYS[1], ARGV[3])
return redis.call('LLEN', KEYS[1])
"""

_SET_ANSWER = """
local last = redis.call('LINDEX', KEYS[1], -1)
if not last then return 0 end
local turn = cjson.decode(last)
turn['a'] = ARGV[1]
redis.call('LSET', KEYS[1], -1, cjson.encode(turn))
redis.call('EXPIRE', KEYS[1], ARGV[2])
return 1
"""

_PUT = """
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[3], KEYS[1])
local extra = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[4])
if extra > 0 then
  local old = redis.call('ZPOPMIN', KEYS[2], extra)
  for i = 1, #old, 2 do redis.call('DEL', old[i]) end
end
return 1
"""

_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class _RedisBase:
    """A client, the store's name for errors and the timeout around each call."""

    name = "store"

    def __init__(self, url: str, *, prefix: str = "zerda:", operation_timeout: float = 5.0) -> None:
        self.url = url
        self.prefix = prefix
        self.operation_timeout = operation_timeout
        self.client: aioredis.Redis = aioredis.Redis.from_url(
            url,
            socket_timeout=operation_timeout,
            socket_connect_timeout=min(operation_timeout, 5.0),
            decode_responses=True,
        )

    @classmethod
    async def open(cls: type[_S], url: str, **options: Any) -> _S:
        """Connect to ``url`` and check the server answers (a clear error if not)."""
        store = cls(url, **options)
        try:
            await store._call(store.client.ping)
        except BaseException:
            await store.aclose()
            raise
        return store

    async def _call(self, func: Callable[..., Awaitable[_T]], *args: Any) -> _T:
        try:
            with anyio.fail_after(self.operation_timeout):
                return await func(*args)
        except (TimeoutError, RedisTimeoutError) as exc:
            raise StoreUnavailableError(
                self.name, redact(self.url), f"no answer within {self.operation_timeout} s"
            ) from exc
        except (RedisConnectionError, OSError) as exc:
            raise StoreUnavailableError(self.name, redact(self.url), str(exc) or "lost") from exc

    async def aclose(self) -> None:
        """Close the connections."""
        await self.client.aclose()


_S = TypeVar("_S", bound=_RedisBase)


class RedisSessionStore(_RedisBase):
    """Histories in Redis lists; atomic append and set-answer (Lua)."""

    name = "session store"

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "zerda:",
        operation_timeout: float = 5.0,
        max_turns: int = 100,
        session_ttl: int = 7 * 24 * 3600,
    ) -> None:
        super().__init__(url, prefix=prefix, operation_timeout=operation_timeout)
        self.max_turns = max_turns
        self.session_ttl = session_ttl
        self._append = self.client.register_script(_APPEND)
        self._set_answer = self.client.register_script(_SET_ANSWER)

    def _key(self, session_id: str) -> str:
        return f"{self.prefix}s:{session_id}"

    async def append_turn(self, session_id: str, query: str) -> int:
        """Append a turn; the session's turn count (at most ``max_turns``)."""
        turn = json.dumps({"q": query, "a": ""}, ensure_ascii=False)
        args = [turn, self.max_turns, self.session_ttl]
        return int(await self._call(self._append, [self._key(session_id)], args))

    async def set_answer(self, session_id: str, answer: str) -> bool:
        """Set the last turn's answer; False when the session has no turn."""
        args = [answer, self.session_ttl]
        return bool(await self._call(self._set_answer, [self._key(session_id)], args))

    async def turns(self, session_id: str) -> list[StoredTurn]:
        """The session's turns, oldest first."""
        raw = await self._call(self.client.lrange, self._key(session_id), 0, -1)
        return [StoredTurn(t["q"], t["a"]) for t in map(json.loads, raw)]


class RedisCacheStore(_RedisBase):
    """Contexts shared by every replica, per corpus version, bounded, with single flight."""

    name = "cache store"

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "zerda:",
        operation_timeout: float = 5.0,
        max_entries: int = 10_000,
        ttl_seconds: float = 300.0,
    ) -> None:
        super().__init__(url, prefix=prefix, operation_timeout=operation_timeout)
        self.max_entries = max_entries
        self.ttl_seconds = ttl_seconds
        self._token = secrets.token_hex(8)
        self._put = self.client.register_script(_PUT)
        self._release = self.client.register_script(_RELEASE)

    def _key(self, key: str, version: int) -> str:
        return f"{self.prefix}c:{version}:{key}"

    async def get(self, key: str, version: int) -> str | None:
        """The value for ``key`` at ``version``, or None."""
        value = await self._call(self.client.get, self._key(key, version))
        return None if value is None else str(value)

    async def put(self, key: str, version: int, value: str) -> None:
        """Store and trim to ``max_entries`` (oldest first) in one script."""
        keys = [self._key(key, version), f"{self.prefix}c:order"]
        args = [value, int(self.ttl_seconds * 1000), time.time(), self.max_entries]
        await self._call(self._put, keys, args)

    async def acquire(self, key: str, version: int, ttl_seconds: float) -> bool:
        """``SET NX PX``: True when this store now holds the compute lock."""
        lock = f"{self.prefix}l:{version}:{key}"
        done = await self._call(
            self.client.set, lock, self._token, None, max(1, int(ttl_seconds * 1000)), True
        )
        return bool(done)

    async def release(self, key: str, version: int) -> None:
        """Delete the lock if it is still ours."""
        await self._call(self._release, [f"{self.prefix}l:{version}:{key}"], [self._token])


class RedisLearningStore(_RedisBase):
    """The last :data:`LEARNING_WINDOW` samples of every replica, and the total."""

    name = "learning store"

    async def record(self, sample: LearningSample) -> None:
        """Push the sample and count it, in one MULTI."""
        item = json.dumps(
            [sample.response_ms, sample.context_length, sample.chunk_count, sample.guard_passed]
        )

        async def write() -> Any:
            async with self.client.pipeline(transaction=True) as pipe:
                pipe.rpush(f"{self.prefix}w", item)
                pipe.ltrim(f"{self.prefix}w", -LEARNING_WINDOW, -1)
                pipe.incr(f"{self.prefix}n")
                return await pipe.execute()

        await self._call(write)

    async def window(self) -> tuple[list[LearningSample], int]:
        """The shared window (oldest first) and the total recorded."""

        async def read() -> Any:
            async with self.client.pipeline(transaction=True) as pipe:
                pipe.lrange(f"{self.prefix}w", 0, -1)
                pipe.get(f"{self.prefix}n")
                return await pipe.execute()

        raw, total = await self._call(read)
        samples = [
            LearningSample(float(r), int(c), int(n), bool(g)) for r, c, n, g in map(json.loads, raw)
        ]
        return samples, int(total or 0)
