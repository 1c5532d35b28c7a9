"""The walker: one loop over the stage list, kept speculation, stage-named errors."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from zerda_async.errors import failed_stage
from zerda_async.pipeline import (
    STAGES,
    Ahead,
    EngineState,
    Stage,
    apply_stage,
    make_job,
    run_job,
    walk,
)
from zerda_async.pipeline._stages import Analysis, QueryEmbedding, Retrieval


class _Suspend:
    """An awaitable that suspends once, as real I/O would."""

    def __await__(self) -> Generator[None, None, None]:
        yield


class _Awaiting(Stage):
    name = "awaiting"

    def apply(self, job: Any, state: EngineState) -> None:
        raise AssertionError("apply_async must be used")

    def awaits(self, state: EngineState) -> bool:
        return True

    async def apply_async(self, job: Any, state: EngineState) -> None:
        await _Suspend()


def _names(calls: list[tuple[str, float]]) -> list[str]:
    return [name for name, _ in calls]


def test_run_job_applies_every_stage_in_order(state: EngineState) -> None:
    calls: list[tuple[str, float]] = []
    job = make_job("What is machine learning?")
    result = _drive(walk(job, state, STAGES, lambda name, ms: calls.append((name, ms))))
    assert _names(calls) == [stage.name for stage in STAGES]
    assert set(job.timings) == {stage.name for stage in STAGES}
    assert result.context and result.chunks_used
    assert all(ms >= 0 for _, ms in calls)


def test_sync_runner_refuses_a_stage_that_awaits(state: EngineState) -> None:
    with pytest.raises(RuntimeError, match="awaited I/O in the sync runner"):
        run_job(make_job("What is ML?"), state, (_Awaiting(),))


def test_a_cache_hit_ends_the_walk_after_the_lookup(state: EngineState) -> None:
    run_job(make_job("What is machine learning?"), state)
    calls: list[tuple[str, float]] = []
    job = make_job("what is machine learning?  ")
    result = _drive(walk(job, state, STAGES, lambda name, ms: calls.append((name, ms))))
    assert _names(calls) == ["cache_lookup"]
    assert result.metadata == {"from_cache": True}


def test_stages_applied_ahead_are_kept_when_the_query_and_index_hold(state: EngineState) -> None:
    job = make_job("Where does the Nile flow?")
    job.effective_query = job.query
    for stage in (Analysis(), Retrieval()):
        apply_stage(stage, job, state)
    kept = list(job.retrieved)
    job.ahead = Ahead(query=job.query, epoch=state.epoch, applied={"analysis", "retrieval"})
    # A marker the walk would overwrite if it applied retrieval again.
    kept[0].keyword_score = -42.0
    run_job(job, state)
    assert job.retrieved[0].keyword_score == -42.0


@pytest.mark.parametrize("change", ["query", "epoch"])
def test_stale_speculation_is_applied_again(state: EngineState, change: str) -> None:
    job = make_job("Where does the Nile flow?")
    job.effective_query = job.query
    apply_stage(Analysis(), job, state)
    apply_stage(Retrieval(), job, state)
    job.retrieved[0].keyword_score = -42.0
    query = "an older query" if change == "query" else job.query
    epoch = state.epoch - 1 if change == "epoch" else state.epoch
    job.ahead = Ahead(query=query, epoch=epoch, applied={"analysis", "retrieval"})
    run_job(job, state)
    assert job.ahead is None
    assert all(sc.keyword_score != -42.0 for sc in job.retrieved)


def test_an_error_recorded_ahead_is_raised_at_its_stage(state: EngineState) -> None:
    job = make_job("Where does the Nile flow?")
    job.effective_query = job.query
    apply_stage(Analysis(), job, state)
    error = ConnectionError("vector store down")
    job.ahead = Ahead(
        query=job.query,
        epoch=state.epoch,
        applied={"analysis"},
        error=error,
        error_stage="retrieval",
    )
    calls: list[tuple[str, float]] = []
    with pytest.raises(ConnectionError) as caught:
        _drive(walk(job, state, STAGES, lambda name, ms: calls.append((name, ms))))
    assert caught.value is error
    # Everything before retrieval ran (the shared stages included), nothing after.
    assert _names(calls)[-1] == "query_embedding"
    assert "budget" in _names(calls)


def test_a_stage_error_names_the_stage_and_keeps_type_and_message(state: EngineState) -> None:
    def boom(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("bad ranking input")

    state.ranker.rank = boom
    with pytest.raises(ValueError, match="bad ranking input") as caught:
        run_job(make_job("What is machine learning?"), state)
    assert failed_stage(caught.value) == "rank"


def test_query_embedding_errors_are_named_retrieval() -> None:
    assert QueryEmbedding().name == "query_embedding"
    assert QueryEmbedding().error_name == "retrieval"


def test_make_job_rejects_unknown_keywords() -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'top_k'"):
        make_job("q", top_k=3)
    job = make_job("q", "s-1", max_chunks=2)
    assert job.options.session_id == "s-1" and job.options.max_chunks == 2


def _drive(coroutine: Any) -> Any:
    from zerda_async.pipeline._walker import _drive as drive

    return drive(coroutine)
