"""Neighbour-aware keyword evidence (``retriever.neighbour_weight``): rule, fusion, engines."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pytest

from sync_api import ContextEngine
from zerda_async import AsyncContextEngine
from zerda_async.core.config import ContextEngineConfig
from zerda_async.core.index.analysis import TermMemo, analyzer_for
from zerda_async.core.models import RetrievalMethod, ScoredChunk
from zerda_async.core.retrieval.fusion import fuse_convex
from zerda_async.core.retrieval.neighbours import (
    neighbour_evidence,
    place_of,
    raised_by_neighbours,
)
from zerda_async.errors import ConfigError

K, V = RetrievalMethod.KEYWORD, RetrievalMethod.VECTOR
ANALYZER = analyzer_for("multilingual-lite")
WEIGHTS = [("ferritin", 2.0), ("level", 1.0), ("patients", 1.0)]  # total 4


@dataclass
class Doc:
    doc_id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


def hit(name: str, text: str, coverage: float, **metadata: Any) -> ScoredChunk:
    return ScoredChunk(chunk=Doc(name, text, metadata), query_coverage=coverage, retrieval_method=K)


def test_a_neighbour_adds_the_terms_the_chunk_lacks_at_the_weight() -> None:
    question = hit("q", "ferritin was measured", 0.5, source="a", chunk=3)
    answer = hit("x", "the level was high in patients", 0.5, source="a", chunk=4)
    found = neighbour_evidence([question, answer], WEIGHTS, 0.5, ANALYZER, TermMemo())
    # Together they hold every term (coverage 1): 0.5 + 0.5 * (1 - 0.5) for both.
    assert found == [0.75, 0.75]
    assert neighbour_evidence([question, answer], WEIGHTS, 1.0, ANALYZER, TermMemo()) == [1, 1]
    assert (question.query_coverage, answer.query_coverage) == (0.5, 0.5)  # left unchanged


def test_only_chunks_next_to_each_other_in_one_source_are_neighbours() -> None:
    base = hit("q", "ferritin was measured", 0.5, source="a", chunk=3)
    others = [
        hit("far", "level patients", 0.5, source="a", chunk=5),  # two places away
        hit("other", "level patients", 0.5, source="b", chunk=4),  # another source
        hit("none", "level patients", 0.5),  # no place
        hit("bool", "level patients", 0.5, source="a", chunk=True),  # not a number
    ]
    found = neighbour_evidence([base, *others], WEIGHTS, 0.5, ANALYZER, TermMemo())
    assert found == [0.5, 0.5, 0.5, 0.5, 0.5]
    assert place_of(others[2]) is None and place_of(others[3]) is None
    assert place_of(base) == ("a", 3)


def test_the_search_heading_counts_as_held_and_nothing_is_lost() -> None:
    # The heading holds "ferritin"; the neighbour adds nothing new beyond "level".
    head = hit("h", "was measured", 0.5, source="a", chunk=0, search_heading="Ferritin")
    near = hit("n", "level", 0.25, source="a", chunk=1)
    found = neighbour_evidence([head, near], WEIGHTS, 0.5, ANALYZER, TermMemo())
    assert found == [0.5 + 0.5 * (0.75 - 0.5), 0.25 + 0.5 * (0.75 - 0.25)]
    assert neighbour_evidence([head, near], WEIGHTS, 0.0, ANALYZER, TermMemo()) == [0.5, 0.25]
    assert neighbour_evidence([head, near], [], 0.5, ANALYZER, TermMemo()) == [0.5, 0.25]


def test_convex_fusion_takes_the_given_keyword_evidence() -> None:
    lists = [(K, [hit("a", "x", 0.6), hit("b", "y", 0.5)])]
    assert [sc.doc_id for sc in fuse_convex(lists, 2, {K: 0.5})] == ["a", "b"]
    fused = fuse_convex(lists, 2, {K: 0.5}, [0.6, 0.8])
    assert [sc.doc_id for sc in fused] == ["b", "a"]
    assert fused[0].fused_score == pytest.approx(0.4)
    assert fused[0].query_coverage == 0.5


def cos(name: str, score: float, **metadata: Any) -> ScoredChunk:
    return ScoredChunk(chunk=Doc(name, name, metadata), vector_score=score, retrieval_method=V)


def test_vector_evidence_rises_halfway_toward_the_best_neighbour() -> None:
    listed = [
        cos("a1", 0.9, source="a", chunk=1),
        cos("b0", 0.8, source="b", chunk=0),
        cos("a2", 0.7, source="a", chunk=2),
        cos("a0", 0.6, source="a", chunk=0),
        cos("b5", 0.5, source="b", chunk=5),
    ]
    evidence = [1.0, 0.75, 0.5, 0.25, 0.0]
    # a2 and a0 rise toward a1 (1.0); a1 has no better neighbour; b0 and b5 have none.
    raised = raised_by_neighbours(evidence, listed, 0.5)
    assert raised == [1.0, 0.75, 0.75, 0.625, 0.0]
    assert raised_by_neighbours(evidence, listed, 0.0) == evidence


def test_convex_fusion_raises_vector_evidence_and_keeps_the_margin() -> None:
    listed = [
        cos("a1", 0.9, source="a", chunk=1),
        cos("b0", 0.8, source="b", chunk=0),
        cos("a2", 0.75, source="a", chunk=2),
        cos("c0", 0.5, source="c", chunk=0),
    ]
    before = fuse_convex([(V, listed)], 4, {V: 0.5})
    assert [sc.doc_id for sc in before] == ["a1", "b0", "a2", "c0"]
    after = fuse_convex([(V, listed)], 4, {V: 0.5}, neighbour_weight=0.5)
    assert [sc.doc_id for sc in after] == ["a1", "a2", "b0", "c0"]
    a2 = after[1]
    # a2: evidence 0.625 raised to 0.625 + 0.5 * (1 - 0.625), against b0's 0.75.
    assert a2.fused_score == pytest.approx(0.5 * 0.8125)
    assert after[2].fused_score == pytest.approx(0.5 * 0.75)
    assert a2.vector_margin == pytest.approx(0.25)  # the floor's evidence is unchanged


def test_recommended_turns_it_on_and_the_documented_profile_leaves_it_off() -> None:
    assert ContextEngineConfig().retriever.neighbour_weight == 0.0
    assert ContextEngineConfig.recommended().retriever.neighbour_weight == 0.5


@pytest.mark.parametrize("value", [-0.1, 1.5, math.nan, True, "0.5"])
def test_a_weight_outside_zero_to_one_is_refused(value: Any) -> None:
    config = ContextEngineConfig.recommended()
    config.retriever.neighbour_weight = value
    with pytest.raises(ConfigError, match=r"retriever\.neighbour_weight must be a number"):
        config.validate()


# A long article cut into chunks: the question's words sit in the chunk before the
# answer; a chunk of another article repeats them without answering.
ARTICLE = [
    "Serum ferritin in hospitalised patients was studied in this cohort.",
    "The median level reached 1200 ng/ml at admission.",
    "Other markers followed later in the course.",
]
QUESTION = "What serum ferritin level did hospitalised patients reach?"


def corpus() -> list[Doc]:
    docs = [
        Doc(f"paper#{i}", text, {"source": "paper", "chunk": i}) for i, text in enumerate(ARTICLE)
    ]
    docs.append(
        Doc(
            "review#0", "Serum ferritin of patients, in a review.", {"source": "review", "chunk": 0}
        )
    )
    return docs


def config(weight: float) -> ContextEngineConfig:
    config = ContextEngineConfig.recommended()
    config.retriever.text_analyzer = "multilingual-lite"
    config.retriever.neighbour_weight = weight
    config.cache.enabled = False
    return config


def sync_ranked(weight: float) -> list[str]:
    engine = ContextEngine(config(weight))
    engine.index(corpus())
    retriever = engine._state.retriever
    assert retriever is not None
    return [sc.doc_id for sc in retriever.retrieve(QUESTION, 4)]


def test_the_answer_chunk_rises_above_a_chunk_of_another_source() -> None:
    before, after = sync_ranked(0.0), sync_ranked(0.5)
    assert before.index("paper#1") > before.index("review#0")
    assert after.index("paper#1") < after.index("review#0")


@pytest.mark.anyio
async def test_the_async_engine_ranks_as_the_sync_facade() -> None:
    async with AsyncContextEngine(config(0.5)) as engine:
        await engine.index(corpus())
        result = await engine.run(QUESTION, use_history=False, record_turn=False)
    sync = ContextEngine(config(0.5))
    sync.index(corpus())
    expected = sync.run(QUESTION, use_history=False, record_turn=False)
    assert result.context == expected.context
    assert [sc.doc_id for sc in result.chunks_used] == [sc.doc_id for sc in expected.chunks_used]
    assert "1200" in result.context
