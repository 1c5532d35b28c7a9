"""The corpus, embedder and runner helpers of the runner tests."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
import numpy as np
from support.chunks import Chunk
from support.corpus import sourced

from zerda_async.pipeline import AsyncRunner, EngineState, RunnerSettings

__all__ = ["TEXTS", "chunks", "embed", "gated_rank", "serving"]

TEXTS = [
    ("ml", "Machine learning lets computers learn patterns from data without explicit rules."),
    ("bm25", "BM25 ranks documents by term frequency and inverse document frequency."),
    ("rrf", "Reciprocal rank fusion merges ranked lists from keyword and vector search."),
    ("nile", "The Nile flows north through Egypt into the Mediterranean Sea."),
    ("ar-ml", "التعلم الآلي فرع من الذكاء الاصطناعي يتعلم من البيانات."),
    ("ar-nile", "يجري نهر النيل شمالا عبر مصر حتى البحر المتوسط."),
]


def chunks() -> list[Chunk]:
    """The corpus as duck-typed chunks (``text``, ``doc_id``, ``metadata``)."""
    return [sourced(doc_id, text, doc_id.split("-")[0]) for doc_id, text in TEXTS]


def embed(text: Any) -> np.ndarray:
    """A deterministic 16-dim embedding of ``text`` (letter counts; lexical, for tests)."""
    vector = np.zeros(16)
    for ch in str(text).lower():
        vector[ord(ch) % 16] += 1.0
    return vector


@asynccontextmanager
async def serving(state: EngineState, **settings: Any) -> AsyncIterator[AsyncRunner]:
    """An :class:`AsyncRunner` over ``state`` serving in a task group, closed on exit."""
    runner = AsyncRunner(state, RunnerSettings(**settings))
    async with anyio.create_task_group() as tg:
        await tg.start(runner.serve)
        try:
            yield runner
        finally:
            await runner.close()


@contextmanager
def gated_rank(state: EngineState) -> Iterator[tuple[threading.Event, threading.Event]]:
    """(entered, release): the rank stage sets ``entered``, then waits for ``release``."""
    entered, release = threading.Event(), threading.Event()
    rank = state.ranker.rank

    def gated(*args: Any, **kwargs: Any) -> Any:
        entered.set()
        assert release.wait(10), "never released"
        return rank(*args, **kwargs)

    state.ranker.rank = gated
    try:
        yield entered, release
    finally:
        release.set()
        state.ranker.rank = rank
