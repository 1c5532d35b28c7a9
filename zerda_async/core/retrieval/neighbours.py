"""Neighbour-aware keyword evidence: a chunk is read with the passage around it.

A long document cut into short chunks often puts a question's words in one
chunk and the answer in the next (the sentence that names the subject, then
the sentence that gives the figure).  Convex fusion scores a keyword
candidate by its query coverage (:mod:`.coverage`), which then favours the
chunk that repeats the question over the one that answers it.

With ``retriever.neighbour_weight = w`` (> 0, convex fusion only), the
evidence of each keyword candidate becomes::

    own + w * (passage - own)

where ``own`` is its query coverage and ``passage`` the coverage of the terms
it holds together with its *neighbours among the keyword candidates*: the
chunks of the same ``metadata["source"]`` whose integer ``metadata["chunk"]``
(its place in the source, as ``zerda index`` numbers them) differs by one.
Only the candidates are looked at, so the rule needs nothing from the index
and every placement (in memory, a saved directory, a store) computes it from
the same lists.  A chunk without both keys, or without a neighbour among the
candidates, keeps its own coverage; ``query_coverage`` itself (what the
composer's relevance floor reads) is left unchanged.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from ..index.analysis import Analyzer, TermMemo
from ..index.chunks import SEARCH_HEADING
from ..models import ScoredChunk
from .coverage import QueryWeights

__all__ = ["neighbour_evidence", "place_of"]


def place_of(chunk: ScoredChunk) -> tuple[Hashable, int] | None:
    """``(source, chunk number)`` of ``chunk`` from its metadata, or None when it lacks one."""
    metadata = chunk.metadata
    source, number = metadata.get("source"), metadata.get("chunk")
    if not isinstance(source, str) or isinstance(number, bool) or not isinstance(number, int):
        return None
    return source, number


def _held(chunk: ScoredChunk, analyzer: Analyzer, memo: TermMemo) -> frozenset[str]:
    """The terms keyword search reads of ``chunk``: its text's and its search heading's."""
    terms = memo.terms(chunk, analyzer)
    heading = chunk.metadata.get(SEARCH_HEADING)
    if isinstance(heading, str) and heading:
        return terms | frozenset(analyzer.tokenize(heading))
    return terms


def neighbour_evidence(
    candidates: Sequence[ScoredChunk],
    weights: QueryWeights,
    weight: float,
    analyzer: Analyzer,
    memo: TermMemo,
) -> list[float]:
    """Each keyword candidate's evidence, its neighbours' terms counted at ``weight``.

    ``candidates`` is the keyword method list (each with its ``query_coverage``),
    ``weights`` the query's terms with their idf in the index searched, ``analyzer``
    that index's analyser and ``memo`` a cache of analysed chunk texts.  See the
    module notes for the rule; the result is in the order of ``candidates``.
    """
    own = [max(0.0, sc.query_coverage) for sc in candidates]
    total = sum(w for _, w in weights)
    if weight <= 0 or total <= 0:
        return own
    places: dict[tuple[Hashable, int], int] = {}
    for at, sc in enumerate(candidates):
        place = place_of(sc)
        if place is not None:
            places.setdefault(place, at)
    evidence = list(own)
    for at, sc in enumerate(candidates):
        place = place_of(sc)
        if place is None:
            continue
        source, number = place
        near = [places.get((source, number - 1)), places.get((source, number + 1))]
        others = [candidates[i] for i in near if i is not None]
        if not others:
            continue
        held = _held(sc, analyzer, memo).union(*(_held(o, analyzer, memo) for o in others))
        passage = sum(w for term, w in weights if term in held) / total
        evidence[at] = own[at] + weight * max(0.0, passage - own[at])
    return evidence
