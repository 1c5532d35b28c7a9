"""The relevance floor's vector evidence, calibrated by the embedder (``core.vector_floor``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import numpy as np
import pytest

from sync_api import ContextEngine
from zerda_async import AsyncContextEngine, ContextEngineConfig
from zerda_async.core.composer import SmartContextComposer
from zerda_async.core.floor_model import MarginRule
from zerda_async.core.models import QueryAnalysis, ScoredChunk
from zerda_async.core.vector_floor import VectorFloor, covers_query, floor_of
from zerda_async.embedders import E5_FLOOR, CachedEmbedder, E5Embedder, Embedder, VectorCache
from zerda_async.errors import ConfigError

FLOOR = VectorFloor(accept=0.3, agree=0.1, depth=50)


def chunk(name: str, coverage: float, margin: float) -> ScoredChunk:
    sc = ScoredChunk(_Doc(name, f"text of {name}"), composite_score=0.5)
    sc.query_coverage, sc.vector_margin = coverage, margin
    return sc


@dataclass
class _Doc:
    doc_id: str
    text: str
    metadata: dict[str, str] = field(default_factory=dict)


@pytest.mark.parametrize(
    ("accept", "agree"), [(1.5, 0.1), (0.3, float("nan")), (0.3, True), (0.1, 0.3), ("0.1", 0.0)]
)
def test_fixed_margins_and_a_margin_rule_are_checked_alike(accept: Any, agree: Any) -> None:
    messages = []
    for kind in (VectorFloor, MarginRule):
        with pytest.raises(ValueError) as caught:
            kind(accept=accept, agree=agree)
        messages.append(str(caught.value).replace(kind.__name__, "<floor>"))
    assert messages[0] == messages[1]


def test_fixed_margins_apply_the_margin_rule_to_every_chunk() -> None:
    floor = VectorFloor(accept=0.05, agree=0.02)
    assert floor.rule == MarginRule(0.05, 0.02)
    rng = np.random.default_rng(3)
    for _ in range(500):
        found = []
        for _ in range(int(rng.integers(1, 5))):
            sc = ScoredChunk(_Doc("d", "river"), vector_score=0.8, composite_score=0.5)
            sc.vector_margin = float(rng.choice([0.0, 0.01, 0.02, 0.05, 0.1]))
            sc.query_coverage = float(rng.choice([-1.0, 0.0, 0.1, 0.2]))
            found.append(sc)
        if all(sc.query_coverage < 0 for sc in found):
            expected = True  # nothing measured: the check does not apply
        elif any(sc.vector_margin > 0 for sc in found):
            expected = any(sc.vector_margin >= 0.05 for sc in found) or any(
                sc.query_coverage >= 0.15 and sc.vector_margin >= 0.02 for sc in found
            )
            assert floor.rule.passes(found, 0.15) is expected
        else:  # no vector evidence: the keyword floor
            expected = max(sc.query_coverage for sc in found) >= 0.15
        assert covers_query(found, 0.15, floor=floor) is expected


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"accept": 1.5, "agree": 0.1}, r"VectorFloor\.accept must be a number in \[0, 1\]"),
        ({"accept": 0.3, "agree": float("nan")}, r"VectorFloor\.agree must be"),
        ({"accept": 0.3, "agree": True}, r"VectorFloor\.agree must be"),
        ({"accept": 0.3, "agree": 0.1, "depth": 0}, r"VectorFloor\.depth must be a positive"),
        ({"accept": 0.1, "agree": 0.3}, r"agree \(0\.3\) must not exceed accept \(0\.1\)"),
    ],
)
def test_a_bad_calibration_is_refused_naming_the_field(
    kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        VectorFloor(**kwargs)


def test_the_floor_is_found_on_the_embedder_or_the_owner_of_its_batch_method() -> None:
    class Calibrated:
        vector_floor = FLOOR

        def __call__(self, text: Any) -> Any:
            return np.ones(2)

        def embed_batch(self, texts: Sequence[Any]) -> Any:
            return np.ones((len(texts), 2))

    emb = Calibrated()
    assert floor_of(emb) is FLOOR
    assert floor_of(None, emb.embed_batch) is FLOOR
    assert floor_of(lambda text: np.ones(2)) is None
    emb.vector_floor = 0.05  # type: ignore[assignment]  # not a VectorFloor: none
    assert floor_of(emb) is None
    assert Embedder(Calibrated(), Calibrated().embed_batch).vector_floor is FLOOR


def test_e5_carries_its_calibration_and_a_cache_keeps_it(tmp_path: Any) -> None:
    assert E5Embedder.vector_floor is E5_FLOOR and E5_FLOOR.depth == 50

    class Plain:
        name = "plain"

        def __call__(self, text: Any) -> Any:
            return np.ones(2)

        def embed_batch(self, texts: Sequence[Any]) -> Any:
            return np.ones((len(texts), 2))

    class Calibrated(Plain):
        vector_floor = FLOOR

    cache = VectorCache(tmp_path / "vectors")
    assert CachedEmbedder(Calibrated(), cache).vector_floor is FLOOR
    assert CachedEmbedder(Plain(), cache).vector_floor is None


def test_accept_lets_a_chunk_without_the_words_through() -> None:
    assert covers_query([chunk("a", 0.0, 0.35), chunk("b", 0.0, 0.0)], 0.15, floor=FLOOR)
    assert not covers_query([chunk("a", 0.0, 0.25)], 0.15, floor=FLOOR)
    assert not covers_query([chunk("a", 0.0, 0.35)], 0.15)  # no floor: keywords decide


def test_a_keyword_match_counts_only_when_the_vector_list_agrees() -> None:
    # The chunk holding the words stands too low in the vector list: off-topic.
    weak = [chunk("words", 0.5, 0.05), chunk("vector", 0.0, 0.2)]
    assert not covers_query(weak, 0.15, floor=FLOOR)
    assert covers_query(weak, 0.15)  # the keyword floor alone accepts it
    # The same chunk listed well by the embedder too: relevant.
    assert covers_query([chunk("words", 0.5, 0.12)], 0.15, floor=FLOOR)
    # Another chunk's margin does not vouch for a keyword match.
    assert not covers_query([chunk("w", 0.5, 0.0), chunk("v", 0.0, 0.2)], 0.15, floor=FLOOR)


def test_without_vector_evidence_or_coverage_the_old_rules_hold() -> None:
    keyword_only = [chunk("a", 0.5, 0.0), chunk("b", 0.1, 0.0)]
    assert covers_query(keyword_only, 0.15, floor=FLOOR)  # nothing from the vector list
    assert not covers_query([chunk("a", 0.1, 0.0)], 0.15, floor=FLOOR)
    assert covers_query([chunk("a", -1.0, 0.01)], 0.15, floor=FLOOR)  # coverage unmeasured
    assert covers_query([chunk("a", 0.0, 0.0)], 0.0, floor=FLOOR)  # the check is off
    # A fixed margin still passes whatever the floor says.
    assert covers_query([chunk("a", 0.0, 0.2)], 0.15, vector_margin=0.2, floor=FLOOR)


def test_the_composer_uses_the_floor_only_where_it_was_calibrated() -> None:
    config = ContextEngineConfig.recommended()
    analysis = QueryAnalysis(original_query="q", normalized="q")
    found = [chunk("a", 0.0, 0.35)]
    composer = SmartContextComposer(config)
    assert not composer.compose_cited(list(found), analysis, 2000, None, FLOOR).nothing_relevant
    assert composer.compose_cited(list(found), analysis, 2000).nothing_relevant
    config.retriever.fusion_depth = 30  # the margins were measured on lists of 50
    assert composer.compose_cited(list(found), analysis, 2000, None, FLOOR).nothing_relevant
    config.retriever.fusion_depth = 50
    config.composer.embedder_floor = False
    assert composer.compose_cited(list(found), analysis, 2000, None, FLOOR).nothing_relevant


def test_embedder_floor_must_be_a_bool() -> None:
    config = ContextEngineConfig.recommended()
    config.composer.embedder_floor = "yes"  # type: ignore[assignment]
    with pytest.raises(ConfigError, match=r"composer\.embedder_floor must be true or false"):
        config.validate()


# -- through the engine --------------------------------------------------------------------

CONCEPTS = [("nile", "النيل"), ("coffee", "القهوة"), ("desert", "الصحراء")]
CHUNKS = [
    _Doc("nile", "The Nile flows north through Egypt to the sea."),
    _Doc("coffee", "Coffee is served hot in small cups after meals."),
    _Doc("desert", "The desert is dry by day and cold at night."),
]


class ToyEmbedder:
    """One axis per concept, whatever the language; optionally calibrated."""

    name = "toy"

    def __init__(self, floor: VectorFloor | None) -> None:
        self.vector_floor = floor

    def __call__(self, text: Any) -> Any:
        words = str(text).lower().replace("؟", " ").replace(".", " ").split()
        return np.array([*(sum(w in words for w in pair) for pair in CONCEPTS), 0.1])

    def embed_batch(self, texts: Sequence[Any]) -> Any:
        return np.stack([self(t) for t in texts])


async def _ask(emb: ToyEmbedder, questions: Sequence[str]) -> list[bool]:
    config = ContextEngineConfig.recommended()
    async with AsyncContextEngine(config) as engine:
        await engine.index(CHUNKS, emb, batch_embed_fn=emb.embed_batch)
        return [(await engine.run(q)).nothing_relevant for q in questions]


def test_a_calibrated_embedder_answers_across_languages_an_uncalibrated_one_does_not() -> None:
    question = ["أين يجري النيل؟"]  # "Where does the Nile flow?"
    assert anyio.run(_ask, ToyEmbedder(VectorFloor(accept=0.5, agree=0.1)), question) == [False]
    assert anyio.run(_ask, ToyEmbedder(None), question) == [True]  # keyword floor only


def test_engines_over_one_corpus_differ_only_by_their_embedders_floor() -> None:
    """The floor is the embedder's, in the sync facade too: to compare two calibrations on
    one corpus, index once with an embedder carrying each (bench/bench_floor.py does)."""
    question = "أين يجري النيل؟"  # "Where does the Nile flow?"
    flagged = []
    for floor in (VectorFloor(accept=0.5, agree=0.1), None):
        engine = ContextEngine(ContextEngineConfig.recommended())
        engine.index(CHUNKS, embed_fn=ToyEmbedder(floor))
        flagged.append(engine.run(question).nothing_relevant)
    assert flagged == [False, True]


def test_placeholders_do_not_shrink_the_adaptive_budget() -> None:
    async def main() -> tuple[int, int]:
        config = ContextEngineConfig.recommended()
        async with AsyncContextEngine(config) as engine:
            await engine.index(CHUNKS)
            for _ in range(12):
                assert (await engine.run("quantum chromodynamics lattice")).nothing_relevant
            before = engine._state.adaptive.get_performance_report()["samples"]
            assert not (await engine.run("where does the nile flow")).nothing_relevant
            return before, engine._state.adaptive.get_performance_report()["samples"]

    assert anyio.run(main) == (0, 1)
