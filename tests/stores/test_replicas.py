"""Two ``zerda serve`` replicas sharing PostgreSQL (index) and Redis (state), as processes."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest

from zerda_async.stores import VERSION_POLL_SECONDS

from .replicas import index_files, replicas, write_corpus
from .servers import PostgresServer, RedisServer

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return write_corpus(tmp_path_factory.mktemp("corpus"))


@pytest.fixture(scope="module")
def two(
    postgres: PostgresServer, redis_server: RedisServer, corpus: list[Path]
) -> Iterator[list[str]]:
    """Two replicas over the demo corpus, indexed with ``zerda index --store``."""
    index_files(postgres.url, *corpus)
    with replicas(postgres.url, redis_server.url) as urls:
        yield urls


async def _context(client: httpx.AsyncClient, url: str, **body: object) -> dict[str, object]:
    response = await client.post(f"{url}/v1/context", json=body)
    assert response.status_code == 200, response.text
    data: dict[str, object] = response.json()
    return data


async def test_a_conversation_alternating_replicas_keeps_every_turn(two: list[str]) -> None:
    a, b = two
    async with httpx.AsyncClient(timeout=30) as client:
        await _context(client, a, query="What is BM25?", session_id="alt")
        answered = await client.post(f"{b}/v1/sessions/alt/answer", json={"answer": "a ranking"})
        assert answered.status_code == 200
        second = await _context(client, b, query="who uses it?", session_id="alt")
        analysis = second["query_analysis"]
        assert isinstance(analysis, dict) and "a ranking" in analysis["original_query"]
        await client.post(f"{a}/v1/sessions/alt/answer", json={"answer": "search engines"})
        third = await _context(client, a, query="and in Arabic?", session_id="alt")
        assert "search engines" in str(third["query_analysis"])
        session = (await client.get(f"{b}/v1/sessions/alt")).json()
        missing = await client.post(f"{a}/v1/sessions/nobody/answer", json={"answer": "x"})
    assert session == {
        "session_id": "alt",
        "turns": [
            {"query": "What is BM25?", "answer": "a ranking"},
            {"query": "who uses it?", "answer": "search engines"},
            {"query": "and in Arabic?", "answer": ""},
        ],
    }
    assert missing.status_code == 404


async def test_a_context_cached_by_one_replica_is_a_hit_on_the_other(two: list[str]) -> None:
    a, b = two
    async with httpx.AsyncClient(timeout=30) as client:
        first = await _context(client, a, query="How is Arabic coffee served?")
        second = await _context(client, b, query="How is Arabic coffee served?")
        ready = [(await client.get(f"{url}/readyz")).json() for url in two]
    assert first["cache_hit"] is False and second["cache_hit"] is True
    assert second["context"] == first["context"]
    assert all(r["status"] == "ready" and set(r["stores"]) >= {"index store"} for r in ready)


async def test_an_index_update_by_the_cli_is_seen_by_both(
    two: list[str], postgres: PostgresServer, tmp_path: Path
) -> None:
    query = {"query": "zebrafish regenerate heart muscle"}
    async with httpx.AsyncClient(timeout=30) as client:
        before = [await _context(client, url, **query) for url in two]
        extra = tmp_path / "biology.txt"
        extra.write_text("Zebrafish regenerate heart muscle after injury within weeks.\n")
        index_files(postgres.url, extra)
        # Replicas poll the corpus version (every 0.5 s): an update is seen within a second.
        await anyio.sleep(2 * VERSION_POLL_SECONDS)
        after = [await _context(client, url, **query) for url in two]
    assert all("Zebrafish" not in str(r["context"]) for r in before)
    assert all("Zebrafish" in str(r["context"]) for r in after)
    # The first replica computed it for the new corpus version; the second shares that entry.
    assert [r["cache_hit"] for r in after] == [False, True]


async def test_replicas_with_local_copies_see_an_update_within_a_second_and_share_the_cache(
    two: list[str], postgres: PostgresServer, redis_server: RedisServer, tmp_path: Path
) -> None:
    """``--search local``: each replica searches its own copy, caught up from PostgreSQL."""
    query = {"query": "axolotls regrow whole limbs"}
    local = ["--search", "local"]
    async with httpx.AsyncClient(timeout=30) as client:
        with replicas(postgres.url, redis_server.url, ready="/readyz", extra=local) as copies:
            # (Their contexts are the exact replicas': tests/stores/test_vector_search_cli.py.)
            before = [await _context(client, url, **query) for url in copies]
            extra = tmp_path / "axolotl.txt"
            extra.write_text("Axolotls regrow whole limbs, and parts of the heart, for life.\n")
            index_files(postgres.url, extra)
            await anyio.sleep(2 * VERSION_POLL_SECONDS)  # each copy checks every 0.5 s
            after = [await _context(client, url, **query) for url in copies]
    assert all("Axolotls" not in str(r["context"]) for r in before)
    assert all("Axolotls" in str(r["context"]) for r in after)
    # Both copies are at the new version: the second replica hits the first one's entry.
    assert [r["cache_hit"] for r in after] == [False, True]


async def test_a_conversation_soak_loses_and_misattributes_no_turn(two: list[str]) -> None:
    rng = random.Random(11)
    expected: dict[str, list[dict[str, str]]] = {f"soak-{i}": [] for i in range(5)}
    async with httpx.AsyncClient(timeout=30) as client:
        for turn in range(200):
            session = rng.choice(sorted(expected))
            query = f"turn {turn} of {session}: what is retrieval?"
            await _context(client, rng.choice(two), query=query, session_id=session)
            expected[session].append({"query": query, "answer": ""})
            if rng.random() < 0.5:
                answer = f"answer {turn}"
                url = rng.choice(two)
                done = await client.post(
                    f"{url}/v1/sessions/{session}/answer", json={"answer": answer}
                )
                assert done.status_code == 200
                expected[session][-1]["answer"] = answer
        for session, turns in expected.items():
            got = (await client.get(f"{rng.choice(two)}/v1/sessions/{session}")).json()
            assert got["turns"] == turns
