"""Faults on real servers: down at start-up, killed or stopped mid-request, killed mid-update.

Each test here owns its server (they are killed); the store object is never
recreated: it must raise a clear error naming itself, then recover on its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import psycopg
import pytest

from zerda_async.errors import StoreUnavailableError
from zerda_async.stores import PostgresIndexStore, RedisSessionStore

from .corpus import Doc, demo_docs, embed, synthetic_docs
from .servers import PostgresServer, RedisServer, free_port

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def own_postgres() -> Iterator[PostgresServer]:
    server = PostgresServer()
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path)
    try:
        server.start()
        yield server
    finally:
        server.stop()


async def test_down_at_start_up_names_the_store() -> None:
    url = f"postgresql://postgres@127.0.0.1:{free_port()}/postgres"
    with pytest.raises(StoreUnavailableError, match=r"^index store at postgresql://") as info:
        await PostgresIndexStore.open(url, connect_timeout=1)
    assert info.value.store == "index store"
    with pytest.raises(StoreUnavailableError, match=r"^session store at redis://"):
        await RedisSessionStore.open(f"redis://127.0.0.1:{free_port()}/0", operation_timeout=1)


async def test_postgres_killed_then_back(own_postgres: PostgresServer, prefix: str) -> None:
    docs = demo_docs()[:20]
    store = await PostgresIndexStore.open(own_postgres.url, prefix=prefix, operation_timeout=3)
    try:
        await store.add(docs, embed(docs))
        own_postgres.kill()
        with anyio.fail_after(10), pytest.raises(StoreUnavailableError, match=r"^index store"):
            await store.keyword_search("coffee", 5)
        own_postgres.start()
        with anyio.fail_after(20):
            while True:
                try:
                    hits = await store.keyword_search("coffee", 5)
                    break
                except StoreUnavailableError:
                    await anyio.sleep(0.2)
        assert hits and await store.count() == 20
    finally:
        await store.aclose()


@pytest.mark.parametrize(
    "options",
    [{}, {"search": "local", "local_poll": 0}],
    ids=["in PostgreSQL", "local copy"],
)
async def test_postgres_stopped_times_out_then_recovers(
    own_postgres: PostgresServer, prefix: str, options: dict[str, Any]
) -> None:
    """A local copy too fails at its next version check rather than answer unchecked."""
    docs = demo_docs()[:10]
    store = await PostgresIndexStore.open(
        own_postgres.url, prefix=prefix, operation_timeout=1.5, **options
    )
    try:
        await store.add(docs, embed(docs))
        with (
            own_postgres.stopped(),
            anyio.fail_after(8),
            pytest.raises(StoreUnavailableError, match=r"within 1\.5 s"),
        ):
            await store.keyword_search("nile", 5)
        with anyio.fail_after(20):
            while True:
                try:
                    assert await store.count() == 10
                    break
                except StoreUnavailableError:
                    await anyio.sleep(0.2)
        assert [h.chunk.doc_id for h in await store.keyword_search("budget", 5)][:1] == ["rag-002"]
    finally:
        await store.aclose()


async def test_searches_queued_on_a_local_copys_check_fail_with_it(
    own_postgres: PostgresServer, prefix: str
) -> None:
    """Searches arriving while a check of a stopped server is in flight fail with it."""
    docs = demo_docs()[:10]
    store = await PostgresIndexStore.open(
        own_postgres.url, prefix=prefix, operation_timeout=2.0, search="local", local_poll=0
    )
    errors: list[str] = []

    async def search() -> None:
        try:
            await store.keyword_search("budget", 5)
        except StoreUnavailableError as exc:
            errors.append(str(exc))

    try:
        await store.add(docs, embed(docs))
        with own_postgres.stopped():
            # All arrive within the first check's 2 s: they fail with it, at about 2 s
            # (a check of their own would take one more timeout each, or 4 s at least).
            with anyio.fail_after(3.2):
                async with anyio.create_task_group() as tg:
                    for _ in range(8):
                        tg.start_soon(search)
                        await anyio.sleep(0.1)
        assert len(errors) == 8 and all(e.startswith("index store at ") for e in errors)
    finally:
        await store.aclose()


async def test_a_local_copy_answers_while_the_server_is_stopped_until_its_next_check(
    own_postgres: PostgresServer, prefix: str
) -> None:
    docs = demo_docs()[:10]
    store = await PostgresIndexStore.open(
        own_postgres.url, prefix=prefix, operation_timeout=1.0, search="local", local_poll=3600
    )
    try:
        await store.add(docs, embed(docs))
        expected = await store.keyword_search("budget", 5)  # checks once after the write
        with own_postgres.stopped():
            with anyio.fail_after(2):
                assert await store.keyword_search("budget", 5) == expected
            assert store._local is not None
            store._local.invalidate()  # the next search checks: the server does not answer
            with anyio.fail_after(4), pytest.raises(StoreUnavailableError):
                await store.keyword_search("budget", 5)
    finally:
        await store.aclose()


async def test_update_killed_halfway_leaves_the_old_corpus(
    own_postgres: PostgresServer, prefix: str
) -> None:
    old = synthetic_docs(200)
    store = await PostgresIndexStore.open(own_postgres.url, prefix=prefix, operation_timeout=30)
    try:
        await store.add(old, embed(old, 16))
        before = (await store.version(), await store.doc_ids())
        new = [Doc(f"d{i % 100}", f"new text number {i} " * 20, {"v": 2}) for i in range(20000)]
        watcher = await psycopg.AsyncConnection.connect(own_postgres.url, autocommit=True)
        outcome: list[BaseException | int] = []

        async def update() -> None:
            try:
                outcome.append(await store.replace(new, embed(new[:1], 16).repeat(20000, 0)))
            except StoreUnavailableError as exc:
                outcome.append(exc)

        async with anyio.create_task_group() as tg:
            tg.start_soon(update)
            with anyio.fail_after(60):
                while True:  # wait until the COPY is streaming inside the transaction
                    cur = await watcher.execute(
                        "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'COPY%%'"
                        " AND state = 'active'"
                    )
                    row = await cur.fetchone()
                    if row and row[0]:
                        break
                    await anyio.sleep(0.01)
            own_postgres.kill()
        await watcher.close()
        assert isinstance(outcome[0], StoreUnavailableError)
        own_postgres.start()
        with anyio.fail_after(20):
            while True:
                try:
                    after = (await store.version(), await store.doc_ids())
                    break
                except StoreUnavailableError:
                    await anyio.sleep(0.2)
        assert after == before
    finally:
        await store.aclose()


async def test_redis_killed_then_back(own_redis: RedisServer) -> None:
    store = await RedisSessionStore.open(own_redis.url, operation_timeout=1.5)
    try:
        await store.append_turn("s", "before")
        own_redis.kill()
        with anyio.fail_after(8), pytest.raises(StoreUnavailableError, match=r"^session store"):
            await store.append_turn("s", "lost")
        own_redis.start()
        with anyio.fail_after(20):
            while True:
                try:
                    await store.append_turn("s", "after")
                    break
                except StoreUnavailableError:
                    await anyio.sleep(0.2)
        # Redis ran without persistence: the restarted server starts empty.
        assert [t.query for t in await store.turns("s")] == ["after"]
    finally:
        await store.aclose()


async def test_redis_stopped_times_out(own_redis: RedisServer) -> None:
    store = await RedisSessionStore.open(own_redis.url, operation_timeout=1)
    try:
        with (
            own_redis.stopped(),
            anyio.fail_after(8),
            pytest.raises(StoreUnavailableError, match="within 1 s"),
        ):
            await store.turns("s")
        with anyio.fail_after(10):
            while True:
                try:
                    assert await store.append_turn("s", "q") >= 1
                    break
                except StoreUnavailableError:
                    await anyio.sleep(0.2)
    finally:
        await store.aclose()
