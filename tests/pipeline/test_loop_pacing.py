"""Loop pacing in the engine: paced retrieval runs in pieces, returns the same contexts.

A paced stage group (its measured cost over the crowded budget, on asyncio)
runs in pieces, one per turn of the loop pacer: other tasks run between two
pieces of one request's retrieval, and the vector scan goes in blocks.  The
candidates and contexts are those of the same requests run unpaced.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import pairwise
from typing import Any

import anyio
import pytest
from support.embedding import hashed_embedding

import zerda_async.pipeline._speculation as speculation_module
import zerda_async.pipeline._stages as stages_module
from zerda_async import AsyncContextEngine, ContextEngineConfig, ContextResult
from zerda_async.pipeline._offload import apply_group
from zerda_async.pipeline._speculation import _timed_group
from zerda_async.runtime import (
    PIECES_EVERY,
    Slice,
    Steps,
    loop_pacing,
    set_loop_pacing,
    timed_steps,
)

# The engine tests' guard (tests/engine/conftest.py): a test that blocks the loop fails.
pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("no_blocking_on_the_loop")]

_TOPICS = ("river", "fusion", "budget", "Arabic", "cache", "index", "vector", "session")


def _corpus(n: int = 640) -> list[dict[str, Any]]:
    return [
        {
            "text": f"Note {i} on the {_TOPICS[i % 8]} and the {_TOPICS[i * 3 % 8]}, item {i}.",
            "doc_id": f"d{i}",
            "metadata": {"source": _TOPICS[i % 8]},
        }
        for i in range(n)
    ]


_QUERIES = [f"what about the {t} of item {i}?" for i in range(4) for t in _TOPICS]


@pytest.fixture
def pieces(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[float]]:
    """Small scan blocks and one piece per turn; records the CPU cost of every paced slice."""
    monkeypatch.setattr(stages_module, "STEP_WORK", 64 * 64)  # 64-row blocks: 10 at 640 rows
    costs: list[float] = []

    def one_piece(steps: Steps[object], slice_ms: float = 0.0) -> Slice:
        piece = timed_steps(steps, 0.0)
        costs.append(piece.cost_ms)
        return piece

    monkeypatch.setattr(speculation_module, "timed_steps", one_piece)
    before = loop_pacing()
    set_loop_pacing(True)
    yield costs
    set_loop_pacing(before)


def _paced(engine: AsyncContextEngine) -> AsyncContextEngine:
    # Every measured group counts as over the crowded budget, and its pieces
    # fit the lone budget: the paced path, whatever the machine's speed.
    engine._runner.policy.crowded_threshold_ms = 0.0
    engine._runner.policy.threshold_ms = 1e9
    # A machine with a free core sends crowded groups to threads instead.
    engine._runner.speculation.thread_pays = lambda: False
    return engine


def _fields(result: ContextResult) -> list[Any]:
    return [
        result.context,
        [
            (c.chunk.doc_id, c.vector_score, c.keyword_score, c.composite_score)
            for c in result.chunks_used
        ],
    ]


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_paced_requests_return_what_unpaced_ones_do(pieces: list[float]) -> None:
    corpus = _corpus()
    async with (
        _paced(AsyncContextEngine(ContextEngineConfig(), loop_pacing=True)) as paced,
        AsyncContextEngine(ContextEngineConfig(), loop_pacing=False, offload="inline") as plain,
    ):
        for engine in (paced, plain):
            await engine.index(corpus, embed_fn=hashed_embedding)
            await engine.run("warm the offload policy up")
        pieces.clear()
        got = await paced.run_many(_QUERIES, concurrency=8)
        paced_slices = len(pieces)
        pieces.clear()
        expected = await plain.run_many(_QUERIES, concurrency=8)
        assert not pieces, "the unpaced engine ran pieces"
    assert [_fields(r) for r in got] == [_fields(r) for r in expected]
    # Ten scan blocks and more per request, each its own turn.
    assert paced_slices >= 10 * len(_QUERIES)
    policy = paced._runner.policy
    assert policy.largest_ms is not None and policy.average_ms is not None
    assert policy.largest_ms < policy.average_ms


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_other_tasks_run_between_the_pieces_of_one_retrieval(
    pieces: list[float], monkeypatch: pytest.MonkeyPatch
) -> None:
    ticks = 0
    seen: list[int] = []
    done = anyio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            await anyio.lowlevel.checkpoint()

    def noting(steps: Steps[object], slice_ms: float = 0.0) -> Slice:
        seen.append(ticks)
        return timed_steps(steps, 0.0)

    async with _paced(AsyncContextEngine(ContextEngineConfig())) as engine:
        await engine.index(_corpus(), embed_fn=hashed_embedding)
        await engine.run("warm the offload policy up")
        monkeypatch.setattr(speculation_module, "timed_steps", noting)
        async with anyio.create_task_group() as tg:
            tg.start_soon(ticker)
            await engine.run("what about the river of item 2?")
            done.set()
    assert len(seen) >= 10
    # The ticker ran between every two pieces: none ran back to back.
    assert all(b > a for a, b in pairwise(seen)), seen


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_groups_sent_to_threads_run_whole_once_their_pieces_are_known(
    pieces: list[float], monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = {"whole": 0, "pieces": 0}

    def counted(kind: str, run: Any) -> Any:
        def call(*args: Any) -> Any:
            runs[kind] += 1
            return run(*args)

        return call

    async with _paced(AsyncContextEngine(ContextEngineConfig())) as engine:
        await engine.index(_corpus(), embed_fn=hashed_embedding)
        await engine.run("warm the offload policy up")  # paced: the largest piece is learnt
        assert engine._runner.policy.largest_ms is not None
        # Crowded, with a core free: every group goes to a worker thread.
        engine._runner.speculation.crowded = lambda: True
        engine._runner.speculation.thread_pays = lambda: True
        monkeypatch.setattr(speculation_module, "apply_group", counted("whole", apply_group))
        monkeypatch.setattr(speculation_module, "_timed_group", counted("pieces", _timed_group))
        await engine.run_many(_QUERIES, concurrency=8)
    offloaded = runs["whole"] + runs["pieces"]
    assert offloaded >= len(_QUERIES)
    # Pieces (and their GIL hand-offs) only once in PIECES_EVERY, to keep the largest current.
    assert runs["pieces"] == offloaded // PIECES_EVERY


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_loop_pacing_false_pins_pacing_off_for_the_engine(pieces: list[float]) -> None:
    async with (
        AsyncContextEngine(ContextEngineConfig(), loop_pacing=False) as off,
        AsyncContextEngine(ContextEngineConfig()) as default,
    ):
        assert not off._runner.speculation.pacer.active()
        assert default._runner.speculation.pacer.active()
        set_loop_pacing(False)  # the process-wide switch: only the default engine follows it
        assert not default._runner.speculation.pacer.active()
    async with AsyncContextEngine(ContextEngineConfig(), loop_pacing=True) as on:
        assert on._runner.speculation.pacer.active()


def test_loop_pacing_must_be_none_or_a_bool() -> None:
    with pytest.raises(TypeError, match="loop_pacing must be None, True or False"):
        AsyncContextEngine(ContextEngineConfig(), loop_pacing="on")  # type: ignore[arg-type]
