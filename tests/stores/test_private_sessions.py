"""Sessions are private and complete, over two replicas sharing their stores (issue 20, 1-3).

Two engines share one session store and one cache store (in this process,
Redis or PostgreSQL), as two ``zerda serve`` replicas do; a third kind has no
stores at all (one engine's own cache and conversations).  Every result must
be what a fresh engine returns for that query given the same history — never
a context built from another conversation, never an unenriched context
cached by someone else — and every request with a session id must be a turn
of its session, cache hit or not.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.from_thread
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sync_api
from zerda_async import AsyncContextEngine, ContextEngineConfig, ConversationHistory
from zerda_async.apps import load_demo_corpus
from zerda_async.stores import (
    MemoryCacheStore,
    MemorySessionStore,
    Stores,
)

from .shared_stores import server_stores

KINDS = ["process", "memory-sessions", "memory", "redis", "postgresql"]
"""``process``: one engine, no stores; ``memory-sessions``: a shared session store and each
engine's own cache (``zerda serve --state memory``); the others share both stores."""

QUESTIONS = [
    # Refers back ("and ..."): the recommended history_enrichment enriches only such questions.
    "And how is Arabic coffee served?",
    "Where does the Nile reach the sea?",
    "What does BM25 reward?",
    "How do growers pollinate date palms?",
    "What is overfitting?",
]
ANSWERS = [
    "Cairo lies on the banks of the Nile in Egypt.",
    "Espresso is a small concentrated shot of coffee.",
    "Reciprocal Rank Fusion adds one over sixty plus the rank.",
]
SESSIONS = [None, "a", "b", "c"]


def _config() -> ContextEngineConfig:
    """Keyword search (no embedder) and no adaptive budget: the budget follows every
    request of the engine by design, which a fresh engine cannot reproduce."""
    config = ContextEngineConfig.recommended()
    config.retriever.use_vector = False
    config.enable_adaptive = False
    return config


class Reference:
    """What a fresh engine returns for a query given a history (memoised)."""

    def __init__(self) -> None:
        config = _config()
        config.cache.enabled = False
        self.engine = sync_api.ContextEngine(config=config).index(load_demo_corpus())
        self.known: dict[tuple[Any, ...], tuple[str, str]] = {}

    def expect(self, turns: list[tuple[str, str]], query: str) -> tuple[str, str]:
        """The context and the analysed (effective) query."""
        key = (tuple(turns), query)
        if key not in self.known:
            history = ConversationHistory(session_id="fresh")
            for asked, answer in turns:
                history.add_turn(query=asked, answer=answer)
            self.engine.set_conversation(history)
            result = self.engine.run(query, record_turn=False)
            self.known[key] = (result.context, result.query_analysis.original_query)
        return self.known[key]


@pytest.fixture(scope="module")
def reference() -> Reference:
    return Reference()


