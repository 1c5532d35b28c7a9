"""Question map: a learned correction of centred question vectors of one script
(core.question_map, core.script_centring.question_vector)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from zerda_async.core.config import ContextEngineConfig
from zerda_async.core.question_map import QuestionMap, map_question
from zerda_async.core.retrieval.vector import VectorRetriever
from zerda_async.core.script_centring import ScriptDirection, centre_query, question_vector
from zerda_async.embedders import E5Embedder

ARABIC = "متى يفيض النهر؟"
ENGLISH = "When does the river flood?"


@dataclass
class _Doc:
    doc_id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


def test_a_map_is_read_only_and_refuses_nonsense() -> None:
    m = QuestionMap("ar", [[1.0], [0.0]], [[0.0], [2.0]])
    assert (m.script, m.dim, m.rank) == ("ar", 2, 1)
    assert repr(m) == "QuestionMap('ar', dim=2, rank=1)"
    with pytest.raises(ValueError, match="script must be one of"):
        QuestionMap("latin", [[1.0]], [[1.0]])
    with pytest.raises(ValueError, match="one shape"):
        QuestionMap("ar", [[1.0, 0.0]], [[1.0]])
    with pytest.raises(ValueError, match="finite"):
        QuestionMap("ar", [[math.nan]], [[1.0]])
    with pytest.raises(ValueError, match="non-empty"):
        QuestionMap("ar", [], [])
    with pytest.raises(ValueError, match="table of numbers"):
        QuestionMap("ar", [["a"]], [[1.0]])


def test_the_map_adds_u_times_v_transpose_q_and_keeps_its_own_copy() -> None:
    rng = np.random.default_rng(5)
    u, v = rng.normal(size=(6, 2)), rng.normal(size=(6, 2))
    m = QuestionMap("ar", u, v)
    q = rng.normal(size=6)
    expected = q + u @ (v.T @ q)
    u[:] = 0.0  # the caller's table changing later changes nothing
    assert np.allclose(m.apply(q), expected)


def test_only_questions_in_the_maps_script_are_moved() -> None:
    m = QuestionMap("ar", [[1.0], [0.0]], [[0.0], [1.0]])
    q = np.array([0.5, 2.0])
    assert np.allclose(map_question(q, m, ARABIC), [2.5, 2.0])
    assert np.array_equal(map_question(q, m, ENGLISH), q)
    latin = QuestionMap("other", [[1.0], [0.0]], [[0.0], [1.0]])
    assert np.array_equal(map_question(q, latin, ARABIC), q)
    assert np.allclose(map_question(q, latin, ENGLISH), [2.5, 2.0])
    # No map, another dimension or a NaN: unchanged (the query check names the NaN).
    assert np.array_equal(map_question(q, None, ARABIC), q)
    assert np.array_equal(map_question(np.ones(3), m, ARABIC), np.ones(3))
    nan = np.array([math.nan, 1.0])
    assert np.array_equal(map_question(nan, m, ARABIC), nan, equal_nan=True)


def test_a_direction_carries_a_map_of_its_own_dimension_only() -> None:
    m = QuestionMap("ar", [[1.0], [0.0]], [[0.0], [1.0]])
    assert ScriptDirection([0.0, 1.0], m).question_map is m
    assert ScriptDirection([0.0, 1.0]).question_map is None
    with pytest.raises(ValueError, match="cannot carry a QuestionMap of dimension 2"):
        ScriptDirection([0.0, 0.0, 1.0], m)
    with pytest.raises(TypeError, match="must be a QuestionMap or None, got str"):
        ScriptDirection([0.0, 1.0], "ar")  # type: ignore[arg-type]


def test_a_map_that_overflows_a_vector_says_so() -> None:
    huge = QuestionMap("ar", [[1e300], [0.0]], [[1e300], [0.0]])
    with pytest.raises(ValueError, match="overflow"):
        map_question(np.array([1.0, 0.0]), huge, ARABIC)


def test_the_question_vector_is_centred_then_mapped_and_only_with_centring() -> None:
    rng = np.random.default_rng(9)
    m = QuestionMap("ar", rng.normal(size=(8, 3)), rng.normal(size=(8, 3)))
    d = ScriptDirection(rng.normal(size=8), m)
    q = rng.normal(size=8)
    centred = centre_query(q, d)
    both = question_vector(q, d, ARABIC, centring=True, mapping=True)
    assert np.allclose(both, m.apply(centred))
    assert np.allclose(question_vector(q, d, ENGLISH, centring=True, mapping=True), centred)
    assert np.allclose(question_vector(q, d, ARABIC, centring=True, mapping=False), centred)
    # Without centring nothing changes, mapping or not: the map was fitted on centred vectors.
    assert question_vector(q, d, ARABIC, centring=False, mapping=True) is q
    assert np.array_equal(question_vector(q, None, ARABIC, centring=True, mapping=True), q)


# A toy space: a river axis, a coffee axis, a script axis and a part common to
# all texts.  The map moves an Arabic question along the river axis by its
# coffee reading, so the map's effect on the vector list shows.
TEXTS = {
    "The river floods in summer.": (1.0, 0.0, -1.0, 1.0),
    "Coffee is served hot.": (0.2, 1.0, -1.0, 1.0),
    ARABIC: (0.3, 0.5, 1.0, 1.0),
    ENGLISH: (0.3, 0.5, -1.0, 1.0),
}
MAP = QuestionMap("ar", [[1.0], [0.0], [0.0], [0.0]], [[0.0], [2.0], [0.0], [0.0]])


class ToyWithMap:
    """A toy embedder whose script direction carries a question map, as E5Embedder's does."""

    script_direction = ScriptDirection((0.0, 0.0, 1.0, 0.0), MAP)

    def __call__(self, text: str) -> list[float]:
        return list(TEXTS[text])


def first(question: str, mapping: bool) -> str:
    config = ContextEngineConfig.recommended()
    config.retriever.question_map = mapping
    retriever = VectorRetriever(config)
    chunks = [_Doc("river", "The river floods in summer."), _Doc("coffee", "Coffee is served hot.")]
    retriever.index_chunks(chunks, ToyWithMap())
    return retriever.retrieve(question, 2)[0].doc_id


def test_the_vector_list_follows_the_map_for_arabic_questions_only() -> None:
    assert first(ARABIC, mapping=False) == "coffee"
    assert first(ARABIC, mapping=True) == "river"
    assert first(ENGLISH, mapping=True) == first(ENGLISH, mapping=False) == "coffee"


def test_e5_carries_its_arabic_map_on_its_script_direction() -> None:
    m = E5Embedder.script_direction.question_map
    assert m is not None
    assert (m.script, m.dim, m.rank) == ("ar", 384, 64)
    # It is a correction, not a new space: a question moves, but not far.
    q = np.random.default_rng(2).normal(size=384)
    q /= np.linalg.norm(q)
    moved = m.apply(q)
    assert 0.0 < float(np.linalg.norm(moved - q)) < 1.0
