"""A small corpus whose right answers share meaning, not words, with the queries."""

from __future__ import annotations

from typing import Any

__all__ = ["CORPUS", "PARAPHRASES", "Doc", "best_vector_hit"]


class Doc:
    """A corpus chunk: ``doc_id``, ``text`` and ``metadata`` (with a ``source``)."""

    def __init__(self, doc_id: str, text: str) -> None:
        self.doc_id = doc_id
        self.text = text
        self.metadata = {"source": "Wiki"}

    def __repr__(self) -> str:
        return f"Doc({self.doc_id!r})"


CORPUS = [
    Doc("car", "The mechanic repaired the engine of my automobile yesterday."),
    Doc("bread", "Knead the dough, let it rise for an hour, then bake the loaf."),
    Doc("nile", "يمر نهر النيل بمصر والسودان ويصب في البحر الأبيض المتوسط."),
    Doc("coffee", "Coffee beans are roasted before they are ground and brewed."),
    Doc("football", "The striker scored twice and the team won the championship."),
    Doc("palm", "تنمو أشجار النخيل في المناخ الحار وتعطي التمر في الصيف."),
]

# (query, doc id): no content word of the query appears in the chunk.
PARAPHRASES = [
    ("Who fixes broken cars?", "car"),
    ("ما هو أطول نهر في أفريقيا؟", "nile"),
    ("a recipe for baking", "bread"),
    ("soccer match goals", "football"),
]


def best_vector_hit(result: Any) -> str:
    """The doc id of the used chunk with the highest vector score."""
    best = max(result.chunks_used, key=lambda scored: scored.vector_score)
    doc_id: str = best.chunk.doc_id
    return doc_id
