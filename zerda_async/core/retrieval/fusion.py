"""The one fusion: each method's own candidate list in, one fused list out.

Every retrieval path ends here — the sync facade's :class:`~.hybrid.HybridRetriever`,
the async engine's in-memory index and every index store — so a placement
cannot fuse differently.  Input: the *method lists*, ``(method, chunks)``
pairs in the order vector, keyword, metadata, each list best first, each
chunk carrying its method's score (and, from the keyword list, its
``query_coverage``).  Chunks are matched by content hash; a repeat within
one list counts once, at its first place (ranks still count every place).

``retriever.fusion`` picks the mode, one function each, all taking the same
lists (a new mode is one more function and one more line in :func:`fuse`):

* ``"documented"`` (:func:`fuse_documented`): the weighted sum of the method
  scores; a chunk found by two or more methods also earns ``1 / (60 + r)``
  per list (1-based rank ``r``) and is marked ``HYBRID``.  Its float
  arithmetic order is the documented package's, which golden cases compare
  exactly.
* ``"rrf"`` (:func:`fuse_rrf`): weighted Reciprocal Rank Fusion: a chunk at
  rank ``r`` of a method with weight ``w`` earns ``w / (k + r)``, summed over
  the methods that found it.  Scores of different methods are never
  compared, so a chunk found by one method only is not penalised by a zero
  from the other.  Every fused chunk keeps the evidence: ``fused_score``,
  each method's score and 1-based rank (0 when that method did not find it).

* ``"convex"`` (:func:`fuse_convex`): a weighted sum of each method's
  *evidence* on a common [0, 1] scale.  RRF sees only ranks, so a keyword
  list whose best hit shares one common word with the query counts as much
  as one whose best hit holds the whole question.  Keyword evidence is the
  hit's ``query_coverage`` (the idf-weighted share of the query's analysed
  terms it holds: absolute, so a cross-language question's keyword hits,
  which hold almost none of its terms, weigh almost nothing; a hit without a
  measured coverage counts its ``keyword_score``); vector evidence is the
  cosine min-max scaled over the vector list (best 1, the list's last 0:
  an embedder's cosines sit in a narrow band, e5's in 0.7–0.95, so only their
  spread within the list tells); metadata evidence its score.  Each
  vector-listed chunk keeps its ``vector_margin``, its cosine minus the
  list's last, the evidence the composer's ``min_vector_margin`` accepts
  when no chunk holds enough of the query's words.  Its lists are
  ``retriever.fusion_depth`` deep (:func:`search_depth`), so a chunk ranked
  30th by both methods can still enter the top ``k``.  With
  ``retriever.cross_script_evidence`` a candidate in another script than the
  keyword hits' gets imputed keyword evidence (:mod:`.script_evidence`).

All cut the fused list like ``[:top_k]``, set ``retrieval_rank`` (0-based)
and ``composite_score`` to the fused position and score, and keep first-seen
order among ties.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from operator import itemgetter
from typing import Any

from ...errors import ConfigError
from ..config import RetrieverConfig
from ..models import RetrievalMethod, ScoredChunk
from .neighbours import raised_by_neighbours
from .script_evidence import foreign_evidence

__all__ = [
    "RRF_K",
    "MethodList",
    "fuse",
    "fuse_convex",
    "fuse_documented",
    "fuse_rrf",
    "measures_coverage",
    "method_weights",
    "search_depth",
]

RRF_K = 60
"""Reciprocal Rank Fusion constant: a chunk at 1-based rank r adds ``1 / (RRF_K + r)``."""

MethodList = tuple[RetrievalMethod, Sequence[ScoredChunk]]
"""One method's candidates, best first, each carrying that method's score."""


def fuse(
    lists: Sequence[MethodList],
    top_k: int,
    cfg: RetrieverConfig,
    keyword_evidence: Sequence[float] | None = None,
) -> list[ScoredChunk]:
    """The ``top_k`` best chunks of ``lists`` by the fusion ``cfg.fusion`` names.

    ``keyword_evidence`` (convex fusion only) replaces the keyword list's
    evidence, one value per listed chunk (:mod:`.neighbours`).  Raises
    :class:`~zerda_async.errors.ConfigError` for an unknown mode.
    """
    weights = method_weights(cfg)
    if cfg.fusion == "documented":
        return fuse_documented(lists, top_k, weights)
    if cfg.fusion == "rrf":
        return fuse_rrf(lists, top_k, weights, cfg.rrf_k)
    if cfg.fusion == "convex":
        return fuse_convex(
            lists,
            top_k,
            weights,
            keyword_evidence,
            cfg.neighbour_weight,
            cross_script=cfg.cross_script_evidence,
        )
    raise ConfigError(
        f"unknown retriever.fusion {cfg.fusion!r}; expected 'documented', 'rrf' or 'convex'"
    )


def search_depth(cfg: RetrieverConfig, top_k: int) -> int:
    """How many candidates each method lists for a fused ``top_k``: deeper for convex fusion."""
    return max(top_k, cfg.fusion_depth) if cfg.fusion == "convex" else top_k


def measures_coverage(cfg: RetrieverConfig) -> bool:
    """Whether every fused chunk gets a ``query_coverage`` (each mode but the documented one).

    The documented fusion leaves the field as the keyword list set it, so
    documented results stay the documented ones.
    """
    return cfg.fusion != "documented"


def method_weights(cfg: RetrieverConfig) -> dict[RetrievalMethod, float]:
    """Each method's fusion weight from the configuration."""
    return {
        RetrievalMethod.VECTOR: cfg.vector_weight,
        RetrievalMethod.KEYWORD: cfg.keyword_weight,
        RetrievalMethod.METADATA: cfg.metadata_weight,
    }


