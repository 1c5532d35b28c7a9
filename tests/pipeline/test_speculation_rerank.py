"""Speculation and the rerank stage: what an index change keeps, and what a cache hit skips."""

from __future__ import annotations

from collections.abc import Sequence

import anyio
import pytest

from zerda_async import ContextEngineConfig
from zerda_async.pipeline import STAGES, Ahead, EngineState, OffloadPolicy, make_job
from zerda_async.pipeline._speculation import Speculation


class _Reranker:
    def scores(self, question: str, texts: Sequence[str]) -> list[float]:
        return [0.0] * len(texts)


def _speculation(state: EngineState) -> Speculation:
    return Speculation(state, STAGES, OffloadPolicy(None, 0), anyio.CapacityLimiter(1))


@pytest.mark.parametrize("reranker", [None, _Reranker()])
def test_an_index_change_keeps_only_the_query_vector(reranker: object) -> None:
    """Every speculative stage but the query embedding reads the index: after a change
    they run again (the rerank stage, which awaits like the embedding, included)."""
    state = EngineState(ContextEngineConfig.recommended(), {"reranker": reranker})
    speculation = _speculation(state)
    job = make_job("When was the tower completed?")
    applied = {s.name for s in speculation.stages}
    job.ahead = Ahead(query=job.query, epoch=state.epoch, applied=set(applied))
    assert "rerank" in applied and "query_embedding" in applied
    state.epoch += 1
    ahead = speculation._ahead_for(job, job.query)
    assert ahead.applied == {"query_embedding"}
    assert [s.name for s in speculation._todo(ahead)][-2:] == ["rank", "rerank"]
