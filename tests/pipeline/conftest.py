"""Fixtures of the runner tests: a small corpus and a fresh engine state over it."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from zerda_async.pipeline import EngineState

TEXTS = [
    ("ml", "Machine learning lets computers learn patterns from data without explicit rules."),
    ("bm25", "BM25 ranks documents by term frequency and inverse document frequency."),
    ("rrf", "Reciprocal rank fusion merges ranked lists from keyword and vector search."),
    ("nile", "The Nile flows north through Egypt into the Mediterranean Sea."),
    ("ar-ml", "التعلم الآلي فرع من الذكاء الاصطناعي يتعلم من البيانات."),
    ("ar-nile", "يجري نهر النيل شمالا عبر مصر حتى البحر المتوسط."),
]


def chunks() -> list[Any]:
    """The corpus as duck-typed chunks (``text``, ``doc_id``, ``metadata``)."""
    return [
        SimpleNamespace(text=text, doc_id=doc_id, metadata={"source": doc_id.split("-")[0]})
        for doc_id, text in TEXTS
    ]


def embed(text: Any) -> np.ndarray:
    """A deterministic 16-dim embedding of ``text`` (letter counts; lexical, for tests)."""
    vector = np.zeros(16)
    for ch in str(text).lower():
        vector[ord(ch) % 16] += 1.0
    return vector


@pytest.fixture
def state() -> EngineState:
    """An engine state indexed over the corpus with the test embedder."""
    engine_state = EngineState()
    engine_state.index(chunks(), embed)
    return engine_state
