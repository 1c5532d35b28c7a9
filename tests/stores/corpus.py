"""Test corpora: the bundled demo corpus, and a synthetic one with ties and metadata."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

import zerda_async
from zerda_async.embedders import HashingEmbedder

DEMO = Path(zerda_async.__file__).parent / "apps" / "data" / "demo_corpus.jsonl"


@dataclass
class Doc:
    """A plain chunk."""

    doc_id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


def demo_docs() -> list[Doc]:
    """The 53 bundled Arabic and English documents."""
    lines = DEMO.read_text(encoding="utf-8").splitlines()
    return [Doc(**json.loads(line)) for line in lines if line.strip()]


def ranked(hits: Sequence[Any]) -> list[tuple[str, float]]:
    """The doc ids and scores of a store's hits, in order (what two stores must agree on)."""
    return [(h.chunk.doc_id, h.score) for h in hits]


def embed(docs: list[Doc], dim: int = 64) -> NDArray[np.float64]:
    """Hashing-embedder vectors of the docs' texts."""
    return HashingEmbedder(dim=dim).embed_batch([d.text for d in docs])


def synthetic_docs(n: int, seed: int = 7) -> list[Doc]:
    """``n`` docs over a small vocabulary (so BM25 ties happen) with numeric metadata."""
    rng = random.Random(seed)
    words = ["alpha", "beta", "gamma", "delta", "nile", "قهوة", "نخيل", "river", "date", "bm25"]
    docs = []
    for i in range(n):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(1, 6)))
        meta = {"year": 2015 + i % 10, "lang": "ar" if i % 3 == 0 else "en", "n": i % 4}
        docs.append(Doc(f"d{i % (n // 2 or 1)}", text, meta))
    return docs
