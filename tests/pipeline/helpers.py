"""The corpus and embedder of the runner tests."""

from __future__ import annotations

from typing import Any

import numpy as np
from support.chunks import Chunk
from support.corpus import sourced

__all__ = ["TEXTS", "chunks", "embed"]

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
