"""``retriever.cross_script_evidence``: imputed keyword evidence for another script's chunks."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from zerda_async.core.config import ContextEngineConfig
from zerda_async.core.models import RetrievalMethod, ScoredChunk
from zerda_async.core.retrieval.fusion import fuse, fuse_convex
from zerda_async.core.retrieval.script_evidence import foreign_evidence, home_script
from zerda_async.core.validation import validate_config
from zerda_async.errors import ConfigError

AR = "نهر النيل أطول نهر في أفريقيا"
AR2 = "القهوة العربية بالهيل"
EN = "The Nile is the longest river in Africa"
EN2 = "Arabic coffee with cardamom"
V, K = RetrievalMethod.VECTOR, RetrievalMethod.KEYWORD
WEIGHTS = {V: 0.5, K: 0.5, RetrievalMethod.METADATA: 0.5}


@dataclass
class Doc:
    text: str


def vec(text: str, cosine: float) -> ScoredChunk:
    return ScoredChunk(chunk=Doc(text), vector_score=cosine)


def kw(text: str, coverage: float) -> ScoredChunk:
    return ScoredChunk(chunk=Doc(text), keyword_score=coverage, query_coverage=coverage)


def test_foreign_candidate_gets_best_home_evidence_times_its_cosine() -> None:
    vector = [vec(EN, 0.9), vec(AR, 0.8), vec(EN2, 0.7)]
    keyword = [kw(AR, 0.6), kw(AR2, 0.2)]
    gains = foreign_evidence(vector, [1.0, 0.5, 0.0], keyword, [0.6, 0.2])
    assert gains == [0.6, 0.0, 0.0]  # EN: 0.6 x 1.0; AR is home; EN2's cosine is 0


def test_own_keyword_evidence_counts_against_the_imputed_one() -> None:
    vector = [vec(EN, 0.9), vec(AR, 0.8)]
    keyword = [kw(AR, 0.6), kw(EN, 0.1)]  # a Latin name shared with the English chunk
    gains = foreign_evidence(vector, [1.0, 0.0], keyword, [0.6, 0.1])
    assert gains == pytest.approx([0.5, 0.0])


def test_one_script_or_no_keyword_evidence_changes_nothing() -> None:
    vector = [vec(AR, 0.9), vec(AR2, 0.8)]
    assert foreign_evidence(vector, [1.0, 0.0], [kw(AR, 0.5)], [0.5]) is None
    assert foreign_evidence([vec(EN, 0.9)], [1.0], [kw(AR, 0.0)], [0.0]) is None
    assert foreign_evidence([vec(EN, 0.9)], [1.0], [], []) is None


def test_home_script_is_the_one_holding_most_evidence() -> None:
    assert home_script([kw(EN, 0.3), kw(AR, 0.2), kw(AR2, 0.2)], [0.3, 0.2, 0.2]) == "ar"
    assert home_script([kw(EN, 0.3), kw(AR, 0.3)], [0.3, 0.3]) == "other"  # first met


def lists() -> list[tuple[RetrievalMethod, list[ScoredChunk]]]:
    return [
        (V, [vec(EN, 0.90), vec(AR, 0.85), vec(AR2, 0.80)]),
        (K, [kw(AR, 1.0), kw(AR2, 0.3)]),
    ]


def test_fusion_ranks_the_foreign_answer_first_only_when_on() -> None:
    off = fuse_convex(lists(), 3, WEIGHTS)
    on = fuse_convex(lists(), 3, WEIGHTS, cross_script=True)
    assert off[0].text == AR
    assert on[0].text == EN
    # EN: 0.5 x 1.0 (cosine) + 0.5 x 1.0 x 1.0 (imputed) over AR's 0.25 + 0.5
    assert on[0].fused_score == pytest.approx(1.0)
    assert on[1].fused_score == pytest.approx(off[0].fused_score)


def test_knob_is_off_by_default_on_in_recommended_and_validated() -> None:
    assert ContextEngineConfig().retriever.cross_script_evidence is False
    config = ContextEngineConfig.recommended()
    assert config.retriever.cross_script_evidence is True
    assert fuse(lists(), 3, config.retriever)[0].text == EN
    config.retriever.cross_script_evidence = "yes"  # type: ignore[assignment]
    with pytest.raises(ConfigError, match="cross_script_evidence"):
        validate_config(config)