def fuse_documented(
    lists: Sequence[MethodList], top_k: int, weights: Mapping[RetrievalMethod, float]
) -> list[ScoredChunk]:
    """The documented fusion: weighted scores, plus ``1/(60+rank)`` for chunks several found.

    The entry kept for a chunk is the first list's object; a later list only
    copies its method's score onto it.  One pass over the lists: each hash's
    state is ``[entry, methods, rrf, list]``, the last item telling a repeat
    within one list (counted once, at its first place) from a later list's find.
    """
    merged: dict[str, list[Any]] = {}
    get = merged.get
    for number, (method, results) in enumerate(lists):
        for rank1, sc in enumerate(results, start=1):
            key = sc.content_hash
            state = get(key)
            if state is None:
                merged[key] = [sc, 1, 1 / (RRF_K + rank1), number]
            elif state[3] != number:
                _copy_score(state[0], sc, method)
                state[1] += 1
                state[2] += 1 / (RRF_K + rank1)
                state[3] = number

    w_vector = weights[RetrievalMethod.VECTOR]
    w_keyword = weights[RetrievalMethod.KEYWORD]
    w_metadata = weights[RetrievalMethod.METADATA]
    hybrid = RetrievalMethod.HYBRID
    scored: list[tuple[float, ScoredChunk]] = []
    for entry, methods, rrf, _ in merged.values():
        # The documented operation order (golden scores are compared exactly).
        composite = (
            w_vector * entry.vector_score
            + w_keyword * entry.keyword_score
            + w_metadata * entry.metadata_score
        )
        if methods > 1:
            composite = composite + rrf
            entry.retrieval_method = hybrid
        scored.append((composite, entry))

    scored.sort(key=itemgetter(0), reverse=True)
    result: list[ScoredChunk] = []
    for rank, (composite, entry) in enumerate(scored[:top_k]):
        entry.retrieval_rank = rank
        entry.composite_score = composite
        result.append(entry)
    return result


def _copy_score(target: ScoredChunk, source: ScoredChunk, method: RetrievalMethod) -> None:
    if method is RetrievalMethod.VECTOR:
        target.vector_score = source.vector_score
    elif method is RetrievalMethod.KEYWORD:
        target.keyword_score = source.keyword_score
    else:
        target.metadata_score = source.metadata_score


def fuse_rrf(
    lists: Sequence[MethodList],
    top_k: int,
    weights: Mapping[RetrievalMethod, float],
    k: int = RRF_K,
) -> list[ScoredChunk]:
    """The ``top_k`` best chunks of ``lists`` by weighted RRF, best first.

    A chunk found by more than one method is marked ``HYBRID``.  ``k`` must be
    positive (:class:`ValueError` otherwise).
    """
    if k <= 0:
        raise ValueError(f"retriever.rrf_k must be positive, got {k!r}")
    gains = []
    for method, results in lists:
        weight = weights[method]
        gains.append([weight / (k + rank) for rank in range(1, len(results) + 1)])
    return _accumulate(lists, gains, None, top_k)


def _clamped(values: Iterable[float]) -> list[float]:
    """``min(1.0, max(0.0, x))`` of each value (the same floats, NaN to 0.0), without calls."""
    return [x if 0.0 < x < 1.0 else (1.0 if x >= 1.0 else 0.0) for x in values]


def _evidence(method: RetrievalMethod, results: Sequence[ScoredChunk]) -> list[float]:
    """Each listed chunk's evidence in [0, 1] for :func:`fuse_convex` (see the module notes)."""
    if method is RetrievalMethod.KEYWORD:
        # A hit without a measured coverage (an injected retriever's) counts its score.
        coverage = [sc.query_coverage for sc in results]
        if all(c >= 0 for c in coverage):
            return coverage
        scores = _clamped(sc.keyword_score for sc in results)
        return [c if c >= 0 else s for c, s in zip(coverage, scores, strict=True)]
    if method is RetrievalMethod.VECTOR:
        if not results:
            return []
        best, last = results[0].vector_score, results[-1].vector_score
        spread = best - last
        if spread <= 0:
            return [1.0] * len(results)
        return _clamped((sc.vector_score - last) / spread for sc in results)
    return _clamped(sc.metadata_score for sc in results)


