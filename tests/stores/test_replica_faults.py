"""A ``zerda serve`` replica whose stores are stopped or killed, then come back (no restart)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest

from .replicas import indexed_servers, replicas
from .servers import PostgresServer, RedisServer

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def own_servers(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[PostgresServer, RedisServer]]:
    with indexed_servers(tmp_path_factory.mktemp("fault")) as servers:
        yield servers


@pytest.fixture(scope="module")
def replica(own_servers: tuple[PostgresServer, RedisServer]) -> Iterator[str]:
    postgres, redis = own_servers
    with replicas(postgres.url, redis.url, count=1, timeout=4.0) as urls:
        yield urls[0]


def _until(check: object, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "did not recover in time"
        time.sleep(0.2)


def test_session_store_stopped_fails_sessions_and_serves_the_rest(
    own_servers: tuple[PostgresServer, RedisServer], replica: str
) -> None:
    _, redis = own_servers
    with httpx.Client(base_url=replica, timeout=30) as client:
        with redis.stopped():
            started = time.monotonic()
            with_session = client.post(
                "/v1/context", json={"query": "What is BM25?", "session_id": "f"}
            )
            without = client.post("/v1/context", json={"query": "What is BM25?"})
            ready = client.get("/readyz")
            metrics = client.get("/metrics").text
        elapsed = time.monotonic() - started
        _until(lambda: client.get("/readyz").status_code == 200)
        recovered = client.post("/v1/context", json={"query": "What is BM25?", "session_id": "f"})
    assert with_session.status_code == 503 and "session store" in with_session.json()["error"]
    assert without.status_code == 200 and without.json()["cache_hit"] is False
    assert ready.status_code == 503 and ready.json()["stores"]["session store"] != "ok"
    assert 'zerda_store_bypassed_total{store="cache"} 0' not in metrics
    assert elapsed < 60
    assert recovered.status_code == 200


def test_index_store_killed_answers_503_then_recovers(
    own_servers: tuple[PostgresServer, RedisServer], replica: str
) -> None:
    postgres, _ = own_servers
    with httpx.Client(base_url=replica, timeout=30) as client:
        postgres.kill()
        try:
            started = time.monotonic()
            down = client.post("/v1/context", json={"query": "How is coffee served?"})
            elapsed = time.monotonic() - started
            ready = client.get("/readyz")
        finally:
            postgres.start()
        _until(
            lambda: (
                client.post("/v1/context", json={"query": "How is coffee served?"}).status_code
                == 200
            )
        )
    assert down.status_code == 503 and "index store" in down.json()["error"]
    assert elapsed < 4.0 + 2.0  # within the request timeout (plus the HTTP round trip)
    assert ready.status_code == 503 and ready.json()["stores"]["index store"] != "ok"
