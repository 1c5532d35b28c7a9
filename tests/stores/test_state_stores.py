"""Session, cache and learning stores: memory, Redis and PostgreSQL behave alike."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import pytest

from zerda_async.core.adaptive import AdaptiveLearningSystem
from zerda_async.core.config import ContextEngineConfig
from zerda_async.stores import (
    LEARNING_WINDOW,
    LearningSample,
    MemoryCacheStore,
    MemoryLearningStore,
    MemorySessionStore,
    PostgresCacheStore,
    PostgresLearningStore,
    PostgresSessionStore,
    RedisCacheStore,
    RedisLearningStore,
    RedisSessionStore,
    StoredTurn,
    apply_window,
)

from .servers import PostgresServer, RedisServer

pytestmark = pytest.mark.anyio

KINDS = ["memory", "redis", "postgresql"]

Opener = Callable[..., Any]


@pytest.fixture
async def stores(request: pytest.FixtureRequest, prefix: str) -> AsyncIterator[Opener]:
    """``stores(kind, role, **options)`` opens a store; all are closed after the test.

    Two stores of one kind share the server and prefix, like two replicas.
    """
    opened: list[Any] = []
    shared_memory: dict[str, Any] = {}
    memory = {
        "session": MemorySessionStore,
        "cache": MemoryCacheStore,
        "learning": MemoryLearningStore,
    }
    redis = {"session": RedisSessionStore, "cache": RedisCacheStore, "learning": RedisLearningStore}
    postgres = {
        "session": PostgresSessionStore,
        "cache": PostgresCacheStore,
        "learning": PostgresLearningStore,
    }

    async def opener(kind: str, role: str, **options: Any) -> Any:
        if kind == "memory":
            if role not in shared_memory:
                shared_memory[role] = memory[role](**options)
            return shared_memory[role]
        if kind == "redis":
            server: RedisServer = request.getfixturevalue("redis_server")
            store = await redis[role].open(server.url, prefix=f"{prefix}:", **options)
        else:
            pg: PostgresServer = request.getfixturevalue("postgres")
            store = await postgres[role].open(pg.url, prefix=prefix, **options)
        opened.append(store)
        return store

    try:
        yield opener
    finally:
        for store in opened:
            await store.aclose()


@pytest.mark.parametrize("kind", KINDS)
async def test_session_turns_and_answers(stores: Any, kind: str) -> None:
    one = await stores(kind, "session", max_turns=3)
    two = await stores(kind, "session", max_turns=3)
    assert await one.set_answer("s1", "nothing yet") is False
    assert await one.turns("s1") == []
    assert await one.append_turn("s1", "first") == 1
    assert await two.set_answer("s1", "answer one") is True
    assert await two.append_turn("s1", "second") == 2
    assert await one.turns("s1") == [StoredTurn("first", "answer one"), StoredTurn("second", "")]
    for query in ["third", "fourth"]:
        await one.append_turn("s1", query)
    assert [t.query for t in await two.turns("s1")] == ["second", "third", "fourth"]
    assert await two.turns("other") == []


@pytest.mark.parametrize("kind", KINDS)
async def test_concurrent_appends_lose_no_turn(stores: Any, kind: str) -> None:
    replicas = [await stores(kind, "session", max_turns=1000) for _ in range(2)]

    async def talk(i: int) -> None:
        await replicas[i % 2].append_turn("shared", f"q{i}")

    async with anyio.create_task_group() as tg:
        for i in range(60):
            tg.start_soon(talk, i)
    turns = await replicas[0].turns("shared")
    assert sorted(t.query for t in turns) == sorted(f"q{i}" for i in range(60))


@pytest.mark.parametrize("kind", KINDS)
async def test_cache_versions_ttl_and_bound(stores: Any, kind: str) -> None:
    cache = await stores(kind, "cache", max_entries=3, ttl_seconds=0.5)
    other = await stores(kind, "cache", max_entries=3, ttl_seconds=0.5)
    await cache.put("q", 1, "context v1")
    assert await other.get("q", 1) == "context v1"
    assert await other.get("q", 2) is None
    await anyio.sleep(0.8)
    assert await cache.get("q", 1) is None
    for i in range(5):
        await cache.put(f"k{i}", 1, f"v{i}")
    kept = [await other.get(f"k{i}", 1) for i in range(5)]
    assert kept[-1] == "v4"
    assert sum(v is not None for v in kept) == 3


@pytest.mark.parametrize("kind", KINDS)
async def test_single_flight_lock_expires(stores: Any, kind: str) -> None:
    one = await stores(kind, "cache")
    two = await stores(kind, "cache")
    if kind == "memory":
        assert await one.acquire("q", 1, 0.3) is True
        assert await one.acquire("q", 1, 0.3) is False
    else:
        assert await one.acquire("q", 1, 0.3) is True
        assert await two.acquire("q", 1, 0.3) is False
        await two.release("q", 1)  # not its lock: left alone
        assert await two.acquire("q", 1, 0.3) is False
        assert await two.acquire("q", 2, 0.3) is True
    await anyio.sleep(1.1)
    assert await two.acquire("q", 1, 5) is True
    await two.release("q", 1)
    assert await one.acquire("q", 1, 5) is True


@pytest.mark.parametrize("kind", KINDS)
async def test_learning_is_aggregated(stores: Any, kind: str) -> None:
    one = await stores(kind, "learning")
    two = await stores(kind, "learning")
    for i in range(LEARNING_WINDOW + 10):
        await (one if i % 2 else two).record(LearningSample(float(i), 100 + i, 3, i % 5 != 0))
    samples, total = await one.window()
    assert total == LEARNING_WINDOW + 10
    assert [s.response_ms for s in samples] == [float(i) for i in range(10, LEARNING_WINDOW + 10)]
    config = ContextEngineConfig()
    learner = AdaptiveLearningSystem(config)
    apply_window(learner, samples, total)
    local = AdaptiveLearningSystem(config)
    for i in range(LEARNING_WINDOW + 10):
        local.record("", None, 100 + i, 3, float(i), i % 5 != 0)
    assert learner.get_performance_report() == local.get_performance_report()