def _accumulate(
    lists: Sequence[MethodList],
    gains: Sequence[Sequence[float]],
    floors: Sequence[float] | None,
    top_k: int,
) -> list[ScoredChunk]:
    """RRF and convex fusion in one pass: each list's chunk at 1-based rank r adds ``gains[r-1]``.

    Sets each method's score and rank on the first-seen entry of a hash;
    ``floors`` (convex fusion) are the lists' last cosines, for ``vector_margin``.
    """
    vector, keyword = RetrievalMethod.VECTOR, RetrievalMethod.KEYWORD
    fused: dict[str, list[Any]] = {}
    get = fused.get
    for number, (method, results) in enumerate(lists):
        gain = gains[number]
        floor = floors[number] if floors is not None else 0.0
        seen: set[str] = set()
        for rank, sc in enumerate(results, start=1):
            key = sc.content_hash
            if key in seen:
                continue
            seen.add(key)
            state = get(key)
            if state is None:
                entry = sc
                fused[key] = state = [entry, 0]
                # A retriever may hand back an object it returned before: start clean.
                entry.fused_score = 0.0
                if floors is not None:
                    entry.vector_margin = 0.0
                entry.vector_rank = entry.keyword_rank = entry.metadata_rank = 0
                if method is not keyword:
                    entry.query_coverage = -1.0
                entry.retrieval_method = method
            else:
                entry = state[0]
            if method is vector:
                entry.vector_score = sc.vector_score
                entry.vector_rank = rank
                if floors is not None:
                    entry.vector_margin = sc.vector_score - floor
            elif method is keyword:
                entry.keyword_score = sc.keyword_score
                entry.keyword_rank = rank
                entry.query_coverage = sc.query_coverage
            else:
                entry.metadata_score = sc.metadata_score
                entry.metadata_rank = rank
            entry.fused_score += gain[rank - 1]
            state[1] += 1
    ordered = sorted(fused.values(), key=_fused_of, reverse=True)[:top_k]
    hybrid = RetrievalMethod.HYBRID
    result: list[ScoredChunk] = []
    for position, (entry, methods) in enumerate(ordered):
        if methods > 1:
            entry.retrieval_method = hybrid
        entry.retrieval_rank = position
        entry.composite_score = entry.fused_score
        result.append(entry)
    return result


def _fused_of(state: list[Any]) -> float:
    score: float = state[0].fused_score
    return score


def fuse_convex(
    lists: Sequence[MethodList],
    top_k: int,
    weights: Mapping[RetrievalMethod, float],
    keyword_evidence: Sequence[float] | None = None,
    neighbour_weight: float = 0.0,
    *,
    cross_script: bool = False,
) -> list[ScoredChunk]:
    """The ``top_k`` best chunks of ``lists`` by a weighted sum of each method's evidence.

    See the module notes for the evidence of each method.  Sets what
    :func:`fuse_rrf` sets (``fused_score``, per-method scores and 1-based
    ranks, ``retrieval_rank``, ``composite_score``, ``HYBRID``) and, for
    chunks of the vector list, ``vector_margin`` (cosine minus the list's last
    cosine).  Ties keep first-seen order; a repeat within one list counts once.
    ``keyword_evidence``, when given, is the keyword list's evidence (one value
    per listed chunk) in place of its query coverage; ``neighbour_weight``
    raises each vector candidate's evidence toward its best neighbour's
    (:func:`~.neighbours.raised_by_neighbours`); ``cross_script`` adds to a
    vector candidate of another script than the keyword hits' the keyword
    evidence imputed to it (:func:`~.script_evidence.foreign_evidence`).
    """
    gains: list[list[float]] = []
    floors: list[float] = []
    found: dict[RetrievalMethod, tuple[int, list[float]]] = {}
    for number, (method, results) in enumerate(lists):
        weight = weights[method]
        floors.append(results[-1].vector_score if results else 0.0)
        evidence = _evidence(method, results)
        if method is RetrievalMethod.KEYWORD and keyword_evidence is not None:
            evidence = list(keyword_evidence)
        if method in (RetrievalMethod.KEYWORD, RetrievalMethod.VECTOR):
            # The imputation scales the plain scaled cosine, not the neighbour-raised one.
            found[method] = (number, evidence)
        if method is RetrievalMethod.VECTOR and neighbour_weight > 0:
            evidence = raised_by_neighbours(evidence, results, neighbour_weight)
        gains.append([weight * e for e in evidence])
    if cross_script and len(found) == 2:
        _add_foreign(lists, gains, found, weights[RetrievalMethod.KEYWORD])
    return _accumulate(lists, gains, floors, top_k)


def _add_foreign(
    lists: Sequence[MethodList],
    gains: list[list[float]],
    found: Mapping[RetrievalMethod, tuple[int, list[float]]],
    weight: float,
) -> None:
    """Add ``weight`` × each vector candidate's imputed keyword evidence to its gain."""
    v_at, cosine = found[RetrievalMethod.VECTOR]
    k_at, evidence = found[RetrievalMethod.KEYWORD]
    extra = foreign_evidence(lists[v_at][1], cosine, lists[k_at][1], evidence)
    if extra is None:
        return
    gain = gains[v_at]
    for i, value in enumerate(extra):
        if value > 0:
            gain[i] += weight * value
