"""Script centring: question vectors lose the embedder's script direction (core.script_centring)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from zerda_async.core.config import ContextEngineConfig
from zerda_async.core.retrieval.vector import VectorRetriever
from zerda_async.core.script_centring import ScriptDirection, centre_query, direction_of
from zerda_async.embedders import E5Embedder


@dataclass
class _Doc:
    doc_id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


# A toy embedder's space: two topics (river, coffee), a script axis that every
# text of one script shares, as a multilingual model's script offset does, and
# a part common to all texts (cosines stay positive).
TEXTS = {
    "The river floods in summer.": (1.0, 0.0, -1.0, 1.0),
    "القهوة تقدم ساخنة.": (0.0, 1.0, 1.0, 1.0),  # coffee, in Arabic
    "متى يفيض النهر؟": (1.0, 0.1, 1.0, 1.0),  # an Arabic question on the river
}
SCRIPT = ScriptDirection((0.0, 0.0, 1.0, 0.0))


def toy(text: str) -> list[float]:
    return list(TEXTS[text])


class ToyWithDirection:
    """The toy embedder carrying its script direction, as E5Embedder does."""

    script_direction = SCRIPT

    def __call__(self, text: str) -> list[float]:
        return toy(text)


def ranked(centring: bool, embed: Any) -> list[tuple[str, float]]:
    config = ContextEngineConfig.recommended()
    config.retriever.script_centring = centring
    retriever = VectorRetriever(config)
    chunks = [
        _Doc("en-river", "The river floods in summer."),
        _Doc("ar-coffee", "القهوة تقدم ساخنة."),
    ]
    retriever.index_chunks(chunks, embed)
    return [(sc.doc_id, sc.vector_score) for sc in retriever.retrieve("متى يفيض النهر؟", 2)]


def test_a_direction_is_a_read_only_unit_vector_and_refuses_nonsense() -> None:
    d = ScriptDirection([3.0, 4.0])
    assert d.dim == 2 and np.allclose(d.unit, [0.6, 0.8])
    with pytest.raises(ValueError, match="read-only"):
        d.unit[0] = 1.0
    for bad in ([], [0.0, 0.0], [1.0, math.nan], [math.inf]):
        with pytest.raises(ValueError, match="ScriptDirection"):
            ScriptDirection(bad)


def test_centring_removes_the_component_along_the_direction_only() -> None:
    rng = np.random.default_rng(3)
    d = ScriptDirection(rng.normal(size=16))
    for _ in range(20):
        q = rng.normal(size=16)
        centred = centre_query(q, d)
        assert abs(float(centred @ d.unit)) < 1e-12
        # What is orthogonal to the direction is kept.
        assert np.allclose(centred, q - (q @ d.unit) * d.unit)
        other = rng.normal(size=16)
        other -= (other @ d.unit) * d.unit
        assert math.isclose(float(centred @ other), float(q @ other), abs_tol=1e-9)


def test_no_direction_a_wrong_dimension_or_a_nan_leaves_the_vector_as_it_was() -> None:
    q = np.array([1.0, 2.0, 3.0])
    assert np.array_equal(centre_query(q, None), q)
    assert np.array_equal(centre_query(q, ScriptDirection([1.0, 0.0])), q)
    nan = np.array([1.0, math.nan, 3.0])
    assert np.array_equal(centre_query(nan, ScriptDirection([0.0, 0.0, 1.0])), nan, equal_nan=True)


def test_the_direction_is_found_on_an_embedder_or_its_bound_method() -> None:
    embedder = ToyWithDirection()
    assert direction_of(embedder) is SCRIPT
    assert direction_of(None, embedder.__call__) is SCRIPT
    assert direction_of(toy) is None

    class Impostor:
        script_direction = (0.0, 0.0, 1.0, 0.0)  # not a ScriptDirection: ignored

    assert direction_of(Impostor()) is None
    assert E5Embedder.script_direction.dim == 384


def test_an_arabic_question_reaches_the_english_answer_once_centred() -> None:
    # Sharing the question's script outweighs the topic in the plain cosine.
    assert [doc for doc, _ in ranked(False, ToyWithDirection())] == ["ar-coffee", "en-river"]
    assert [doc for doc, _ in ranked(True, ToyWithDirection())] == ["en-river", "ar-coffee"]


def test_without_a_direction_the_switch_changes_nothing() -> None:
    # A plain embedding function carries no direction: same chunks, same cosines.
    assert ranked(True, toy) == ranked(False, toy)
