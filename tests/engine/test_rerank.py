"""The rerank stage: a reranker given to the async engine reorders and judges the top chunks.

The engine ships no reranker model; it takes any object with
``scores(question, texts)``.  The rerankers here are scorers whose choice
the tests know (a marker word), so they can say which chunk must come first.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from support.chunks import Chunk

from zerda_async import AsyncContextEngine, ContextEngineConfig
from zerda_async.core.config import ConfigError
from zerda_async.errors import failed_stage

pytestmark = pytest.mark.anyio


CHUNKS = [
    Chunk("bread-1", "Saffron bread is baked for Lucia day in Sweden, shaped as curls."),
    Chunk("bread-2", "Saffron bread dough rests overnight; the answer: it rises twice."),
    Chunk("coffee", "Arabic coffee is served in small cups with dates beside it."),
]


class MarkerReranker:
    """Scores a chunk ``hit`` when it holds ``marker``, ``miss`` otherwise; records its calls."""

    def __init__(self, marker: str, hit: float = 3.0, miss: float = -3.0) -> None:
        self.marker, self.hit, self.miss = marker, hit, miss
        self.calls: list[tuple[str, list[str]]] = []
        self.threads: list[int] = []

    def scores(self, question: str, texts: Sequence[str]) -> np.ndarray:
        self.calls.append((question, list(texts)))
        self.threads.append(threading.get_ident())
        return np.asarray([self.hit if self.marker in t else self.miss for t in texts])


def _config(depth: int = 4, floor: float | None = 0.0) -> ContextEngineConfig:
    """The recommended profile reranking ``depth`` chunks, flagging below ``floor``."""
    config = ContextEngineConfig.recommended()
    config.ranking.rerank_depth = depth
    config.composer.rerank_floor = floor
    return config


async def _run(reranker: Any, query: str, config: ContextEngineConfig) -> Any:
    async with AsyncContextEngine(config, reranker=reranker) as engine:
        await engine.index(list(CHUNKS))
        return await engine.run(query)


def _ids(result: Any) -> list[str]:
    return [sc.chunk.doc_id for sc in result.chunks_used]


async def test_the_reranker_orders_the_top_chunks_and_keeps_its_scores() -> None:
    reranker = MarkerReranker("Lucia")  # the profile alone ranks bread-2 first
    result = await _run(reranker, "How does saffron bread dough rise?", _config())
    assert _ids(result)[:2] == ["bread-1", "bread-2"]
    assert [sc.rerank_score for sc in result.chunks_used[:2]] == [3.0, -3.0]
    assert not result.nothing_relevant
    question, texts = reranker.calls[0]
    assert question == "How does saffron bread dough rise?"
    assert len(texts) == len(result.chunks_used) <= 4


async def test_the_reranker_runs_off_the_event_loop_thread() -> None:
    reranker = MarkerReranker("the answer")
    await _run(reranker, "How does saffron bread dough rise?", _config())
    assert reranker.threads and threading.get_ident() not in reranker.threads


async def test_only_the_top_depth_chunks_are_scored_and_moved() -> None:
    reranker = MarkerReranker("Arabic coffee")
    result = await _run(reranker, "saffron bread Lucia curls coffee", _config(depth=1))
    assert len(reranker.calls[0][1]) == 1
    assert result.chunks_used[0].rerank_score == -3.0
    # One chunk scored: it keeps first place whatever its score, the rest are unscored.
    assert [sc.rerank_score is None for sc in result.chunks_used[1:]] == [True] * (
        len(result.chunks_used) - 1
    )


async def test_no_chunk_at_the_floor_says_nothing_relevant() -> None:
    reranker = MarkerReranker("no chunk holds this")
    result = await _run(reranker, "How does saffron bread dough rise?", _config())
    assert result.nothing_relevant
    assert "Saffron" not in result.context


async def test_a_floor_of_none_leaves_the_verdict_to_the_coverage_checks() -> None:
    reranker = MarkerReranker("no chunk holds this")
    result = await _run(reranker, "How does saffron bread dough rise?", _config(floor=None))
    assert not result.nothing_relevant
    assert result.chunks_used[0].rerank_score == -3.0


async def test_depth_zero_turns_reranking_off() -> None:
    reranker = MarkerReranker("the answer")
    result = await _run(reranker, "How does saffron bread dough rise?", _config(depth=0))
    assert reranker.calls == []
    assert all(sc.rerank_score is None for sc in result.chunks_used)


@pytest.mark.parametrize("query", ["How does saffron bread dough rise?", "saffron coffee"])
async def test_without_a_reranker_the_context_is_the_sync_facades(query: str) -> None:
    import sync_api

    with_none = await _run(None, query, _config())
    facade = sync_api.ContextEngine(_config())
    facade.index(list(CHUNKS))
    plain = facade.run(query)
    assert with_none.context == plain.context
    assert _ids(with_none) == [sc.chunk.doc_id for sc in plain.chunks_used]
    assert all(sc.rerank_score is None for sc in with_none.chunks_used)


class Returns(MarkerReranker):
    """A reranker that returns ``scores(texts)`` whatever it is asked."""

    def __init__(self, scores: Any) -> None:
        super().__init__("")
        self.fixed = scores

    def scores(self, question: str, texts: Sequence[str]) -> Any:
        return self.fixed(texts)


@pytest.mark.parametrize(
    ("scores", "message"),
    [
        (lambda texts: np.zeros(len(texts) + 1), "returned 3 scores for 2 chunks"),
        (lambda texts: [float("nan")] * len(texts), "a score that is not finite: nan"),
        (lambda texts: ["high"] * len(texts), "scores are not numbers"),
        (lambda texts: None, "scores are not numbers"),
    ],
)
async def test_a_reranker_returning_bad_scores_fails_the_stage(scores: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message) as caught:
        await _run(Returns(scores), "How does saffron bread dough rise?", _config(depth=2))
    assert failed_stage(caught.value) == "rerank"


class ServiceReranker(MarkerReranker):
    """A coroutine reranker (a reranking service): awaited on the loop, not in a thread."""

    async def scores(self, question: str, texts: Sequence[str]) -> np.ndarray:  # type: ignore[override]
        return MarkerReranker.scores(self, question, texts)


async def test_a_coroutine_reranker_is_awaited() -> None:
    reranker = ServiceReranker("Lucia")
    result = await _run(reranker, "How does saffron bread dough rise?", _config())
    assert _ids(result)[:2] == ["bread-1", "bread-2"]
    assert reranker.threads == [threading.get_ident()]


def test_the_default_floor_leaves_the_verdict_to_the_other_checks() -> None:
    assert ContextEngineConfig.recommended().composer.rerank_floor is None
    assert ContextEngineConfig().ranking.rerank_depth == 4


@pytest.mark.parametrize(
    ("section", "name", "value"),
    [
        ("ranking", "rerank_depth", -1),
        ("ranking", "rerank_depth", 2.5),
        ("composer", "rerank_floor", float("nan")),
        ("composer", "rerank_floor", "0"),
    ],
)
def test_bad_rerank_settings_name_the_field(section: str, name: str, value: Any) -> None:
    config = ContextEngineConfig.recommended()
    setattr(getattr(config, section), name, value)
    with pytest.raises(ConfigError, match=f"{section}.{name}"):
        config.validate()


async def test_the_ranked_event_carries_the_reranked_order() -> None:
    from zerda_async.events import RankedEvent

    query = "How does saffron bread dough rise?"
    async with AsyncContextEngine(_config(), reranker=MarkerReranker("Lucia")) as engine:
        await engine.index(list(CHUNKS))
        events = [e async for e in engine.stream(query)]
    ranked = next(e for e in events if isinstance(e, RankedEvent))
    assert [s.doc_id for s in ranked.sources][:2] == ["bread-1", "bread-2"]


async def test_concurrent_requests_rerank_as_they_would_alone() -> None:
    queries = [
        "How does saffron bread dough rise?",
        "Where is saffron bread baked?",
        "What shape is saffron bread?",
        "When does the dough rest?",
        "How is Arabic coffee served?",
        "Saffron bread Lucia day",
    ]
    alone = [await _run(MarkerReranker("Lucia"), q, _config()) for q in queries]
    async with AsyncContextEngine(_config(), reranker=MarkerReranker("Lucia")) as engine:
        await engine.index(list(CHUNKS))
        together = await engine.run_many(queries, concurrency=6)
    for result, reference in zip(together, alone, strict=True):
        assert _ids(result) == _ids(reference)
        assert result.context == reference.context
    assert any(_ids(r)[:1] == ["bread-1"] for r in together)


async def test_a_question_the_cache_answers_is_not_reranked_again() -> None:
    reranker = MarkerReranker("Lucia")
    query = "How does saffron bread dough rise?"
    async with AsyncContextEngine(_config(), reranker=reranker) as engine:
        await engine.index(list(CHUNKS))
        first = await engine.run(query)
        again = await engine.run(query)
    assert again.context == first.context
    assert again.metadata.get("from_cache")
    assert len(reranker.calls) == 1


class _Overlapping(MarkerReranker):
    """Counts how many of its calls run at once."""

    def __init__(self) -> None:
        super().__init__("Lucia")
        self.lock = threading.Lock()
        self.now = self.most = 0

    def scores(self, question: str, texts: Sequence[str]) -> np.ndarray:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        time.sleep(0.02)
        with self.lock:
            self.now -= 1
        return super().scores(question, texts)


async def test_reranker_threads_keep_to_the_engines_thread_limit() -> None:
    reranker = _Overlapping()
    queries = [f"saffron bread question {i}" for i in range(6)]
    async with AsyncContextEngine(_config(), reranker=reranker, thread_limit=1) as engine:
        await engine.index(list(CHUNKS))
        await engine.run_many(queries, concurrency=6)
    assert len(reranker.calls) == 6
    assert reranker.most == 1


class _CallableService:
    """A coroutine reranker whose scores is an object with an async ``__call__``."""

    class _Scores:
        def __init__(self) -> None:
            self.threads: list[int] = []

        async def __call__(self, question: str, texts: Sequence[str]) -> list[float]:
            self.threads.append(threading.get_ident())
            return [3.0 if "Lucia" in t else -3.0 for t in texts]

    def __init__(self) -> None:
        self.scores = self._Scores()


async def test_an_async_callable_scores_is_awaited_on_the_loop() -> None:
    reranker = _CallableService()
    result = await _run(reranker, "How does saffron bread dough rise?", _config())
    assert _ids(result)[:2] == ["bread-1", "bread-2"]
    assert reranker.scores.threads == [threading.get_ident()]


def test_a_reranker_without_scores_is_refused_naming_it() -> None:
    with pytest.raises(TypeError, match="reranker must have a scores"):
        AsyncContextEngine(reranker=object())


async def test_a_negative_depth_unvalidated_reranks_nothing() -> None:
    reranker = MarkerReranker("Lucia")
    config = _config(depth=-1)
    async with AsyncContextEngine(config, reranker=reranker, validate=False) as engine:
        await engine.index(list(CHUNKS))
        result = await engine.run("How does saffron bread dough rise?")
    assert reranker.calls == []
    assert all(sc.rerank_score is None for sc in result.chunks_used)


class _Hangs(MarkerReranker):
    def __init__(self) -> None:
        super().__init__("Lucia")
        self.release = threading.Event()

    def scores(self, question: str, texts: Sequence[str]) -> np.ndarray:
        self.release.wait(5.0)
        return super().scores(question, texts)


async def test_a_hung_reranker_times_out_its_request_and_the_engine_closes() -> None:
    reranker = _Hangs()
    started = time.perf_counter()
    try:
        async with AsyncContextEngine(_config(), reranker=reranker) as engine:
            await engine.index(list(CHUNKS))
            with pytest.raises(TimeoutError):
                await engine.run("How does saffron bread dough rise?", timeout=0.3)
        assert time.perf_counter() - started < 3.0
    finally:
        reranker.release.set()  # the abandoned thread ends now
