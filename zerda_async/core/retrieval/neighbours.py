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
A vector candidate's evidence (its min-max scaled cosine) is raised the same
way toward its best neighbour's among the vector candidates
(:func:`raised_by_neighbours`): cosines cannot be pooled like terms, so the
passage's evidence is its best chunk's.

Only the candidates are looked at, so the rule needs nothing from the index
and every placement (in memory, a saved directory, a store) computes it from
the same lists.  A chunk without both keys, or without a neighbour among the
candidates, keeps its own evidence; ``query_coverage`` and ``vector_margin``
(what the composer's relevance floor reads) are left unchanged.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from ..index.analysis import Analyzer, TermMemo
from ..index.chunks import SEARCH_HEADING
from ..models import ScoredChunk
from .coverage import QueryWeights

__all__ = ["neighbour_evidence", "place_of", "raised_by_neighbours"]


def place_of(chunk: ScoredChunk) -> tuple[Hashable, int] | None:
    """``(source, chunk number)`` of ``chunk`` from its metadata, or None when it lacks one."""
    metadata = chunk.metadata
    source, number = metadata.get("source"), metadata.get("chunk")
    if type(number) is int and type(source) is str:
        return source, number
    if not isinstance(source, str) or isinstance(number, bool) or not isinstance(number, int):
        return None
    return source, number


def _neighbours(candidates: Sequence[ScoredChunk]) -> list[list[int]]:
    """For each candidate, the indexes of its neighbours among ``candidates``."""
    places: dict[tuple[Hashable, int], int] = {}
    found = [place_of(sc) for sc in candidates]
    for at, place in enumerate(found):
        if place is not None:
            places.setdefault(place, at)
    get = places.get
    near: list[list[int]] = []
    for place in found:
        if place is None:
            near.append([])
            continue
        source, number = place
        before, after = get((source, number - 1)), get((source, number + 1))
        if before is None:
            near.append([] if after is None else [after])
        else:
            near.append([before] if after is None else [before, after])
    return near


def raised_by_neighbours(
    evidence: Sequence[float], candidates: Sequence[ScoredChunk], weight: float
) -> list[float]:
    """``evidence`` (one value per candidate) raised by ``weight`` toward the best neighbour's.

    ``own + weight * (best - own)`` when a neighbour among ``candidates`` has
    more evidence (``best``), else ``own``.
    """
    raised = list(evidence)
    if weight <= 0:
        return raised
    for at, near in enumerate(_neighbours(candidates)):
        if not near:
            continue
        # ``max`` over the neighbours, spelled out: keeps the first unless a later is larger.
        best = evidence[near[0]]
        for i in near[1:]:
            if evidence[i] > best:
                best = evidence[i]
        if best > evidence[at]:
            raised[at] = evidence[at] + weight * (best - evidence[at])
    return raised


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
    # ``max(0.0, c)`` without the call (NaN to 0.0 alike).
    own = [c if c > 0.0 else 0.0 for c in (sc.query_coverage for sc in candidates)]
    total = sum(w for _, w in weights)
    if weight <= 0 or total <= 0:
        return own
    evidence = list(own)
    for at, near in enumerate(_neighbours(candidates)):
        if not near:
            continue
        sc = candidates[at]
        others = [_held(candidates[i], analyzer, memo) for i in near]
        held = _held(sc, analyzer, memo).union(*others)
        passage = sum(w for term, w in weights if term in held) / total
        evidence[at] = own[at] + weight * max(0.0, passage - own[at])
    return evidence
