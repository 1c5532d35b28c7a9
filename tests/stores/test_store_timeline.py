"""The failure timeline of a ``zerda serve`` replica whose PostgreSQL is down or stopped.

Issue 20, items 4 and 5: a replica started with PostgreSQL down answers 503
naming the store (``/readyz`` and requests) at once and serves once it is up,
without a restart; a stopped PostgreSQL costs a request at most one store
timeout (a quarter of ``--request-timeout``: 2.5 s here), not one per
operation, and a cached question is still served from the cache store.

The bounds asserted are generous (this machine is shared): they separate
"one store timeout" from the two or more the replica took before, not
milliseconds.  ``docs/sessions.md`` gives the timeline.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio
import httpx
import pytest

from zerda_async import AsyncContextEngine
from zerda_async.apps import load_demo_corpus
from zerda_async.errors import StoreUnavailableError
from zerda_async.pipeline import LOCK_SECONDS, EngineState, guarded
from zerda_async.stores import PostgresIndexStore, RedisCacheStore, Stores

from .replicas import indexed_servers, replicas
from .servers import PostgresServer, RedisServer

REQUEST_TIMEOUT = 10.0
STORE_TIMEOUT = REQUEST_TIMEOUT / 4  # what the service gives each store operation
SLACK = 1.5  # HTTP round trips and a loaded machine
QUESTIONS = ["Why do dates ripen in stages?", "What is overfitting?", "What is espresso?"]


@pytest.fixture(scope="module")
def own_servers(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[PostgresServer, RedisServer]]:
    with indexed_servers(tmp_path_factory.mktemp("timeline")) as servers:
        yield servers


def _timed(call: Any) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    response = call()
    return response, time.monotonic() - started


def _ask(client: httpx.Client, query: str, **extra: Any) -> httpx.Response:
    return client.post("/v1/context", json={"query": query, **extra})


def test_started_with_postgres_down_answers_503_then_serves_without_a_restart(
    own_servers: tuple[PostgresServer, RedisServer],
) -> None:
    postgres, _ = own_servers
    postgres.kill()
    try:
        # /openapi.json answers whatever the stores: the process is up.
        with (
            replicas(postgres.url, postgres.url, 1, REQUEST_TIMEOUT, "/openapi.json") as urls,
            httpx.Client(base_url=urls[0], timeout=30) as client,
        ):
            ready, ready_s = _timed(lambda: client.get("/readyz"))
            down, down_s = _timed(lambda: _ask(client, "How is coffee served?"))
            postgres.start()
            up_at = time.monotonic()
            while (served := _ask(client, "How is coffee served?")).status_code != 200:
                assert time.monotonic() - up_at < 20, served.text
                time.sleep(0.05)
            recovered_s = time.monotonic() - up_at
            after = client.get("/readyz")
    finally:
        if postgres.process is None:
            postgres.start()
    assert ready.status_code == 503 and ready.json()["stores"]["index store"] != "ok"
    assert down.status_code == 503 and down.json()["error"].startswith("index store at ")
    assert down.headers["Retry-After"]
    assert ready_s < SLACK and down_s < SLACK, (ready_s, down_s)
    assert recovered_s < 2 + SLACK, recovered_s
    assert after.status_code == 200 and set(after.json()["stores"].values()) == {"ok"}


def test_stopped_postgres_costs_one_store_timeout_and_cached_questions_are_served(
    own_servers: tuple[PostgresServer, RedisServer],
) -> None:
    postgres, redis = own_servers
    with (
        replicas(postgres.url, redis.url, 1, REQUEST_TIMEOUT, "/readyz") as urls,
        httpx.Client(base_url=urls[0], timeout=30) as client,
    ):
        warm = _ask(client, "How is coffee served?")
        assert warm.status_code == 200 and warm.json()["cache_hit"] is False
        with postgres.stopped():
            first, first_s = _timed(lambda: _ask(client, "Where does the Nile flow?"))
            second, second_s = _timed(lambda: _ask(client, "What is BM25?"))
            cached, cached_s = _timed(lambda: _ask(client, "How is coffee served?"))
            turn = _ask(client, "How is coffee served?", session_id="timeline")
            turns = client.get("/v1/sessions/timeline")
            # Past the cool-off, one request probes the store and the others fail at once
            # (they still commit after it, in submission order): one timeout each at most.
            time.sleep(1.2)
            with ThreadPoolExecutor(3) as pool:
                burst = list(pool.map(lambda q: _timed(lambda: _ask(client, q)), QUESTIONS))
        up_at = time.monotonic()
        while (served := _ask(client, "Where does the Nile flow?")).status_code != 200:
            assert time.monotonic() - up_at < 20, served.text
            time.sleep(0.05)
    for down in (first, second):
        assert down.status_code == 503 and down.json()["error"].startswith("index store at ")
    # One store timeout for the first request, none for the next (the store is known down).
    assert first_s < STORE_TIMEOUT + SLACK, first_s
    assert second_s < SLACK, second_s
    assert cached.status_code == 200 and cached.json()["cache_hit"] is True, cached.text
    assert cached.json()["context"] == warm.json()["context"] and cached_s < SLACK
    # A session's cached question is a turn of it, with the index store stopped.
    assert {r.status_code for r, _ in burst} == {503}
    assert max(seconds for _, seconds in burst) < STORE_TIMEOUT + SLACK, burst
    assert turn.status_code == 200 and turn.json()["cache_hit"] is True
    assert [t["query"] for t in turns.json()["turns"]] == ["How is coffee served?"]


@pytest.mark.anyio
async def test_a_store_known_down_is_probed_by_one_request_at_a_time(
    own_servers: tuple[PostgresServer, RedisServer], prefix: str
) -> None:
    """After the cool-off, one operation probes the stopped store; the others fail at once."""
    postgres, _ = own_servers
    store = await PostgresIndexStore.open(postgres.url, prefix=prefix, operation_timeout=1.0)
    state = EngineState()
    calls: list[float] = []

    async def search() -> Any:
        calls.append(time.monotonic())
        return await store.keyword_search("nile", 3)

    async def one(failures: list[float]) -> None:
        started = time.monotonic()
        with pytest.raises(StoreUnavailableError, match=r"^index store"):
            await guarded(state, store, search)
        failures.append(time.monotonic() - started)

    try:
        await store.count()  # connected while the server answers
        with postgres.stopped():
            first: list[float] = []
            await one(first)  # marks it down
            await one(first)  # within the cool-off: at once, no call
            assert len(calls) == 1 and first[1] < 0.2, first
            await anyio.sleep(1.1)
            burst: list[float] = []
            async with anyio.create_task_group() as tg:
                for _ in range(3):
                    tg.start_soon(one, burst)
            assert len(calls) == 2, "more than one request probed the store"
            assert sorted(burst)[1] < 0.2, burst
        await anyio.sleep(1.1)  # past the cool-off: the next operation probes, and it answers
        assert await guarded(state, store, search) is not None
        assert not state.stores_down
    finally:
        await store.aclose()


class _FailingRanker:
    """A ranker that fails every request (the first replica's fault)."""

    def rank(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("ranker down")


@pytest.mark.anyio
async def test_a_failed_request_releases_its_cache_lock_at_once(
    own_servers: tuple[PostgresServer, RedisServer], prefix: str
) -> None:
    """Another replica missing the same key computes it at once, not after the lock expires."""
    _, redis = own_servers
    caches = [RedisCacheStore(redis.url, prefix=prefix) for _ in range(2)]
    try:
        async with (
            AsyncContextEngine(stores=Stores(cache=caches[0]), ranker=_FailingRanker()) as one,
            AsyncContextEngine(stores=Stores(cache=caches[1])) as two,
        ):
            for engine in (one, two):
                await engine.index(load_demo_corpus())
            with pytest.raises(RuntimeError, match="ranker down"):
                await one.run("How is coffee served?")
            started = time.monotonic()
            served = await two.run("How is coffee served?")
            waited = time.monotonic() - started
    finally:
        for cache in caches:
            await cache.aclose()
    assert served.context and not served.metadata.get("from_cache")
    assert waited < LOCK_SECONDS / 2, f"waited {waited:.1f} s for a dead request's lock"