@asynccontextmanager
async def replicas(kind: str, url: str | None, prefix: str) -> AsyncIterator[list[Any]]:
    """Two engines sharing a session and a cache store of ``kind`` (indexed, running);
    ``process``: one engine without stores, as both replicas.  ``url``: the Redis or
    PostgreSQL server's (also used by ``bench/bench_private_sessions.py``)."""
    opened: list[Any] = []
    stores: list[Stores | None] = []
    if kind == "process":
        stores = [None]
    elif kind == "memory-sessions":
        sessions = Stores(sessions=MemorySessionStore())
        stores = [sessions, sessions]
    elif kind == "memory":
        shared = Stores(sessions=MemorySessionStore(), cache=MemoryCacheStore())
        stores = [shared, shared]
    else:
        assert url is not None
        stores += await server_stores(kind, url, prefix, opened)
    try:
        async with AsyncExitStack() as stack:
            engines = []
            for replica_stores in stores:
                engine = AsyncContextEngine(_config(), stores=replica_stores)
                engines.append(await stack.enter_async_context(engine))
                await engine.index(load_demo_corpus())
            yield engines * (2 // len(engines))
    finally:
        for store in opened:
            await store.aclose()


def server_url(kind: str, request: pytest.FixtureRequest) -> str | None:
    """The URL of the test server ``kind`` needs (started on first use)."""
    if kind == "redis":
        return str(request.getfixturevalue("redis_server").url)
    if kind == "postgresql":
        return str(request.getfixturevalue("postgres").url)
    return None


@dataclass
class Model:
    """The turns each conversation must hold: a session's, and each replica's default one."""

    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    sessions: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    defaults: dict[int, list[tuple[str, str]]] = field(default_factory=dict)
    max_turns: int = 100
    hits: int = 0

    def session_id(self, name: str | None) -> str | None:
        return None if name is None else f"{self.run_id}-{name}"

    def turns(self, replica: int, name: str | None) -> list[tuple[str, str]]:
        if name is None:
            return self.defaults.setdefault(replica, [])
        return self.sessions.setdefault(name, [])


async def ask(
    engines: list[Any], model: Model, reference: Reference, replica: int, name: str | None, q: int
) -> None:
    """One request; its result must be the fresh engine's for the same history."""
    query = QUESTIONS[q]
    turns = model.turns(replica, name)
    expected = reference.expect(list(turns), query)
    result = await engines[replica].run(query, session_id=model.session_id(name))
    got = (result.context, result.query_analysis.original_query)
    cached = bool(result.metadata.get("from_cache"))
    model.hits += cached
    assert got == expected, f"{name!r} asked {query!r} after {turns} (cache hit: {cached})"
    turns.append((query, ""))


async def answer(engines: list[Any], model: Model, replica: int, name: str, a: int) -> None:
    """Record an answer on the session's last turn (refused, as the model says, without one)."""
    turns = model.turns(replica, name)
    recorded = await engines[replica].record_answer(model.session_id(name), ANSWERS[a])
    assert recorded == bool(turns), f"session {name!r} with {len(turns)} turns"
    if turns:
        turns[-1] = (turns[-1][0], ANSWERS[a])


async def check_turns(engines: list[Any], model: Model) -> None:
    """Every session holds exactly its requests, in order, with their answers (on both replicas)."""
    for name, turns in model.sessions.items():
        for engine in engines:
            stored = await engine.turns(model.session_id(name))
            expected = turns[-model.max_turns :]
            assert [(t.query, t.answer) for t in stored] == expected, f"session {name!r}"


Step = tuple[str, int, str | None, int]
STEPS = st.lists(
    st.tuples(
        st.sampled_from(["ask", "ask", "ask", "answer"]),
        st.integers(0, 1),
        st.sampled_from(SESSIONS),
        st.integers(0, len(QUESTIONS) - 1),
    ),
    min_size=45,
    max_size=90,
)


def batches(steps: list[Step]) -> Iterator[list[Step]]:
    """Consecutive asks of distinct conversations go together (run concurrently); an answer
    goes alone.  Requests of one conversation stay in order, so the model holds."""
    batch: list[Step] = []
    for step in steps:
        kind, replica, name, _ = step
        conflict = any(name == n and (name is not None or replica == r) for _, r, n, _ in batch)
        if kind == "answer" or conflict:
            if batch:
                yield batch
            batch = []
        if kind == "answer":
            yield [step]
        else:
            batch.append(step)
    if batch:
        yield batch


async def play(engines: list[Any], model: Model, reference: Reference, steps: list[Step]) -> None:
    for batch in batches(steps):
        if batch[0][0] == "answer":
            _, replica, name, a = batch[0]
            if name is not None:
                await answer(engines, model, replica, name, a % len(ANSWERS))
            continue
        async with anyio.create_task_group() as tg:
            for _, replica, name, q in batch:
                tg.start_soon(ask, engines, model, reference, replica, name, q)
    await check_turns(engines, model)


@pytest.mark.parametrize("kind", KINDS)
def test_sessions_are_private_and_complete(
    kind: str, reference: Reference, request: pytest.FixtureRequest, prefix: str
) -> None:
    """Hypothesis plays random interleavings: at least 1,000 requests per kind in all.

    The replicas run, for the whole test, on an event loop in a thread of its
    own (a blocking portal): each example only plays its steps there, with
    session ids of its own, so the cache and the default conversations carry
    over from one example to the next as they would in a long-lived service.
    """
    asked = hits = 0
    defaults: dict[int, list[tuple[str, str]]] = {}
    limit = 10 if kind == "process" else 100  # ConversationHistory's and the stores' max_turns
    running = replicas(kind, server_url(kind, request), prefix)
    with (
        anyio.from_thread.start_blocking_portal("asyncio") as portal,
        portal.wrap_async_context_manager(running) as engines,
    ):

        @settings(
            max_examples=30,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
        )
        @given(steps=STEPS)
        def interleaving(steps: list[Step]) -> None:
            nonlocal asked, hits
            model = Model(defaults=defaults, max_turns=limit)
            before = sum(map(len, defaults.values()))
            portal.call(play, engines, model, reference, steps)
            asked += sum(map(len, model.sessions.values())) + sum(map(len, defaults.values()))
            asked -= before
            hits += model.hits

        interleaving()
    assert asked >= 1000, f"only {asked} requests: the property was barely exercised"
    assert hits > 50, f"{hits} cache hits: the property lost its point"


# -- the issue's reproductions, one by one ---------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_the_issue_scenarios(
    kind: str, reference: Reference, request: pytest.FixtureRequest, prefix: str
) -> None:
    async def main() -> None:
        async with replicas(kind, server_url(kind, request), prefix) as (one, two):
            model = Model()
            enriched = [(QUESTIONS[1], ANSWERS[1])]
            # 1. A's history-enriched context must not reach B nor a session-less request.
            await ask([one, two], model, reference, 0, "a", 1)
            await answer([one, two], model, 0, "a", 1)
            a = await one.run(QUESTIONS[0], session_id=model.session_id("a"))
            assert a.context == reference.expect(enriched, QUESTIONS[0])[0]
            assert a.context != reference.expect([], QUESTIONS[0])[0], "enrichment had no effect"
            for replica, name in [(1, "b"), (0, None), (1, None)]:
                got = await [one, two][replica].run(QUESTIONS[0], session_id=model.session_id(name))
                assert got.context == reference.expect([], QUESTIONS[0])[0], (replica, name)
            # 2. A bare question cached first is not served to a session that needs enrichment.
            await ask([one, two], model, reference, 1, "c", 1)
            await answer([one, two], model, 1, "c", 1)
            c = await two.run(QUESTIONS[0], session_id=model.session_id("c"))
            assert c.context == a.context and not c.metadata.get("from_cache")
            # 3. A cache hit is a turn of its session: it shows, and it can be answered.
            b = await one.run(QUESTIONS[0], session_id=model.session_id("b"))
            assert b.metadata.get("from_cache")
            assert await two.record_answer(model.session_id("b"), "an answer")
            turns = await one.turns(model.session_id("b"))
            assert [(t.query, t.answer) for t in turns] == [
                (QUESTIONS[0], ""),
                (QUESTIONS[0], "an answer"),
            ]

    anyio.run(main, backend="asyncio")
